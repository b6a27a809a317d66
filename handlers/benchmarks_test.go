package handlers_test

import (
	"bytes"
	"context"
	"html"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/eval/verified"
	"proctor/handlers"
	"proctor/importer"
	"proctor/internal/evaltest"
	"proctor/models"
	"proctor/service/servicetest"
	"proctor/static"
	"proctor/storage/storagetest"
)

// benchDataset is a small proctor-format benchmark: four tasks over three sites
// (t3 spans two), every kind of label, rubric items, a subset, and hidden fields
// on t1 with distinctive strings that must never reach non-admins.
const benchDataset = `{"proctor_benchmark": 1, "name": "Mini bench", "description": "Four small tasks for tests.", "evaluator": "rubric", "subsets": {"smoke": {"description": "Two tasks", "task_ids": ["t1", "t3"]}}}
{"id": "t1", "intent": "Add the cheapest USB-C cable to the cart.", "start_urls": ["__SHOPPING__"], "sites": ["shopping"], "task_type": "action", "difficulty": "easy", "domain": "e-commerce", "attributes": ["action-based"], "rubric": [{"requirement": "Cart holds one cable", "verification": "Look at the cart", "weight": 0.6}, {"requirement": "It is the cheapest", "weight": 0.4}], "reference_answers": {"must_include": ["SECRET-ANSWER-42"]}, "eval": {"check": "cart_contains", "sku": "SECRET-SKU-7"}, "reference_actions": [{"type": "goto", "url": "__SHOPPING__/SECRET-PATH"}]}
{"id": "t2", "intent": "Which project has the most stars?", "start_urls": ["__GITLAB__/explore"], "task_type": "qa", "difficulty": "medium", "domain": "software", "attributes": ["multihop", "structured"], "rubric": [{"requirement": "Names the project"}]}
{"id": "t3", "intent": "Find the repository most discussed on the forum and star it.", "start_urls": ["__REDDIT__", "__GITLAB__"], "task_type": "action", "difficulty": "hard", "domain": "software", "attributes": ["multi-website", "action-based"], "rubric": [{"requirement": "Identifies it"}, {"requirement": "Stars it"}]}
{"id": "t4", "intent": "Are you 100% sure_thing about the shipping fee?", "start_urls": ["__SHOPPING__/checkout"], "task_type": "qa", "difficulty": "easy", "rubric": [{"requirement": "Answers"}]}
`

// benchSecrets are strings of the hidden fields of benchDataset.
var benchSecrets = []string{"SECRET-ANSWER-42", "SECRET-SKU-7", "SECRET-PATH"}

// importBench stores benchDataset under slug as the system would.
func importBench(t *testing.T, b *testBundle, slug string) {
	t.Helper()
	ds, err := importer.Parse(evaltest.Registry(), models.FormatProctor, strings.NewReader(benchDataset), nil)
	require.NoError(t, err)
	_, err = b.db.ImportBenchmark(models.WithActor(context.Background(), models.SystemActor()), slug, ds, slug+".jsonl", 0)
	require.NoError(t, err)
}

// verifiedDataset is a small benchmark graded by WebArena-Verified's checks:
// "price" is sound, "refund" has the upstream defect of WebArena-Verified's
// task 319 (a retrieve task whose expected answer has no retrieved_data).
const verifiedDataset = `{"proctor_benchmark": 1, "name": "Verified bench", "evaluator": "webarena-verified"}
{"id": "price", "intent": "What does the cable cost?", "start_urls": ["__SHOPPING__"], "sites": ["shopping"], "eval": [{"evaluator": "AgentResponseEvaluator", "results_schema": {"type": "array", "items": {"type": "number", "format": "currency"}}, "expected": {"task_type": "retrieve", "status": "SUCCESS", "retrieved_data": [12.5]}}]}
{"id": "refund", "intent": "How much refund should I expect?", "start_urls": ["__SHOPPING__"], "sites": ["shopping"], "eval": [{"evaluator": "AgentResponseEvaluator", "results_schema": {"type": "array", "items": {"type": "number", "format": "currency"}}, "expected": {"task_type": "retrieve", "status": "NOT_FOUND_ERROR"}}]}
`

// importVerified imports verifiedDataset under slug.
func importVerified(t *testing.T, b *testBundle, slug string) {
	t.Helper()
	ds, err := importer.Parse(evaltest.Registry(), models.FormatProctor, strings.NewReader(verifiedDataset), nil)
	require.NoError(t, err)
	_, err = b.db.ImportBenchmark(models.WithActor(context.Background(), models.SystemActor()), slug, ds, slug+".jsonl", 0)
	require.NoError(t, err)
}

// benchUpload is a file part of a multipart form.
type benchUpload struct{ field, name, content string }

// postMultipart sends a multipart form with the client's CSRF token both as a
// field and as the header (as a browser form and an API client would).
func postMultipart(c *client, path string, fields map[string]string, files ...benchUpload) *http.Response {
	c.t.Helper()
	token := c.csrf()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	require.NoError(c.t, w.WriteField("_csrf", token))
	for k, v := range fields {
		require.NoError(c.t, w.WriteField(k, v))
	}
	for _, f := range files {
		part, err := w.CreateFormFile(f.field, f.name)
		require.NoError(c.t, err)
		_, err = io.WriteString(part, f.content)
		require.NoError(c.t, err)
	}
	require.NoError(c.t, w.Close())
	req, err := http.NewRequest(http.MethodPost, c.base+path, &body)
	require.NoError(c.t, err)
	req.Header.Set("Content-Type", w.FormDataContentType())
	req.Header.Set("X-CSRF-Token", token)
	return c.do(req)
}

// getHTMX requests a page as htmx does, with extra headers.
func getHTMX(c *client, path string, headers map[string]string) *http.Response {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.base+path, nil)
	require.NoError(c.t, err)
	req.Header.Set("HX-Request", "true")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	return c.do(req)
}

var taskRowPattern = regexp.MustCompile(`data-testid="task-(t\d+)"`)

// taskRows lists the task ids in a task browser's results, in order.
func taskRows(body string) []string {
	ids := []string{}
	for _, m := range taskRowPattern.FindAllStringSubmatch(body, -1) {
		ids = append(ids, m[1])
	}
	return ids
}

func TestBenchmarks_Pages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	importBench(t, b, "mini")
	c := b.anonymous(t)

	t.Run("List", func(t *testing.T) {
		res := c.get("/benchmarks")
		require.Equal(t, http.StatusOK, res.StatusCode)
		body := readBody(t, res)
		require.Contains(t, body, `data-testid="benchmark-mini"`)
		require.Contains(t, body, `href="/benchmarks/mini"`)
		require.Contains(t, body, "Mini bench")
	})
	t.Run("Show", func(t *testing.T) {
		res := c.get("/benchmarks/mini")
		require.Equal(t, http.StatusOK, res.StatusCode)
		body := readBody(t, res)
		require.Contains(t, body, "Four small tasks for tests.")
		require.Regexp(t, `data-testid="benchmark-version">1<`, body)
		require.Regexp(t, `data-testid="benchmark-tasks">4<`, body)
		require.Contains(t, body, `data-testid="sites-table"`)
		require.Contains(t, body, "__SHOPPING__")
		require.Regexp(t, `(?s)data-testid="subset-smoke".*?smoke</a></th><td class="num">2</td>`, body)
		require.Contains(t, body, `href="/benchmarks/mini/tasks"`)
		require.NotContains(t, body, "Configured URL", "deployment settings are for admins")
	})
	t.Run("ShowAsAdmin", func(t *testing.T) {
		body := readBody(t, b.admin.get("/benchmarks/mini"))
		require.Contains(t, body, "Configured URL")
		require.Contains(t, body, `href="/admin/benchmarks/mini/sites"`)
	})
	t.Run("Unknown", func(t *testing.T) {
		require.Equal(t, http.StatusNotFound, c.get("/benchmarks/nope").StatusCode)
		require.Equal(t, http.StatusNotFound, c.get("/benchmarks/mini/tasks/t99").StatusCode)
	})
	t.Run("TaskDetail", func(t *testing.T) {
		res := c.get("/benchmarks/mini/tasks/t1")
		require.Equal(t, http.StatusOK, res.StatusCode)
		body := readBody(t, res)
		require.Contains(t, body, "Add the cheapest USB-C cable to the cart.")
		require.Contains(t, body, "<code>__SHOPPING__</code>")
		require.Contains(t, body, `data-testid="task-rubric"`)
		require.Contains(t, body, "Cart holds one cable")
		require.Contains(t, body, "Look at the cart")
		require.Contains(t, body, "0.6")
		require.NotContains(t, body, `data-testid="hidden-evaluation"`)
	})
}

func TestBenchmarks_TaskBrowser(t *testing.T) {
	t.Parallel()
	b := setup(t)
	importBench(t, b, "mini")
	c := b.anonymous(t)
	get := func(t *testing.T, path string) string {
		t.Helper()
		res := c.get(path)
		require.Equal(t, http.StatusOK, res.StatusCode, path)
		return readBody(t, res)
	}

	t.Run("Form", func(t *testing.T) {
		body := get(t, "/benchmarks/mini/tasks")
		for _, name := range []string{"site", "task_type", "difficulty", "domain", "attribute", "subset"} {
			require.Regexp(t, `<label for="filter-`+name+`">[^<]+<select id="filter-`+name+`" name="`+name+`"`, body)
		}
		require.Contains(t, body, `<option value="multi-site">multi-site</option>`)
		require.Contains(t, body, `<option value="smoke">smoke</option>`)
		require.Contains(t, body, `name="q"`)
		require.Contains(t, body, `method="get" action="/benchmarks/mini/tasks"`)
		require.Contains(t, body, `hx-get="/benchmarks/mini/tasks"`)
		require.Contains(t, body, `hx-target="#task-results"`)
		require.Contains(t, body, `hx-push-url="true"`)
		require.Equal(t, []string{"t1", "t2", "t3", "t4"}, taskRows(body))
		require.Contains(t, body, "Showing 1–4 of 4 tasks")
		require.NotContains(t, body, `data-testid="pagination"`)
	})
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"site=gitlab", []string{"t2", "t3"}},
		{"site=multi-site", []string{"t3"}},
		{"task_type=qa", []string{"t2", "t4"}},
		{"difficulty=easy", []string{"t1", "t4"}},
		{"domain=software", []string{"t2", "t3"}},
		{"attribute=action-based", []string{"t1", "t3"}},
		{"subset=smoke", []string{"t1", "t3"}},
		{"q=" + url.QueryEscape("100%"), []string{"t4"}},
		{"q=STARS&domain=software", []string{"t2"}},
		{"site=reddit&difficulty=easy", []string{}},
	} {
		t.Run("Filter "+tc.query, func(t *testing.T) {
			body := get(t, "/benchmarks/mini/tasks?"+tc.query)
			require.Equal(t, tc.want, taskRows(body))
		})
	}
	t.Run("SelectedFilterKept", func(t *testing.T) {
		body := get(t, "/benchmarks/mini/tasks?difficulty=hard&q=star")
		require.Contains(t, body, `<option value="hard" selected>hard</option>`)
		require.Contains(t, body, `name="q" value="star"`)
	})
	t.Run("Pagination", func(t *testing.T) {
		body := get(t, "/benchmarks/mini/tasks?per_page=1&site=shopping")
		require.Equal(t, []string{"t1"}, taskRows(body))
		require.Contains(t, body, "Showing 1–1 of 2 tasks")
		require.NotContains(t, body, `data-testid="page-prev"`)
		next := regexp.MustCompile(`href="([^"]+)"[^>]*data-testid="page-next"`).FindStringSubmatch(body)
		require.NotNil(t, next, body)
		link := html.UnescapeString(next[1])
		u, err := url.Parse(link)
		require.NoError(t, err)
		require.Equal(t, "/benchmarks/mini/tasks", u.Path)
		require.Equal(t, url.Values{"site": {"shopping"}, "per_page": {"1"}, "page": {"2"}}, u.Query())

		body = get(t, link)
		require.Equal(t, []string{"t4"}, taskRows(body))
		require.Contains(t, body, "Showing 2–2 of 2 tasks")
		require.NotContains(t, body, `data-testid="page-next"`)
		prev := regexp.MustCompile(`href="([^"]+)"[^>]*data-testid="page-prev"`).FindStringSubmatch(body)
		require.NotNil(t, prev)
		u, err = url.Parse(html.UnescapeString(prev[1]))
		require.NoError(t, err)
		require.Equal(t, url.Values{"site": {"shopping"}, "per_page": {"1"}}, u.Query())
	})
	t.Run("BadPage", func(t *testing.T) {
		require.Equal(t, http.StatusBadRequest, c.get("/benchmarks/mini/tasks?page=0").StatusCode)
		require.Equal(t, http.StatusBadRequest, c.get("/benchmarks/mini/tasks?per_page=5000").StatusCode)
	})
	t.Run("HTMXFragment", func(t *testing.T) {
		res := getHTMX(c, "/benchmarks/mini/tasks?site=gitlab", nil)
		require.Equal(t, http.StatusOK, res.StatusCode)
		body := readBody(t, res)
		require.NotContains(t, body, "<html")
		require.NotContains(t, body, `data-testid="task-filters"`)
		require.True(t, strings.HasPrefix(body, `<div data-testid="task-results">`), body)
		require.Equal(t, []string{"t2", "t3"}, taskRows(body))
	})
	t.Run("HTMXBoostedGetsWholePage", func(t *testing.T) {
		for _, h := range []string{"HX-Boosted", "HX-History-Restore-Request"} {
			body := readBody(t, getHTMX(c, "/benchmarks/mini/tasks", map[string]string{h: "true"}))
			require.Contains(t, body, "<html", h)
			require.Contains(t, body, `data-testid="task-filters"`, h)
		}
	})
}

func TestBenchmarks_HiddenAnswers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	importBench(t, b, "mini")
	user := b.newUser(t, "user@example.org", false)
	paths := []string{
		"/benchmarks/mini/tasks/t1",
		"/benchmarks/mini/tasks",
		"/benchmarks/mini/tasks?subset=smoke",
		"/benchmarks/mini",
		"/api/v1/benchmarks/mini/tasks/t1",
		"/api/v1/benchmarks/mini/tasks",
		"/api/v1/benchmarks/mini",
	}
	for name, c := range map[string]*client{"anonymous": b.anonymous(t), "user": user} {
		t.Run(name, func(t *testing.T) {
			for _, p := range paths {
				res := c.get(p)
				require.Equal(t, http.StatusOK, res.StatusCode, p)
				body := readBody(t, res)
				for _, s := range benchSecrets {
					require.NotContains(t, body, s, p)
				}
				for _, key := range []string{`"eval_spec"`, `"reference_answers"`, `"reference_actions"`, "Evaluation (hidden)"} {
					require.NotContains(t, body, key, p)
				}
			}
		})
	}
	t.Run("admin", func(t *testing.T) {
		body := readBody(t, b.admin.get("/benchmarks/mini/tasks/t1"))
		require.Contains(t, body, `data-testid="hidden-evaluation"`)
		require.Contains(t, body, "Evaluation (hidden)")
		for _, s := range benchSecrets {
			require.Contains(t, body, s)
		}
		require.Contains(t, body, "&#34;must_include&#34;: [", "pretty-printed")

		var task map[string]any
		res := b.admin.get("/api/v1/benchmarks/mini/tasks/t1")
		require.Equal(t, http.StatusOK, res.StatusCode)
		decodeJSON(t, res, &task)
		require.Equal(t, map[string]any{"must_include": []any{"SECRET-ANSWER-42"}}, task["reference_answers"])
		require.Equal(t, map[string]any{"check": "cart_contains", "sku": "SECRET-SKU-7"}, task["eval_spec"])
		require.NotNil(t, task["reference_actions"])
	})
}

func TestAPI_Benchmarks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	importBench(t, b, "mini")
	c := b.anonymous(t)

	t.Run("List", func(t *testing.T) {
		var out struct {
			Items []map[string]any `json:"items"`
			Total int              `json:"total"`
		}
		res := c.get("/api/v1/benchmarks")
		require.Equal(t, http.StatusOK, res.StatusCode)
		decodeJSON(t, res, &out)
		require.Equal(t, 1, out.Total)
		require.Equal(t, "mini", out.Items[0]["slug"])
		require.EqualValues(t, 4, out.Items[0]["tasks"])
		require.EqualValues(t, 1, out.Items[0]["subsets"])
	})
	t.Run("Summary", func(t *testing.T) {
		var s models.BenchmarkSummary
		res := c.get("/api/v1/benchmarks/mini")
		require.Equal(t, http.StatusOK, res.StatusCode)
		decodeJSON(t, res, &s)
		require.Equal(t, 4, s.Tasks)
		require.Equal(t, map[string]int{"shopping": 2, "gitlab": 1, "multi-site": 1}, s.BySite)
		require.Equal(t, 6, s.RubricItems)
		require.Equal(t, []models.SubsetSummary{{Name: "smoke", Tasks: 2, BySite: map[string]int{"shopping": 1, "multi-site": 1}}}, s.Subsets)
	})
	t.Run("Tasks", func(t *testing.T) {
		var out struct {
			Items   []map[string]any `json:"items"`
			Page    int              `json:"page"`
			PerPage int              `json:"per_page"`
			Total   int              `json:"total"`
			HasMore bool             `json:"has_more"`
		}
		res := c.get("/api/v1/benchmarks/mini/tasks?site=shopping&per_page=1")
		require.Equal(t, http.StatusOK, res.StatusCode)
		decodeJSON(t, res, &out)
		require.Equal(t, 2, out.Total)
		require.True(t, out.HasMore)
		require.Equal(t, 1, out.PerPage)
		require.Len(t, out.Items, 1)
		task := out.Items[0]
		require.Equal(t, "t1", task["id"])
		require.Equal(t, []any{"shopping"}, task["sites"])
		require.Len(t, task["rubric_items"], 2)
		_, hidden := task["reference_answers"]
		require.False(t, hidden)

		res = c.get("/api/v1/benchmarks/mini/tasks?site=shopping&per_page=1&page=2")
		decodeJSON(t, res, &out)
		require.False(t, out.HasMore)
		require.Equal(t, "t4", out.Items[0]["id"])
	})
	t.Run("Errors", func(t *testing.T) {
		res := c.get("/api/v1/benchmarks/nope/tasks")
		require.Equal(t, http.StatusNotFound, res.StatusCode)
		require.Contains(t, readBody(t, res), `"code":"not_found"`)
		res = c.get("/api/v1/benchmarks/mini/tasks/t99")
		require.Equal(t, http.StatusNotFound, res.StatusCode)
		res = c.get("/api/v1/benchmarks/mini/tasks?per_page=0")
		require.Equal(t, http.StatusBadRequest, res.StatusCode)
	})
	t.Run("Import", func(t *testing.T) {
		fields := map[string]string{"format": "proctor", "slug": "api-mini"}
		file := benchUpload{"dataset", "mini.jsonl", benchDataset}
		res := postMultipart(b.admin, "/api/v1/benchmarks/import", fields, file)
		require.Equal(t, http.StatusCreated, res.StatusCode)
		var out map[string]any
		decodeJSON(t, res, &out)
		require.Equal(t, "api-mini", out["benchmark"])
		require.EqualValues(t, 1, out["version"])
		require.Equal(t, true, out["created"])
		require.EqualValues(t, 4, out["tasks"])

		res = postMultipart(b.admin, "/api/v1/benchmarks/import", fields, file)
		require.Equal(t, http.StatusOK, res.StatusCode)
		decodeJSON(t, res, &out)
		require.Equal(t, false, out["created"])

		bad := benchUpload{"dataset", "bad.jsonl", strings.Replace(benchDataset, `"difficulty": "medium"`, `"difficulty": "extreme"`, 1)}
		res = postMultipart(b.admin, "/api/v1/benchmarks/import", fields, bad)
		require.Equal(t, http.StatusBadRequest, res.StatusCode)
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		decodeJSON(t, res, &e)
		require.Equal(t, "invalid", e.Error.Code)
		require.Contains(t, e.Error.Message, `line 3 (task t2): field "difficulty"`)
	})
}

func TestAdmin_ImportForm(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fields := func(slug string) map[string]string {
		return map[string]string{"format": "proctor", "slug": slug}
	}
	good := benchUpload{"dataset", "mini.jsonl", benchDataset}

	t.Run("Form", func(t *testing.T) {
		res := b.admin.get("/admin/benchmarks/import")
		require.Equal(t, http.StatusOK, res.StatusCode)
		body := readBody(t, res)
		require.Contains(t, body, `enctype="multipart/form-data"`)
		require.Contains(t, body, `<option value="webarena-verified" selected>`)
		require.Contains(t, body, `name="subset_file_3"`)
		require.Contains(t, body, `name="_csrf"`)
	})
	t.Run("MalformedFileNamesTaskAndField", func(t *testing.T) {
		bad := strings.Replace(benchDataset, `"intent": "Which project has the most stars?"`, `"intent": ""`, 1)
		res := postMultipart(b.admin, "/admin/benchmarks/import", fields("broken"), benchUpload{"dataset", "bad.jsonl", bad})
		require.Equal(t, http.StatusBadRequest, res.StatusCode)
		body := html.UnescapeString(readBody(t, res))
		require.Regexp(t, `data-testid="error-dataset">line 3 \(task t2\): field "intent": missing or empty<`, body)
		require.Contains(t, body, `value="broken"`, "the slug is kept")
		require.Contains(t, body, `<option value="proctor" selected>`)
		require.Equal(t, http.StatusNotFound, b.admin.get("/benchmarks/broken").StatusCode, "nothing was written")
	})
	t.Run("FieldErrors", func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			fields map[string]string
			files  []benchUpload
			status int
			field  string
		}{
			{"NoFile", fields("x"), nil, http.StatusBadRequest, "dataset"},
			{"BadSlug", fields("Not A Slug"), []benchUpload{good}, http.StatusBadRequest, "slug"},
			{"NoSlug", fields(""), []benchUpload{good}, http.StatusBadRequest, "slug"},
			{"UnknownFormat", map[string]string{"format": "csv", "slug": "x"}, []benchUpload{good}, http.StatusBadRequest, "format"},
			{"SubsetWithoutFile", map[string]string{"format": "proctor", "slug": "x", "subset_name_1": "hard"}, []benchUpload{good}, http.StatusBadRequest, "subset_file_1"},
			{"SubsetWithoutName", fields("x"), []benchUpload{good, {"subset_file_2", "s.json", `{"task_ids": ["t1"]}`}}, http.StatusBadRequest, "subset_name_2"},
			{"SubsetReservedName", map[string]string{"format": "proctor", "slug": "x", "subset_name_1": "full"}, []benchUpload{good, {"subset_file_1", "s.json", `{"task_ids": ["t1"]}`}}, http.StatusBadRequest, "subset_name_1"},
			{"SubsetUnknownTask", map[string]string{"format": "proctor", "slug": "x", "subset_name_1": "hard"}, []benchUpload{good, {"subset_file_1", "s.json", `{"task_ids": ["t1", "t9"]}`}}, http.StatusBadRequest, "subset_file_1"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				res := postMultipart(b.admin, "/admin/benchmarks/import", tc.fields, tc.files...)
				require.Equal(t, tc.status, res.StatusCode)
				require.Contains(t, readBody(t, res), `data-testid="error-`+tc.field+`"`)
			})
		}
	})
	t.Run("Success", func(t *testing.T) {
		res := postMultipart(b.admin, "/admin/benchmarks/import",
			map[string]string{"format": "proctor", "slug": "mini", "subset_name_1": "pair"},
			good, benchUpload{"subset_file_1", "pair.json", `{"description": "A pair", "task_ids": ["t2", "t4"]}`})
		require.Equal(t, http.StatusSeeOther, res.StatusCode, readBody(t, res))
		require.Equal(t, "/benchmarks/mini?notice=imported", res.Header.Get("Location"))
		body := readBody(t, b.admin.get(res.Header.Get("Location")))
		require.Contains(t, body, "Benchmark imported.")
		require.Contains(t, body, `data-testid="subset-pair"`)
		require.Contains(t, body, `data-testid="subset-smoke"`)

		dash := readBody(t, b.admin.get("/admin"))
		require.Contains(t, dash, `data-testid="admin-benchmark-mini"`)
		require.Contains(t, dash, "mini.jsonl")
	})
	t.Run("FormatChangeConflicts", func(t *testing.T) {
		res := postMultipart(b.admin, "/admin/benchmarks/import", map[string]string{"format": "odysseys", "slug": "mini"},
			benchUpload{"dataset", "o.json", `[{"task_id": "a1", "confirmed_task": "Find a hotel.", "website": "https://www.example.com/", "level": "easy", "rubrics": {"R1": {"requirement": "Finds one"}}}]`})
		require.Equal(t, http.StatusConflict, res.StatusCode)
		require.Contains(t, readBody(t, res), `data-testid="error-format"`)
	})
	t.Run("NotMultipart", func(t *testing.T) {
		res := b.admin.postForm("/admin/benchmarks/import", url.Values{"format": {"proctor"}, "slug": {"x"}})
		require.Equal(t, http.StatusBadRequest, res.StatusCode)
		require.Contains(t, readBody(t, res), "multipart/form-data")
	})
}

func TestAdmin_UploadLimit(t *testing.T) {
	t.Parallel()
	db := storagetest.OpenSQLite(t)
	h, err := handlers.New(handlers.Options{LoginAttemptsPerMinute: 1000, MaxImportBytes: 1 << 20}, handlers.Deps{Evaluators: evaltest.Registry(), Runs: servicetest.Runs(db, 0), Benchmarks: servicetest.Benchmarks(db), Teams: servicetest.Teams(db), Accounts: servicetest.Accounts(db), Candidates: servicetest.Candidates(db, nil), Moderation: servicetest.Moderation(db),
		Store: db, Static: static.Files(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	b := &testBundle{srv: srv, db: db}
	b.admin = b.newUser(t, "admin@example.org", true)

	big := benchUpload{"dataset", "big.jsonl", strings.Repeat(" ", 2<<20)}
	res := postMultipart(b.admin, "/admin/benchmarks/import", map[string]string{"format": "proctor", "slug": "big"}, big)
	require.Equal(t, http.StatusRequestEntityTooLarge, res.StatusCode)
	res = postMultipart(b.admin, "/api/v1/benchmarks/import", map[string]string{"format": "proctor", "slug": "big"}, big)
	require.Equal(t, http.StatusRequestEntityTooLarge, res.StatusCode)
	require.Contains(t, readBody(t, res), `"code":"too_large"`)
	// Below the limit the upload goes through, past the global 2 MB cap too.
	res = postMultipart(b.admin, "/admin/benchmarks/import", map[string]string{"format": "proctor", "slug": "small"},
		benchUpload{"dataset", "small.jsonl", benchDataset})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
}

func TestAdmin_Sites(t *testing.T) {
	t.Parallel()
	b := setup(t)
	importBench(t, b, "mini")

	body := readBody(t, b.admin.get("/admin/benchmarks/mini/sites"))
	require.Contains(t, body, `data-testid="site-shopping"`)
	require.Contains(t, body, `action="/admin/benchmarks/mini/sites/shopping"`)

	res := b.admin.postForm("/admin/benchmarks/mini/sites/shopping", url.Values{"url": {"ftp://shop.test"}, "max_concurrency": {"2"}})
	require.Equal(t, http.StatusBadRequest, res.StatusCode)
	body = readBody(t, res)
	require.Contains(t, body, `data-testid="error-url"`)
	require.Contains(t, body, `value="ftp://shop.test"`, "the submitted value is kept")

	res = b.admin.postForm("/admin/benchmarks/mini/sites/shopping", url.Values{"url": {"http://shop.test"}, "max_concurrency": {"many"}})
	require.Equal(t, http.StatusBadRequest, res.StatusCode)
	require.Contains(t, readBody(t, res), `data-testid="error-max_concurrency"`)

	res = b.admin.postForm("/admin/benchmarks/mini/sites/shopping", url.Values{"url": {"http://shop.test:7770/"}, "reset_url": {"http://shop.test:7771/reset"}, "max_concurrency": {"3"}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.Equal(t, "/admin/benchmarks/mini/sites?notice=saved", res.Header.Get("Location"))
	body = readBody(t, b.admin.get("/admin/benchmarks/mini/sites"))
	require.Contains(t, body, `value="http://shop.test:7770"`)
	require.Contains(t, body, `value="3"`)

	res = b.admin.postForm("/admin/benchmarks/mini/sites/nope", url.Values{"url": {"http://x.test"}})
	require.Equal(t, http.StatusNotFound, res.StatusCode)
}

// TestAdmin_Judge: a benchmark's own LLM judge is set on its admin page; a
// bad URL is reported next to the field, and the key is write-only.
func TestAdmin_Judge(t *testing.T) {
	t.Parallel()
	b := setup(t)
	importBench(t, b, "mini")

	body := readBody(t, b.admin.get("/admin/benchmarks/mini/judge"))
	require.Contains(t, body, `data-testid="judge-form"`)
	require.Contains(t, body, "attempts are not judged", "no server judge in this setup")

	res := b.admin.postForm("/admin/benchmarks/mini/judge", url.Values{"judge_base_url": {"ftp://judge.test"}, "judge_model": {"m"}})
	require.Equal(t, http.StatusBadRequest, res.StatusCode)
	body = readBody(t, res)
	require.Contains(t, body, `data-testid="error-judge_base_url"`)
	require.Contains(t, body, `value="ftp://judge.test"`, "the submitted value is kept")

	const key = "sk-judge-never-shown"
	res = b.admin.postForm("/admin/benchmarks/mini/judge", url.Values{"judge_base_url": {"https://judge.test/v1"}, "judge_model": {"judge-1"}, "judge_api_key": {key}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.Equal(t, "/admin/benchmarks/mini/judge?notice=saved", res.Header.Get("Location"))
	body = readBody(t, b.admin.get("/admin/benchmarks/mini/judge"))
	require.Contains(t, body, `value="https://judge.test/v1"`)
	require.Contains(t, body, `value="judge-1"`)
	require.Contains(t, body, `data-testid="clear-key"`, "a key is stored")
	require.NotContains(t, body, key)

	res = b.admin.postForm("/admin/benchmarks/mini/judge", url.Values{"judge_base_url": {"https://judge.test/v1"}, "judge_model": {"judge-1"}, "clear_key": {"true"}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.NotContains(t, readBody(t, b.admin.get("/admin/benchmarks/mini/judge")), `data-testid="clear-key"`)
}

// TestAdmin_Grading: an administrator chooses the lenient reading for a
// WebArena-Verified benchmark; a bad choice is reported next to the field;
// after saving, the page offers to re-score; the benchmark page, its board
// and the board's JSON say the scores are not official. Other benchmarks
// have no such choice.
func TestAdmin_Grading(t *testing.T) {
	t.Parallel()
	b := setup(t)
	importVerified(t, b, "wav")
	importBench(t, b, "mini")
	anon := b.anonymous(t)

	body := readBody(t, b.admin.get("/admin/benchmarks/wav/grading"))
	require.Contains(t, body, `data-testid="grading-form"`)
	require.Contains(t, body, `value="webarena-verified" checked data-testid="grading-official"`)
	require.NotContains(t, body, `data-testid="grading-saved"`)
	require.Contains(t, readBody(t, b.admin.get("/admin")), `data-testid="grading-wav"`)
	require.NotContains(t, readBody(t, b.admin.get("/admin")), `data-testid="grading-mini"`)

	res := b.admin.postForm("/admin/benchmarks/wav/grading", url.Values{"evaluator": {"kind"}})
	require.Equal(t, http.StatusBadRequest, res.StatusCode)
	require.Contains(t, readBody(t, res), `data-testid="error-evaluator">choose webarena-verified or webarena-verified-lenient, not &#34;kind&#34;<`)

	res = b.admin.postForm("/admin/benchmarks/wav/grading", url.Values{"evaluator": {models.EvaluatorWebArenaVerifiedLenient}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.Equal(t, "/admin/benchmarks/wav/grading?notice=saved", res.Header.Get("Location"))
	body = readBody(t, b.admin.get(res.Header.Get("Location")))
	require.Contains(t, body, `data-testid="grading-saved"`)
	require.Contains(t, body, `data-testid="grading-rescore"`)
	require.Contains(t, body, `value="webarena-verified-lenient" checked data-testid="grading-lenient"`)

	require.Contains(t, readBody(t, anon.get("/benchmarks/wav")), `data-testid="lenient-benchmark"`)
	require.Contains(t, readBody(t, anon.get("/benchmarks/wav/leaderboard")), `data-testid="lenient-board"`)
	require.NotContains(t, readBody(t, anon.get("/benchmarks/mini/leaderboard")), `data-testid="lenient-board"`)
	var board struct {
		Evaluator string `json:"evaluator"`
	}
	decodeJSON(t, anon.get("/api/v1/benchmarks/wav/leaderboard"), &board)
	require.Equal(t, models.EvaluatorWebArenaVerifiedLenient, board.Evaluator)

	res = b.admin.get("/admin/benchmarks/mini/grading")
	require.Equal(t, http.StatusConflict, res.StatusCode)
	require.Contains(t, readBody(t, res), "only WebArena-Verified benchmarks choose a reading. Its judge and sites are set from the Administration page.")
	res = b.admin.postForm("/admin/benchmarks/mini/grading", url.Values{"evaluator": {models.EvaluatorWebArenaVerifiedLenient}})
	require.Equal(t, http.StatusConflict, res.StatusCode)
}

// TestBenchmarks_TaskDefects: a task whose own spec no output can pass says
// so to administrators on its page, and to nobody else.
func TestBenchmarks_TaskDefects(t *testing.T) {
	t.Parallel()
	b := setup(t)
	importVerified(t, b, "wav")

	body := readBody(t, b.admin.get("/benchmarks/wav/tasks/refund"))
	require.Contains(t, body, `data-testid="task-defects"`)
	require.Contains(t, body, `data-testid="task-defect-`+verified.DefectNoExpectedData+`"`)
	require.Contains(t, body, "no retrieved_data")
	require.NotContains(t, readBody(t, b.admin.get("/benchmarks/wav/tasks/price")), `data-testid="task-defects"`)
	for _, c := range []*client{b.anonymous(t), b.newUser(t, "user@example.org", false)} {
		require.NotContains(t, readBody(t, c.get("/benchmarks/wav/tasks/refund")), `data-testid="task-defects"`)
	}
	// The lenient reading grades the task by its status: no defect there.
	require.NoError(t, b.db.SetBenchmarkEvaluator(models.WithActor(context.Background(), models.SystemActor()), "wav", models.EvaluatorWebArenaVerifiedLenient, evaltest.Registry().Readings))
	require.NotContains(t, readBody(t, b.admin.get("/benchmarks/wav/tasks/refund")), `data-testid="task-defects"`)
}

func TestAdmin_Publish(t *testing.T) {
	t.Parallel()
	b := setup(t)
	importBench(t, b, "mini")
	anon := b.anonymous(t)

	res := b.admin.postForm("/admin/benchmarks/mini/publish", url.Values{"published": {"false"}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.Equal(t, "/admin?notice=saved", res.Header.Get("Location"))
	require.Equal(t, http.StatusNotFound, anon.get("/benchmarks/mini").StatusCode)
	require.Equal(t, http.StatusNotFound, anon.get("/api/v1/benchmarks/mini/tasks").StatusCode)
	require.NotContains(t, readBody(t, anon.get("/benchmarks")), "Mini bench")
	require.Contains(t, readBody(t, b.admin.get("/benchmarks/mini")), `data-testid="unpublished"`)
	require.Contains(t, readBody(t, b.admin.get("/admin")), `data-testid="publish-mini"`)

	res = b.admin.postForm("/admin/benchmarks/mini/publish", url.Values{"published": {"maybe"}})
	require.Equal(t, http.StatusBadRequest, res.StatusCode)
	res = b.admin.postForm("/admin/benchmarks/mini/publish", url.Values{"published": {"true"}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.Equal(t, http.StatusOK, anon.get("/benchmarks/mini").StatusCode)
}

// TestAuthz_Benchmarks checks every benchmark, admin and benchmark API route for
// each kind of caller, with exact statuses. "hidden" is an unpublished benchmark.
func TestAuthz_Benchmarks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	importBench(t, b, "mini")
	importBench(t, b, "hidden")
	importVerified(t, b, "wav")
	require.NoError(t, b.db.SetBenchmarkPublished(models.WithActor(context.Background(), models.SystemActor()), "hidden", false))
	clients := map[string]*client{
		"anonymous": b.anonymous(t),
		"user":      b.newUser(t, "user@example.org", false),
		"other":     b.newUser(t, "other-team@example.org", false),
		"admin":     b.admin,
	}
	const (
		ok, created, see            = http.StatusOK, http.StatusCreated, http.StatusSeeOther
		unauth, forbidden, notFound = http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound
	)
	all := func(status int) map[string]int {
		return map[string]int{"anonymous": status, "user": status, "other": status, "admin": status}
	}
	adminOnly := func(anon, admin int) map[string]int {
		return map[string]int{"anonymous": anon, "user": forbidden, "other": forbidden, "admin": admin}
	}
	visibleToAdmin := map[string]int{"anonymous": notFound, "user": notFound, "other": notFound, "admin": ok}
	upload := func(slug string) (map[string]string, []benchUpload) {
		return map[string]string{"format": "proctor", "slug": slug}, []benchUpload{{"dataset", "mini.jsonl", benchDataset}}
	}
	for _, tc := range []struct {
		method, path string
		form         url.Values
		multipart    string // slug to import, for the import routes
		want         map[string]int
	}{
		{method: "GET", path: "/benchmarks", want: all(ok)},
		{method: "GET", path: "/benchmarks/mini", want: all(ok)},
		{method: "GET", path: "/benchmarks/mini/tasks", want: all(ok)},
		{method: "GET", path: "/benchmarks/mini/tasks?site=gitlab&page=1", want: all(ok)},
		{method: "GET", path: "/benchmarks/mini/tasks/t1", want: all(ok)},
		{method: "GET", path: "/benchmarks/hidden", want: visibleToAdmin},
		{method: "GET", path: "/benchmarks/hidden/tasks", want: visibleToAdmin},
		{method: "GET", path: "/benchmarks/hidden/tasks/t1", want: visibleToAdmin},
		{method: "GET", path: "/benchmarks/nope", want: all(notFound)},
		{method: "GET", path: "/admin", want: adminOnly(see, ok)},
		{method: "GET", path: "/admin/benchmarks/import", want: adminOnly(see, ok)},
		{method: "POST", path: "/admin/benchmarks/import", multipart: "form-import", want: adminOnly(unauth, see)},
		{method: "GET", path: "/admin/benchmarks/mini/sites", want: adminOnly(see, ok)},
		{method: "GET", path: "/admin/benchmarks/hidden/sites", want: adminOnly(see, ok)},
		{method: "POST", path: "/admin/benchmarks/mini/sites/shopping", form: url.Values{"url": {"http://shop.test"}}, want: adminOnly(unauth, see)},
		{method: "POST", path: "/admin/benchmarks/mini/publish", form: url.Values{"published": {"true"}}, want: adminOnly(unauth, see)},
		{method: "GET", path: "/admin/benchmarks/mini/judge", want: adminOnly(see, ok)},
		{method: "GET", path: "/admin/benchmarks/nope/judge", want: adminOnly(see, http.StatusNotFound)},
		{method: "POST", path: "/admin/benchmarks/mini/judge", form: url.Values{"judge_base_url": {""}}, want: adminOnly(unauth, see)},
		{method: "GET", path: "/admin/benchmarks/wav/grading", want: adminOnly(see, ok)},
		{method: "GET", path: "/admin/benchmarks/mini/grading", want: adminOnly(see, http.StatusConflict)},
		{method: "GET", path: "/admin/benchmarks/nope/grading", want: adminOnly(see, notFound)},
		{method: "POST", path: "/admin/benchmarks/wav/grading", form: url.Values{"evaluator": {models.EvaluatorWebArenaVerified}}, want: adminOnly(unauth, see)},
		{method: "GET", path: "/api/v1/benchmarks", want: all(ok)},
		{method: "GET", path: "/api/v1/benchmarks/mini", want: all(ok)},
		{method: "GET", path: "/api/v1/benchmarks/mini/tasks", want: all(ok)},
		{method: "GET", path: "/api/v1/benchmarks/mini/tasks/t1", want: all(ok)},
		{method: "GET", path: "/api/v1/benchmarks/hidden", want: visibleToAdmin},
		{method: "GET", path: "/api/v1/benchmarks/hidden/tasks", want: visibleToAdmin},
		{method: "GET", path: "/api/v1/benchmarks/hidden/tasks/t1", want: visibleToAdmin},
		{method: "POST", path: "/api/v1/benchmarks/import", multipart: "api-import", want: adminOnly(unauth, created)},
	} {
		for _, actor := range []string{"anonymous", "user", "other", "admin"} {
			want, listed := tc.want[actor]
			require.True(t, listed, "%s %s: no expectation for %s", tc.method, tc.path, actor)
			t.Run(tc.method+" "+tc.path+" as "+actor, func(t *testing.T) {
				c := clients[actor]
				var res *http.Response
				if tc.multipart != "" {
					fields, files := upload(tc.multipart)
					res = postMultipart(c, tc.path, fields, files...)
				} else {
					res = c.send(authzCase{method: tc.method, path: tc.path, form: tc.form}, "")
				}
				body := readBody(t, res)
				require.Equal(t, want, res.StatusCode, "%s %s as %s: %s", tc.method, tc.path, actor, body)
				require.NotContains(t, body, "did not come from this site", "the CSRF check must not be what refuses")
				if want == see && tc.method == http.MethodGet {
					require.True(t, strings.HasPrefix(res.Header.Get("Location"), "/login?next="), res.Header.Get("Location"))
				}
			})
		}
	}
}

func TestBenchmarks_TaskIDsRoundTrip(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const odd = "web/ds 1%41"
	ds, err := importer.Parse(evaltest.Registry(), models.FormatProctor, strings.NewReader(
		`{"id": "web/ds 1%41", "intent": "Odd id.", "start_urls": ["__SHOPPING__"]}`+"\n"+
			`{"id": "plain", "intent": "Plain id.", "start_urls": ["__SHOPPING__"]}`+"\n"), nil)
	require.NoError(t, err)
	_, err = b.db.ImportBenchmark(models.WithActor(context.Background(), models.SystemActor()), "odd", ds, "odd.jsonl", 0)
	require.NoError(t, err)
	c := b.anonymous(t)
	body := readBody(t, c.get("/benchmarks/odd/tasks"))
	m := regexp.MustCompile(`href="(/benchmarks/odd/tasks/web[^"]+)"`).FindStringSubmatch(body)
	require.NotNil(t, m, body)
	res := c.get(html.UnescapeString(m[1]))
	require.Equal(t, http.StatusOK, res.StatusCode, m[1])
	require.Contains(t, readBody(t, res), "Odd id.")
	res = c.get("/api/v1/benchmarks/odd/tasks/" + url.PathEscape(odd))
	require.Equal(t, http.StatusOK, res.StatusCode)
	res = c.get("/benchmarks/odd/tasks/plain")
	require.Equal(t, http.StatusOK, res.StatusCode)
}
