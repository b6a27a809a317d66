package verified

import (
	"io"
	"strings"

	"proctor/har"
)

// harEvent is the part of one HAR entry the network checks read, as
// WebArena-Verified compares it. Response bodies are read only when a spec
// compares response content, request bodies only when a spec compares post
// data; either is decoded (postData, responseData) only when compared.
type harEvent struct {
	method       string // as recorded: the official evaluator compares it case-sensitively
	url          string
	status       int
	headers      []har.NameValue // request headers as recorded
	postMime     string          // as recorded: a multipart boundary is case-sensitive
	postText     string
	postParams   []har.NameValue
	respMime     string
	respText     string
	respEncoding string
	cookies      []har.NameValue
	resourceType string // Chromium's _resourceType, when recorded
	pageref      string // the page (browser tab) that made the request, when recorded
	isStatic     bool
}

// readEvents reads a HAR's entries, one at a time, as events. A file that is
// not a HAR, or an entry without a request URL or a response, is an error
// that says which.
func readEvents(r io.Reader, o har.Options) ([]harEvent, error) {
	var events []harEvent
	for e, err := range har.Entries(r, o) {
		if err != nil {
			return nil, err
		}
		if e.Request.URL == "" || e.Response == nil {
			return nil, &har.Error{Kind: har.BadEntry, Entry: e.Index, Detail: "has no request URL or no response"}
		}
		ev := harEvent{
			method: e.Request.Method, url: e.Request.URL, status: e.Response.Status, headers: e.Request.Headers,
			respMime: strings.ToLower(e.Response.Content.MimeType), respText: e.Response.Content.Text,
			respEncoding: e.Response.Content.Encoding, cookies: e.Response.Cookies,
			resourceType: strings.ToLower(e.ResourceType), pageref: e.Pageref,
		}
		if p := e.Request.PostData; p != nil {
			ev.postMime, ev.postText, ev.postParams = p.MimeType, p.Text, p.Params
		}
		ev.isStatic = ev.staticAsset()
		events = append(events, ev)
	}
	return events, nil
}

// header returns the last request header of that name (case-insensitive).
func (e *harEvent) header(name string) (string, bool) {
	val, found := "", false
	for _, h := range e.headers {
		if strings.EqualFold(h.Name, name) {
			val, found = h.Value, true
		}
	}
	return val, found
}

// static reports a stylesheet, script, image or font request, which is never an
// evaluation event (WebArena-Verified skips them by file extension; Chromium's
// resource type, when recorded, says the same for extension-less URLs).
func (e *harEvent) static() bool { return e.isStatic }

func (e *harEvent) staticAsset() bool {
	switch e.resourceType {
	case "stylesheet", "script", "image", "font", "media":
		return true
	}
	p := e.url
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		p = p[:i]
	}
	// The path's extension in any case: compared in ASCII, which is the
	// same as lower-casing the path since no other letter lower-cases to
	// one of theirs.
	ext := p[strings.LastIndexByte(p, '.')+1:]
	if len(ext) == len(p) {
		return false
	}
	for _, known := range []string{"css", "js", "mjs", "png", "jpg", "jpeg", "gif", "svg", "woff", "woff2", "ttf", "otf", "eot", "ico", "webp", "avif", "map"} {
		if asciiEqualFold(ext, known) {
			return true
		}
	}
	return false
}

// asciiEqualFold compares s with lower, which is in lower case, folding only
// ASCII letters.
func asciiEqualFold(s, lower string) bool {
	if len(s) != len(lower) {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// navigation reports a top-level page load, as WebArena-Verified tells them: a
// GET whose request, when user-initiated, says document/navigate/?1 and
// accepts HTML, or otherwise accepts HTML first. HARs that record no Accept
// header (hand-made ones) fall back to Sec-Fetch-Dest or Chromium's resource
// type "document" with an HTML (or unrecorded) response.
func (e *harEvent) navigation() bool {
	if e.method != "GET" {
		return false
	}
	accept, hasAccept := e.header("accept")
	accept = strings.ToLower(accept)
	if user, ok := e.header("sec-fetch-user"); ok {
		dest, _ := e.header("sec-fetch-dest")
		mode, _ := e.header("sec-fetch-mode")
		return strings.EqualFold(dest, "document") && strings.EqualFold(mode, "navigate") && user == "?1" && strings.Contains(accept, "text/html")
	}
	if hasAccept {
		return strings.HasPrefix(accept, "text/html")
	}
	dest, _ := e.header("sec-fetch-dest")
	if !strings.EqualFold(dest, "document") && e.resourceType != "document" {
		return false
	}
	return e.respMime == "" || strings.Contains(e.respMime, "html")
}

// postData decodes the request body as WebArena-Verified does: form fields
// (first value per name), a JSON object, or multipart fields; nil otherwise.
// A recorded form without text falls back to its params.
func (e *harEvent) postData() map[string]any {
	return contentData(e.postMime, e.postText, e.postParams)
}

// responseData decodes a JSON (or form) response body.
func (e *harEvent) responseData() map[string]any {
	text := e.respText
	if e.respEncoding == "base64" {
		return nil
	}
	return contentData(e.respMime, text, nil)
}

// contentData decodes a body by its MIME type (compared in lower case; the
// multipart boundary is read as written).
func contentData(rawMime, text string, params []har.NameValue) map[string]any {
	mime := strings.ToLower(rawMime)
	if text == "" {
		if len(params) == 0 || !strings.Contains(mime, "application/x-www-form-urlencoded") {
			return nil
		}
		out := map[string]any{}
		for _, p := range params {
			k := pyUnquote(strings.ReplaceAll(p.Name, "+", " "))
			if _, ok := out[k]; !ok {
				out[k] = pyUnquote(strings.ReplaceAll(p.Value, "+", " "))
			}
		}
		return out
	}
	switch {
	case strings.Contains(mime, "application/x-www-form-urlencoded"):
		out := map[string]any{}
		for k, vs := range parseQS(text) {
			out[k] = vs[0]
		}
		return out
	case strings.Contains(mime, "application/json"):
		v, err := decodeJSON([]byte(text))
		if obj, ok := v.(map[string]any); err == nil && ok {
			return obj
		}
	case strings.Contains(mime, "multipart/form-data"):
		i := strings.Index(mime, "boundary=")
		if i < 0 {
			return nil
		}
		params := rawMime[i+len("boundary="):]
		boundary := strings.Trim(strings.FieldsFunc(params, func(r rune) bool { return r == ';' || r == ' ' })[0], `"`)
		return multipartFields(text, boundary)
	}
	return nil
}

// multipartFields reads the named fields of a multipart body.
func multipartFields(text, boundary string) map[string]any {
	out := map[string]any{}
	for _, part := range strings.Split(text, "--"+boundary) {
		part = strings.TrimSpace(part)
		if part == "" || part == "--" {
			continue
		}
		head, body, ok := strings.Cut(part, "\r\n\r\n")
		if !ok {
			if head, body, ok = strings.Cut(part, "\n\n"); !ok {
				continue
			}
		}
		for _, line := range strings.Split(head, "\n") {
			line = strings.TrimSpace(line)
			if !strings.HasPrefix(strings.ToLower(line), "content-disposition:") {
				continue
			}
			if i := strings.Index(line, `name="`); i >= 0 {
				rest := line[i+6:]
				if j := strings.Index(rest, `"`); j >= 0 {
					out[rest[:j]] = strings.TrimRight(body, "\r\n")
				}
			}
			break
		}
	}
	return out
}

// cookie returns a response cookie's URL-decoded value.
func (e *harEvent) cookie(name string) (string, bool) {
	for _, c := range e.cookies {
		if c.Name == name {
			return pyUnquote(c.Value), true
		}
	}
	return "", false
}
