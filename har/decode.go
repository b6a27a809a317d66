package har

import (
	"encoding/json"
	"strconv"
	"strings"
)

// decodeEntry decodes a captured entry into an Entry without reflection:
// HARs are mostly headers, and encoding/json's reflection over them was most
// of the time spent reading one. It reads only what it reads exactly as
// encoding/json does, and says false for anything else (a value of another
// type, a member twice, a key that differs from a field's name only in case
// or is escaped), for the caller to decode with encoding/json, which also
// gives the error. The capture is valid JSON (the scanner checked it) and
// its pruned objects hold only the keys an Entry reads.
//
// Strings are cut from one copy of the entry, so an entry costs a few
// allocations rather than one for each header.
func decodeEntry(data []byte) (*Entry, bool) {
	d := entryDecoder{s: string(data)}
	e := &Entry{}
	if !d.entry(e) {
		return nil, false
	}
	return e, true
}

// entryDecoder reads JSON that is known to be valid from s, at i.
type entryDecoder struct {
	s string
	i int
}

func (d *entryDecoder) entry(e *Entry) bool {
	return d.object(func(key string) (int, bool) {
		switch key {
		case "pageref":
			return 0, d.str(&e.Pageref)
		case "startedDateTime":
			return 1, d.str(&e.StartedDateTime)
		case "time":
			return 2, d.float(&e.Time)
		case "request":
			return 3, d.request(&e.Request)
		case "response":
			return 4, d.response(&e.Response)
		case "_resourceType":
			return 5, d.str(&e.ResourceType)
		}
		return d.other(key, "pageref", "startedDateTime", "time", "request", "response", "_resourceType")
	})
}

func (d *entryDecoder) request(r *Request) bool {
	if d.null() {
		return true
	}
	return d.object(func(key string) (int, bool) {
		switch key {
		case "method":
			return 0, d.str(&r.Method)
		case "url":
			return 1, d.str(&r.URL)
		case "headers":
			return 2, d.nameValues(&r.Headers)
		case "postData":
			return 3, d.postData(&r.PostData)
		}
		return d.other(key, "method", "url", "headers", "postData")
	})
}

func (d *entryDecoder) postData(p **PostData) bool {
	if d.null() {
		*p = nil
		return true
	}
	v := &PostData{}
	*p = v
	return d.object(func(key string) (int, bool) {
		switch key {
		case "mimeType":
			return 0, d.str(&v.MimeType)
		case "text":
			return 1, d.str(&v.Text)
		case "params":
			return 2, d.nameValues(&v.Params)
		}
		return d.other(key, "mimeType", "text", "params")
	})
}

func (d *entryDecoder) response(p **Response) bool {
	if d.null() {
		*p = nil
		return true
	}
	v := &Response{}
	*p = v
	return d.object(func(key string) (int, bool) {
		switch key {
		case "status":
			return 0, d.int(&v.Status)
		case "cookies":
			return 1, d.nameValues(&v.Cookies)
		case "content":
			return 2, d.content(&v.Content)
		}
		return d.other(key, "status", "cookies", "content")
	})
}

func (d *entryDecoder) content(c *Content) bool {
	if d.null() {
		return true
	}
	return d.object(func(key string) (int, bool) {
		switch key {
		case "mimeType":
			return 0, d.str(&c.MimeType)
		case "text":
			return 1, d.str(&c.Text)
		case "encoding":
			return 2, d.str(&c.Encoding)
		}
		return d.other(key, "mimeType", "text", "encoding")
	})
}

// nameValues reads an array of name/value objects as encoding/json does: null
// is a nil slice, [] an empty one, a null element a zero one.
func (d *entryDecoder) nameValues(out *[]NameValue) bool {
	if d.null() {
		*out = nil
		return true
	}
	if d.next() != '[' {
		return false
	}
	d.i++
	if d.next() == ']' {
		d.i++
		*out = []NameValue{}
		return true
	}
	list := make([]NameValue, 0, 8) // headers are a dozen or two

	for {
		var nv NameValue
		if !d.null() && !d.object(func(key string) (int, bool) {
			switch key {
			case "name":
				return 0, d.str(&nv.Name)
			case "value":
				return 1, d.str(&nv.Value)
			}
			return d.other(key, "name", "value")
		}) {
			return false
		}
		list = append(list, nv)
		switch d.next() {
		case ',':
			d.i++
		case ']':
			d.i++
			*out = list
			return true
		default:
			return false
		}
	}
}

// object reads an object, calling member for each key with the reader at
// the key's value: member reads the value and says which field it set
// (-1: none) and whether it could. A field set twice is refused, since
// encoding/json would merge the two.
func (d *entryDecoder) object(member func(key string) (field int, ok bool)) bool {
	if d.next() != '{' {
		return false
	}
	d.i++
	if d.next() == '}' {
		d.i++
		return true
	}
	seen := 0
	for {
		if d.next() != '"' {
			return false
		}
		end := strings.IndexByte(d.s[d.i+1:], '"')
		if end < 0 {
			return false
		}
		key := d.s[d.i+1 : d.i+1+end]
		if strings.IndexByte(key, '\\') >= 0 {
			return false // encoding/json unescapes keys before matching them
		}
		d.i += end + 2
		if d.next() != ':' {
			return false
		}
		d.i++
		d.next()
		field, ok := member(key)
		if !ok {
			return false
		}
		if field >= 0 {
			if seen&(1<<field) != 0 {
				return false
			}
			seen |= 1 << field
		}
		switch d.next() {
		case ',':
			d.i++
		case '}':
			d.i++
			return true
		default:
			return false
		}
	}
}

// other skips the value of a key that is none of the fields, unless
// encoding/json would match it to one of them anyway (it folds case, and
// some non-ASCII letters to ASCII ones).
func (d *entryDecoder) other(key string, fields ...string) (int, bool) {
	for i := range len(key) {
		if key[i] >= 0x80 {
			return -1, false
		}
	}
	for _, f := range fields {
		if strings.EqualFold(key, f) {
			return -1, false
		}
	}
	return -1, d.skip()
}

// next skips white space and returns the byte there (0 at the end).
func (d *entryDecoder) next() byte {
	for d.i < len(d.s) {
		switch c := d.s[d.i]; c {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return c
		}
	}
	return 0
}

// null reads a null, if one is next.
func (d *entryDecoder) null() bool {
	if d.next() == 'n' && strings.HasPrefix(d.s[d.i:], "null") {
		d.i += 4
		return true
	}
	return false
}

// str reads a string into out; null leaves out as it is.
func (d *entryDecoder) str(out *string) bool {
	if d.null() {
		return true
	}
	if d.next() != '"' {
		return false
	}
	start := d.i + 1
	end := strings.IndexByte(d.s[start:], '"')
	if end < 0 {
		return false
	}
	if strings.IndexByte(d.s[start:start+end], '\\') >= 0 {
		return d.escaped(out)
	}
	*out = d.s[start : start+end]
	d.i = start + end + 1
	return true
}

// escaped reads a string with escapes. \u escapes (surrogates and all) are
// left to encoding/json.
func (d *entryDecoder) escaped(out *string) bool {
	var b strings.Builder
	for i := d.i + 1; i+1 < len(d.s); {
		c := d.s[i]
		switch {
		case c == '"':
			*out = b.String()
			d.i = i + 1
			return true
		case c != '\\':
			b.WriteByte(c)
			i++
			continue
		}
		var r byte
		switch d.s[i+1] {
		case '"', '\\', '/':
			r = d.s[i+1]
		case 'b':
			r = '\b'
		case 'f':
			r = '\f'
		case 'n':
			r = '\n'
		case 'r':
			r = '\r'
		case 't':
			r = '\t'
		default:
			return d.viaJSON(out)
		}
		b.WriteByte(r)
		i += 2
	}
	return false
}

// viaJSON reads the string at i with encoding/json.
func (d *entryDecoder) viaJSON(out *string) bool {
	start := d.i
	if !d.skip() {
		return false
	}
	return json.Unmarshal([]byte(d.s[start:d.i]), out) == nil
}

// number returns the number at i, if one is.
func (d *entryDecoder) number() (string, bool) {
	start := d.i
	for d.i < len(d.s) {
		c := d.s[d.i]
		if c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			d.i++
			continue
		}
		break
	}
	return d.s[start:d.i], d.i > start
}

// int reads a JSON integer into out; null leaves it as it is. A fraction or
// an exponent is refused: encoding/json does not read them into an int.
func (d *entryDecoder) int(out *int) bool {
	if d.null() {
		return true
	}
	s, ok := d.number()
	if !ok || strings.ContainsAny(s, ".eE") {
		return false
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return false
	}
	*out = n
	return true
}

// float reads a number into out; null leaves it as it is.
func (d *entryDecoder) float(out *float64) bool {
	if d.null() {
		return true
	}
	s, ok := d.number()
	if !ok {
		return false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return false
	}
	*out = f
	return true
}

// skip reads past any value.
func (d *entryDecoder) skip() bool {
	depth := 0
	for {
		switch c := d.next(); c {
		case '"':
			i := d.i + 1
			for i < len(d.s) && d.s[i] != '"' {
				if d.s[i] == '\\' {
					i++
				}
				i++
			}
			if i >= len(d.s) {
				return false
			}
			d.i = i + 1
		case '{', '[':
			depth++
			d.i++
			continue
		case '}', ']':
			depth--
			d.i++
		case ',', ':':
			d.i++
			continue
		case 't', 'n':
			d.i += 4
		case 'f':
			d.i += 5
		case 0:
			return false
		default:
			if _, ok := d.number(); !ok {
				return false
			}
		}
		if depth <= 0 {
			return depth == 0
		}
	}
}
