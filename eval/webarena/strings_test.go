package webarena

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestClean(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"  Hello World ", "hello world"},
		{`"Quoted"`, "quoted"},
		{`'single'`, "single"},
		{`"'twice'"`, "'twice'"}, // one pair only
		{`"unbalanced'`, `"unbalanced'`},
		{`'`, ""}, // a lone quote starts and ends the string
		{`"`, ""},
		{`''`, ""},
		{"", ""},
		{"ÄÖÜ", "äöü"},
	} {
		require.Equal(t, tc.want, clean(tc.in), "clean(%q)", tc.in)
	}
}

func TestExactMatch(t *testing.T) {
	t.Parallel()
	require.True(t, exactMatch("Quest Lumaflex™ Band", "  quest lumaflex™ band"))
	require.True(t, exactMatch("N/A", `"n/a"`))
	require.False(t, exactMatch("Quest Lumaflex™ Band", "Quest Lumaflex Band"))
	require.False(t, exactMatch("2", "2 reviews"))
}

func TestMustInclude(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		ref, pred string
		tokenize  bool
		want      bool
	}{
		{"Substring", "Hyatt Regency", "The closest is the hyatt regency hotel", false, true},
		{"Missing", "Hyatt Regency", "The closest is the Marriott", false, false},
		{"SingleCharSubstringWithoutTokenizing", "0", "There are 10 reviews", false, true},
		{"SingleCharIsNotAWordOf10", "0", "There are 10 reviews", true, false},
		{"SingleCharWord", "0", "There are 0 reviews", true, true},
		{"SingleCharBeforePeriod", "0", "The count is 0.", true, true},
		{"SingleCharInDecimalIsNotAWord", "0", "It costs 0.5 dollars", true, false},
		{"SingleCharInThousandsIsNotAWord", "1", "1,000 orders", true, false},
		{"SingleCharBeforeComma", "1", "1, maybe 2", true, true},
		{"SingleCharInParens", "2", "reviews (2)", true, true},
		{"SingleCharAfterDollar", "5", "$5", true, true},
		{"SingleCharBeforePercent", "5", "5%", true, true},
		{"SingleCharWithContraction", "0", "0's the answer", true, true},
		{"SingleCharInRangeIsNotAWord", "0", "0-5", true, false},
		{"SingleCharInFractionIsNotAWord", "1", "1/2", true, false},
		{"SingleCharQuoted", "3", `the answer is "3"`, true, true},
		{"MultiCharIgnoresTokenizing", "346", "total: 1346", true, true},
		{"CaseInsensitive", "Yes", "YES, it is", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, mustInclude(tc.ref, tc.pred, tc.tokenize), "mustInclude(%q, %q, %v)", tc.ref, tc.pred, tc.tokenize)
		})
	}
}

func TestWordTokens(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"There are 0 reviews.", []string{"There", "are", "0", "reviews", "."}},
		{"(2) items, 1,000 total: 10:30", []string{"(", "2", ")", "items", ",", "1,000", "total", ":", "10:30"}},
		{"don't it's $5 50%", []string{"do", "n't", "it", "'s", "$", "5", "50", "%"}},
		{"'quoted' U.S.", []string{"'", "quoted", "'", "U.S", "."}},
		{"wait... what?!", []string{"wait", "...", "what", "?", "!"}},
		{"", nil},
	} {
		require.Equal(t, tc.want, wordTokens(tc.in), "wordTokens(%q)", tc.in)
	}
}
