package har

import (
	"errors"
	"fmt"
	"io"

	"proctor/models"
)

// Kind says what is wrong with a HAR.
type Kind int

// The kinds of *Error.
const (
	// TooLarge: the document is longer than the limit it is read under.
	TooLarge Kind = iota + 1
	// Empty: there is nothing but white space.
	Empty
	// Gzip: the file is gzip-compressed JSON.
	Gzip
	// Truncated: the document ends before its last value does.
	Truncated
	// Syntax: the document is not JSON.
	Syntax
	// NotHAR: JSON, but no log object, or a log or entries of the wrong kind.
	NotHAR
	// NoEntries: the log has no entries array.
	NoEntries
	// BadEntry: an entry does not have the shape of a HAR entry.
	BadEntry
)

// Error is a HAR that cannot be read, with what was wrong and where. Its
// message is meant for the people who made the file.
type Error struct {
	Kind Kind
	// Entry is the index in log.entries of the entry the problem is in (or,
	// outside the entries, how many had been read whole); -1 when that says
	// nothing.
	Entry int
	// Offset is where in the document the problem is: how many bytes had
	// been read when it was found (the problem is at or just before that
	// byte); for BadEntry, where the entry begins.
	Offset int64
	// Limit is the size limit a TooLarge document went over.
	Limit int64
	// Detail is the specific problem, for Syntax, NotHAR and BadEntry.
	Detail string
}

func (e *Error) Error() string {
	switch e.Kind {
	case TooLarge:
		return "the HAR is over the limit of " + models.FormatBytes(e.Limit)
	case Empty:
		return "the HAR is empty"
	case Gzip:
		return "the HAR is gzip-compressed: decompress it first"
	case Truncated:
		return fmt.Sprintf("the HAR is truncated: the document ends too early, after %d bytes and %d complete %s",
			e.Offset, e.Entry, plural(e.Entry, "entry", "entries"))
	case Syntax:
		return fmt.Sprintf("the HAR is not valid JSON: %s (byte %d)", e.Detail, e.Offset)
	case NotHAR:
		if e.Offset > 0 {
			return fmt.Sprintf("not a HAR: %s (byte %d)", e.Detail, e.Offset)
		}
		return "not a HAR: " + e.Detail
	case NoEntries:
		return `not a HAR: "log" has no "entries" array`
	case BadEntry:
		return fmt.Sprintf("not a HAR: entry %d %s", e.Entry, e.Detail)
	}
	return "the HAR cannot be read: " + e.Detail
}

// KindOf returns the kind of a HAR problem in err's chain, 0 when there is
// none (a read error, or no error).
func KindOf(err error) Kind {
	var he *Error
	if errors.As(err, &he) {
		return he.Kind
	}
	return 0
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// LimitReader returns a reader of r's first n bytes that, rather than
// stopping silently, fails with a TooLarge *Error when r holds more: for a
// HAR read by something other than this package's readers (which apply
// Options.MaxBytes themselves), hashed or copied on its way.
func LimitReader(r io.Reader, n int64) io.Reader { return &limitedReader{r: r, left: n, limit: n} }

type limitedReader struct {
	r           io.Reader
	left, limit int64
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		// At the limit: only the end of the stream is fine.
		var probe [1]byte
		n, err := l.r.Read(probe[:])
		if n == 0 && err != nil {
			return 0, err
		}
		if n == 0 {
			return 0, nil
		}
		return 0, &Error{Kind: TooLarge, Entry: -1, Offset: l.limit + 1, Limit: l.limit}
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}
