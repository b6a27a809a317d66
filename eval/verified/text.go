package verified

import (
	"errors"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mozillazg/go-unidecode"
	"golang.org/x/text/unicode/norm"
)

// foldText is WebArena-Verified's string normalisation, applied before every
// value type reads a string: site URLs become their placeholders (when the
// site URLs are known), trademark signs go, compatibility forms fold (NFKC: "ﬁ"
// is "fi", full-width digits are digits), dashes next to letters become spaces
// ("Buffalo–Niagara" is "Buffalo Niagara", "123-4567" keeps its dash), control
// characters go, letters are transliterated to ASCII ("é" is "e", curly quotes
// are straight), white space collapses and case folds. Patterns (^…$) are left
// as written.
func foldText(s string, derender func(string) string) string {
	if s == "" || isRegexp(s) {
		return s
	}
	if derender != nil && strings.Contains(s, "http") {
		s = derender(s)
	}
	if isASCIIPlain(s) {
		return strings.ToLower(collapseSpace(s))
	}
	s = strings.Map(func(r rune) rune {
		switch r {
		case '\u2122', '\u00ae', '\u2120', '\u00a9':
			return -1
		}
		return r
	}, s)
	s = norm.NFKC.String(s)
	runes := []rune(s)
	var b strings.Builder
	b.Grow(len(s))
	for i, r := range runes {
		if isHyphen(r) && (i > 0 && isASCIILetter(runes[i-1]) || i+1 < len(runes) && isASCIILetter(runes[i+1])) {
			b.WriteByte(' ')
			continue
		}
		if unicode.In(r, unicode.C) {
			if r == '\t' || r == '\n' || r == '\r' {
				b.WriteByte(' ')
			}
			continue
		}
		if r < utf8.RuneSelf {
			b.WriteRune(r)
			continue
		}
		b.WriteString(transliterate(r))
	}
	return strings.ToLower(collapseSpace(b.String()))
}

// isASCIIPlain reports a string that folds by trimming, collapsing white space
// and lower-casing only: printable ASCII without dashes next to letters.
func isASCIIPlain(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf || c < ' ' && c != '\t' && c != '\n' && c != '\r' || c == 0x7f {
			return false
		}
		if c == '-' && (i > 0 && isASCIILetter(rune(s[i-1])) || i+1 < len(s) && isASCIILetter(rune(s[i+1]))) {
			return false
		}
	}
	return true
}

func collapseSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

func isASCIILetter(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' }

// isHyphen lists the dash-like characters the normalisation treats as one.
func isHyphen(r rune) bool {
	switch r {
	case '-', '\u2010', '\u2011', '\u2012', '\u2013', '\u2014', '\u2015', '\u2212', '\u00ad':
		return true
	}
	return false
}

// transliterate spells a non-ASCII rune in ASCII as Python's unidecode does,
// which the official evaluator uses: accented letters lose their marks,
// Cyrillic and Greek look-alikes become Latin letters ("е" is "e"), curly
// quotes are straight, "—" is "--", "€" is "EUR"; what it has no spelling for
// is dropped.
func transliterate(r rune) string {
	return unidecode.Unidecode(string(r))
}

// stripQuotePunct removes the quotes and punctuation WebArena-Verified ignores
// around a string value: ' " ` . , ; : ! ?
func stripQuotePunct(s string) string {
	return strings.Trim(s, "'\"`.,;:!?")
}

// numberWord is the value of an English number word below a hundred.
func numberWord(w string) (float64, bool) {
	i := strings.Index(" zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen ", " "+w+" ")
	if i >= 0 && w != "" {
		return float64(strings.Count(" zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen "[:i], " ")), true
	}
	switch w {
	case "twenty":
		return 20, true
	case "thirty":
		return 30, true
	case "forty":
		return 40, true
	case "fifty":
		return 50, true
	case "sixty":
		return 60, true
	case "seventy":
		return 70, true
	case "eighty":
		return 80, true
	case "ninety":
		return 90, true
	}
	return 0, false
}

// numberScale is the multiplier of a scale word above a hundred.
func numberScale(w string) float64 {
	switch w {
	case "thousand":
		return 1e3
	case "million":
		return 1e6
	case "billion":
		return 1e9
	case "trillion":
		return 1e12
	}
	return 0
}

// parseNumberWords reads a number written in English words, as
// WebArena-Verified's fallback does: "twenty three", "one hundred and five",
// "two million three hundred thousand", "three point one four". Words that are
// not number words are skipped; a text without any is an error.
func parseNumberWords(s string) (float64, error) {
	words := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return r == ' ' || r == '-' || r == ',' })
	var total, group float64
	found := false
	decimals := ""
	afterPoint := false
	for _, w := range words {
		if afterPoint {
			v, ok := numberWord(w)
			if !ok || v > 9 {
				continue
			}
			decimals += strconv.Itoa(int(v))
			continue
		}
		switch {
		case w == "point":
			afterPoint = true
		case w == "hundred":
			if group == 0 {
				group = 1
			}
			group *= 100
			found = true
		case numberScale(w) > 0:
			if group == 0 {
				group = 1
			}
			total += group * numberScale(w)
			group = 0
			found = true
		default:
			if v, ok := numberWord(w); ok {
				group += v
				found = true
			}
		}
	}
	if !found {
		return 0, errors.New("no number words")
	}
	v := total + group
	if decimals != "" {
		f, err := strconv.ParseFloat("0."+decimals, 64)
		if err == nil {
			v += f
		}
	}
	return v, nil
}

// tokenSortRatio is the fuzzy similarity WebArena-Verified uses for location
// names (thefuzz's token_sort_ratio): both strings reduced to lower-case ASCII
// letters and digits, their words sorted, then 100 × 2·LCS / (len₁ + len₂),
// rounded half to even.
func tokenSortRatio(a, b string) int {
	pa, pb := sortTokens(fuzzProcess(a)), sortTokens(fuzzProcess(b))
	if pa == "" || pb == "" {
		return 0
	}
	l := lcsLength(pa, pb)
	return int(math.RoundToEven(100 * 2 * float64(l) / float64(len(pa)+len(pb))))
}

func fuzzProcess(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= utf8.RuneSelf:
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_':
			b.WriteRune(r)
		case r >= 'A' && r <= 'Z':
			b.WriteRune(r + 'a' - 'A')
		default:
			b.WriteByte(' ')
		}
	}
	return strings.TrimSpace(b.String())
}

func sortTokens(s string) string {
	f := strings.Fields(s)
	sort.Strings(f)
	return strings.Join(f, " ")
}

// lcsLength is the length of the longest common subsequence of two ASCII strings.
func lcsLength(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			switch {
			case a[i-1] == b[j-1]:
				cur[j] = prev[j-1] + 1
			case prev[j] >= cur[j-1]:
				cur[j] = prev[j]
			default:
				cur[j] = cur[j-1]
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
