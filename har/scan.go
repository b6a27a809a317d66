package har

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"unicode/utf8"
)

// maxDepth bounds nesting; HAR logs nest fewer than ten levels.
const maxDepth = 512

// errStop ends a walk early without an error (an iterator's consumer
// stopped).
var errStop = errors.New("stop")

// Places in a HAR the scanner tracks: the path down to log.entries, and in
// each entry the path to the two bodies.
const (
	elsewhere = iota
	atRoot
	atLog
	atEntries
	atEntry
	atRequest
	atPostData
	atPostText
	atResponse
	atContent
	atContentText
)

// child is the place of the member key of an object at place at.
func child(at int, key string) int {
	switch {
	case at == atRoot && key == "log":
		return atLog
	case at == atLog && key == "entries":
		return atEntries
	case at == atEntry && key == "request":
		return atRequest
	case at == atEntry && key == "response":
		return atResponse
	case at == atRequest && key == "postData":
		return atPostData
	case at == atPostData && key == "text":
		return atPostText
	case at == atResponse && key == "content":
		return atContent
	case at == atContent && key == "text":
		return atContentText
	}
	return elsewhere
}

// entryReads reports whether Entry (or Requests, which reads less) reads the
// member key of an object at place at in an entry. The members it does not
// read (response headers, timings, cache, request cookies and query string,
// and so on) are left out when an entry is captured to be decoded, so that
// decoding does not go over them again.
func entryReads(at int, key string) bool {
	var read []string
	switch at {
	case atEntry:
		read = []string{"pageref", "startedDateTime", "time", "request", "response", "_resourceType"}
	case atRequest:
		read = []string{"method", "url", "headers", "postData"}
	case atPostData:
		read = []string{"mimeType", "text", "params"}
	case atResponse:
		read = []string{"status", "cookies", "content"}
	case atContent:
		read = []string{"mimeType", "text", "encoding"}
	default:
		return true
	}
	return slices.Contains(read, key)
}

// rawEntry is one element of log.entries as written, with each body the
// options leave out written as null.
type rawEntry struct {
	index  int
	offset int64  // of the entry's first byte
	json   []byte // valid until the next entry
	// responseOmitted and postOmitted are the lengths (decoded, in bytes) of
	// response.content.text and request.postData.text when left out; 0 when
	// kept or absent.
	responseOmitted, postOmitted int64
}

// scanner is a validating, streaming JSON reader that knows where a HAR's
// log.entries are. Outside the entries it keeps nothing but the key it needs
// to follow the path; each entry is either only validated or captured whole
// into a reusable buffer, its bodies left out as the options say, so that
// memory does not grow with the document (a body that is left out is never
// held, whatever its size). With tee set, every byte outside the entries is
// copied there as written.
type scanner struct {
	src     io.Reader
	buf     []byte // read from src; buf[pos:end] is not read yet
	pos     int
	end     int
	srcErr  error // src's error, reported once buf is read
	n       int64 // bytes read
	limit   int64
	readErr error
	opts    Options

	sawLog, sawEntries bool
	entries            int    // entries read whole
	key                []byte // the last tracked key, up to 64 bytes

	each      func(*rawEntry) error // nil: entries are only validated
	entry     rawEntry
	capturing bool // bytes read go to entry.json
	prune     bool // members no Entry field reads are left out of the capture

	// The string being read: its decoded length, and how much of it may be
	// captured before it is left out (-1: all of it).
	strLen, cut int64
	cutFrom     int  // where in entry.json the string that is left out began
	wasCut      bool // the string went over cut

	tee    *bufio.Writer
	teeing bool // bytes read go to tee
}

// walk reads a HAR document from r and calls each with every entry of its
// log.entries in order (none with each nil: the document is only checked).
// With tee, each entry is captured whole, as written, and everything else is
// copied to tee; without, an entry is captured with only the members an
// Entry reads.
// A problem with the document is an *Error; an error of r or of each is
// returned as it is, r's wrapped with "read HAR".
func walk(r io.Reader, o Options, tee *bufio.Writer, each func(*rawEntry) error) (*scanner, error) {
	s := &scanner{src: r, buf: make([]byte, 64<<10), limit: cmp.Or(o.MaxBytes, MaxBytes), opts: o, each: each, tee: tee, cut: -1, prune: tee == nil}
	err := s.document()
	switch {
	case errors.Is(err, errStop):
		return s, err
	case s.readErr != nil:
		var he *Error
		if errors.As(s.readErr, &he) {
			return s, s.readErr
		}
		return s, fmt.Errorf("read HAR: %w", s.readErr)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return s, &Error{Kind: Truncated, Offset: s.n, Entry: s.entries}
	case err != nil:
		return s, err
	case !s.sawLog:
		return s, &Error{Kind: NotHAR, Entry: -1, Detail: `the document has no "log" object`}
	}
	return s, nil
}

// syntax is a JSON syntax error at the current byte.
func (s *scanner) syntax(format string, args ...any) error {
	return &Error{Kind: Syntax, Offset: s.n, Entry: s.entries, Detail: fmt.Sprintf(format, args...)}
}

// shape is a document whose log or entries are of the wrong kind.
func (s *scanner) shape(format string, args ...any) error {
	return &Error{Kind: NotHAR, Offset: s.n, Entry: -1, Detail: fmt.Sprintf(format, args...)}
}

// took accounts for bytes read: the limit, the capture and the tee.
func (s *scanner) took(p []byte) error {
	s.n += int64(len(p))
	if s.n > s.limit {
		return s.tooLarge()
	}
	if s.capturing {
		if len(s.entry.json)+len(p) > cap(s.entry.json) {
			// Double: append grows a large slice by a quarter, which for a
			// body kept up to a limit would allocate several times the limit.
			s.entry.json = slices.Grow(s.entry.json, max(len(p), cap(s.entry.json)))
		}
		s.entry.json = append(s.entry.json, p...)
	}
	if s.teeing {
		_, _ = s.tee.Write(p) // a write error stays in the writer until Flush
	}
	return nil
}

// tookByte is took for one byte.
func (s *scanner) tookByte(c byte) error {
	s.n++
	if s.n > s.limit {
		return s.tooLarge()
	}
	if s.capturing {
		s.entry.json = append(s.entry.json, c)
	}
	if s.teeing {
		_ = s.tee.WriteByte(c)
	}
	return nil
}

func (s *scanner) tooLarge() error {
	return &Error{Kind: TooLarge, Offset: s.n, Limit: s.limit, Entry: s.entries}
}

func (s *scanner) byte() (byte, error) {
	if s.pos == s.end && !s.fill() {
		if s.srcErr == io.EOF {
			return 0, io.ErrUnexpectedEOF
		}
		s.readErr = s.srcErr
		return 0, s.srcErr
	}
	c := s.buf[s.pos]
	s.pos++
	return c, s.tookByte(c)
}

// fill reads more of the input once the buffer is read, and says whether
// there is any: false at the end of the input or on a read error, which
// stays in srcErr. A reader that keeps returning nothing is an error, as
// bufio has it.
func (s *scanner) fill() bool {
	if s.pos < s.end {
		return true
	}
	for range 100 {
		if s.srcErr != nil {
			return false
		}
		n, err := s.src.Read(s.buf)
		s.pos, s.end, s.srcErr = 0, n, err
		if n > 0 {
			return true
		}
	}
	s.srcErr = io.ErrNoProgress
	return false
}

// skipSpace reads past white space and returns the byte after it. A run of
// white space is read from the buffer in one step: indented HARs are a
// third white space.
func (s *scanner) skipSpace() (byte, error) {
	if s.pos < s.end && !isSpace(s.buf[s.pos]) { // no white space: the common case
		c := s.buf[s.pos]
		s.pos++
		return c, s.tookByte(c)
	}
	for {
		buf := s.window()
		if len(buf) == 0 {
			c, err := s.byte() // the end of the input or a read error
			if err != nil || !isSpace(c) {
				return c, err
			}
			continue
		}
		i := 0
		for i < len(buf) && isSpace(buf[i]) {
			i++
		}
		if i == len(buf) {
			if err := s.consume(buf); err != nil {
				return 0, err
			}
			continue
		}
		c := buf[i]
		return c, s.consume(buf[:i+1]) // the byte after the spaces is read with them
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// window returns the bytes buffered and not yet read, filling the buffer
// when it is empty: empty only at the end of the input or on a read error,
// which the next byte() reports. The bytes are valid until the next read.
func (s *scanner) window() []byte {
	if !s.fill() {
		return nil
	}
	return s.buf[s.pos:s.end]
}

// consume reads p, the front of the window, in one step.
func (s *scanner) consume(p []byte) error {
	s.pos += len(p)
	return s.took(p)
}

func (s *scanner) document() error {
	c, err := s.skipSpace()
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return &Error{Kind: Empty, Entry: -1}
	}
	if err != nil {
		return err
	}
	if c == 0x1f {
		if next, _ := s.peek(); next == 0x8b {
			return &Error{Kind: Gzip, Entry: -1}
		}
	}
	if c == 0xEF { // a UTF-8 byte order mark, which some tools write
		for _, want := range []byte{0xBB, 0xBF} {
			if b, err := s.byte(); err != nil || b != want {
				return cmp.Or(err, s.syntax("invalid byte order mark"))
			}
		}
		if c, err = s.skipSpace(); err != nil {
			return err
		}
	}
	// The copy starts at the document itself, without a byte order mark.
	if s.tee != nil {
		s.teeing = true
		_ = s.tee.WriteByte(c)
	}
	if err := s.value(c, 0, atRoot); err != nil {
		return err
	}
	for {
		if !s.fill() {
			if s.srcErr == io.EOF {
				return nil
			}
			s.readErr = s.srcErr
			return s.srcErr
		}
		c := s.buf[s.pos]
		s.pos++
		if err := s.tookByte(c); err != nil {
			return err
		}
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return s.syntax("unexpected %q after the document", c)
		}
	}
}

// kind names a JSON value by its first byte, for messages: "" for a byte
// that starts none.
func kind(c byte) string {
	switch {
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	case c == '"':
		return "a string"
	case c == 't', c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	case c == '-' || c >= '0' && c <= '9':
		return "a number"
	}
	return ""
}

func (s *scanner) value(c byte, depth, at int) error {
	if depth > maxDepth {
		return s.syntax("nested too deeply")
	}
	if k := kind(c); k != "" {
		switch {
		case at == atRoot && c != '{':
			return s.shape("the document is %s, not an object", k)
		case at == atLog && c != '{':
			return s.shape(`"log" is %s, not an object`, k)
		case at == atEntries && c != '[':
			return s.shape(`"entries" is %s, not an array`, k)
		}
	}
	switch {
	case c == '{':
		return s.object(depth, at)
	case c == '[':
		return s.array(depth, at)
	case c == '"':
		if at == atPostText || at == atContentText {
			return s.body(at)
		}
		return s.str(false)
	case c == '-' || c >= '0' && c <= '9':
		return s.number(c)
	case c == 't':
		return s.literal("rue")
	case c == 'f':
		return s.literal("alse")
	case c == 'n':
		return s.literal("ull")
	}
	return s.syntax("unexpected %q", c)
}

func (s *scanner) object(depth, at int) error {
	if at == atLog {
		s.sawLog = true
	}
	c, err := s.skipSpace()
	if err != nil {
		return err
	}
	if c == '}' {
		return nil
	}
	for {
		if c != '"' {
			return s.syntax("unexpected %q where a key was expected", c)
		}
		track := at != elsewhere && at != atEntries
		keyAt := len(s.entry.json) - 1 // where the key's quote was captured
		if err := s.str(track); err != nil {
			return err
		}
		next, drop := elsewhere, false
		if track {
			next = child(at, string(s.key))
			drop = s.prune && s.capturing && !entryReads(at, string(s.key))
		}
		if drop { // left out of the capture from its key to the next member
			s.entry.json = s.entry.json[:keyAt]
			s.capturing = false
		}
		if c, err = s.skipSpace(); err != nil {
			return err
		}
		if c != ':' {
			return s.syntax("unexpected %q where ':' was expected", c)
		}
		if c, err = s.skipSpace(); err != nil {
			return err
		}
		if err := s.value(c, depth+1, next); err != nil {
			return err
		}
		if c, err = s.skipSpace(); err != nil {
			return err
		}
		if drop {
			s.capturing = true
			if c == '}' { // the last member: the comma before it goes too
				s.entry.json = bytes.TrimRight(s.entry.json, " \t\r\n")
				s.entry.json = append(bytes.TrimSuffix(s.entry.json, []byte(",")), '}')
			}
		}
		switch c {
		case '}':
			return nil
		case ',':
			if c, err = s.skipSpace(); err != nil {
				return err
			}
		default:
			return s.syntax("unexpected %q where ',' or '}' was expected", c)
		}
	}
}

func (s *scanner) array(depth, at int) error {
	elem := elsewhere
	if at == atEntries {
		s.sawEntries = true
		elem = atEntry
		if s.teeing { // the entries are written by the caller, not copied
			s.teeing = false
			defer func() { s.teeing = true }()
		}
	}
	c, err := s.skipSpace()
	if err != nil {
		return err
	}
	if c == ']' {
		return s.closeArray(at)
	}
	for {
		if elem == atEntry {
			err = s.entryValue(c, depth+1)
		} else {
			err = s.value(c, depth+1, elem)
		}
		if err != nil {
			return err
		}
		if c, err = s.skipSpace(); err != nil {
			return err
		}
		switch c {
		case ']':
			return s.closeArray(at)
		case ',':
			if c, err = s.skipSpace(); err != nil {
				return err
			}
		default:
			return s.syntax("unexpected %q where ',' or ']' was expected", c)
		}
	}
}

// closeArray ends the copy of log.entries, whose bracket was not copied.
func (s *scanner) closeArray(at int) error {
	if at == atEntries && s.tee != nil {
		_ = s.tee.WriteByte(']')
	}
	return nil
}

// entryValue reads one element of log.entries whose first byte was c: only
// validated, or captured and handed to each.
func (s *scanner) entryValue(c byte, depth int) error {
	if s.each == nil {
		if err := s.value(c, depth, elsewhere); err != nil {
			return err
		}
		s.entries++
		return nil
	}
	s.entry = rawEntry{index: s.entries, offset: s.n - 1, json: append(s.entry.json[:0], c)}
	s.capturing = true
	err := s.value(c, depth, atEntry)
	s.capturing = false
	if err != nil {
		return err
	}
	s.entries++
	return s.each(&s.entry)
}

// body reads a request or response body (the string at
// request.postData.text or response.content.text of an entry) and leaves it
// out of the capture, as null, when the options say so or it is longer than
// they allow: its bytes are then read but never kept.
func (s *scanner) body(at int) error {
	keep, limit := s.opts.RequestBodies, int64(-1)
	if at == atContentText {
		keep, limit = s.opts.ResponseBodies, cmp.Or(s.opts.MaxResponseBody, -1)
	}
	if !keep {
		limit = 0
	}
	s.cut, s.cutFrom, s.wasCut = limit, len(s.entry.json)-1, false
	err := s.str(false)
	s.cut = -1
	if err != nil || !s.wasCut {
		return err
	}
	s.entry.json = append(s.entry.json, "null"...)
	s.capturing = true
	if at == atContentText {
		s.entry.responseOmitted = s.strLen
	} else {
		s.entry.postOmitted = s.strLen
	}
	return nil
}

// grow adds n bytes to the decoded length of the string being read, and
// stops capturing it once it is over its cut.
func (s *scanner) grow(n int) {
	s.strLen += int64(n)
	if s.capturing && s.cut >= 0 && s.strLen > s.cut {
		s.entry.json = s.entry.json[:s.cutFrom]
		s.capturing, s.wasCut = false, true
	}
}

// str reads a string after its opening quote, validating escapes and UTF-8
// and counting its decoded length (as encoding/json decodes it); with key,
// the (unescaped-as-is) bytes of a short string land in s.key.
func (s *scanner) str(key bool) error {
	s.key, s.strLen = s.key[:0], 0
	high := false // the last character was a \u escape of a high surrogate
	var rb [utf8.UTFMax]byte
	for {
		n, closed, err := s.skipPlain(key)
		if err != nil {
			return err
		}
		if n > 0 {
			s.grow(n)
			high = false
		}
		if closed {
			return nil
		}
		c, err := s.byte()
		if err != nil {
			return err
		}
		switch {
		case c == '"':
			return nil
		case c == '\\':
			e, err := s.byte()
			if err != nil {
				return err
			}
			switch e {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.grow(1)
				high = false
			case 'u':
				var r rune
				for range 4 {
					h, err := s.byte()
					if err != nil {
						return err
					}
					if !isHex(h) {
						return s.syntax(`invalid \u escape`)
					}
					r = r<<4 | rune(unhex(h))
				}
				switch {
				case r >= 0xDC00 && r < 0xE000 && high: // completes a pair: 4 bytes in all
					s.grow(1)
					high = false
				case r >= 0xD800 && r < 0xE000: // U+FFFD, unless a low surrogate follows
					s.grow(3)
					high = r < 0xDC00
				default:
					s.grow(utf8.RuneLen(r))
					high = false
				}
			default:
				return s.syntax(`invalid escape \%c`, e)
			}
			if key {
				s.key = append(s.key, '\\')
			}
		case c < 0x20:
			return s.syntax("control character in a string")
		case c < utf8.RuneSelf:
			if key && len(s.key) < 64 {
				s.key = append(s.key, c)
			}
			s.grow(1)
			high = false
		default:
			rb[0] = c
			size := 2
			switch {
			case c >= 0xF0:
				size = 4
			case c >= 0xE0:
				size = 3
			}
			for i := 1; i < size; i++ {
				if rb[i], err = s.byte(); err != nil {
					return err
				}
			}
			// Only the length tells: a correctly encoded U+FFFD decodes to
			// RuneError too, with all its bytes.
			if _, n := utf8.DecodeRune(rb[:size]); n != size {
				return s.syntax("invalid UTF-8 in a string")
			}
			s.grow(size)
			high = false
		}
	}
}

// plainPrefix is the length of the run of plain string bytes at the front
// of buf: up to the first quote, backslash, control character, invalid
// UTF-8 or rune cut by buf's end. The common case, a run of valid text up to
// a quote or backslash, is found with vectorised searches; anything else is
// settled byte by byte.
func plainPrefix(buf []byte) int {
	end := len(buf)
	if q := bytes.IndexByte(buf, '"'); q >= 0 {
		end = q
	}
	if b := bytes.IndexByte(buf[:end], '\\'); b >= 0 {
		end = b
	}
	if span := buf[:end]; !hasControl(span) && utf8.Valid(span) {
		return end
	}
	return plainPrefixBytewise(buf)
}

// plainPrefixBytewise is plainPrefix one byte (or rune) at a time: the
// fallback for a run that holds a control byte or is not valid UTF-8, which
// decides exactly where it stops, and the reference the fast path is tested
// against.
func plainPrefixBytewise(buf []byte) int {
	i := 0
	for i < len(buf) {
		c := buf[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(buf[i:])
			if r == utf8.RuneError && size <= 1 {
				break // invalid, or cut by the buffer's end: byte() decides
			}
			i += size
			continue
		}
		if c == '"' || c == '\\' || c < 0x20 {
			break
		}
		i++
	}
	return i
}

// hasControl reports whether p holds a byte below 0x20, eight bytes at a
// time: a word has one exactly when subtracting 0x20 from every byte
// borrows into the top bit of a byte whose own top bit was clear.
func hasControl(p []byte) bool {
	const ones, highs = 0x2020202020202020, 0x8080808080808080
	for len(p) >= 8 {
		x := binary.LittleEndian.Uint64(p)
		if (x-ones)&^x&highs != 0 {
			return true
		}
		p = p[8:]
	}
	for _, c := range p {
		if c < 0x20 {
			return true
		}
	}
	return false
}

// skipPlain consumes the run of plain string bytes (no quote, escape or
// control character; valid UTF-8) at the front of the buffer in one step
// and says how many, and whether the closing quote ended the run (it is then
// read too): HAR bodies are long strings, and byte-at-a-time reads would
// make them the bottleneck.
func (s *scanner) skipPlain(key bool) (int, bool, error) {
	total := 0
	for {
		buf := s.window()
		if len(buf) == 0 {
			return total, false, nil // the next byte() reports it
		}
		i := plainPrefix(buf)
		if key && len(s.key) < 64 {
			s.key = append(s.key, buf[:min(i, 64-len(s.key))]...)
		}
		closed := i < len(buf) && buf[i] == '"'
		read := buf[:i]
		if closed {
			read = buf[:i+1]
		}
		if err := s.consume(read); err != nil {
			return total, false, err
		}
		total += i
		if i < len(buf) {
			return total, closed, nil
		}
		if s.capturing && s.cut >= 0 && s.strLen+int64(total) > s.cut {
			return total, false, nil // let grow stop the capture before the next buffer
		}
	}
}

// number reads a number whose first byte was c, by the JSON grammar.
func (s *scanner) number(c byte) error {
	var err error
	if c == '-' {
		if c, err = s.byte(); err != nil {
			return err
		}
	}
	switch {
	case c == '0':
	case c >= '1' && c <= '9':
		if _, err := s.digits(); err != nil {
			return err
		}
	default:
		return s.syntax("invalid number")
	}
	if next, err := s.peek(); err != nil {
		return err
	} else if next == '.' {
		_, _ = s.byte()
		if n, err := s.digits(); err != nil || n == 0 {
			return cmp.Or(err, s.syntax("invalid number"))
		}
	}
	next, err := s.peek()
	if err != nil || next != 'e' && next != 'E' {
		return err
	}
	_, _ = s.byte()
	if next, err = s.peek(); err != nil {
		return err
	} else if next == '+' || next == '-' {
		_, _ = s.byte()
	}
	if n, err := s.digits(); err != nil || n == 0 {
		return cmp.Or(err, s.syntax("invalid number"))
	}
	return nil
}

// digits consumes a run of decimal digits and says how many.
func (s *scanner) digits() (int, error) {
	n := 0
	for {
		buf := s.window()
		i := 0
		for i < len(buf) && buf[i] >= '0' && buf[i] <= '9' {
			i++
		}
		if err := s.consume(buf[:i]); err != nil {
			return n, err
		}
		n += i
		if i < len(buf) || len(buf) == 0 {
			_, err := s.peek() // a read error ends the number with it
			return n, err
		}
	}
}

// peek returns the next byte without consuming it: 0 at the end of the input.
func (s *scanner) peek() (byte, error) {
	if !s.fill() {
		if s.srcErr == io.EOF {
			return 0, nil
		}
		s.readErr = s.srcErr
		return 0, s.srcErr
	}
	return s.buf[s.pos], nil
}

func (s *scanner) literal(rest string) error {
	for i := range len(rest) {
		c, err := s.byte()
		if err != nil {
			return err
		}
		if c != rest[i] {
			return s.syntax("invalid literal")
		}
	}
	return nil
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c|0x20 >= 'a' && c|0x20 <= 'f'
}

func unhex(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c | 0x20 - 'a' + 10
}
