package sandbox

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"proctor/models"
)

// driver is a tiny simulated browser for reference action scripts: goto is a GET,
// click follows a link or submits the enclosing form of a submit button, fill
// and select set form fields. Selectors must be "#id". Every request is recorded
// as a HAR entry, the way Playwright records an episode, so the scripts can be
// graded by the eval package without a real browser.
type driver struct {
	t       *testing.T
	client  *http.Client
	pageURL *url.URL
	page    *html.Node
	fields  map[*html.Node]string // values set by fill and select on the current page
	entries []map[string]any
	final   *models.Action
}

func newDriver(t *testing.T) *driver {
	return &driver{
		t:      t,
		client: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
	}
}

// har returns the recorded requests as a HAR document.
func (d *driver) har() []byte {
	b, err := json.Marshal(map[string]any{"log": map[string]any{"version": "1.2", "entries": d.entries}})
	require.NoError(d.t, err)
	return b
}

// navigate requests a page as the browser's top-level document, following
// redirects. A response that is not HTML (a download) leaves the page as it was.
func (d *driver) navigate(method, rawURL string, form url.Values) {
	d.t.Helper()
	for hops := 0; ; hops++ {
		require.Less(d.t, hops, 5, "too many redirects at %s", rawURL)
		var body io.Reader
		if method == http.MethodPost {
			body = strings.NewReader(form.Encode())
		}
		req, err := http.NewRequest(method, rawURL, body)
		require.NoError(d.t, err)
		req.Header.Set("Sec-Fetch-Dest", "document")
		entry := map[string]any{"method": method, "url": rawURL,
			"headers": []any{map[string]any{"name": "Sec-Fetch-Dest", "value": "document"}}}
		if method == http.MethodPost {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			entry["postData"] = map[string]any{"mimeType": "application/x-www-form-urlencoded", "text": form.Encode()}
		}
		resp, err := d.client.Do(req)
		require.NoError(d.t, err)
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(d.t, err)
		mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		d.entries = append(d.entries, map[string]any{
			"request":  entry,
			"response": map[string]any{"status": resp.StatusCode, "content": map[string]any{"mimeType": resp.Header.Get("Content-Type")}},
		})
		if resp.StatusCode >= 300 && resp.StatusCode < 400 {
			loc, err := req.URL.Parse(resp.Header.Get("Location"))
			require.NoError(d.t, err)
			method, rawURL, form = http.MethodGet, loc.String(), nil
			continue
		}
		require.Less(d.t, resp.StatusCode, 400, "%s %s answered %d", method, rawURL, resp.StatusCode)
		if mt != "text/html" {
			return // a download: the browser stays on the page
		}
		doc, err := html.Parse(bytes.NewReader(data))
		require.NoError(d.t, err)
		d.page, d.pageURL, d.fields = doc, req.URL, map[*html.Node]string{}
		return
	}
}

// byID finds the element a "#id" selector names on the current page.
func (d *driver) byID(target *models.Target) *html.Node {
	d.t.Helper()
	require.NotNil(d.t, target, "the action needs a target")
	id, ok := strings.CutPrefix(target.Selector, "#")
	require.True(d.t, ok && id != "" && !strings.ContainsAny(id, " .#[>:"), "selector %q: reference scripts use #id selectors", target.Selector)
	require.NotNil(d.t, d.page, "no page is loaded")
	var found *html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && attr(n, "id") == id {
			require.Nil(d.t, found, "id %q is not unique on %s", id, d.pageURL)
			found = n
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(d.page)
	require.NotNil(d.t, found, "no element #%s on %s", id, d.pageURL)
	return found
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasAttr(n *html.Node, key string) bool {
	for _, a := range n.Attr {
		if a.Key == key {
			return true
		}
	}
	return false
}

func text(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

// do plays one action.
func (d *driver) do(a models.Action) {
	d.t.Helper()
	require.NoError(d.t, a.Validate())
	switch a.Type {
	case models.ActGoto:
		d.navigate(http.MethodGet, a.URL, nil)
	case models.ActFill:
		n := d.byID(a.Target)
		ok := n.DataAtom == atom.Textarea || n.DataAtom == atom.Input && !map[string]bool{"hidden": true, "submit": true, "button": true, "checkbox": true, "radio": true}[attr(n, "type")]
		require.True(d.t, ok, "fill %s: not a text field", a.Target.Selector)
		require.False(d.t, hasAttr(n, "disabled"), "fill %s: the field is disabled", a.Target.Selector)
		d.fields[n] = a.Text
	case models.ActSelect:
		n := d.byID(a.Target)
		require.Equal(d.t, atom.Select, n.DataAtom, "select %s: not a select", a.Target.Selector)
		require.Len(d.t, a.Values, 1, "select %s: one value", a.Target.Selector)
		value, found := "", false
		for _, o := range options(n) {
			if optionValue(o) == a.Values[0] || strings.TrimSpace(text(o)) == a.Values[0] {
				value, found = optionValue(o), true
			}
		}
		require.True(d.t, found, "select %s: no option %q", a.Target.Selector, a.Values[0])
		d.fields[n] = value
	case models.ActClick:
		n := d.byID(a.Target)
		switch {
		case n.DataAtom == atom.A:
			href, err := d.pageURL.Parse(attr(n, "href"))
			require.NoError(d.t, err)
			href.Fragment = ""
			d.navigate(http.MethodGet, href.String(), nil)
		case n.DataAtom == atom.Button && (attr(n, "type") == "" || attr(n, "type") == "submit"),
			n.DataAtom == atom.Input && attr(n, "type") == "submit":
			require.False(d.t, hasAttr(n, "disabled"), "click %s: the button is disabled", a.Target.Selector)
			d.submit(n)
		default:
			d.t.Fatalf("click %s: neither a link nor a submit button", a.Target.Selector)
		}
	case models.ActAnswer, models.ActStop:
		d.final = &a
	default:
		d.t.Fatalf("action %s is not supported by the simulated driver", a.Type)
	}
}

func options(sel *html.Node) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.DataAtom == atom.Option {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(sel)
	return out
}

func optionValue(o *html.Node) string {
	if hasAttr(o, "value") {
		return attr(o, "value")
	}
	return strings.TrimSpace(text(o))
}

// submit sends the form enclosing a submit button with its fields' values,
// checking required fields the way the browser would.
func (d *driver) submit(button *html.Node) {
	d.t.Helper()
	form := button.Parent
	for form != nil && form.DataAtom != atom.Form {
		form = form.Parent
	}
	require.NotNil(d.t, form, "the button is not inside a form")
	values := url.Values{}
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && attr(n, "name") != "" && !hasAttr(n, "disabled") {
			name := attr(n, "name")
			value, set := d.fields[n]
			include := true
			switch n.DataAtom {
			case atom.Input:
				switch attr(n, "type") {
				case "submit", "button", "image", "reset":
					include = false
				case "checkbox", "radio":
					include = hasAttr(n, "checked")
				}
				if !set {
					value = attr(n, "value")
				}
			case atom.Textarea:
				if !set {
					value = text(n)
				}
			case atom.Select:
				if !set {
					opts := options(n)
					for _, o := range opts {
						if hasAttr(o, "selected") {
							value, set = optionValue(o), true
						}
					}
					if !set && len(opts) > 0 {
						value = optionValue(opts[0])
					}
				}
			default:
				include = false
			}
			if include {
				require.False(d.t, hasAttr(n, "required") && strings.TrimSpace(value) == "",
					"the required field %q is empty", name)
				values.Add(name, value)
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(form)
	if name := attr(button, "name"); name != "" {
		values.Add(name, attr(button, "value"))
	}
	action, err := d.pageURL.Parse(attr(form, "action"))
	require.NoError(d.t, err)
	if strings.EqualFold(attr(form, "method"), "post") {
		d.navigate(http.MethodPost, action.String(), values)
		return
	}
	action.RawQuery = values.Encode()
	d.navigate(http.MethodGet, action.String(), nil)
}
