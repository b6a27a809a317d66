package config

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// errMismatch says that a value is not of the expected form, and nothing
// more: the message is then "must be" and the option's expectation.
var errMismatch = errors.New("not the expected form")

// parseListen reads a listen address, host:port, and the base URL it implies:
// a wildcard host is reached as localhost.
func parseListen(addr string) (baseURL string, err error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return "", fmt.Errorf("port %q is not a number from 0 to 65535", port)
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port), nil
}

// parseOrigin reads an http(s) origin, without path or query, and returns it
// without a trailing slash.
func parseOrigin(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return "", errMismatch
	}
	return strings.TrimRight(raw, "/"), nil
}

// checkHTTPURL refuses anything but an http(s) URL without credentials.
func checkHTTPURL(raw, credentialsHint string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errMismatch
	}
	if u.User != nil {
		return fmt.Errorf("must not carry credentials in the URL; %s", credentialsHint)
	}
	return nil
}

// parseList reads a comma list, skipping empty items; each item goes through
// read, and the items read refuses are named together in one error.
func parseList[T any](raw string, read func(string) (T, bool)) ([]T, error) {
	var out []T
	var refused []string
	for _, item := range strings.Split(raw, ",") {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		v, ok := read(item)
		if !ok {
			refused = append(refused, strconv.Quote(item))
			continue
		}
		out = append(out, v)
	}
	if len(refused) > 0 {
		if len(refused) == 1 {
			return nil, fmt.Errorf("%s is not", refused[0])
		}
		return nil, fmt.Errorf("%s are not", strings.Join(refused, ", "))
	}
	return out, nil
}

// readHost reads a host name or IP address, lower-cased.
func readHost(h string) (string, bool) {
	h = strings.ToLower(h)
	if strings.ContainsAny(h, "/:@ ") && net.ParseIP(h) == nil {
		return "", false
	}
	return h, true
}

// readNetwork reads an IP address (as a one-address network) or a CIDR range.
func readNetwork(p string) (*net.IPNet, bool) {
	if !strings.Contains(p, "/") {
		if ip := net.ParseIP(p); ip != nil && ip.To4() != nil {
			p += "/32"
		} else {
			p += "/128"
		}
	}
	_, ipnet, err := net.ParseCIDR(p)
	return ipnet, err == nil
}

// readLogLevel reads a log level name, in any case.
func readLogLevel(s string) (slog.Level, bool) {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug, true
	case "info":
		return slog.LevelInfo, true
	case "warn", "warning":
		return slog.LevelWarn, true
	case "error":
		return slog.LevelError, true
	}
	return 0, false
}

// byteUnits are the suffixes ParseBytes knows, longest first.
func byteUnits() []struct {
	suffix string
	factor int64
} {
	return []struct {
		suffix string
		factor int64
	}{
		{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
		{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12},
		{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"t", 1 << 40}, {"b", 1},
	}
}

// ParseBytes reads a size: a number of bytes, or a number with a unit such as
// 16MiB, 8 GiB, 500MB or 2g (k, m, g, t are binary units).
func ParseBytes(s string) (int64, error) {
	text := strings.ToLower(strings.TrimSpace(s))
	factor := int64(1)
	for _, u := range byteUnits() {
		if strings.HasSuffix(text, u.suffix) {
			text, factor = strings.TrimSpace(strings.TrimSuffix(text, u.suffix)), u.factor
			break
		}
	}
	n, err := strconv.ParseFloat(text, 64)
	if err != nil || n < 0 || math.IsNaN(n) || n*float64(factor) > math.MaxInt64/2 {
		return 0, fmt.Errorf("%q is not a size", s)
	}
	return int64(n * float64(factor)), nil
}

// FormatBytes writes a size in the largest binary unit that divides it.
func FormatBytes(n int64) string {
	for _, u := range []struct {
		name   string
		factor int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.factor && n%u.factor == 0 {
			return fmt.Sprintf("%d%s", n/u.factor, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

// readFloat reads a finite decimal number.
func readFloat(s string) (float64, bool) {
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil && !math.IsInf(f, 0) && !math.IsNaN(f)
}
