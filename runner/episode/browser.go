package episode

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"strings"

	"github.com/mxschmitt/playwright-go"
)

// Environment variables locating the browser pieces. The Playwright driver is the
// npm package playwright-core plus a Node binary (see scripts/browser.sh); the
// browser is Debian's Chromium, never a downloaded build.
const (
	EnvDriverPath   = "PLAYWRIGHT_DRIVER_PATH"
	EnvChromiumPath = "PROCTOR_CHROMIUM_PATH"
	// EnvBrowserWSEndpoint lists browser servers speaking Playwright's
	// remote protocol (`playwright run-server` or any compatible service),
	// separated by commas: the worker drives their browsers instead of
	// launching its own.
	EnvBrowserWSEndpoint = "PROCTOR_BROWSER_WS_ENDPOINT"
)

// BrowserOptions say where the driver and Chromium are.
type BrowserOptions struct {
	DriverDir      string
	ExecutablePath string
	// WSEndpoints, when set, are browser servers to connect to (the first
	// that answers, starting from a random one) instead of launching
	// ExecutablePath here.
	WSEndpoints []string
	// RemoteExecutablePath, when set, is the browser the server is asked to
	// launch, with Proctor's Chromium arguments (run-server needs --unsafe
	// to accept them); otherwise the server launches its own.
	RemoteExecutablePath string
}

// BrowserOptionsFromEnv reads the driver and Chromium locations, with Debian's
// /usr/bin/chromium as the default browser, and the browser servers. With
// servers, PROCTOR_CHROMIUM_PATH, when set, names the browser on the server.
func BrowserOptionsFromEnv(getenv func(string) string) BrowserOptions {
	o := BrowserOptions{DriverDir: getenv(EnvDriverPath), ExecutablePath: getenv(EnvChromiumPath)}
	for _, e := range strings.Split(getenv(EnvBrowserWSEndpoint), ",") {
		if e = strings.TrimSpace(e); e != "" {
			o.WSEndpoints = append(o.WSEndpoints, e)
		}
	}
	if len(o.WSEndpoints) > 0 {
		o.RemoteExecutablePath = o.ExecutablePath
	}
	if o.ExecutablePath == "" {
		o.ExecutablePath = "/usr/bin/chromium"
	}
	return o
}

// Check reports what is missing, in one error, before anything is started.
func (o BrowserOptions) Check() error {
	var errs []error
	if o.DriverDir == "" {
		errs = append(errs, fmt.Errorf("%s is not set: run scripts/browser.sh install (make deps) and point it at .cache/playwright-driver", EnvDriverPath))
	} else if _, err := os.Stat(o.DriverDir + "/package/cli.js"); err != nil {
		errs = append(errs, fmt.Errorf("%s=%s holds no Playwright driver (package/cli.js): run scripts/browser.sh install", EnvDriverPath, o.DriverDir))
	}
	for i, e := range o.WSEndpoints {
		u, err := url.Parse(e)
		if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
			errs = append(errs, fmt.Errorf("%s: endpoint %d, %q, is not a ws:// or wss:// address of a browser server", EnvBrowserWSEndpoint, i+1, e))
		}
	}
	if len(o.WSEndpoints) == 0 {
		if _, err := os.Stat(o.ExecutablePath); err != nil {
			errs = append(errs, fmt.Errorf("chromium not found at %s: apt-get install chromium, or set %s", o.ExecutablePath, EnvChromiumPath))
		}
	}
	return errors.Join(errs...)
}

// Browser is one Chromium process with its Playwright driver; a worker keeps one
// and opens a fresh context per episode.
type Browser struct {
	pw      *playwright.Playwright
	browser playwright.Browser
}

// chromiumArgs keep headless Chromium quiet on a closed network.
func chromiumArgs() []string {
	return []string{
		"--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage",
	}
}

// LaunchBrowser starts the driver and a headless Chromium, or with
// WSEndpoints connects to a browser server's.
func LaunchBrowser(o BrowserOptions) (*Browser, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	pw, err := playwright.Run(&playwright.RunOptions{
		DriverDirectory:     o.DriverDir,
		SkipInstallBrowsers: true,
		Verbose:             false,
	})
	if err != nil {
		return nil, fmt.Errorf("start playwright driver: %w", err)
	}
	if len(o.WSEndpoints) > 0 {
		// A random first server spreads workers and relaunches over them.
		b, err := connectBrowser(pw, o, rand.IntN(len(o.WSEndpoints)))
		if err != nil {
			pw.Stop()
			return nil, err
		}
		return &Browser{pw: pw, browser: b}, nil
	}
	b, err := pw.Chromium.Launch(playwright.BrowserTypeLaunchOptions{
		ExecutablePath: playwright.String(o.ExecutablePath),
		Headless:       playwright.Bool(true),
		Args:           chromiumArgs(),
	})
	if err != nil {
		pw.Stop()
		return nil, fmt.Errorf("launch chromium %s: %w", o.ExecutablePath, err)
	}
	return &Browser{pw: pw, browser: b}, nil
}

// connectBrowser connects to the first browser server that answers, trying
// each once from the one at index first. The worker's loopback network is
// exposed to the remote browser, so its contexts reach the worker's egress
// proxy (the navigation allowlist and SSRF guard) as a local browser does.
func connectBrowser(pw *playwright.Playwright, o BrowserOptions, first int) (playwright.Browser, error) {
	launch := map[string]any{"headless": true}
	if o.RemoteExecutablePath != "" {
		launch["executablePath"] = o.RemoteExecutablePath
		launch["args"] = chromiumArgs()
	}
	header, err := json.Marshal(launch)
	if err != nil {
		return nil, err
	}
	var errs []error
	for i := range o.WSEndpoints {
		e := o.WSEndpoints[(first+i)%len(o.WSEndpoints)]
		b, err := pw.Chromium.Connect(e, playwright.BrowserTypeConnectOptions{
			ExposeNetwork: playwright.String("<loopback>"),
			Headers:       map[string]string{"x-playwright-launch-options": string(header)},
		})
		if err == nil {
			return b, nil
		}
		errs = append(errs, fmt.Errorf("connect to the browser server %s: %w", e, err))
	}
	return nil, errors.Join(errs...)
}

// Playwright returns the underlying browser for opening contexts.
func (b *Browser) Playwright() playwright.Browser { return b.browser }

// Close stops Chromium, then the driver.
func (b *Browser) Close() error {
	return errors.Join(b.browser.Close(), b.pw.Stop())
}
