package models

import (
	"net/url"
	"strings"
)

// ParseHTTPURL parses raw, trimmed, as an absolute http or https URL with a host
// and no user credentials, the only kind Proctor stores or connects to. what
// names the URL in the credentials refusal ("endpoint URL", "link"), which does
// not quote raw because raw holds a secret. EINVALID otherwise, without a field:
// callers attach their own.
func ParseHTTPURL(raw, what string) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return nil, Errorf(EINVALID, "%q is not an http or https URL: it cannot be parsed", raw)
	case u.Scheme == "":
		return nil, Errorf(EINVALID, "%q is not an http or https URL: it must start with http:// or https://", raw)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, Errorf(EINVALID, "%q is not an http or https URL: it must use http or https, not %q", raw, u.Scheme)
	case u.User != nil:
		return nil, Errorf(EINVALID, "credentials in the %s are not allowed", what)
	case u.Hostname() == "":
		return nil, Errorf(EINVALID, "%q is not an http or https URL: it has no host", raw)
	}
	return u, nil
}
