package har

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// rewrite copies the HAR in r to w entry by entry: edit returns what to write
// in each entry's place (nil leaves it out), and everything outside
// log.entries is copied as written. A log without entries is copied as it
// is. Only the entry being edited is held, its bodies as o says.
func rewrite(w io.Writer, r io.Reader, o Options, edit func(*rawEntry) ([]byte, error)) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	wrote := false
	_, err := walk(r, o, bw, func(e *rawEntry) error {
		out, err := edit(e)
		if err != nil || out == nil {
			return err
		}
		if wrote {
			_ = bw.WriteByte(',')
		}
		wrote = true
		_, err = bw.Write(out)
		return err
	})
	if err != nil {
		return err
	}
	return bw.Flush()
}

// Filter copies the HAR in r to w keeping only the entries whose start time
// keep accepts (entries without a readable start time are left out), each as
// written; everything else (pages, creator, other members) is copied as it
// is. It returns how many entries it left out. A document that is not a HAR
// is an *Error.
func Filter(w io.Writer, r io.Reader, keep func(started time.Time) bool) (int, error) {
	dropped := 0
	err := rewrite(w, r, Options{RequestBodies: true, ResponseBodies: true}, func(e *rawEntry) ([]byte, error) {
		var head struct {
			StartedDateTime string `json:"startedDateTime"`
		}
		_ = json.Unmarshal(e.json, &head) // an entry of another shape has no start time
		if t, ok := startTime(head.StartedDateTime); !ok || !keep(t) {
			dropped++
			return nil, nil
		}
		return e.json, nil
	})
	return dropped, err
}

// startTime parses a HAR startedDateTime (ISO 8601 with an offset).
func startTime(s string) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}

// Slim copies the HAR in r to w without the response bodies no evaluator
// reads: binary ones (by their MIME type) and text ones longer than maxText
// bytes, each replaced by a comment saying what was left out. Everything else
// (requests with their post data, statuses, headers, timings) is kept as
// written; an entry that loses a body is written anew with its members in
// key order. Bodies over maxText are never held; maxText 0 keeps text bodies
// of any length.
func Slim(w io.Writer, r io.Reader, maxText int64) error {
	o := Options{RequestBodies: true, ResponseBodies: true, MaxResponseBody: maxText}
	return rewrite(w, r, o, func(e *rawEntry) ([]byte, error) {
		var head struct {
			Response struct {
				Content struct {
					MimeType looseString `json:"mimeType"`
					Encoding looseString `json:"encoding"`
					Text     isString    `json:"text"`
				} `json:"content"`
			} `json:"response"`
		}
		if err := json.Unmarshal(e.json, &head); err != nil {
			return e.json, nil // not an entry of the usual shape: kept as it is
		}
		c := head.Response.Content
		var comment string
		switch {
		case !bool(c.Text) && e.responseOmitted == 0:
			return e.json, nil
		case !textualMIME(string(c.MimeType)) && !(c.MimeType == "" && c.Encoding == ""):
			comment = "binary body omitted by Proctor"
		case e.responseOmitted > 0:
			comment = fmt.Sprintf("body of %d bytes omitted by Proctor (limit %d)", e.responseOmitted, maxText)
		default:
			return e.json, nil
		}
		return withoutBody(e.json, comment)
	})
}

// isString records whether a JSON value is a string, without keeping it.
type isString bool

func (s *isString) UnmarshalJSON(b []byte) error {
	*s = len(b) > 0 && b[0] == '"'
	return nil
}

// looseString is a string member that reads as "" when it is not a string.
type looseString string

func (s *looseString) UnmarshalJSON(b []byte) error {
	var v string
	if json.Unmarshal(b, &v) == nil {
		*s = looseString(v)
	}
	return nil
}

// withoutBody rewrites an entry with its response.content's text and
// encoding replaced by a comment; numbers are kept exactly as written.
func withoutBody(entry []byte, comment string) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(entry))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	resp, _ := doc["response"].(map[string]any)
	content, _ := resp["content"].(map[string]any)
	delete(content, "text")
	delete(content, "encoding")
	content["comment"] = comment
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n")), nil
}

// textualMIME reports whether a body of this type is text worth keeping.
func textualMIME(m string) bool {
	m = strings.ToLower(strings.TrimSpace(strings.SplitN(m, ";", 2)[0]))
	switch {
	case strings.HasPrefix(m, "text/"), strings.HasSuffix(m, "+json"), strings.HasSuffix(m, "+xml"):
		return true
	}
	switch m {
	case "application/json", "application/javascript", "application/x-javascript", "application/ecmascript",
		"application/xml", "application/x-www-form-urlencoded", "application/graphql", "application/ld+json":
		return true
	}
	return false
}
