package testenv

import (
	"bufio"
	"context"
	"os/exec"
	"regexp"
	"testing"
	"time"
)

// StartRunServer starts Playwright's reference browser server (`playwright
// run-server`, from the driver's playwright-core in driverDir) on loopback
// for the test and returns its ws:// endpoint. --unsafe lets clients name
// the browser to launch: the server has no browser of its own here, so the
// client names Debian's Chromium.
func StartRunServer(t testing.TB, driverDir string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, driverDir+"/node", driverDir+"/package/cli.js", "run-server", "--host", "127.0.0.1", "--port", "0", "--unsafe")
	out, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start playwright run-server: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	listening := regexp.MustCompile(`Listening on (ws://\S+)`)
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	select {
	case ws := <-found:
		return ws
	case <-time.After(Scaled(t, 30*time.Second)):
		t.Fatal("playwright run-server did not say where it listens")
		return ""
	}
}
