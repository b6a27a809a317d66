package bundle

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// maxJSONDepth bounds nesting in a streamed JSON document; HAR logs nest
// fewer than ten levels.
const maxJSONDepth = 512

// overLimit reports a streamed document larger than its limit.
type overLimit struct{}

func (overLimit) Error() string { return "over the size limit" }

// harScan is what scanning a HAR found.
type harScan struct {
	Entries int
}

// scanHAR checks that r holds a HAR log (a JSON object whose "log" object has
// an "entries" array) of at most limit bytes, without holding it: the
// document is validated byte by byte (syntax, UTF-8, nesting), so a HAR of
// hundreds of megabytes costs a 64 KiB buffer. problem is why the content is
// not a HAR; err is a read error of r (a refusal from the walk).
func scanHAR(r io.Reader, limit int64) (scan harScan, problem string, err error) {
	s := &jsonScanner{r: bufio.NewReaderSize(r, 64<<10), limit: limit}
	perr := s.document()
	switch {
	case s.readErr != nil:
		return scan, "", s.readErr
	case errors.As(perr, new(overLimit)):
		return scan, fmt.Sprintf("the HAR is over the limit of %s", humanBytes(limit)), nil
	case errors.Is(perr, io.ErrUnexpectedEOF):
		return scan, fmt.Sprintf("not valid JSON: the document ends too early (after %d bytes)", s.n), nil
	case perr != nil:
		return scan, fmt.Sprintf("not valid JSON: %v (byte %d)", perr, s.n), nil
	case !s.sawLog:
		return scan, `not a HAR: the document has no "log" object`, nil
	case !s.sawEntries:
		return scan, `not a HAR: "log" has no "entries" array`, nil
	}
	return harScan{Entries: s.entries}, "", nil
}

// jsonScanner is a validating JSON reader that keeps nothing but the path
// it needs to recognise a HAR's log.entries.
type jsonScanner struct {
	r          *bufio.Reader
	n, limit   int64
	readErr    error
	sawLog     bool
	sawEntries bool
	entries    int
	key        []byte
}

// Places in a HAR the scanner tracks.
const (
	atRoot = iota
	atLog
	atEntries
	elsewhere
)

func (s *jsonScanner) byte() (byte, error) {
	c, err := s.r.ReadByte()
	if err != nil {
		if err == io.EOF {
			return 0, io.ErrUnexpectedEOF
		}
		s.readErr = err
		return 0, err
	}
	s.n++
	if s.limit > 0 && s.n > s.limit {
		return 0, overLimit{}
	}
	return c, nil
}

func (s *jsonScanner) skipSpace() (byte, error) {
	for {
		c, err := s.byte()
		if err != nil {
			return 0, err
		}
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return c, nil
		}
	}
}

func (s *jsonScanner) document() error {
	c, err := s.skipSpace()
	if err != nil {
		return err
	}
	if c == 0xEF { // a UTF-8 byte order mark, which some tools write
		for _, want := range []byte{0xBB, 0xBF} {
			if b, err := s.byte(); err != nil || b != want {
				return errors.New("invalid byte order mark")
			}
		}
		if c, err = s.skipSpace(); err != nil {
			return err
		}
	}
	if err := s.value(c, 0, atRoot); err != nil {
		return err
	}
	for {
		c, err := s.r.ReadByte()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			s.readErr = err
			return err
		}
		s.n++
		if s.limit > 0 && s.n > s.limit {
			return overLimit{}
		}
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return fmt.Errorf("unexpected %q after the document", c)
		}
	}
}

func (s *jsonScanner) value(c byte, depth, at int) error {
	if depth > maxJSONDepth {
		return errors.New("nested too deeply")
	}
	switch {
	case c == '{':
		return s.object(depth, at)
	case c == '[':
		return s.array(depth, at)
	case c == '"':
		if at != elsewhere {
			return errors.New("a string where an object was expected")
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
	return fmt.Errorf("unexpected %q", c)
}

func (s *jsonScanner) object(depth, at int) error {
	switch at {
	case atLog:
		s.sawLog = true
	case atEntries:
		return errors.New(`"entries" is not an array`)
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
			return fmt.Errorf("unexpected %q where a key was expected", c)
		}
		track := at == atRoot || at == atLog
		if err := s.str(track); err != nil {
			return err
		}
		child := elsewhere
		if track {
			switch key := string(s.key); {
			case at == atRoot && key == "log":
				child = atLog
			case at == atLog && key == "entries":
				child = atEntries
			}
		}
		if c, err = s.skipSpace(); err != nil {
			return err
		}
		if c != ':' {
			return fmt.Errorf("unexpected %q where ':' was expected", c)
		}
		if c, err = s.skipSpace(); err != nil {
			return err
		}
		if child == atLog && c != '{' {
			return errors.New(`"log" is not an object`)
		}
		if err := s.value(c, depth+1, child); err != nil {
			return err
		}
		if c, err = s.skipSpace(); err != nil {
			return err
		}
		switch c {
		case '}':
			return nil
		case ',':
			if c, err = s.skipSpace(); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unexpected %q where ',' or '}' was expected", c)
		}
	}
}

func (s *jsonScanner) array(depth, at int) error {
	switch at {
	case atRoot, atLog:
		return errors.New("an array where an object was expected")
	case atEntries:
		s.sawEntries = true
	}
	c, err := s.skipSpace()
	if err != nil {
		return err
	}
	if c == ']' {
		return nil
	}
	for {
		if at == atEntries {
			s.entries++
		}
		if err := s.value(c, depth+1, elsewhere); err != nil {
			return err
		}
		if c, err = s.skipSpace(); err != nil {
			return err
		}
		switch c {
		case ']':
			return nil
		case ',':
			if c, err = s.skipSpace(); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unexpected %q where ',' or ']' was expected", c)
		}
	}
}

// str reads a string after its opening quote, validating escapes and UTF-8;
// with keep, the (unescaped-as-is) bytes of a short string land in s.key.
func (s *jsonScanner) str(keep bool) error {
	s.key = s.key[:0]
	var rb [utf8.UTFMax]byte
	for {
		if err := s.skipPlain(keep); err != nil {
			return err
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
			case 'u':
				for range 4 {
					h, err := s.byte()
					if err != nil {
						return err
					}
					if !isHex(h) {
						return fmt.Errorf("invalid \\u escape")
					}
				}
			default:
				return fmt.Errorf("invalid escape \\%c", e)
			}
			if keep {
				s.key = append(s.key, '\\')
			}
		case c < 0x20:
			return errors.New("control character in a string")
		case c < utf8.RuneSelf:
			if keep && len(s.key) < 64 {
				s.key = append(s.key, c)
			}
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
				return errors.New("invalid UTF-8 in a string")
			}
		}
	}
}

// skipPlain consumes the run of plain string bytes (no quote, escape or
// control character; valid UTF-8) at the front of the
// buffer in one step: HAR bodies are long strings, and byte-at-a-time reads
// would make them the bottleneck.
func (s *jsonScanner) skipPlain(keep bool) error {
	for {
		if s.r.Buffered() == 0 {
			if _, err := s.r.Peek(1); err != nil {
				return nil // the next byte() reports it
			}
		}
		buf, _ := s.r.Peek(s.r.Buffered())
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
		if keep && len(s.key) < 64 {
			s.key = append(s.key, buf[:min(i, 64-len(s.key))]...)
		}
		_, _ = s.r.Discard(i)
		s.n += int64(i)
		if s.limit > 0 && s.n > s.limit {
			return overLimit{}
		}
		if i < len(buf) {
			return nil
		}
	}
}

// number reads a number whose first byte was c, by the JSON grammar.
func (s *jsonScanner) number(c byte) error {
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
		return errors.New("invalid number")
	}
	if next, err := s.peek(); err != nil {
		return err
	} else if next == '.' {
		_, _ = s.byte()
		if n, err := s.digits(); err != nil || n == 0 {
			return cmp.Or(err, errors.New("invalid number"))
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
		return cmp.Or(err, errors.New("invalid number"))
	}
	return nil
}

// digits consumes a run of decimal digits and says how many.
func (s *jsonScanner) digits() (int, error) {
	n := 0
	for {
		c, err := s.peek()
		if err != nil || c < '0' || c > '9' {
			return n, err
		}
		if _, err := s.byte(); err != nil {
			return n, err
		}
		n++
	}
}

// peek returns the next byte without consuming it: 0 at the end of the input.
func (s *jsonScanner) peek() (byte, error) {
	b, err := s.r.Peek(1)
	if err == io.EOF {
		return 0, nil
	}
	if err != nil {
		s.readErr = err
		return 0, err
	}
	return b[0], nil
}

func (s *jsonScanner) literal(rest string) error {
	for i := range len(rest) {
		c, err := s.byte()
		if err != nil {
			return err
		}
		if c != rest[i] {
			return fmt.Errorf("invalid literal")
		}
	}
	return nil
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c|0x20 >= 'a' && c|0x20 <= 'f'
}
