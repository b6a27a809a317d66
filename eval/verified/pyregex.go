package verified

import (
	"fmt"
	"regexp"
	"strings"
)

// pyRegexp is a regular expression written for Python's re module, which is
// what WebArena-Verified specs contain. Go's RE2 engine covers the syntax the
// dataset uses except lookaheads, which the dataset uses in three shapes, each
// a test on the whole string and so compiled as separate expressions:
// "^(?!price$|q$).+$" (right after the start anchor), "^.*(?=.*a)(?=.*b).*x.*$"
// (after a leading .*, when every part starts with .*, which makes position 0
// the best place to test them) and "^.*(?!delete$).*$" (vacuous: it accepts
// everything). Any other lookaround, backreference or unsupported syntax is a
// compile error, which makes the verdict an error rather than a silent pass.
type pyRegexp struct {
	src      string
	looks    []lookahead    // tests at position 0
	prefix   *regexp.Regexp // the rest, anchored at the start (re.match)
	full     *regexp.Regexp // the rest, anchored at both ends (re.fullmatch)
	anywhere *regexp.Regexp // the rest, unanchored (re.search)
}

type lookahead struct {
	negative bool
	re       *regexp.Regexp // anchored at the start
}

// isRegexp reports whether a spec value is a pattern: WebArena-Verified marks
// patterns by a leading ^ and a trailing $.
func isRegexp(s string) bool {
	return len(s) >= 2 && strings.HasPrefix(s, "^") && strings.HasSuffix(s, "$")
}

// compilePy compiles a Python pattern; ignoreCase and dotAll set re.IGNORECASE
// and re.DOTALL.
func compilePy(src string, ignoreCase, dotAll bool) (*pyRegexp, error) {
	flags := ""
	if ignoreCase {
		flags += "i"
	}
	if dotAll {
		flags += "s"
	}
	if flags != "" {
		flags = "(?" + flags + ")"
	}
	r := &pyRegexp{src: src}
	body := dropVacuousLookahead(src)
	if strings.HasPrefix(body, "^(?=") || strings.HasPrefix(body, "^(?!") || strings.HasPrefix(body, "^.*(?=") {
		rest := body[1:]
		dotStar := strings.HasPrefix(rest, ".*")
		rest = strings.TrimPrefix(rest, ".*")
		for strings.HasPrefix(rest, "(?=") || strings.HasPrefix(rest, "(?!") {
			end, err := closingParen(rest, 0)
			if err != nil {
				return nil, fmt.Errorf("pattern %q: %w", src, err)
			}
			x := rest[3:end]
			neg := rest[2] == '!'
			if hasLookaround(x) || dotStar && (neg || !strings.HasPrefix(x, ".*")) {
				return nil, fmt.Errorf("pattern %q: this lookahead is not supported", src)
			}
			re, err := regexp.Compile(flags + `\A(?:` + translatePy(x) + `)`)
			if err != nil {
				return nil, fmt.Errorf("pattern %q: %w", src, err)
			}
			r.looks = append(r.looks, lookahead{negative: neg, re: re})
			rest = rest[end+1:]
		}
		if dotStar && !strings.HasPrefix(rest, ".*") {
			return nil, fmt.Errorf("pattern %q: this lookahead is not supported", src)
		}
		body = "^" + rest
	}
	if hasLookaround(body) {
		return nil, fmt.Errorf("pattern %q: lookarounds are supported only right after the leading ^", src)
	}
	t := translatePy(body)
	var err error
	if r.prefix, err = regexp.Compile(flags + `\A(?:` + t + `)`); err != nil {
		return nil, fmt.Errorf("pattern %q: %w", src, err)
	}
	if r.full, err = regexp.Compile(flags + `\A(?:` + t + `)\z`); err != nil {
		return nil, fmt.Errorf("pattern %q: %w", src, err)
	}
	if r.anywhere, err = regexp.Compile(flags + t); err != nil {
		return nil, fmt.Errorf("pattern %q: %w", src, err)
	}
	return r, nil
}

// lookaheadOK applies the tests at position 0.
func (r *pyRegexp) lookaheadOK(s string) bool {
	for _, l := range r.looks {
		if l.re.MatchString(s) == l.negative {
			return false
		}
	}
	return true
}

// match is re.match: the pattern matches at the start of s.
func (r *pyRegexp) match(s string) bool { return r.lookaheadOK(s) && r.prefix.MatchString(s) }

// fullmatch is re.fullmatch: the pattern matches all of s.
func (r *pyRegexp) fullmatch(s string) bool { return r.lookaheadOK(s) && r.full.MatchString(s) }

// search is re.search: the pattern matches anywhere in s. A leading lookahead
// comes right after ^, so it still applies at position 0 only.
func (r *pyRegexp) search(s string) bool { return r.lookaheadOK(s) && r.anywhere.MatchString(s) }

// dropVacuousLookahead rewrites "….*(?!X).*$" to "….*$". The lookahead can sit
// at the end of the string, where an X that cannot match the empty string never
// matches, so it excludes nothing: the dataset's "^.*(?!delete$).*$" accepts
// every value.
func dropVacuousLookahead(p string) string {
	i := strings.Index(p, ".*(?!")
	if i < 0 {
		return p
	}
	open := i + 2
	end, err := closingParen(p, open)
	if err != nil || p[end+1:] != ".*$" {
		return p
	}
	x := p[open+3 : end]
	if hasLookaround(x) {
		return p
	}
	re, err := regexp.Compile(`\A(?:` + translatePy(x) + `)`)
	if err != nil || re.MatchString("") {
		return p
	}
	return p[:i] + ".*$"
}

// translatePy rewrites the few Python escapes RE2 spells differently.
func translatePy(p string) string {
	return strings.ReplaceAll(p, `\Z`, `\z`)
}

// hasLookaround reports an unescaped (?= (?! (?<= or (?<! in p.
func hasLookaround(p string) bool {
	for i := 0; i+2 < len(p); i++ {
		if p[i] == '\\' {
			i++
			continue
		}
		if p[i] == '(' && p[i+1] == '?' {
			switch p[i+2] {
			case '=', '!':
				return true
			case '<':
				if i+3 < len(p) && (p[i+3] == '=' || p[i+3] == '!') {
					return true
				}
			}
		}
	}
	return false
}

// closingParen returns the index of the parenthesis closing the group that
// opens at p[open], skipping escapes and character classes.
func closingParen(p string, open int) (int, error) {
	depth := 0
	inClass := false
	for i := open; i < len(p); i++ {
		switch c := p[i]; {
		case c == '\\':
			i++
		case inClass:
			if c == ']' {
				inClass = false
			}
		case c == '[':
			inClass = true
		case c == '(':
			depth++
		case c == ')':
			depth--
			if depth == 0 {
				return i, nil
			}
		}
	}
	return 0, fmt.Errorf("unbalanced parenthesis")
}
