package har

import (
	"strings"
	"testing"
)

func TestPlainPrefix(t *testing.T) {
	long := strings.Repeat("abcdefgh", 5)
	for _, in := range []string{
		"", `"`, `\`, "plain", `plain"rest`, `pla\"in"`, long + `"`, long,
		long + "\x1f" + `"`, "abc\x00def", long[:13] + "\n" + long, "\x1f", " ", "\x7f\x20",
		"héllo wörld\"", "日本語のテキスト\\n", "\xff\xfe", long + "\xe6\x97", long[:7] + "\xe6\x97",
		"a\xc3", "\xed\xa0\x80", // a cut rune at the end; an encoded surrogate
		"\u00a0\u2028\u2029\"", "€€€€€€€€\x01",
	} {
		if got, want := plainPrefix([]byte(in)), plainPrefixBytewise([]byte(in)); got != want {
			t.Errorf("plainPrefix(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestHasControl(t *testing.T) {
	for i := range 24 {
		for _, c := range []byte{0x00, 0x09, 0x1f} {
			p := []byte(strings.Repeat("\x20\x7f\x80\xff", 6))
			p[i] = c
			if !hasControl(p) {
				t.Errorf("byte %#x at %d: not found", c, i)
			}
		}
	}
	if hasControl([]byte(strings.Repeat("\x20\x7f\x80\xff~!", 5))) {
		t.Error("no control byte, yet one was found")
	}
}

func FuzzPlainPrefix(f *testing.F) {
	for _, s := range []string{"plain\"", "日本\\", "a\x01b", "\xe6\x97", strings.Repeat("x", 20) + "\x1f"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, buf []byte) {
		if got, want := plainPrefix(buf), plainPrefixBytewise(buf); got != want {
			t.Errorf("plainPrefix(%q) = %d, want %d", buf, got, want)
		}
	})
}
