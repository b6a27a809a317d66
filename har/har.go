// Package har reads HTTP Archive (HAR) files, the browser's network log of
// an episode, as a stream: one entry of log.entries at a time, with request
// and response bodies left unread unless asked for, so that memory stays flat
// however large the file. It is the one HAR reader: the episode runner's
// slimming, the timeline's request list and download, the WebArena-Verified
// network checks and the submission portal's validation all read through it.
//
// A document that is not a HAR is an *Error saying what was wrong and where;
// errors of the underlying reader come back wrapped, as they are.
package har

import (
	"encoding/json"
	"errors"
	"io"
	"iter"
)

// MaxBytes is the largest HAR read by default: a larger one is an error
// (TooLarge) rather than an unbounded read.
const MaxBytes = 512 << 20

// Options say how a HAR is read. The zero value reads up to MaxBytes and
// leaves every body out.
type Options struct {
	// MaxBytes caps the document; 0 means MaxBytes.
	MaxBytes int64
	// RequestBodies keeps each request's postData.text.
	RequestBodies bool
	// ResponseBodies keeps each response's content.text, except, when
	// MaxResponseBody is positive, one longer than that (decoded, in bytes).
	ResponseBodies  bool
	MaxResponseBody int64
}

// Entry is the part of a HAR entry Proctor reads. A body left out by the
// options reads as empty, its length in Omitted.
type Entry struct {
	// Index is the entry's position in log.entries.
	Index           int       `json:"-"`
	Pageref         string    `json:"pageref"`
	StartedDateTime string    `json:"startedDateTime"`
	Time            float64   `json:"time"`
	Request         Request   `json:"request"`
	Response        *Response `json:"response"` // nil when the entry has none
	ResourceType    string    `json:"_resourceType"`
}

// Request is an entry's request.
type Request struct {
	Method   string      `json:"method"`
	URL      string      `json:"url"`
	Headers  []NameValue `json:"headers"`
	PostData *PostData   `json:"postData"`
}

// PostData is a request's body.
type PostData struct {
	MimeType string      `json:"mimeType"`
	Text     string      `json:"text"`
	Params   []NameValue `json:"params"`
	// Omitted is the length in bytes of a text the options left out.
	Omitted int64 `json:"-"`
}

// Response is an entry's response.
type Response struct {
	Status  int         `json:"status"`
	Cookies []NameValue `json:"cookies"`
	Content Content     `json:"content"`
}

// Content is a response's body.
type Content struct {
	MimeType string `json:"mimeType"`
	Text     string `json:"text"`
	Encoding string `json:"encoding"`
	// Omitted is the length in bytes of a text the options left out.
	Omitted int64 `json:"-"`
}

// NameValue is a header, cookie or form field.
type NameValue struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Entries reads the HAR in r and yields its log.entries one at a time, in
// file order, each decoded afresh (nothing yielded is reused). Reading stops
// at the first problem, yielded last as an error with a nil entry: an *Error
// for the document (NoEntries for a log without entries, BadEntry for an
// entry that is not shaped like one), or r's read error.
func Entries(r io.Reader, o Options) iter.Seq2[*Entry, error] {
	return func(yield func(*Entry, error) bool) {
		s, err := walk(r, o, nil, func(raw *rawEntry) error {
			e, err := raw.decode()
			if err != nil {
				return err
			}
			if !yield(e, nil) {
				return errStop
			}
			return nil
		})
		if errors.Is(err, errStop) {
			return
		}
		if err == nil && !s.sawEntries {
			err = &Error{Kind: NoEntries, Entry: -1}
		}
		if err != nil {
			yield(nil, err)
		}
	}
}

// Validate checks that r holds a HAR of at most limit bytes (0: MaxBytes):
// valid JSON (strictly: UTF-8, escapes, numbers, nesting) whose "log" object
// has an "entries" array. It keeps nothing of the document, so a HAR of
// hundreds of megabytes costs a 64 KiB buffer, and returns how many entries
// it has. A problem with the content is an *Error; any other error is r's.
func Validate(r io.Reader, limit int64) (int, error) {
	s, err := walk(r, Options{MaxBytes: limit}, nil, nil)
	if err == nil && !s.sawEntries {
		err = &Error{Kind: NoEntries, Entry: -1}
	}
	if err != nil {
		return 0, err
	}
	return s.entries, nil
}

// decode decodes an entry into an Entry.
func (raw *rawEntry) decode() (*Entry, error) {
	e, ok := decodeEntry(raw.json)
	if !ok { // encoding/json reads what decodeEntry does not, and words the errors
		e = &Entry{}
		if err := raw.unmarshal(e); err != nil {
			return nil, err
		}
	}
	e.Index = raw.index
	if p := e.Request.PostData; p != nil {
		p.Omitted = raw.postOmitted
	}
	if e.Response != nil {
		e.Response.Content.Omitted = raw.responseOmitted
	}
	return e, nil
}

// unmarshal decodes the entry into v, a problem being a BadEntry *Error.
func (raw *rawEntry) unmarshal(v any) error {
	err := json.Unmarshal(raw.json, v)
	if err == nil {
		return nil
	}
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &typeErr) && typeErr.Field == "":
		return &Error{Kind: BadEntry, Entry: raw.index, Offset: raw.offset,
			Detail: "is " + kind(raw.json[0]) + ", not an object"}
	case errors.As(err, &typeErr):
		return &Error{Kind: BadEntry, Entry: raw.index, Offset: raw.offset,
			Detail: "has a " + typeErr.Value + " where the HAR format has a " + typeErr.Type.String() + " (" + typeErr.Field + ")"}
	}
	return &Error{Kind: BadEntry, Entry: raw.index, Offset: raw.offset, Detail: err.Error()}
}
