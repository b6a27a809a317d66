package webarena_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/eval/webarena"
	"proctor/models"
)

func TestProbes(t *testing.T) {
	t.Parallel()
	t.Run("NoProgramHTML", func(t *testing.T) {
		t.Parallel()
		probes, err := webarena.Probes(task(`{"eval_types":["string_match"],"reference_answers":{"exact_match":"x"},"program_html":[]}`))
		require.NoError(t, err)
		require.Nil(t, probes)
		probes, err = webarena.Probes(task(`{"eval_types":["url_match"],"reference_url":"http://a.test/","program_html":[{"url":"last","locator":"","required_contents":{"exact_match":"ignored"}}]}`))
		require.NoError(t, err)
		require.Nil(t, probes, "program_html entries count only when eval_types names program_html")
	})

	t.Run("Pages", func(t *testing.T) {
		t.Parallel()
		tk := task(`{"eval_types":["program_html"],"program_html":[` +
			`{"url":"last","locator":"","required_contents":{"must_include":["a"]}},` +
			`{"url":"http://gitlab.test/a11yproject/-/project_members","locator":"func:gitlab_get_project_memeber_role(__page__, 'yjlou')","required_contents":{"must_include":["Maintainer"]}},` +
			`{"url":"func:reddit_get_post_url('__last_url__')","locator":"document.querySelector('.submission__inner').outerText","required_contents":{"must_include":["b"]}},` +
			`{"url":"func:shopping_get_latest_order_url()","locator":"document.querySelector(\".order-details-items.ordered\").outerText","required_contents":{"must_include":["B07DFJ5XKH"]}},` +
			`{"url":"last","locator":"document.querySelector('[name=\"discount_amount\"').value","prep_actions":["document.querySelector('[data-index=\"actions\"]').querySelector('.admin__collapsible-title').click()"],"required_contents":{"exact_match":"20"}}]}`)
		tk.StartURLs = models.JSONStrings{"http://shop.test:7770/"}
		probes, err := webarena.Probes(tk)
		require.NoError(t, err)
		require.Len(t, probes, 5)
		require.Equal(t, []string{"last", "http://gitlab.test/a11yproject/-/project_members", "last", "http://shop.test:7770/sales/order/history/", "last"},
			[]string{probes[0].URL, probes[1].URL, probes[2].URL, probes[3].URL, probes[4].URL})
		for i, p := range probes {
			require.True(t, strings.HasPrefix(p.Locator, "/* WebArena program_html["+string(rune('0'+i))+"] */ (async ("), p.Locator[:60])
		}
		require.Contains(t, probes[0].Locator, "document.documentElement.outerHTML", "an empty locator reads the page's HTML, as page.content() does")
		require.Contains(t, probes[0].Locator, `{"target":"page","patience":0,`)
		require.Contains(t, probes[1].Locator, `=== "@yjlou"`)
		require.Contains(t, probes[1].Locator, `{"target":"page","patience":3000,`)
		require.Contains(t, probes[2].Locator, `{"target":"reddit_post",`)
		require.Contains(t, probes[2].Locator, `document.querySelector('.submission__inner').outerText`)
		require.Contains(t, probes[3].Locator, `{"target":"latest_order",`)
		require.Contains(t, probes[4].Locator, `.admin__collapsible-title').click()`)
		require.Contains(t, probes[4].Locator, `{"target":"page","patience":1000,`)
	})

	t.Run("SameLocatorDifferentEntries", func(t *testing.T) {
		t.Parallel()
		probes, err := webarena.Probes(task(`{"eval_types":["program_html"],"program_html":[` +
			`{"url":"http://a.test/1","locator":"document.title","required_contents":{"exact_match":"a"}},` +
			`{"url":"http://a.test/2","locator":"document.title","required_contents":{"exact_match":"b"}}]}`))
		require.NoError(t, err)
		require.Len(t, probes, 2)
		require.NotEqual(t, probes[0].Locator, probes[1].Locator)
	})

	t.Run("UnsupportedEntriesHaveNoProbe", func(t *testing.T) {
		t.Parallel()
		probes, err := webarena.Probes(task(`{"eval_types":["program_html"],"program_html":[` +
			`{"url":"last","locator":"func:shopping_get_sku_latest_review_rating('B00J8RZL7I')","required_contents":{"must_include":["100"]}},` +
			`{"url":"last","locator":"func:shopping_get_sku_latest_review_author('B00J8RZL7I')","required_contents":{"must_include":["Emma Lopez"]}},` +
			`{"url":"func:unknown_helper()","locator":"document.title","required_contents":{"must_include":["x"]}},` +
			`{"url":"last","locator":"window.title","required_contents":{"must_include":["x"]}},` +
			`{"url":"last","locator":"document.title","required_contents":{"must_include":["x"]}}]}`))
		require.NoError(t, err)
		require.Len(t, probes, 1)
		require.Contains(t, probes[0].Locator, "program_html[4]")
	})

	t.Run("UnresolvedURLs", func(t *testing.T) {
		t.Parallel()
		_, err := webarena.Probes(task(`{"eval_types":["program_html"],"program_html":[{"url":"__GITLAB__/a","locator":"","required_contents":{"must_include":["x"]}}]}`))
		require.ErrorContains(t, err, `"__GITLAB__/a" is not an http(s) URL (are the site placeholders resolved?)`)

		tk := task(`{"eval_types":["program_html"],"program_html":[{"url":"func:shopping_get_latest_order_url()","locator":"document.title","required_contents":{"must_include":["x"]}}]}`)
		tk.StartURLs = models.JSONStrings{"__SHOPPING__"}
		_, err = webarena.Probes(tk)
		require.ErrorContains(t, err, "needs the shop's URL")
	})

	t.Run("BrokenSpec", func(t *testing.T) {
		t.Parallel()
		_, err := webarena.Probes(task(`{"eval_types":["program_html"],"program_html":{"url":"last"}}`))
		require.ErrorContains(t, err, "program_html must be a list")
		_, err = webarena.Probes(task(`not json`))
		require.Error(t, err)
		_, err = webarena.Probes(nil)
		require.Error(t, err)
	})
}
