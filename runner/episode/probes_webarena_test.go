package episode

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/eval"
	"proctor/eval/webarena"
	"proctor/importer"
	"proctor/internal/evaltest"
	"proctor/internal/testenv"
	"proctor/models"
)

// webArenaSite imitates the pieces of WebArena's sites that the program_html
// helpers read: a Postmill comment page with a Magento-like promotion form,
// the post it belongs to, a customer's order history and orders, and a GitLab
// members page rendered by script.
func webArenaSite(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	serve := func(path, title, body string) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			io.WriteString(w, page(title, body))
		})
	}
	// The agent's last page. The discount field appears only after its
	// section is unfolded, a moment after the click.
	serve("GET /f/consoles/123/what-console/comment/9", "Comment", `
<div class="comment">Get a Switch</div>
<form><input name="q" type="hidden" value="jaw bruxism">
<select name="website_ids"><option selected>Main</option><option>Other</option></select>
<div data-index="actions"><div class="admin__collapsible-title"
  onclick="setTimeout(() => { const i = document.createElement('input'); i.name = 'discount_amount'; i.value = '20'; this.parentNode.appendChild(i); }, 50)">Actions</div></div>
</form>`)
	serve("GET /f/consoles/123/{$}", "Post", `<div class="submission__inner"><h1>what is the recommended console to buy these days</h1></div>`)
	serve("GET /sales/order/history/{$}", "My Orders", `<table id="my-orders-table">
<tr><td>000000190</td><td><a class="action view" href="/sales/order/view/order_id/190/">View Order</a></td></tr>
<tr><td>000000180</td><td><a class="action view" href="/sales/order/view/order_id/180/">View Order</a></td></tr></table>`)
	serve("GET /sales/order/view/order_id/190/{$}", "Order 190", `<div class="order-details-items ordered">Mattress foundation SKU: B07DFJ5XKH</div>`)
	serve("GET /sales/order/view/order_id/180/{$}", "Order 180", `<div class="order-details-items ordered">Table lamp SKU: B072XS3F6W</div>`)
	serve("GET /byteblaze/dotfiles/-/project_members", "Members", `<table><tbody id="members"></tbody></table>
<script>fetch('/members.json').then((r) => r.json()).then((ms) => {
  document.getElementById('members').innerHTML = ms.map((m) =>
    '<tr><td data-label="Account"><span class="gl-avatar-labeled-sublabel">@' + m.user + '</span></td>' +
    '<td class="col-max-role"><span>' + m.role + '</span></td></tr>').join('');
});</script>`)
	mux.HandleFunc("GET /members.json", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `[{"user":"byteblaze","role":"Owner"},{"user":"yjlou","role":"Developer"}]`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// webArenaSpec is a WebArena eval object over the imitation site; want
// replaces the required contents to make a spec the same page state fails.
func webArenaSpec(site string, want map[string]string) string {
	get := func(k, def string) string {
		if v, ok := want[k]; ok {
			return v
		}
		return def
	}
	entries := []map[string]any{
		{"url": "last", "locator": "", "required_contents": map[string]any{"must_include": []string{get("html", "jaw bruxism")}}},
		{"url": "last", "locator": `document.querySelector('[name="discount_amount"').value`,
			"prep_actions":      []string{`document.querySelector('[data-index="actions"]').querySelector('.admin__collapsible-title').click()`},
			"required_contents": map[string]any{"exact_match": get("discount", "20")}},
		{"url": "last", "locator": `document.querySelector('[name="website_ids"').selectedIndex`, "required_contents": map[string]any{"exact_match": get("index", "0")}},
		{"url": "func:reddit_get_post_url('__last_url__')", "locator": "document.querySelector('.submission__inner').outerText",
			"required_contents": map[string]any{"must_include": []string{get("post", "what is the recommended console to buy these days")}}},
		{"url": "func:shopping_get_latest_order_url()", "locator": `document.querySelector(".order-details-items.ordered").outerText`,
			"required_contents": map[string]any{"must_include": []string{get("order", "B07DFJ5XKH")}}},
		{"url": site + "/byteblaze/dotfiles/-/project_members", "locator": "func:gitlab_get_project_memeber_role(__page__, 'yjlou')",
			"required_contents": map[string]any{"must_include": []string{get("role", "Developer")}}},
	}
	b, _ := json.Marshal(map[string]any{
		"eval_types":        []string{"string_match", "url_match", "program_html"},
		"reference_answers": map[string]any{"exact_match": "done"},
		"reference_url":     site + "/f/consoles/123",
		"program_html":      entries,
	})
	return string(b)
}

func TestRun_WebArenaProbes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	site := webArenaSite(t)
	task := &models.Task{ExternalID: "600", Intent: "Post my question", EvalSpec: webArenaSpec(site.URL, nil), StartURLs: models.JSONStrings{site.URL}}
	probes, err := webarena.Probes(task)
	require.NoError(t, err)
	require.Len(t, probes, 6)

	agent := actions(fixed(answer("done")))
	ep := b.episode(agent, "/")
	ep.Task.StartURLs = []string{site.URL + "/f/consoles/123/what-console/comment/9"}
	ep.AllowedOrigins = []string{site.URL}
	ep.Probes = probes
	res := b.run(t, ep)
	require.Empty(t, res.ErrorClass, res.ErrorMessage)
	require.NotNil(t, res.PageState)
	for _, p := range res.PageState.Probes {
		require.Empty(t, p.Error, "probe %.60s", p.Locator)
	}
	require.Equal(t, "json:0", res.PageState.Probes[2].Value)
	require.Equal(t, "value:20", res.PageState.Probes[1].Value, "the preparation step unfolded the section")

	ev := webarena.New(nil)
	grade := func(spec string) *eval.Details {
		t.Helper()
		tk := *task
		tk.EvalSpec = spec
		r, err := ev.Evaluate(context.Background(), eval.Input{Task: &tk, Final: res.Final, PageState: res.PageState})
		require.NoError(t, err)
		d, err := eval.ParseDetails(r.Details)
		require.NoError(t, err)
		return d
	}
	d := grade(task.EvalSpec)
	require.Equal(t, models.OutcomeSuccess, d.Status, "%+v", d)
	require.Len(t, d.EvaluatorsResults, 3)

	// The same page state against other required contents: every entry can fail.
	for key, wrong := range map[string]string{
		"html": "mouth guard", "discount": "25", "index": "1",
		"post": "is car necessary in NYC", "order": "B072XS3F6W", "role": "Owner",
	} {
		d := grade(webArenaSpec(site.URL, map[string]string{key: wrong}))
		require.Equal(t, models.OutcomeFailure, d.Status, "%s=%s: %+v", key, wrong, d)
	}
}

// TestWebArenaProbesCompile compiles the probe of every program_html entry of
// the real WebArena test set in Chromium, without running it.
func TestWebArenaProbesCompile(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join(testenv.SharedDataDir(t), "webarena", "test.raw.json"))
	require.NoError(t, err)
	br := testBrowser(t)
	d, err := importer.Parse(evaltest.Registry(), models.FormatWebArena, bytes.NewReader(raw), nil)
	require.NoError(t, err)
	placeholder := regexp.MustCompile(`__[A-Z_]+__`)
	var sources []string
	for i := range d.Tasks {
		tk := d.Tasks[i]
		tk.EvalSpec = placeholder.ReplaceAllStringFunc(tk.EvalSpec, func(p string) string {
			return "http://" + strings.ToLower(strings.Trim(p, "_")) + ".test"
		})
		tk.StartURLs = models.JSONStrings{"http://shopping.test"}
		probes, err := webarena.Probes(&tk)
		require.NoError(t, err, "task %s", tk.ExternalID)
		for _, p := range probes {
			sources = append(sources, p.Locator)
		}
	}
	require.Len(t, sources, 641)

	pg, err := br.browser.NewPage()
	require.NoError(t, err)
	defer pg.Close()
	out, err := pg.Evaluate(`(sources) => sources.map((s) => { try { new Function('return (' + s + '\n)'); return ''; } catch (e) { return String(e) + ' in ' + s.slice(0, 300); } }).filter(Boolean)`, sources)
	require.NoError(t, err)
	require.Empty(t, out, "every probe compiles")
}
