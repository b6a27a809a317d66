package verified

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// DefaultMaxHARBytes caps how much of a HAR the evaluator reads; a larger one
// is an error verdict rather than an unbounded read.
const DefaultMaxHARBytes = 512 << 20

// harEvent is the part of one HAR entry the network checks read. Response
// bodies and cookies are kept only when a spec compares them.
type harEvent struct {
	method       string // as recorded: the official evaluator compares it case-sensitively
	url          string
	status       int
	headers      []harNameValue // request headers as recorded
	postMime     string         // as recorded: a multipart boundary is case-sensitive
	postText     string
	postParams   []harNameValue
	respMime     string
	respText     string
	respEncoding string
	cookies      []harNameValue
	resourceType string // Chromium's _resourceType, when recorded
	pageref      string // the page (browser tab) that made the request, when recorded
	isStatic     bool
}

type harNameValue struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// harEntryLean decodes what every check needs; harEntryFull adds the response
// body and cookies. Fields not named here are skipped by the decoder without
// being kept.
type harEntryLean struct {
	ResourceType string `json:"_resourceType"`
	Pageref      string `json:"pageref"`
	Request      struct {
		Method   string         `json:"method"`
		URL      string         `json:"url"`
		Headers  []harNameValue `json:"headers"`
		PostData *struct {
			MimeType string         `json:"mimeType"`
			Text     string         `json:"text"`
			Params   []harNameValue `json:"params"`
		} `json:"postData"`
	} `json:"request"`
	Response *harResponseLean `json:"response"`
}

type harResponseLean struct {
	Status  int `json:"status"`
	Content struct {
		MimeType string `json:"mimeType"`
	} `json:"content"`
}

type harEntryFull struct {
	harEntryLean
	Response *struct {
		Status  int            `json:"status"`
		Cookies []harNameValue `json:"cookies"`
		Content struct {
			MimeType string `json:"mimeType"`
			Text     string `json:"text"`
			Encoding string `json:"encoding"`
		} `json:"content"`
	} `json:"response"`
}

// harReadOptions say what to keep and how much to read.
type harReadOptions struct {
	maxBytes int64
	bodies   bool // keep response bodies and cookies
}

// readHAR stream-decodes a HAR's log.entries one entry at a time. A file that
// is not JSON, not a HAR, truncated or larger than the limit is an error that
// says which.
func readHAR(r io.Reader, o harReadOptions) ([]harEvent, error) {
	if o.maxBytes <= 0 {
		o.maxBytes = DefaultMaxHARBytes
	}
	lim := &limitedReader{r: r, left: o.maxBytes}
	var head [2]byte
	n, _ := io.ReadFull(lim, head[:])
	if n == 2 && head[0] == 0x1f && head[1] == 0x8b {
		return nil, errors.New("the HAR is gzip-compressed: decompress it first")
	}
	dec := json.NewDecoder(io.MultiReader(bytes.NewReader(head[:n]), lim))
	events, err := decodeHAR(dec, o)
	if lim.exceeded {
		return nil, fmt.Errorf("the HAR is larger than the %d MiB limit", o.maxBytes>>20)
	}
	if err != nil {
		return nil, err
	}
	return events, nil
}

func decodeHAR(dec *json.Decoder, o harReadOptions) ([]harEvent, error) {
	tok, err := dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("the HAR is empty")
		}
		return nil, harSyntax(err, 0)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("not a HAR: expected a JSON object with log.entries, found %s", tokenKind(tok))
	}
	foundLog := false
	var events []harEvent
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil, harSyntax(err, len(events))
		}
		if key != "log" {
			if err := skipValue(dec); err != nil {
				return nil, harSyntax(err, len(events))
			}
			continue
		}
		foundLog = true
		if events, err = decodeLog(dec, o); err != nil {
			return nil, err
		}
	}
	if !foundLog {
		return nil, errors.New("not a HAR: the JSON object has no log")
	}
	if _, err := dec.Token(); err != nil {
		return nil, harSyntax(err, len(events))
	}
	return events, nil
}

func decodeLog(dec *json.Decoder, o harReadOptions) ([]harEvent, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, harSyntax(err, 0)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("not a HAR: log is %s, not an object", tokenKind(tok))
	}
	var events []harEvent
	foundEntries := false
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil, harSyntax(err, len(events))
		}
		if key != "entries" {
			if err := skipValue(dec); err != nil {
				return nil, harSyntax(err, len(events))
			}
			continue
		}
		foundEntries = true
		tok, err := dec.Token()
		if err != nil {
			return nil, harSyntax(err, 0)
		}
		if d, ok := tok.(json.Delim); !ok || d != '[' {
			return nil, fmt.Errorf("not a HAR: log.entries is %s, not a list", tokenKind(tok))
		}
		for dec.More() {
			ev, err := decodeEntry(dec, o, len(events))
			if err != nil {
				return nil, err
			}
			events = append(events, ev)
		}
		if _, err := dec.Token(); err != nil {
			return nil, harSyntax(err, len(events))
		}
	}
	if !foundEntries {
		return nil, errors.New("not a HAR: log has no entries")
	}
	if _, err := dec.Token(); err != nil {
		return nil, harSyntax(err, len(events))
	}
	return events, nil
}

func decodeEntry(dec *json.Decoder, o harReadOptions, i int) (harEvent, error) {
	var lean harEntryLean
	var ev harEvent
	if o.bodies {
		var full harEntryFull
		if err := dec.Decode(&full); err != nil {
			return ev, harEntryErr(err, i)
		}
		lean = full.harEntryLean
		if full.Response != nil {
			ev.status = full.Response.Status
			ev.cookies = full.Response.Cookies
			ev.respMime = strings.ToLower(full.Response.Content.MimeType)
			ev.respText = full.Response.Content.Text
			ev.respEncoding = full.Response.Content.Encoding
		}
		lean.Response = nil
		if full.Response != nil {
			lean.Response = &harResponseLean{Status: full.Response.Status}
			lean.Response.Content.MimeType = full.Response.Content.MimeType
		}
	} else if err := dec.Decode(&lean); err != nil {
		return ev, harEntryErr(err, i)
	}
	if lean.Request.URL == "" || lean.Response == nil {
		return ev, fmt.Errorf("not a HAR: entry %d has no request URL or no response", i)
	}
	ev.method = lean.Request.Method
	ev.url = lean.Request.URL
	ev.status = lean.Response.Status
	ev.respMime = strings.ToLower(lean.Response.Content.MimeType)
	ev.headers = lean.Request.Headers
	ev.resourceType = strings.ToLower(lean.ResourceType)
	ev.pageref = lean.Pageref
	ev.isStatic = ev.staticAsset()
	if p := lean.Request.PostData; p != nil {
		ev.postMime, ev.postText, ev.postParams = p.MimeType, p.Text, p.Params
	}
	return ev, nil
}

func harEntryErr(err error, i int) error {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		return fmt.Errorf("not a HAR: entry %d has a %s where the HAR format has a %s (%s)", i, typeErr.Value, typeErr.Type, typeErr.Field)
	}
	return harSyntax(err, i)
}

// harSyntax explains a decoding failure: a file cut short, or not JSON.
func harSyntax(err error, entries int) error {
	var syn *json.SyntaxError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return fmt.Errorf("the HAR is truncated: it ends after %d complete entries", entries)
	case errors.As(err, &syn):
		return fmt.Errorf("the HAR is not valid JSON (byte %d): %v", syn.Offset, err)
	}
	return fmt.Errorf("read HAR: %w", err)
}

func skipValue(dec *json.Decoder) error {
	var skip json.RawMessage
	return dec.Decode(&skip)
}

func tokenKind(tok json.Token) string {
	switch t := tok.(type) {
	case json.Delim:
		if t == '[' {
			return "a list"
		}
		return "an object"
	case string:
		return "a string"
	case nil:
		return "null"
	case bool:
		return "a boolean"
	}
	return "a number"
}

// limitedReader stops after left bytes and remembers that the input was longer.
type limitedReader struct {
	r        io.Reader
	left     int64
	exceeded bool
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		var one [1]byte
		if n, _ := l.r.Read(one[:]); n > 0 {
			l.exceeded = true
		}
		return 0, io.EOF
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
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
	p = strings.ToLower(p)
	for _, ext := range []string{".css", ".js", ".mjs", ".png", ".jpg", ".jpeg", ".gif", ".svg", ".woff", ".woff2", ".ttf", ".otf", ".eot", ".ico", ".webp", ".avif", ".map"} {
		if strings.HasSuffix(p, ext) {
			return true
		}
	}
	return false
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
func contentData(rawMime, text string, params []harNameValue) map[string]any {
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
