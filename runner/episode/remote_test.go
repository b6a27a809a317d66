package episode

import (
	"os"
	"strings"
	"testing"

	"github.com/mxschmitt/playwright-go"
	"github.com/stretchr/testify/require"

	"proctor/internal/testenv"
)

func TestBrowserOptions_Endpoints(t *testing.T) {
	env := map[string]string{
		EnvDriverPath:        "/drv",
		EnvBrowserWSEndpoint: " ws://a:3000/ , ,wss://b/x",
	}
	o := BrowserOptionsFromEnv(func(k string) string { return env[k] })
	require.Equal(t, []string{"ws://a:3000/", "wss://b/x"}, o.WSEndpoints)
	require.Empty(t, o.RemoteExecutablePath, "without PROCTOR_CHROMIUM_PATH the server launches its own browser")

	env[EnvChromiumPath] = "/opt/chromium"
	o = BrowserOptionsFromEnv(func(k string) string { return env[k] })
	require.Equal(t, "/opt/chromium", o.RemoteExecutablePath, "the browser named for the server")

	o = BrowserOptions{DriverDir: t.TempDir(), ExecutablePath: "/nonexistent", WSEndpoints: []string{"ws://ok:1/", "http://x/", "ws://"}}
	err := o.Check()
	require.Error(t, err)
	msg := err.Error()
	require.Contains(t, msg, `endpoint 2, "http://x/", is not a ws:// or wss:// address`)
	require.Contains(t, msg, `endpoint 3, "ws://"`)
	require.NotContains(t, msg, "chromium not found", "with browser servers no local browser is needed")
	require.NotContains(t, msg, "ws://ok:1/")
}

// TestConnectBrowser_TriesEachServer connects through a list whose first
// server is down: the next one's browser is used. With every server down,
// the error names each of them.
func TestConnectBrowser_TriesEachServer(t *testing.T) {
	opts := BrowserOptionsFromEnv(os.Getenv)
	err := opts.Check()
	testenv.SkipUnlessAvailable(t, "browser", err == nil, "needs Chromium and the Playwright driver (make deps)")
	ws := testenv.StartRunServer(t, opts.DriverDir)
	pw, err := playwright.Run(&playwright.RunOptions{DriverDirectory: opts.DriverDir, SkipInstallBrowsers: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = pw.Stop() })

	opts.RemoteExecutablePath = opts.ExecutablePath
	opts.WSEndpoints = []string{"ws://127.0.0.1:1/", ws}
	b, err := connectBrowser(pw, opts, 0)
	require.NoError(t, err)
	require.True(t, b.IsConnected())
	page, err := b.NewPage()
	require.NoError(t, err)
	_, err = page.Goto("data:text/html,<title>remote</title>")
	require.NoError(t, err)
	title, err := page.Title()
	require.NoError(t, err)
	require.Equal(t, "remote", title)
	require.NoError(t, b.Close())

	opts.WSEndpoints = []string{"ws://127.0.0.1:1/", "ws://127.0.0.1:2/"}
	_, err = connectBrowser(pw, opts, 1)
	require.Error(t, err)
	require.Equal(t, 2, strings.Count(err.Error(), "connect to the browser server"), err.Error())
	require.Less(t, strings.Index(err.Error(), ":2/"), strings.Index(err.Error(), ":1/"), "tried from the index given")
}
