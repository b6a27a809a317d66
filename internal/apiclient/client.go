// Package apiclient is a small typed client of Proctor's JSON API (/api/v1),
// used by the proctor command's remote verbs (submit, runs, queue). It sends a
// bearer token, decodes the API's error shape into values carrying the code,
// field and message, and retries idempotent calls when the connection fails.
package apiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Default retry policy: a lost connection is retried three times, waiting
// 0.5 s, 1 s and 2 s, so a server restart or a network hiccup of a few seconds
// does not end a long upload.
const (
	DefaultRetries = 3
	DefaultBackoff = 500 * time.Millisecond
	maxBackoff     = 30 * time.Second
	maxErrorBody   = 64 << 10 // how much of an error answer is read
	maxJSONAnswer  = 64 << 20 // how much of a JSON answer is decoded
)

// Client talks to one Proctor server. Its zero value is not usable: build it
// with New.
type Client struct {
	base  *url.URL // the server's root, without a trailing slash
	token string
	http  *http.Client
	// Retries is how many times an idempotent call is repeated after a
	// connection error; Backoff is the first wait, doubled each time.
	Retries int
	Backoff time.Duration
	// UserAgent is sent with every request.
	UserAgent string
}

// New returns a client of the server at baseURL (e.g. https://proctor.example.org)
// that authenticates with token ("" for anonymous calls). EINVALID-like plain
// errors for a base URL that is not absolute http(s).
func New(baseURL, token string) (*Client, error) {
	u, err := url.Parse(strings.TrimSpace(baseURL))
	if err != nil {
		return nil, fmt.Errorf("server URL %q: %w", baseURL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("server URL %q must be absolute, e.g. https://proctor.example.org", baseURL)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawQuery, u.Fragment = "", ""
	transport := http.DefaultTransport.(*http.Transport).Clone()
	// A server that accepts a part but never answers must not hang an upload
	// forever; a large part takes long to send, not to answer.
	transport.ResponseHeaderTimeout = 5 * time.Minute
	return &Client{
		base: u, token: strings.TrimSpace(token), http: &http.Client{Transport: transport},
		Retries: DefaultRetries, Backoff: DefaultBackoff, UserAgent: "proctor-cli",
	}, nil
}

// BaseURL is the server's root URL as configured.
func (c *Client) BaseURL() string { return c.base.String() }

// URL resolves a path the API returned (e.g. "/runs/12") against the server's root.
func (c *Client) URL(path string) string {
	if u, err := url.Parse(path); err == nil && u.IsAbs() {
		return path
	}
	return c.base.String() + "/" + strings.TrimLeft(path, "/")
}

// apiURL is the absolute URL of an API path such as "/runs/12".
func (c *Client) apiURL(path string, query url.Values) string {
	s := c.base.String() + "/api/v1" + path
	if len(query) > 0 {
		s += "?" + query.Encode()
	}
	return s
}

// request is one call: how to build its body (again on every try) and whether
// it may be repeated after a connection error.
type request struct {
	method     string
	url        string
	header     http.Header
	body       func() (io.Reader, error) // nil: no body
	length     int64                     // Content-Length when body is set; -1 unknown
	idempotent bool
	bearer     bool // send the token (never to presigned storage URLs)
}

// Get decodes the JSON answer of GET /api/v1{path}?{query} into out (any
// JSON-decodable value, json.RawMessage included). Retried on connection errors.
func (c *Client) Get(ctx context.Context, path string, query url.Values, out any) error {
	res, err := c.do(ctx, request{method: http.MethodGet, url: c.apiURL(path, query), idempotent: true, bearer: true})
	if err != nil {
		return err
	}
	return decodeJSON(res, out)
}

// jsonRequest is a call with in (nil: an empty body) encoded as JSON.
func jsonRequest(method, url string, in any) (request, error) {
	r := request{method: method, url: url, bearer: true}
	if in == nil {
		return r, nil
	}
	b, err := json.Marshal(in)
	if err != nil {
		return r, fmt.Errorf("encode the body of %s %s: %w", method, redact(url), err)
	}
	r.header = http.Header{"Content-Type": {"application/json"}}
	r.body = func() (io.Reader, error) { return bytes.NewReader(b), nil }
	r.length = int64(len(b))
	return r, nil
}

// postJSON sends in (nil: an empty body) and decodes the answer into out
// (nil: discarded). Not retried: the server may have acted.
func (c *Client) postJSON(ctx context.Context, path string, in, out any) error {
	r, err := jsonRequest(http.MethodPost, c.apiURL(path, nil), in)
	if err != nil {
		return err
	}
	res, err := c.do(ctx, r)
	if err != nil {
		return err
	}
	return decodeJSON(res, out)
}

// do sends a request, retrying an idempotent one after connection errors and
// gateway failures, and turns error answers into *Error. The caller closes
// the body of the answer it gets.
func (c *Client) do(ctx context.Context, r request) (*http.Response, error) {
	wait := c.Backoff
	for try := 0; ; try++ {
		res, err := c.once(ctx, r)
		retryable := err != nil && ctx.Err() == nil
		if err == nil && isGatewayFailure(res.StatusCode) {
			apiErr := decodeError(res)
			err, retryable = apiErr, true
		}
		if err == nil {
			if res.StatusCode >= 400 {
				return nil, decodeError(res)
			}
			return res, nil
		}
		if !retryable || !r.idempotent || try >= c.Retries {
			var conn *ConnectionError
			if errors.As(err, &conn) {
				conn.Tries = try + 1
			}
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(wait*2, maxBackoff)
	}
}

// once sends one try of a request.
func (c *Client) once(ctx context.Context, r request) (*http.Response, error) {
	var body io.Reader
	if r.body != nil {
		b, err := r.body()
		if err != nil {
			return nil, err
		}
		body = b
	}
	req, err := http.NewRequestWithContext(ctx, r.method, r.url, body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", r.method, redact(r.url), err)
	}
	if body != nil && r.length >= 0 {
		req.ContentLength = r.length
	}
	if body == nil && r.method != http.MethodGet && r.method != http.MethodDelete {
		req.ContentLength = 0
	}
	for k, vs := range r.header {
		req.Header[k] = vs
	}
	req.Header.Set("Accept", "application/json")
	if c.UserAgent != "" {
		req.Header.Set("User-Agent", c.UserAgent)
	}
	if r.bearer && c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	res, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &ConnectionError{Method: r.method, URL: redact(r.url), Err: unwrapURLError(err)}
	}
	return res, nil
}

// isGatewayFailure is a proxy in front of the server saying it could not reach
// it: as transient as a refused connection.
func isGatewayFailure(status int) bool {
	return status == http.StatusBadGateway || status == http.StatusGatewayTimeout
}

// decodeJSON reads a successful answer into out; a body cut short is a
// connection error, so the caller may retry or resume.
func decodeJSON(res *http.Response, out any) error {
	defer res.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, res.Body)
		return nil
	}
	dec := json.NewDecoder(io.LimitReader(res.Body, maxJSONAnswer))
	if err := dec.Decode(out); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || isNetError(err) {
			return &ConnectionError{Method: res.Request.Method, URL: redact(res.Request.URL.String()), Err: err}
		}
		return fmt.Errorf("%s %s: the answer is not the expected JSON: %w", res.Request.Method, redact(res.Request.URL.String()), err)
	}
	return nil
}

func drain(res *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, maxErrorBody))
	res.Body.Close()
}

// redact drops the query of a URL for messages: presigned storage URLs carry
// their signature there.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	u.RawQuery, u.User = "", nil
	return u.String()
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
