package handlers_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/stretchr/testify/require"

	"proctor/handlers"
	"proctor/internal/evaltest"
	"proctor/models"
	"proctor/runner"
	"proctor/service"
	"proctor/service/servicetest"
	"proctor/static"
	"proctor/storage/artifact"
	"proctor/storage/storagetest"
	"proctor/vault"
)

// fetchOpenAPI gets the document from the running server as c and loads it.
func fetchOpenAPI(t *testing.T, c *client) (*openapi3.T, []byte) {
	t.Helper()
	res := c.get("/api/v1/openapi.json")
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "application/json", strings.Split(res.Header.Get("Content-Type"), ";")[0])
	raw := []byte(readBody(t, res))
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(raw)
	require.NoError(t, err)
	return doc, raw
}

// routeShape is a route with its parameters' names left out, so that
// /teams/:slug/members/:userID (Echo) and /teams/{slug}/members/{user_id}
// (the document) are the same route.
func routeShape(method, path string) string {
	parts := strings.Split(path, "/")
	for i, p := range parts {
		if strings.HasPrefix(p, ":") || (strings.HasPrefix(p, "{") && strings.HasSuffix(p, "}")) {
			parts[i] = "{}"
		}
	}
	return method + " " + strings.Join(parts, "/")
}

// TestOpenAPI_RouteParity checks the document against the routes the server
// really registers under /api/v1: every route is documented, and every
// documented operation is a route. It is requested by every kind of caller,
// as the route coverage check wants.
func TestOpenAPI_RouteParity(t *testing.T) {
	t.Parallel()
	b := setup(t)
	user := b.newUser(t, "reader@example.org", false)
	var doc *openapi3.T
	var bodies [][]byte
	for _, c := range []*client{b.anonymous(t), user, b.admin} {
		d, raw := fetchOpenAPI(t, c)
		doc, bodies = d, append(bodies, raw)
	}
	require.Equal(t, bodies[0], bodies[1], "the document is the same for every caller")
	require.Equal(t, bodies[0], bodies[2], "the document is the same for every caller")

	documented := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			documented[routeShape(method, path)] = true
		}
	}
	registered := map[string]bool{}
	for _, r := range b.app.Routes() {
		if r.Method == "echo_route_not_found" || (r.Path != "/api/v1" && !strings.HasPrefix(r.Path, "/api/v1/")) {
			continue
		}
		registered[routeShape(r.Method, r.Path)] = true
	}
	require.NotEmpty(t, registered)
	var undocumented, unrouted []string
	for r := range registered {
		if !documented[r] {
			undocumented = append(undocumented, r)
		}
	}
	for r := range documented {
		if !registered[r] {
			unrouted = append(unrouted, r)
		}
	}
	sort.Strings(undocumented)
	sort.Strings(unrouted)
	require.Empty(t, undocumented, "routes the server registers that the OpenAPI table (handlers/openapi.go) does not document")
	require.Empty(t, unrouted, "operations the OpenAPI table documents that the server does not register")
}

// TestOpenAPI_Valid validates the document with kin-openapi (OpenAPI 3.1
// structure, references, path parameters) and checks what the validator
// leaves to authors: unique operation ids, tags and security on every
// operation, and each path parameter declared exactly once.
func TestOpenAPI_Valid(t *testing.T) {
	t.Parallel()
	b := setup(t)
	doc, raw := fetchOpenAPI(t, b.anonymous(t))
	require.Equal(t, "3.1.0", doc.OpenAPI)
	require.NoError(t, doc.Validate(context.Background()))

	t.Run("RefsResolve", func(t *testing.T) {
		var tree any
		require.NoError(t, json.Unmarshal(raw, &tree))
		root := tree.(map[string]any)
		var refs []string
		var walk func(v any)
		walk = func(v any) {
			switch v := v.(type) {
			case map[string]any:
				if ref, ok := v["$ref"].(string); ok {
					refs = append(refs, ref)
				}
				for _, child := range v {
					walk(child)
				}
			case []any:
				for _, child := range v {
					walk(child)
				}
			}
		}
		walk(root)
		require.NotEmpty(t, refs)
		for _, ref := range refs {
			section, name, ok := strings.Cut(strings.TrimPrefix(ref, "#/components/"), "/")
			require.True(t, ok && strings.HasPrefix(ref, "#/components/"), "reference %s is not to a component", ref)
			components := root["components"].(map[string]any)[section].(map[string]any)
			require.Contains(t, components, name, "reference %s resolves to nothing", ref)
		}
	})

	t.Run("Operations", func(t *testing.T) {
		tags := map[string]bool{}
		for _, tag := range doc.Tags {
			tags[tag.Name] = true
		}
		ids := map[string]string{}
		paramName := regexp.MustCompile(`\{([^}]+)\}`)
		for path, item := range doc.Paths.Map() {
			for method, op := range item.Operations() {
				where := method + " " + path
				require.NotEmpty(t, op.OperationID, where)
				require.NotContains(t, ids, op.OperationID, "%s repeats the operationId of %s", where, ids[op.OperationID])
				ids[op.OperationID] = where
				require.Len(t, op.Tags, 1, where)
				require.True(t, tags[op.Tags[0]], "%s has the undeclared tag %q", where, op.Tags[0])
				require.NotEmpty(t, op.Summary, where)
				require.NotNil(t, op.Security, "%s says nothing about credentials", where)
				require.NotEmpty(t, op.Extensions["x-proctor-who"], "%s does not say who may call it", where)
				inPath := map[string]int{}
				for _, p := range op.Parameters {
					if p.Value.In == openapi3.ParameterInPath {
						inPath[p.Value.Name]++
						require.True(t, p.Value.Required, "%s: path parameter %s must be required", where, p.Value.Name)
					}
				}
				var want []string
				for _, m := range paramName.FindAllStringSubmatch(path, -1) {
					want = append(want, m[1])
					require.Equal(t, 1, inPath[m[1]], "%s: path parameter %s is declared %d times", where, m[1], inPath[m[1]])
				}
				require.Len(t, inPath, len(want), "%s declares path parameters its path does not have", where)
				require.NotNil(t, op.Responses.Value("default"), "%s has no default (error) answer", where)
				for status, res := range op.Responses.Map() {
					if n, err := strconv.Atoi(status); err == nil && n >= 400 {
						require.NotNil(t, res.Value.Content.Get("application/json"), "%s %s: errors are JSON", where, status)
					}
				}
			}
		}
	})

	t.Run("SecurityMatchesCredentials", func(t *testing.T) {
		// Anonymous operations list an empty requirement; the others need a
		// token or a session.
		for _, tc := range []struct {
			method, path string
			anonymous    bool
		}{
			{"GET", "/api/v1/benchmarks", true},
			{"GET", "/api/v1/openapi.json", true},
			{"GET", "/api/v1/me", false},
			{"PUT", "/api/v1/submissions/{id}/parts/{n}", false},
		} {
			op := doc.Paths.Find(tc.path).GetOperation(tc.method)
			require.NotNil(t, op, "%s %s", tc.method, tc.path)
			hasEmpty := false
			for _, req := range *op.Security {
				hasEmpty = hasEmpty || len(req) == 0
			}
			require.Equal(t, tc.anonymous, hasEmpty, "%s %s", tc.method, tc.path)
		}
	})

	t.Run("SubmissionPart", func(t *testing.T) {
		op := doc.Paths.Find("/api/v1/submissions/{id}/parts/{n}").Put
		require.NotNil(t, op)
		require.NotNil(t, op.RequestBody.Value.Content.Get("application/octet-stream"))
		var headers []string
		for _, p := range op.Parameters {
			if p.Value.In == openapi3.ParameterInHeader {
				headers = append(headers, p.Value.Name)
			}
		}
		require.ElementsMatch(t, []string{"Content-Length", "Content-MD5"}, headers)
	})
}

// TestOpenAPI_Caching checks the document's caching: an ETag that a repeated
// request with If-None-Match turns into 304 without a body.
func TestOpenAPI_Caching(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.anonymous(t)
	res := c.get("/api/v1/openapi.json")
	require.Equal(t, http.StatusOK, res.StatusCode)
	etag := res.Header.Get("ETag")
	require.Regexp(t, `^"[0-9a-f]{24}"$`, etag)
	require.Contains(t, res.Header.Get("Cache-Control"), "public")

	for _, tc := range []struct {
		name, ifNoneMatch string
		want              int
	}{
		{"Same", etag, http.StatusNotModified},
		{"Weak", "W/" + etag, http.StatusNotModified},
		{"AmongOthers", `"stale", ` + etag, http.StatusNotModified},
		{"Stale", `"0123"`, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodGet, c.base+"/api/v1/openapi.json", nil)
			require.NoError(t, err)
			req.Header.Set("If-None-Match", tc.ifNoneMatch)
			res := c.do(req)
			require.Equal(t, tc.want, res.StatusCode)
			require.Equal(t, etag, res.Header.Get("ETag"))
			if tc.want == http.StatusNotModified {
				require.Empty(t, readBody(t, res))
			}
		})
	}

	t.Run("IndexLinksDocs", func(t *testing.T) {
		var idx map[string]string
		decodeJSON(t, c.get("/api/v1"), &idx)
		require.Equal(t, map[string]string{"name": "proctor", "version": "v1", "docs": "/api", "openapi": "/api/v1/openapi.json"}, idx)
	})
}

// docChecker sends API requests and validates each request and answer
// against the document: the status must be documented for the operation and
// the body must match its schema (kin-openapi's openapi3filter).
type docChecker struct {
	t       *testing.T
	doc     *openapi3.T
	router  routers.Router
	checked map[string]bool // operationIds whose answer was validated
}

func newDocChecker(t *testing.T, c *client) *docChecker {
	t.Helper()
	doc, _ := fetchOpenAPI(t, c)
	router, err := legacy.NewRouter(doc)
	require.NoError(t, err)
	return &docChecker{t: t, doc: doc, router: router, checked: map[string]bool{}}
}

// apiRequest is a request of the sweep.
type apiRequest struct {
	method, path string
	json         string            // a JSON body
	raw          []byte            // or raw bytes (application/octet-stream)
	form         map[string]string // or a multipart form; fields starting with @ are files
	headers      map[string]string
}

// send performs r as c, validates the request and the answer, checks the
// status and returns the answer's body.
func (d *docChecker) send(c *client, r apiRequest, want int) []byte {
	t := d.t
	t.Helper()
	var body []byte
	contentType := ""
	switch {
	case r.json != "":
		body, contentType = []byte(r.json), "application/json"
	case r.raw != nil:
		body, contentType = r.raw, "application/octet-stream"
	case r.form != nil:
		var buf bytes.Buffer
		w := multipart.NewWriter(&buf)
		for k, v := range r.form {
			if name, ok := strings.CutPrefix(k, "@"); ok {
				part, err := w.CreateFormFile(name, name+".jsonl")
				require.NoError(t, err)
				_, err = io.WriteString(part, v)
				require.NoError(t, err)
				continue
			}
			require.NoError(t, w.WriteField(k, v))
		}
		require.NoError(t, w.Close())
		body, contentType = buf.Bytes(), w.FormDataContentType()
	}
	newRequest := func() *http.Request {
		req, err := http.NewRequest(r.method, c.base+r.path, bytes.NewReader(body))
		require.NoError(t, err)
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		for k, v := range r.headers {
			req.Header.Set(k, v)
		}
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		return req
	}
	res := c.do(newRequest())
	answer := []byte(readBody(t, res))
	require.Equal(t, want, res.StatusCode, "%s %s: %s", r.method, r.path, answer)

	req := newRequest()
	req.URL.Scheme, req.URL.Host = "", "" // the document's server is relative: "/"
	route, params, err := d.router.FindRoute(req)
	require.NoError(t, err, "%s %s is not in the document", r.method, r.path)
	opts := &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, IncludeResponseStatus: true, MultiError: true}
	input := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: opts}
	if req.ContentLength > 0 {
		req.Header.Set("Content-Length", strconv.FormatInt(req.ContentLength, 10)) // a header parameter of part uploads
	}
	if want < 400 {
		require.NoError(t, openapi3filter.ValidateRequest(context.Background(), input), "%s %s: the request does not match the document", r.method, r.path)
	}
	ct := res.Header.Get("Content-Type")
	if strings.HasPrefix(ct, "application/jsonl") {
		d.checkLines(route, res.StatusCode, answer)
		opts.ExcludeResponseBody = true
	}
	err = openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: input, Status: res.StatusCode, Header: res.Header, Body: io.NopCloser(bytes.NewReader(answer)), Options: opts,
	})
	require.NoError(t, err, "%s %s answered %d: %s", r.method, r.path, res.StatusCode, answer)
	d.checked[route.Operation.OperationID] = true
	return answer
}

// checkLines validates a JSON Lines answer line by line.
func (d *docChecker) checkLines(route *routers.Route, status int, answer []byte) {
	t := d.t
	t.Helper()
	media := route.Operation.Responses.Status(status).Value.Content.Get("application/jsonl")
	require.NotNil(t, media, "%s documents no JSON Lines answer", route.Operation.OperationID)
	lines := 0
	sc := bufio.NewScanner(bytes.NewReader(answer))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var v any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &v))
		require.NoError(t, media.Schema.Value.VisitJSON(v, openapi3.EnableJSONSchema2020()), "line %d: %s", lines+1, sc.Text())
		lines++
	}
	require.NoError(t, sc.Err())
	require.Positive(t, lines)
}

// idOf reads the id of a created resource.
func idOf(t *testing.T, answer []byte) string {
	var v struct {
		ID int64 `json:"id"`
	}
	require.NoError(t, json.Unmarshal(answer, &v))
	require.Positive(t, v.ID)
	return strconv.FormatInt(v.ID, 10)
}

// TestOpenAPI_AnswersMatchDocument sends a request to every documented
// operation, as the callers a client would be, and validates each request and
// answer against the document: a status the document does not list, a field
// it does not describe where it forbids others, a missing required field or a
// wrong type fails. Every operation of the document must be exercised.
func TestOpenAPI_AnswersMatchDocument(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, runsOptions{})
	b := f.b
	anon := b.anonymous(t)
	member, admin := withToken(t, b, f.member), withToken(t, b, b.admin)
	d := newDocChecker(t, anon)
	get := func(c *client, path string, want int) []byte {
		return d.send(c, apiRequest{method: http.MethodGet, path: path}, want)
	}
	post := func(c *client, path, body string, want int) []byte {
		return d.send(c, apiRequest{method: http.MethodPost, path: path, json: body}, want)
	}

	published, attempts := f.runIn(t, statePublished)
	private, _ := f.runIn(t, statePrivate)
	uploaded, _ := f.runIn(t, stateUploaded)
	queued, _ := f.runIn(t, stateQueued)
	errored, _ := f.runIn(t, statePrivate) // its agent error is retried
	run := func(r *models.Run, suffix string) string {
		return "/api/v1/runs/" + strconv.FormatInt(r.ID, 10) + suffix
	}

	// Meta and account.
	get(anon, "/api/v1", http.StatusOK)
	get(anon, "/api/v1/openapi.json", http.StatusOK)
	get(member, "/api/v1/me", http.StatusOK)
	get(anon, "/api/v1/me", http.StatusUnauthorized)
	token := post(member, "/api/v1/tokens", `{"name":"docs"}`, http.StatusCreated)
	get(member, "/api/v1/tokens", http.StatusOK)
	d.send(member, apiRequest{method: http.MethodDelete, path: "/api/v1/tokens/" + idOf(t, token)}, http.StatusOK)

	// Teams.
	get(anon, "/api/v1/teams?per_page=1", http.StatusOK)
	get(anon, "/api/v1/teams?per_page=0", http.StatusBadRequest)
	post(member, "/api/v1/teams", `{"name":"Docs Lab","description":"Reads the manual."}`, http.StatusCreated)
	get(anon, "/api/v1/teams/lab", http.StatusOK)
	get(member, "/api/v1/teams/lab", http.StatusOK)
	post(admin, "/api/v1/teams/lab/invites", `{"role":"member"}`, http.StatusCreated)
	post(member, "/api/v1/teams/lab/invites", `{"role":"member"}`, http.StatusForbidden)
	d.send(admin, apiRequest{method: http.MethodDelete, path: "/api/v1/teams/other/members/" + strconv.FormatInt(f.outsider.user.ID, 10)}, http.StatusConflict)

	// Agents.
	get(anon, "/api/v1/agents", http.StatusOK)
	get(anon, "/api/v1/teams/lab/agents", http.StatusOK)
	post(member, "/api/v1/teams/lab/agents", `{"name":"Documented","kind":"http","endpoint_url":"`+publicEndpoint+`","model":"gpt-4o","secrets":{"OPENAI_API_KEY":"sk-docs"}}`, http.StatusCreated)
	post(member, "/api/v1/teams/lab/agents", `{"name":"Typo","kind":"http","endpoint":"x"}`, http.StatusBadRequest)
	get(anon, "/api/v1/teams/lab/agents/documented", http.StatusOK)
	get(member, "/api/v1/teams/lab/agents/documented", http.StatusOK)
	d.send(member, apiRequest{method: http.MethodPatch, path: "/api/v1/teams/lab/agents/documented", json: `{"description":"Now with retries","clear_secrets":["OPENAI_API_KEY"],"config":null}`}, http.StatusOK)
	d.send(member, apiRequest{method: http.MethodDelete, path: "/api/v1/teams/lab/agents/documented"}, http.StatusNoContent)

	// Benchmarks and leaderboards.
	get(anon, "/api/v1/benchmarks", http.StatusOK)
	d.send(admin, apiRequest{method: http.MethodPost, path: "/api/v1/benchmarks/import",
		form: map[string]string{"format": models.FormatProctor, "slug": "documented", "@dataset": benchDataset}}, http.StatusCreated)
	get(anon, "/api/v1/benchmarks/mini", http.StatusOK)
	get(anon, "/api/v1/benchmarks/nope", http.StatusNotFound)
	get(anon, "/api/v1/benchmarks/mini/tasks?subset=smoke&per_page=2", http.StatusOK)
	get(admin, "/api/v1/benchmarks/mini/tasks", http.StatusOK)
	get(anon, "/api/v1/benchmarks/mini/tasks/t1", http.StatusOK)
	get(admin, "/api/v1/benchmarks/mini/tasks/t1", http.StatusOK)
	get(anon, "/api/v1/benchmarks/mini/leaderboard?sort=success_rate&dir=desc", http.StatusOK)
	get(anon, "/api/v1/benchmarks/mini/leaderboard?sort=nonsense", http.StatusBadRequest)
	get(anon, "/api/v1/benchmarks/mini/leaderboard/changes", http.StatusOK)

	// Runs.
	get(anon, "/api/v1/runs", http.StatusOK)
	get(member, "/api/v1/runs?team=lab", http.StatusOK)
	queuedByAPI := post(member, "/api/v1/runs", `{"team":"lab","agent":"walker","benchmark":"mini","subset":"smoke","max_cost":null}`, http.StatusCreated)
	post(member, "/api/v1/runs", `{"team":"lab","agent":"walker","benchmark":"mini","budget":1}`, http.StatusBadRequest)
	get(anon, run(published, ""), http.StatusOK)
	get(anon, run(private, ""), http.StatusNotFound)
	get(member, run(private, "/metrics"), http.StatusOK)
	get(anon, run(published, "/metrics"), http.StatusOK)
	get(anon, run(published, "/attempts"), http.StatusOK)
	get(anon, run(published, "/attempts/"+strconv.FormatInt(attempts[0], 10)), http.StatusOK)
	get(admin, run(published, "/attempts/"+strconv.FormatInt(attempts[0], 10)), http.StatusOK)
	// Hidden tests: this run's benchmark has none (TestOpenAPI_HiddenResultsMatchDocument reads a graded one).
	get(anon, run(published, "/hidden-tests"), http.StatusNotFound)
	get(admin, run(published, "/attempts/"+strconv.FormatInt(attempts[0], 10)+"/tests"), http.StatusNotFound)
	get(admin, run(published, "/attempts/"+strconv.FormatInt(attempts[0], 10)+"/tests/b1-home-page"), http.StatusNotFound)
	get(anon, run(published, "/results.jsonl"), http.StatusOK)
	post(member, "/api/v1/runs/"+idOf(t, queuedByAPI)+"/cancel", "", http.StatusNoContent)
	post(member, run(errored, "/retry"), "", http.StatusOK)
	post(member, run(queued, "/rerun"), "", http.StatusCreated)

	// Moderation.
	post(member, run(private, "/publish"), "", http.StatusOK)
	post(member, run(private, "/withdraw"), "", http.StatusOK)
	post(member, run(queued, "/publish"), "", http.StatusConflict)
	post(admin, run(published, "/verify"), "", http.StatusOK)
	post(member, run(published, "/verify"), "", http.StatusForbidden)
	post(admin, run(published, "/hide"), `{"reason":"Answers were read from a leaked file."}`, http.StatusOK)
	post(admin, run(published, "/unhide"), "", http.StatusOK)
	post(admin, run(uploaded, "/reproduce"), "", http.StatusOK)

	// Compare.
	get(admin, fmt.Sprintf("/api/v1/compare?runs=%d,%d", published.ID, uploaded.ID), http.StatusOK)
	get(anon, "/api/v1/compare?runs=1", http.StatusBadRequest)

	// Submissions: this server has no submission service, and says so.
	get(member, "/api/v1/submissions", http.StatusOK)
	get(anon, "/api/v1/submissions", http.StatusUnauthorized)
	post(member, "/api/v1/submissions", `{"agent":"lab/walker","benchmark":"mini","filename":"results.zip","size":10}`, http.StatusServiceUnavailable)
	get(member, "/api/v1/submissions/1", http.StatusServiceUnavailable)
	d.send(member, apiRequest{method: http.MethodPut, path: "/api/v1/submissions/1/parts/1", raw: []byte("0123456789"),
		headers: map[string]string{"Content-MD5": "eB5eJF1ptWaXm4bijSPyxw=="}}, http.StatusServiceUnavailable)
	get(member, "/api/v1/submissions/1/parts/1/url", http.StatusServiceUnavailable)
	post(member, "/api/v1/submissions/1/complete", "", http.StatusServiceUnavailable)
	post(member, "/api/v1/submissions/1/ingest", "", http.StatusServiceUnavailable)
	d.send(member, apiRequest{method: http.MethodDelete, path: "/api/v1/submissions/1"}, http.StatusServiceUnavailable)
	// Candidate runs: no queue here either (TestOpenAPI_CandidateAnswersMatchDocument creates one).
	post(member, "/api/v1/candidate-runs", `{"team":"lab","agent":"walker","benchmark":"mini","candidates":[]}`, http.StatusServiceUnavailable)

	var missed []string
	for _, item := range d.doc.Paths.Map() {
		for _, op := range item.Operations() {
			// Studies need graded runs and annotators:
			// TestOpenAPI_StudyAnswersMatchDocument validates every one of them.
			if slices.Contains(op.Tags, "Studies") {
				continue
			}
			// Episodes need a connecting run played by hand:
			// TestEpisodes_ClaimPullAndMCP validates every one of them.
			if slices.Contains(op.Tags, "Episodes") {
				continue
			}
			if !d.checked[op.OperationID] {
				missed = append(missed, op.OperationID)
			}
		}
	}
	sort.Strings(missed)
	require.Empty(t, missed, "documented operations this test never validated")
}

// TestOpenAPI_SubmissionAnswersMatchDocument goes through an upload with the
// real submission service over a local artifact store and validates every
// request and answer against the document, resumed uploads, refusals and the
// local store's refusal of presigned part URLs included.
func TestOpenAPI_SubmissionAnswersMatchDocument(t *testing.T) {
	t.Parallel()
	db := storagetest.OpenSQLite(t)
	sealer, err := vault.New(strings.Repeat("k", vault.MinSecretLength))
	require.NoError(t, err)
	db.UseAgentSecrets(sealer)
	store, err := artifact.NewLocal(t.TempDir(), artifact.NewURLSigner([]byte(strings.Repeat("s", 32))), "")
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc, err := runner.New(runner.Config{Evaluators: evaltest.Registry(), DB: db, Artifacts: store, Logger: logger,
		AgentClient: func(timeout time.Duration) *http.Client { return &http.Client{Timeout: timeout} },
		Options:     runner.Options{Submissions: runner.SubmissionOptions{TempDir: t.TempDir()}}})
	require.NoError(t, err)
	h, err := handlers.New(handlers.Options{LoginAttemptsPerMinute: 1000}, handlers.Deps{Evaluators: evaltest.Registry(), Runs: servicetest.Runs(db, 0), Benchmarks: servicetest.Benchmarks(db), Teams: servicetest.Teams(db), Candidates: servicetest.Candidates(db, nil), Studies: servicetest.Studies(db, nil), Accounts: servicetest.Accounts(db), Moderation: servicetest.Moderation(db),
		Store: db, Artifacts: store, Static: static.Files(), Logger: logger,
		Submissions: service.NewSubmissions(db, store, svc.Jobs(), service.SubmissionOptions{Limits: svc.SubmissionLimits()}),
	})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	b := &testBundle{srv: srv, db: db, app: h}
	b.admin = b.newUser(t, "admin@example.org", true)
	f := newAgentFixture(t, b)
	importBench(t, b, "mini")
	require.NoError(t, servicetest.CreateAgent(db, actorCtx(f.member), "lab", &models.Agent{Name: "Uploader", Kind: models.AgentUpload}, nil))
	member, outsider := withToken(t, b, f.member), withToken(t, b, f.outsider)
	d := newDocChecker(t, b.anonymous(t))

	bundle := []byte("not really a zip archive")
	sum := sha256.Sum256(bundle)
	digest := md5.Sum(bundle)
	create := fmt.Sprintf(`{"agent":"lab/uploader","benchmark":"mini","filename":"results.zip","size":%d,"sha256":"%x"}`, len(bundle), sum)
	first := d.send(member, apiRequest{method: http.MethodPost, path: "/api/v1/submissions", json: create}, http.StatusCreated)
	var created struct {
		Submission json.RawMessage `json:"submission"`
		Resumed    bool            `json:"resumed"`
	}
	require.NoError(t, json.Unmarshal(first, &created))
	sub := "/api/v1/submissions/" + idOf(t, created.Submission)
	resumed := d.send(member, apiRequest{method: http.MethodPost, path: "/api/v1/submissions", json: create}, http.StatusOK)
	require.NoError(t, json.Unmarshal(resumed, &created))
	require.True(t, created.Resumed)
	d.send(member, apiRequest{method: http.MethodPost, path: "/api/v1/submissions", json: `{"agent":"lab/uploader","benchmark":"mini","filename":"results.rar","size":10}`}, http.StatusBadRequest)

	d.send(member, apiRequest{method: http.MethodPut, path: sub + "/parts/1", raw: bundle,
		headers: map[string]string{"Content-MD5": base64.StdEncoding.EncodeToString(digest[:])}}, http.StatusOK)
	d.send(member, apiRequest{method: http.MethodPut, path: sub + "/parts/1", raw: bundle,
		headers: map[string]string{"Content-MD5": base64.StdEncoding.EncodeToString(make([]byte, 16))}}, http.StatusBadRequest)
	d.send(member, apiRequest{method: http.MethodGet, path: sub + "/parts/1/url"}, http.StatusConflict)
	d.send(member, apiRequest{method: http.MethodGet, path: sub}, http.StatusOK)
	d.send(outsider, apiRequest{method: http.MethodGet, path: sub}, http.StatusNotFound)
	d.send(member, apiRequest{method: http.MethodGet, path: "/api/v1/submissions?team=lab&status=uploading"}, http.StatusOK)
	d.send(member, apiRequest{method: http.MethodPost, path: sub + "/ingest"}, http.StatusConflict)
	d.send(member, apiRequest{method: http.MethodPost, path: sub + "/complete"}, http.StatusAccepted)
	d.send(member, apiRequest{method: http.MethodGet, path: "/api/v1/submissions"}, http.StatusOK)

	other := d.send(member, apiRequest{method: http.MethodPost, path: "/api/v1/submissions",
		json: `{"agent":"lab/uploader","benchmark":"mini","filename":"other.tgz","size":5}`}, http.StatusCreated)
	require.NoError(t, json.Unmarshal(other, &created))
	otherPath := "/api/v1/submissions/" + idOf(t, created.Submission)
	d.send(member, apiRequest{method: http.MethodPost, path: otherPath + "/complete"}, http.StatusConflict)
	d.send(member, apiRequest{method: http.MethodDelete, path: otherPath}, http.StatusNoContent)

	for _, id := range []string{"listSubmissions", "createSubmission", "getSubmission", "putSubmissionPart",
		"getSubmissionPartURL", "completeSubmission", "ingestSubmission", "discardSubmission"} {
		require.True(t, d.checked[id], "%s was not validated", id)
	}
}

// TestAPIDocsPage checks the human-readable page: every documented operation
// with its method, path and who may call it, grouped under headings, a curl
// example each, the schemas, and the footer link on every page.
func TestAPIDocsPage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	user := b.newUser(t, "docs-reader@example.org", false)
	doc, _ := fetchOpenAPI(t, b.anonymous(t))
	operations := 0
	for _, item := range doc.Paths.Map() {
		operations += len(item.Operations())
	}

	for name, c := range map[string]*client{"anonymous": b.anonymous(t), "user": user, "admin": b.admin} {
		t.Run(name, func(t *testing.T) {
			c.t = t
			res := c.get("/api")
			require.Equal(t, http.StatusOK, res.StatusCode)
			body := readBody(t, res)
			require.Equal(t, operations, strings.Count(body, `data-testid="api-op"`), "one entry per documented operation")
			require.Equal(t, len(doc.Tags), strings.Count(body, `data-testid="api-group"`))
			require.Equal(t, len(doc.Components.Schemas)-2, strings.Count(body, `data-testid="api-schema"`), "every schema but Error and Page, which the basics describe")
			require.Contains(t, body, `<h1>Proctor API v1</h1>`)
			require.Contains(t, body, `href="/api/v1/openapi.json"`)
			require.Contains(t, body, `data-method="PUT" data-path="/api/v1/submissions/{id}/parts/{n}"`)
			require.Contains(t, body, `-H &#34;Content-MD5: `)
			require.Contains(t, body, `data-method="GET" data-path="/api/v1/runs/{id}"`)
			require.Contains(t, body, `<th scope="col">Who</th>`)
			require.Contains(t, body, `id="schema-Timeline"`)
			require.Contains(t, body, `data-testid="footer-api"`)
			require.Equal(t, strings.Count(body, "<h1>"), 1)
		})
	}

	t.Run("FooterAndNav", func(t *testing.T) {
		anonHome := readBody(t, b.anonymous(t).get("/"))
		require.Contains(t, anonHome, `<a href="/api" data-testid="footer-api">API</a>`)
		require.NotContains(t, anonHome, `data-testid="nav-submissions"`, "only signed-in users submit results")
		userHome := readBody(t, user.get("/"))
		require.Contains(t, userHome, `data-testid="footer-api"`)
		require.Contains(t, userHome, `<a href="/submissions" data-testid="nav-submissions">Submit results</a>`)
	})
}
