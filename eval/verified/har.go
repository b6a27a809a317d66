package verified

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"path"
	"strings"
)

// maxHARBytes caps how much of a HAR is read; episodes record a few MiB.
const maxHARBytes = 1 << 30

// harEntry is the part of one HAR entry the network checks read.
type harEntry struct {
	Method       string
	URL          string
	Status       int
	MimeType     string // the response's
	PostMimeType string
	PostText     string
	PostParams   []harParam
	ResourceType string // Chromium's _resourceType, when the HAR has it
	FetchDest    string // the sec-fetch-dest request header, when recorded
}

type harParam struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type harNameValue struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// harFile is the subset of the HAR 1.2 format that is decoded.
type harFile struct {
	Log struct {
		Entries []struct {
			ResourceType string `json:"_resourceType"`
			Request      struct {
				Method   string         `json:"method"`
				URL      string         `json:"url"`
				Headers  []harNameValue `json:"headers"`
				PostData *struct {
					MimeType string     `json:"mimeType"`
					Text     string     `json:"text"`
					Params   []harParam `json:"params"`
				} `json:"postData"`
			} `json:"request"`
			Response struct {
				Status  int `json:"status"`
				Content struct {
					MimeType string `json:"mimeType"`
				} `json:"content"`
			} `json:"response"`
		} `json:"entries"`
	} `json:"log"`
}

// readHAR decodes a HAR into its entries, in recorded order.
func readHAR(r io.Reader) ([]harEntry, error) {
	var f harFile
	dec := json.NewDecoder(io.LimitReader(r, maxHARBytes))
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("read HAR: %w", err)
	}
	entries := make([]harEntry, 0, len(f.Log.Entries))
	for _, e := range f.Log.Entries {
		h := harEntry{
			Method:       strings.ToUpper(e.Request.Method),
			URL:          e.Request.URL,
			Status:       e.Response.Status,
			MimeType:     strings.ToLower(e.Response.Content.MimeType),
			ResourceType: strings.ToLower(e.ResourceType),
		}
		for _, hd := range e.Request.Headers {
			if strings.EqualFold(hd.Name, "sec-fetch-dest") {
				h.FetchDest = strings.ToLower(hd.Value)
			}
		}
		if p := e.Request.PostData; p != nil {
			h.PostMimeType, h.PostText, h.PostParams = strings.ToLower(p.MimeType), p.Text, p.Params
		}
		entries = append(entries, h)
	}
	return entries, nil
}

// staticExtension reports whether a file extension names a stylesheet, script,
// image or font, which is never an evaluation event.
func staticExtension(ext string) bool {
	switch ext {
	case ".css", ".js", ".mjs", ".map", ".png", ".jpg", ".jpeg", ".gif", ".svg", ".ico", ".webp", ".avif",
		".woff", ".woff2", ".ttf", ".otf", ".eot":
		return true
	}
	return false
}

// static reports whether the entry loads a stylesheet, script, image or font.
func (e harEntry) static() bool {
	switch e.ResourceType {
	case "stylesheet", "script", "image", "font", "media", "manifest":
		return true
	}
	switch e.FetchDest {
	case "style", "script", "image", "font", "audio", "video", "manifest":
		return true
	}
	mime := e.MimeType
	if strings.HasPrefix(mime, "image/") || strings.HasPrefix(mime, "font/") || strings.HasPrefix(mime, "text/css") ||
		strings.Contains(mime, "javascript") {
		return true
	}
	u, err := url.Parse(e.URL)
	if err != nil {
		return false
	}
	return staticExtension(strings.ToLower(path.Ext(u.Path)))
}

// pageLoad reports whether the entry is a top-level page the browser showed:
// a document navigation (by Chromium's resource type or fetch destination when
// recorded, else any GET) answered with HTML, redirects excluded.
func (e harEntry) pageLoad() bool {
	if e.Method != "GET" || e.static() || e.Status >= 300 && e.Status < 400 {
		return false
	}
	switch {
	case e.ResourceType != "":
		if e.ResourceType != "document" {
			return false
		}
	case e.FetchDest != "":
		if e.FetchDest != "document" {
			return false
		}
	}
	return e.MimeType == "" || strings.HasPrefix(e.MimeType, "text/html") || strings.HasPrefix(e.MimeType, "application/xhtml")
}

// postValues decodes the request body into key → values: form-encoded bodies by
// their keys, JSON objects flattened to JSONPath-like keys ("$.note.body") plus
// their top-level keys.
func (e harEntry) postValues() map[string][]any {
	out := map[string][]any{}
	add := func(k string, v any) { out[k] = append(out[k], v) }
	text := strings.TrimSpace(e.PostText)
	switch {
	case strings.Contains(e.PostMimeType, "json") || strings.HasPrefix(text, "{"):
		var obj map[string]any
		if json.Unmarshal([]byte(text), &obj) == nil {
			flattenJSON("$", obj, func(k string, v any) {
				add(k, v)
				if rest, ok := strings.CutPrefix(k, "$."); ok && !strings.Contains(rest, ".") {
					add(rest, v)
				}
			})
			return out
		}
	case text != "":
		if q, err := url.ParseQuery(text); err == nil {
			for k, vs := range q {
				for _, v := range vs {
					add(k, v)
				}
			}
			return out
		}
	}
	for _, p := range e.PostParams {
		name, _ := url.QueryUnescape(p.Name)
		value, _ := url.QueryUnescape(p.Value)
		add(name, value)
	}
	return out
}

// flattenJSON calls fn for every leaf and list of v under prefix.
func flattenJSON(prefix string, v any, fn func(string, any)) {
	switch t := v.(type) {
	case map[string]any:
		for k, sub := range t {
			flattenJSON(prefix+"."+k, sub, fn)
		}
	default:
		fn(prefix, v)
	}
}
