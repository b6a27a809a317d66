package webarena

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in    string
		base  string
		query map[string][]string
	}{
		{"http://shop:7770/catalogsearch/result/?q=lamp&cat=3", "shop:7770/catalogsearch/result", map[string][]string{"q": {"lamp"}, "cat": {"3"}}},
		{"https://Shop:7770/a//", "Shop:7770/a", map[string][]string{}},
		{"http://h/p?q=a+b%20c&q=d&empty=&flag", "h/p", map[string][]string{"q": {"a b c", "d"}}},
		{"http://h/p;params?x=1#frag", "h/p", map[string][]string{"x": {"1"}}},
		{"http://h/p?bad=%zz%4", "h/p", map[string][]string{"bad": {"%zz%4"}}},
		{"http://h/p?u=%E2%84%A2", "h/p", map[string][]string{"u": {"™"}}},
		{"h/no-scheme?x=1", "h/no-scheme", map[string][]string{"x": {"1"}}},
	} {
		base, query := parseURL(tc.in)
		require.Equal(t, tc.base, base, tc.in)
		require.Equal(t, tc.query, query, tc.in)
	}
}
