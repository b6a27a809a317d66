package episode

import (
	"errors"
	"fmt"
	"os"

	"github.com/mxschmitt/playwright-go"
)

// Environment variables locating the browser pieces. The Playwright driver is the
// npm package playwright-core plus a Node binary (see scripts/browser.sh); the
// browser is Debian's Chromium, never a downloaded build.
const (
	EnvDriverPath   = "PLAYWRIGHT_DRIVER_PATH"
	EnvChromiumPath = "PROCTOR_CHROMIUM_PATH"
)

// BrowserOptions say where the driver and Chromium are.
type BrowserOptions struct {
	DriverDir      string
	ExecutablePath string
}

// BrowserOptionsFromEnv reads the driver and Chromium locations, with Debian's
// /usr/bin/chromium as the default browser.
func BrowserOptionsFromEnv(getenv func(string) string) BrowserOptions {
	o := BrowserOptions{DriverDir: getenv(EnvDriverPath), ExecutablePath: getenv(EnvChromiumPath)}
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
	if _, err := os.Stat(o.ExecutablePath); err != nil {
		errs = append(errs, fmt.Errorf("chromium not found at %s: apt-get install chromium, or set %s", o.ExecutablePath, EnvChromiumPath))
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

// LaunchBrowser starts the driver and a headless Chromium.
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

// Playwright returns the underlying browser for opening contexts.
func (b *Browser) Playwright() playwright.Browser { return b.browser }

// Close stops Chromium, then the driver.
func (b *Browser) Close() error {
	return errors.Join(b.browser.Close(), b.pw.Stop())
}
