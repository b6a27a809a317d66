package verified

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"unicode/utf8"
)

// urlOptions are a NetworkEventEvaluator's URL settings; the zero value is a
// plain URL comparison (retrieved data of the url type).
type urlOptions struct {
	decodeBase64    bool
	ignored         map[string]bool
	ignoredPatterns []*pyRegexp
	querySchema     *schema
	// query, when set, replaces the URL's own query string (an expected
	// event's query_params).
	query map[string][]string
}

// urlValue is a normalised URL: its base (scheme, host and path, with a site
// URL replaced by its placeholder when the sites are known; or a pattern) and
// its query parameters. Values are lower-cased and sorted per name; with a
// query_params_schema they are typed values.
type urlValue struct {
	n       *normalizer // renders the pattern's placeholders when compared
	base    string
	pattern string // the spec's ^…$ pattern, when base is one
	query   map[string][]any
}

// parseURL normalises a URL as WebArena-Verified does: patterns are kept,
// placeholders render to their site, SSH clone URLs reduce to
// user@__SSH_HOST__:path, scheme and host fold, default ports and dot segments
// go, percent-escapes normalise, the site's URL becomes its placeholder again,
// base64-encoded query segments (decode_base64_query) join the query, ignored
// parameters go and the rest are lower-cased and sorted.
func (n *normalizer) parseURL(s string, o urlOptions) (*urlValue, error) {
	v, query, err := n.parseBase(s, o)
	if err != nil || v.query != nil {
		return v, err
	}
	if err := n.readQuery(v, query, o); err != nil {
		return nil, err
	}
	return v, nil
}

// parseBase is the first half of parseURL: the URL's base, and its query
// string parts, which readQuery reads into the value when its query is nil
// (a pattern's or an SSH URL's is read already). A caller that compares
// bases first need not read the query of a URL whose base differs.
func (n *normalizer) parseBase(s string, o urlOptions) (*urlValue, []string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil, fmt.Errorf("an empty URL")
	}
	if isRegexp(s) {
		content := s[1 : len(s)-1]
		if ph := placeholderIn(content); ph != "" {
			if _, ok := n.sites.render(content); !ok {
				if n.strict {
					return nil, nil, fmt.Errorf("URL pattern %q: the URL of site %s is unknown", s, ph)
				}
			}
		}
		v := &urlValue{n: n, base: s, pattern: s, query: map[string][]any{}}
		if o.query != nil {
			q, err := n.normalizeQuery(o.query, o)
			if err != nil {
				return nil, nil, err
			}
			v.query = q
		}
		return v, nil, nil
	}
	s = strings.TrimRight(s, "/")
	if strings.HasPrefix(s, "__") {
		rendered, ok := n.sites.render(s)
		if !ok && n.strict {
			return nil, nil, fmt.Errorf("URL %q: the URL of site %s is unknown (give the site URLs, or resolve the spec's placeholders)", s, placeholderIn(s))
		}
		s = rendered
	}
	if ssh, ok := sshBase(s); ok {
		return &urlValue{n: n, base: ssh, query: map[string][]any{}}, nil, nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, nil, fmt.Errorf("URL %q: %v", s, err)
	}
	if n.strict && (u.Scheme == "" || u.Host == "") && !strings.HasPrefix(s, "__") {
		return nil, nil, fmt.Errorf("URL %q is not absolute", s)
	}
	scheme := strings.ToLower(u.Scheme)
	host := dropDefaultPort(scheme, strings.ToLower(u.Host))
	path := normalizePath(u.EscapedPath())
	if u.Opaque != "" {
		path = u.Opaque
	}
	full := path
	if scheme != "" || host != "" {
		full = scheme + "://" + host + path
	}
	if d, ok := n.sites.derender(full); ok {
		full = d
	}
	var parts []string
	if o.decodeBase64 {
		var decoded []string
		full, decoded = extractBase64Query(full)
		parts = append(parts, decoded...)
	}
	if u.RawQuery != "" {
		parts = append(parts, strings.TrimSpace(u.RawQuery))
	}
	base := full
	if u.Fragment != "" {
		base += "#" + u.Fragment
	}
	return &urlValue{n: n, base: base}, parts, nil
}

// readQuery reads the query string parts parseBase left (or the options'
// query, which replaces them) into v.
func (n *normalizer) readQuery(v *urlValue, parts []string, o urlOptions) error {
	raw := o.query
	if raw == nil {
		raw = parseQS(strings.Join(parts, "&"))
		// The official evaluator decodes query values twice, so a value an
		// agent's tool encoded twice ("usb%2520wifi") reads as intended.
		for k, vals := range raw {
			for i, v := range vals {
				vals[i] = pyUnquote(v)
			}
			raw[k] = vals
		}
	}
	var err error
	v.query, err = n.normalizeQuery(raw, o)
	return err
}

// normalizeQuery drops ignored parameters, lower-cases, trims and sorts the
// values, and types them with the query_params_schema.
func (n *normalizer) normalizeQuery(raw map[string][]string, o urlOptions) (map[string][]any, error) {
	out := make(map[string][]any, len(raw))
	for k, vals := range raw {
		if o.ignoredParam(k) {
			continue
		}
		norm := make([]string, len(vals))
		for i, v := range vals {
			norm[i] = strings.TrimSpace(strings.ToLower(v))
		}
		sort.Strings(norm)
		typed := make([]any, len(norm))
		var prop *schema
		if o.querySchema != nil {
			prop = o.querySchema.Properties[k]
			if prop != nil && prop.Type == "array" && prop.Items != nil {
				prop = prop.Items
			}
		}
		for i, v := range norm {
			typed[i] = v
			if prop == nil {
				continue
			}
			tv, err := n.newNorm(prop.valueType(), v)
			switch {
			case err == nil:
				typed[i] = tv
			case n.strict:
				return nil, fmt.Errorf("query parameter %s: %v", k, err)
			}
		}
		out[k] = typed
	}
	return out, nil
}

func (o urlOptions) ignoredParam(name string) bool {
	if o.ignored[name] {
		return true
	}
	for _, re := range o.ignoredPatterns {
		if re.search(name) {
			return true
		}
	}
	return false
}

// sshBase reduces ssh://user@host:port/path and user@host:path to
// user@__SSH_HOST__:path in lower case: any host serves a clone URL.
func sshBase(s string) (string, bool) {
	lower := strings.ToLower(s)
	switch {
	case strings.HasPrefix(lower, "ssh://"):
		rest := s[len("ssh://"):]
		user := "git"
		if at := strings.Index(rest, "@"); at >= 0 && at < strings.IndexAny(rest+"/", "/") {
			user, rest = rest[:at], rest[at+1:]
		}
		path := ""
		if slash := strings.Index(rest, "/"); slash >= 0 {
			path = rest[slash:]
		}
		return strings.ToLower(user) + "@__SSH_HOST__:" + strings.ToLower(strings.TrimLeft(path, "/")), true
	case strings.HasPrefix(lower, "git@") && strings.Contains(s, ":") && !strings.Contains(s, "://"):
		user, hostPath, _ := strings.Cut(s, "@")
		_, path, _ := strings.Cut(hostPath, ":")
		return strings.ToLower(user) + "@__SSH_HOST__:" + strings.ToLower(strings.TrimLeft(path, "/")), true
	}
	return "", false
}

// normalizePath removes dot segments and normalises percent-escapes: escapes of
// unreserved characters are decoded, the others upper-cased.
func normalizePath(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] == '%' && i+2 < len(p) && isHex(p[i+1]) && isHex(p[i+2]) {
			c := unhex(p[i+1])<<4 | unhex(p[i+2])
			if isUnreserved(c) {
				b.WriteByte(c)
			} else {
				b.WriteString(strings.ToUpper(p[i : i+3]))
			}
			i += 2
			continue
		}
		b.WriteByte(p[i])
	}
	p = b.String()
	if !strings.Contains(p, "/.") {
		if p == "" {
			return "/"
		}
		return p
	}
	var out []string
	segs := strings.Split(p, "/")
	for i, s := range segs {
		switch s {
		case ".":
			if i == len(segs)-1 {
				out = append(out, "")
			}
		case "..":
			if len(out) > 1 {
				out = out[:len(out)-1]
			}
			if i == len(segs)-1 {
				out = append(out, "")
			}
		default:
			out = append(out, s)
		}
	}
	p = strings.Join(out, "/")
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return p
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

func isUnreserved(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

// extractBase64Query removes path segments that are URL-safe base64 of a
// query string ("key=value&…", as Magento encodes report filters) and returns
// the path without them and the decoded query strings.
func extractBase64Query(path string) (string, []string) {
	segs := strings.Split(path, "/")
	var decoded []string
	kept := segs[:0]
	for _, seg := range segs {
		if q, ok := base64QuerySegment(seg); ok {
			decoded = append(decoded, q)
			continue
		}
		kept = append(kept, seg)
	}
	if len(decoded) == 0 {
		return path, nil
	}
	var nonEmpty []string
	for _, s := range kept {
		if s != "" {
			nonEmpty = append(nonEmpty, s)
		}
	}
	out := strings.Join(nonEmpty, "/")
	if strings.HasPrefix(path, "/") {
		out = "/" + out
	}
	if strings.HasSuffix(path, "/") && !strings.HasSuffix(out, "/") {
		out += "/"
	}
	return out, decoded
}

func base64QuerySegment(seg string) (string, bool) {
	body := strings.TrimRight(seg, "=")
	if len(body) < 4 || len(seg)-len(body) > 2 {
		return "", false
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return "", false
		}
	}
	raw, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil || !utf8.Valid(raw) || !strings.Contains(string(raw), "=") {
		return "", false
	}
	q := strings.TrimSpace(pyUnquote(string(raw)))
	if q == "" {
		return "", false
	}
	return strings.TrimLeft(q, "?&"), true
}

// parseQS parses a query string as Python's parse_qs with blank values kept:
// "+" is a space, bad escapes stay as written.
func parseQS(q string) map[string][]string {
	out := map[string][]string{}
	for _, pair := range strings.Split(q, "&") {
		if pair == "" {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		k = pyUnquote(strings.ReplaceAll(k, "+", " "))
		v = pyUnquote(strings.ReplaceAll(v, "+", " "))
		out[k] = append(out[k], v)
	}
	return out
}

// pyUnquote decodes percent-escapes, leaving invalid ones as written.
func pyUnquote(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// sameBase compares the bases of two URLs: a pattern on either side must match
// the other's base (placeholders rendered), literal bases compare without case
// or trailing slash.
func (n *normalizer) sameBase(a, b *urlValue) bool {
	if a.pattern != "" {
		if n.patternMatches(a.pattern, b) {
			return true
		}
	}
	if b.pattern != "" {
		if n.patternMatches(b.pattern, a) {
			return true
		}
	}
	if a.pattern != "" || b.pattern != "" {
		return false
	}
	return strings.EqualFold(strings.TrimRight(a.base, "/"), strings.TrimRight(b.base, "/"))
}

func (n *normalizer) patternMatches(pattern string, other *urlValue) bool {
	if other.pattern != "" {
		return false
	}
	content := pattern[1 : len(pattern)-1]
	if rendered, ok := n.sites.render(content); ok {
		content = rendered
	}
	re, err := n.re.compile("^"+content+"$", false, false)
	if err != nil {
		return false
	}
	target, _ := n.sites.render(other.base)
	return re.match(target)
}

// sameQuery compares query parameters as WebArena-Verified does: every name on
// either side, its first value, a missing parameter equal to an empty one, and
// a pattern in the expected value matched against the actual one.
func (n *normalizer) sameQuery(expected, actual *urlValue) bool {
	for k := range expected.query {
		if !n.queryValueMatches(firstQueryValue(expected.query[k]), firstQueryValue(actual.query[k])) {
			return false
		}
	}
	for k := range actual.query {
		if _, ok := expected.query[k]; ok {
			continue
		}
		if !n.queryValueMatches("", firstQueryValue(actual.query[k])) {
			return false
		}
	}
	return true
}

func firstQueryValue(vals []any) any {
	if len(vals) == 0 {
		return ""
	}
	return vals[0]
}

func (n *normalizer) queryValueMatches(want, got any) bool {
	switch w := want.(type) {
	case string:
		if isRegexp(w) {
			re, err := n.re.compile(w, false, false)
			return err == nil && re.match(queryText(got))
		}
		g, ok := got.(string)
		return ok && g == w
	case *tval:
		if w.kind == typeString {
			if s, ok := got.(string); ok {
				return stringAltEqual(w.alts[0], s)
			}
		}
		g, ok := got.(*tval)
		return ok && w.equal(g)
	}
	return false
}

func queryText(v any) string {
	if t, ok := v.(*tval); ok {
		return t.text()
	}
	s, _ := v.(string)
	return s
}

// urlEqual is the url value type's equality, expected first.
func urlEqual(expected, actual *urlValue) bool {
	n := expected.n
	return n.sameBase(expected, actual) && n.sameQuery(expected, actual)
}

// show renders the URL as WebArena-Verified reports it.
func (v *urlValue) show() any {
	q := make(map[string]any, len(v.query))
	for k, vals := range v.query {
		shown := make([]any, len(vals))
		for i, x := range vals {
			if t, ok := x.(*tval); ok {
				shown[i] = t.show()
			} else {
				shown[i] = x
			}
		}
		q[k] = shown
	}
	return map[string]any{"base_url": v.base, "query_params": q}
}
