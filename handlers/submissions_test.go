package handlers_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/bundle"
	"proctor/bundle/bundletest"
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

// subsFixture is a running server with the real submission service (the
// runner over a local artifact store), the "mini" benchmark, team "lab" with
// a member and an upload-only agent "uploader", and a member of team "other".
type subsFixture struct {
	*agentFixture
	runner *runner.Runner
	svc    *service.Submissions
	store  *artifact.Local
}

type subsOptions struct {
	workers   bool  // run the validation and ingest jobs
	noService bool  // a server without the submission service
	partBytes int64 // the upload part size; 0 is the default
}

func newSubsFixture(t *testing.T, opts subsOptions) *subsFixture {
	t.Helper()
	db := storagetest.OpenSQLite(t)
	sealer, err := vault.New(strings.Repeat("k", vault.MinSecretLength))
	require.NoError(t, err)
	db.UseAgentSecrets(sealer)
	signer := artifact.NewURLSigner([]byte(strings.Repeat("s", 32)))
	store, err := artifact.NewLocal(t.TempDir(), signer, "")
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	deps := handlers.Deps{Evaluators: evaltest.Registry(), Runs: servicetest.Runs(db, 0), Benchmarks: servicetest.Benchmarks(db), Teams: servicetest.Teams(db), Accounts: servicetest.Accounts(db), Candidates: servicetest.Candidates(db, nil), Moderation: servicetest.Moderation(db),
		Store: db, Artifacts: store, ArtifactHandler: artifact.NewLocalHandler(store, signer), ArtifactURLs: store,
		Static: static.Files(), Logger: logger,
	}
	f := &subsFixture{store: store}
	if !opts.noService {
		episodes := 0
		if opts.workers {
			episodes = 1 // no episode runs here; workers also take the submission jobs
		}
		r, err := runner.New(runner.Config{Evaluators: evaltest.Registry(),
			DB: db, Artifacts: store, Logger: logger,
			AgentClient: func(timeout time.Duration) *http.Client { return &http.Client{Timeout: timeout} },
			Options: runner.Options{Episodes: episodes, Submissions: runner.SubmissionOptions{
				PartBytes: opts.partBytes, TempDir: t.TempDir(),
				Limits: bundle.Limits{MaxFiles: 5000}, // the rest default
			}},
		})
		require.NoError(t, err)
		if opts.workers {
			require.NoError(t, r.Start(context.Background()))
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				require.NoError(t, r.Stop(ctx))
			})
		}
		f.runner = r
		f.svc = service.NewSubmissions(db, store, r.Jobs(), service.SubmissionOptions{PartBytes: opts.partBytes, Limits: r.SubmissionLimits()})
		deps.Submissions = f.svc
	} else {
		deps.Submissions = servicetest.Submissions(db)
	}
	h, err := handlers.New(handlers.Options{LoginAttemptsPerMinute: 1000}, deps)
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	b := &testBundle{srv: srv, db: db, app: h}
	b.admin = b.newUser(t, "admin@example.org", true)
	f.agentFixture = newAgentFixture(t, b)
	importBench(t, b, "mini")
	require.NoError(t, servicetest.CreateAgent(db, actorCtx(f.member), "lab", &models.Agent{Name: "Uploader", Kind: models.AgentUpload}, nil))
	return f
}

// create starts an upload of size bytes for lab/uploader as the member, with
// a SHA-256 unique to tag so that uploads never resume one another.
func (f *subsFixture) create(t *testing.T, tag string, size int64) *models.SubmissionView {
	t.Helper()
	sum := sha256.Sum256([]byte(tag))
	sub, resumed, err := f.svc.CreateSubmission(actorCtx(f.member), models.SubmissionRequest{
		Agent: "lab/uploader", Benchmark: "mini", Filename: "results.zip", Size: size, SHA256: hex.EncodeToString(sum[:]),
	})
	require.NoError(t, err)
	require.False(t, resumed)
	return sub
}

// putPart sends a part's raw bytes as c: with c's bearer token, or with its
// session and the CSRF header. length < 0 sends the body chunked (no
// Content-Length); md5 "" sends no Content-MD5.
func putPart(c *client, path string, body []byte, length int64, md5 string) *http.Response {
	c.t.Helper()
	var r io.Reader = bytes.NewReader(body)
	if length < 0 {
		r = io.NopCloser(r) // hides the length from net/http
	}
	req, err := http.NewRequest(http.MethodPut, c.base+path, r)
	require.NoError(c.t, err)
	req.ContentLength = length
	if md5 != "" {
		req.Header.Set("Content-MD5", md5)
	}
	if c.token == "" && c.user != nil {
		req.Header.Set("X-CSRF-Token", c.csrf())
	}
	return c.do(req)
}

func md5Base64(b []byte) string {
	sum := md5.Sum(b)
	return base64.StdEncoding.EncodeToString(sum[:])
}

// formField is one part of the upload form, in order: a value, or a file
// (name set) whose content is read from path or is body.
type formField struct {
	name, value string
	filename    string
	path        string
	body        []byte
}

// uploadForm posts the upload form as a browser does, streaming the parts in
// order; csrf "" puts the client's token first, "-" sends none.
func uploadForm(c *client, csrf string, fields ...formField) *http.Response {
	c.t.Helper()
	if csrf == "" {
		csrf = c.csrf()
		fields = append([]formField{{name: "_csrf", value: csrf}}, fields...)
	}
	pr, pw := io.Pipe()
	w := multipart.NewWriter(pw)
	go func() {
		err := func() error {
			for _, f := range fields {
				if f.filename == "" && f.path == "" && f.body == nil {
					if err := w.WriteField(f.name, f.value); err != nil {
						return err
					}
					continue
				}
				part, err := w.CreateFormFile(f.name, f.filename)
				if err != nil {
					return err
				}
				if f.path != "" {
					file, err := os.Open(f.path)
					if err != nil {
						return err
					}
					_, err = io.Copy(part, file)
					file.Close()
					if err != nil {
						return err
					}
				} else if _, err := part.Write(f.body); err != nil {
					return err
				}
			}
			return w.Close()
		}()
		pw.CloseWithError(err)
	}()
	req, err := http.NewRequest(http.MethodPost, c.base+"/submissions", pr)
	require.NoError(c.t, err)
	req.Header.Set("Content-Type", w.FormDataContentType())
	return c.do(req)
}

// TestAuthz_Submissions checks every submission page and API route for each
// kind of caller: anonymous, a member of the submitting team, a member of
// another team only, and an administrator. Each check runs against a fresh
// upload of the lab team (status uploading, one part of 10 bytes).
func TestAuthz_Submissions(t *testing.T) {
	t.Parallel()
	f := newSubsFixture(t, subsOptions{})
	b := f.b
	clients := map[string]*client{"anonymous": b.anonymous(t), "member": f.member, "outsider": f.outsider, "admin": b.admin}
	apiClients := map[string]*client{"anonymous": clients["anonymous"]}
	for name, c := range clients {
		if name != "anonymous" {
			apiClients[name] = withToken(t, b, c)
		}
	}
	team := func(anon, outsider, member int) map[string]int {
		return map[string]int{"anonymous": anon, "member": member, "outsider": outsider, "admin": member}
	}
	const (
		ok, created, accepted, noContent, see = http.StatusOK, http.StatusCreated, http.StatusAccepted, http.StatusNoContent, http.StatusSeeOther
		bad, unauth, forbidden, notFound      = http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound
		conflict                              = http.StatusConflict
	)
	part := []byte("0123456789")
	bundle := bundletest.WebArenaVerified(t, filepath.Join(t.TempDir(), "authz.zip"), bundletest.WAVTask{ID: "t1"})
	var seq atomic.Int64
	for _, tc := range []struct {
		authzCase
		kind string // "form": the upload form with a bundle; "part": a part's raw bytes
	}{
		// Pages.
		{authzCase: authzCase{method: "GET", path: "/submissions", want: team(see, ok, ok)}},
		{authzCase: authzCase{method: "GET", path: "/submissions?status=validated", want: team(see, ok, ok)}},
		{authzCase: authzCase{method: "GET", path: "/submissions?status=nope", want: team(see, bad, bad)}},
		{authzCase: authzCase{method: "GET", path: "/submissions/new", want: team(see, ok, ok)}},
		{authzCase: authzCase{method: "POST", path: "/submissions"}, kind: "form"},
		{authzCase: authzCase{method: "POST", path: "/submissions", want: team(unauth, bad, bad)}},
		{authzCase: authzCase{method: "GET", path: "/submissions/{id}", want: team(see, notFound, ok)}},
		{authzCase: authzCase{method: "GET", path: "/submissions/999999", want: team(see, notFound, notFound)}},
		{authzCase: authzCase{method: "GET", path: "/submissions/not-an-id", want: team(see, notFound, notFound)}},
		{authzCase: authzCase{method: "GET", path: "/submissions/{id}/progress", want: team(see, notFound, ok)}},
		// An upload is not validated: the page says why it cannot be ingested.
		{authzCase: authzCase{method: "POST", path: "/submissions/{id}/ingest", want: team(unauth, notFound, conflict)}},
		{authzCase: authzCase{method: "POST", path: "/submissions/{id}/discard", want: team(unauth, notFound, see)}},
		// JSON API.
		{authzCase: authzCase{method: "GET", path: "/api/v1/submissions", want: team(unauth, ok, ok)}},
		{authzCase: authzCase{method: "GET", path: "/api/v1/submissions?team=lab", want: team(unauth, forbidden, ok)}},
		{authzCase: authzCase{method: "POST", path: "/api/v1/submissions", json: `{"agent":"lab/uploader","benchmark":"mini","subset":"smoke","filename":"api-{n}.zip","size":2048}`, want: team(unauth, forbidden, created)}},
		{authzCase: authzCase{method: "GET", path: "/api/v1/submissions/{id}", want: team(unauth, notFound, ok)}},
		{authzCase: authzCase{method: "PUT", path: "/api/v1/submissions/{id}/parts/1", want: team(unauth, notFound, ok)}, kind: "part"},
		// The local artifact store takes parts through the API only.
		{authzCase: authzCase{method: "GET", path: "/api/v1/submissions/{id}/parts/1/url", want: team(unauth, notFound, conflict)}},
		// Part 1 has not arrived: nothing to assemble.
		{authzCase: authzCase{method: "POST", path: "/api/v1/submissions/{id}/complete", want: team(unauth, notFound, conflict)}},
		{authzCase: authzCase{method: "POST", path: "/api/v1/submissions/{id}/ingest", want: team(unauth, notFound, conflict)}},
		{authzCase: authzCase{method: "DELETE", path: "/api/v1/submissions/{id}", want: team(unauth, notFound, noContent)}},
	} {
		if tc.kind == "form" {
			// The outsider's agent choice is lab's: refused on the form.
			tc.want = team(unauth, forbidden, see)
		}
		for _, actor := range []string{"anonymous", "member", "outsider", "admin"} {
			want := tc.want[actor]
			t.Run(tc.method+" "+tc.path+" "+tc.kind+" as "+actor, func(t *testing.T) {
				n := strconv.FormatInt(seq.Add(1), 10)
				sub := f.create(t, "authz-"+n, int64(len(part)))
				path := strings.ReplaceAll(tc.path, "{id}", strconv.FormatInt(sub.ID, 10))
				c := clients[actor]
				if strings.HasPrefix(path, "/api/") {
					c = apiClients[actor]
				}
				c.t = t
				var res *http.Response
				switch tc.kind {
				case "form":
					res = uploadForm(c, "", formField{name: "agent", value: "lab/uploader"}, formField{name: "benchmark", value: "mini"},
						formField{name: "subset", value: "full"}, formField{name: "bundle", filename: "authz-" + n + ".zip", path: bundle})
				case "part":
					res = putPart(c, path, part, int64(len(part)), md5Base64(part))
				default:
					row := tc.authzCase
					row.path = path
					res = c.send(row, n)
				}
				body := readBody(t, res)
				require.Equal(t, want, res.StatusCode, "%s %s as %s: %s", tc.method, path, actor, body)
				require.NotContains(t, body, "did not come from this site", "the CSRF check must not be what refuses")
				if want == see && tc.method == http.MethodGet {
					require.True(t, strings.HasPrefix(res.Header.Get("Location"), "/login?next="), res.Header.Get("Location"))
				}
			})
		}
	}
}

// apiError is the API's error body.
type apiError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Field   string `json:"field"`
	} `json:"error"`
}

// wantJSON checks a response's status (showing the body when it differs)
// and decodes its JSON body into v.
func wantJSON(t *testing.T, res *http.Response, status int, v any) {
	t.Helper()
	body := readBody(t, res)
	require.Equal(t, status, res.StatusCode, body)
	require.NoError(t, json.Unmarshal([]byte(body), v), body)
}

func decodeAPIError(t *testing.T, res *http.Response) apiError {
	t.Helper()
	var e apiError
	decodeJSON(t, res, &e)
	return e
}

// TestSubmissionsAPI_Upload uploads a bundle in three parts through the API
// with a bearer token: create, a part sent twice (replaced), resume (the
// same request answers the same submission with the parts it holds), the
// presigned URL refused by the local store, complete, and the listing.
func TestSubmissionsAPI_Upload(t *testing.T) {
	t.Parallel()
	f := newSubsFixture(t, subsOptions{partBytes: 5 << 20})
	api := withToken(t, f.b, f.member)
	path := bundletest.Write(t, filepath.Join(t.TempDir(), "big.zip"), bundletest.Zip, append(
		bundletest.WebArenaVerifiedEntries(bundletest.WAVTask{ID: "t1"}, bundletest.WAVTask{ID: "t3", Missing: true}),
		bundletest.Entry{Name: "t1/padding.bin", Open: bundletest.Random(11<<20, 1), Store: true}))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	sum := sha256.Sum256(data)
	req := map[string]any{"agent": "lab/uploader", "benchmark": "mini", "subset": "smoke", "filename": "big.zip", "size": len(data), "sha256": hex.EncodeToString(sum[:])}

	res := api.api(http.MethodPost, "/api/v1/submissions", req)
	require.Equal(t, http.StatusCreated, res.StatusCode)
	var created struct {
		Submission models.SubmissionView `json:"submission"`
		Resumed    bool                  `json:"resumed"`
	}
	decodeJSON(t, res, &created)
	sub := created.Submission
	require.False(t, created.Resumed)
	require.Equal(t, models.SubmissionUploading, sub.Status)
	require.Equal(t, int64(5<<20), sub.PartSize)
	require.Equal(t, 3, sub.PartsTotal())
	require.Equal(t, "/api/v1/submissions/"+strconv.FormatInt(sub.ID, 10), res.Header.Get("Location"))
	base := "/api/v1/submissions/" + strconv.FormatInt(sub.ID, 10)
	chunk := func(n int) []byte { return data[int64(n-1)*sub.PartSize : int64(n-1)*sub.PartSize+sub.PartLength(n)] }

	// Part 1 with a wrong byte, then again right: the second replaces the first.
	bad := bytes.Clone(chunk(1))
	bad[0] ^= 0xff
	res = putPart(api, base+"/parts/1", bad, int64(len(bad)), "")
	require.Equal(t, http.StatusOK, res.StatusCode, readBody(t, res))
	res = putPart(api, base+"/parts/1", chunk(1), int64(len(chunk(1))), md5Base64(chunk(1)))
	var got models.SubmissionPart
	wantJSON(t, res, http.StatusOK, &got)
	md5sum := md5.Sum(chunk(1))
	require.Equal(t, models.SubmissionPart{Number: 1, Size: 5 << 20, MD5: hex.EncodeToString(md5sum[:])}, got)

	// The same request again resumes the upload and lists the part it holds.
	res = api.api(http.MethodPost, "/api/v1/submissions", req)
	require.Equal(t, http.StatusOK, res.StatusCode)
	decodeJSON(t, res, &created)
	require.True(t, created.Resumed)
	require.Equal(t, sub.ID, created.Submission.ID)
	require.Equal(t, []models.SubmissionPart{got}, created.Submission.Parts)

	// Session callers upload parts with the CSRF header, like upload.js.
	res = putPart(f.member, base+"/parts/3", chunk(3), int64(len(chunk(3))), md5Base64(chunk(3)))
	require.Equal(t, http.StatusOK, res.StatusCode, readBody(t, res))

	res = api.get(base + "/parts/2/url")
	require.Equal(t, http.StatusConflict, res.StatusCode)
	require.Equal(t, models.ECONFLICT, decodeAPIError(t, res).Error.Code)

	// Part 2 is missing: completing names it.
	res = api.api(http.MethodPost, base+"/complete", nil)
	require.Equal(t, http.StatusConflict, res.StatusCode)
	require.Contains(t, decodeAPIError(t, res).Error.Message, "2")

	res = putPart(api, base+"/parts/2", chunk(2), int64(len(chunk(2))), md5Base64(chunk(2)))
	require.Equal(t, http.StatusOK, res.StatusCode, readBody(t, res))
	res = api.api(http.MethodPost, base+"/complete", nil)
	require.Equal(t, http.StatusAccepted, res.StatusCode)
	var done models.SubmissionView
	decodeJSON(t, res, &done)
	require.Equal(t, models.SubmissionUploaded, done.Status)
	require.Empty(t, done.StorageKey, "storage internals stay on the server")
	require.Empty(t, done.MultipartID)
	page := readBody(t, f.member.get(fmt.Sprintf("/submissions/%d", done.ID)))
	require.Contains(t, page, "<strong>Upload completed</strong> <span class=\"muted\">"+models.FormatBytes(done.Size)+" received</span>",
		"the audit trail records the completed upload's size")

	res = api.get(base)
	require.Equal(t, http.StatusOK, res.StatusCode)
	var shown models.SubmissionView
	decodeJSON(t, res, &shown)
	require.Equal(t, sub.ID, shown.ID)
	require.Equal(t, "lab", shown.TeamSlug)
	require.Equal(t, "uploader", shown.AgentSlug)

	res = api.get("/api/v1/submissions?team=lab&status=uploaded")
	require.Equal(t, http.StatusOK, res.StatusCode)
	var list struct {
		Items []models.SubmissionView `json:"items"`
		Total int                     `json:"total"`
	}
	decodeJSON(t, res, &list)
	require.Equal(t, 1, list.Total)
	require.Equal(t, sub.ID, list.Items[0].ID)
	res = withToken(t, f.b, f.outsider).get("/api/v1/submissions")
	decodeJSON(t, res, &list)
	require.Zero(t, list.Total, "another team sees none of lab's submissions")
}

// TestSubmissionsAPI_BadInput sends each kind of malformed request and checks
// its status, code, field and message.
func TestSubmissionsAPI_BadInput(t *testing.T) {
	t.Parallel()
	f := newSubsFixture(t, subsOptions{})
	api := withToken(t, f.b, f.member)
	part := []byte("0123456789")

	for _, tc := range []struct {
		name   string
		send   func(t *testing.T, base string) *http.Response
		status int
		code   string
		field  string
		text   string
	}{
		{"no Content-Length", func(t *testing.T, base string) *http.Response {
			return putPart(api, base+"/parts/1", part, -1, "")
		}, http.StatusBadRequest, models.EINVALID, "size", "Content-Length"},
		{"part shorter than its length", func(t *testing.T, base string) *http.Response {
			return putPart(api, base+"/parts/1", part[:4], 4, "")
		}, http.StatusBadRequest, models.EINVALID, "", "10"},
		{"part longer than its length", func(t *testing.T, base string) *http.Response {
			long := append(bytes.Clone(part), "more"...)
			return putPart(api, base+"/parts/1", long, int64(len(long)), "")
		}, 0, "", "", "10"},
		{"part number beyond the last", func(t *testing.T, base string) *http.Response {
			return putPart(api, base+"/parts/2", part, int64(len(part)), "")
		}, 0, "", "", ""},
		{"part number not a number", func(t *testing.T, base string) *http.Response {
			return putPart(api, base+"/parts/one", part, int64(len(part)), "")
		}, http.StatusBadRequest, models.EINVALID, "n", "part number"},
		{"Content-MD5 not base64", func(t *testing.T, base string) *http.Response {
			return putPart(api, base+"/parts/1", part, int64(len(part)), "not base64!")
		}, http.StatusBadRequest, models.EINVALID, "content_md5", "RFC 1864"},
		{"Content-MD5 of the wrong length", func(t *testing.T, base string) *http.Response {
			return putPart(api, base+"/parts/1", part, int64(len(part)), base64.StdEncoding.EncodeToString([]byte("short")))
		}, http.StatusBadRequest, models.EINVALID, "content_md5", "16-byte"},
		{"Content-MD5 of other bytes", func(t *testing.T, base string) *http.Response {
			return putPart(api, base+"/parts/1", part, int64(len(part)), md5Base64([]byte("other bytes")))
		}, 0, "", "", "MD5"},
		{"JSON body over 1 MiB", func(t *testing.T, base string) *http.Response {
			return api.api(http.MethodPost, "/api/v1/submissions", map[string]string{"agent": strings.Repeat("a", 3<<19)})
		}, http.StatusRequestEntityTooLarge, models.ETOOLARGE, "", "larger than"},
		{"body over the 2 MB limit", func(t *testing.T, base string) *http.Response {
			return api.api(http.MethodPost, "/api/v1/submissions", map[string]string{"agent": strings.Repeat("a", 3<<20)})
		}, http.StatusRequestEntityTooLarge, models.ETOOLARGE, "", "too large"},
		{"unknown field", func(t *testing.T, base string) *http.Response {
			return api.api(http.MethodPost, "/api/v1/submissions", map[string]any{"agent": "lab/uploader", "benchmark": "mini", "filename": "a.zip", "size": 10, "colour": "blue"})
		}, http.StatusBadRequest, models.EINVALID, "colour", "unknown field"},
		{"malformed JSON", func(t *testing.T, base string) *http.Response {
			req, err := http.NewRequest(http.MethodPost, api.base+"/api/v1/submissions", strings.NewReader(`{"agent":`))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			return api.do(req)
		}, http.StatusBadRequest, models.EINVALID, "", "JSON"},
		{"not a bundle's file name", func(t *testing.T, base string) *http.Response {
			return api.api(http.MethodPost, "/api/v1/submissions", map[string]any{"agent": "lab/uploader", "benchmark": "mini", "filename": "results.rar", "size": 10})
		}, http.StatusBadRequest, models.EINVALID, "filename", ".zip"},
		{"unknown subset", func(t *testing.T, base string) *http.Response {
			return api.api(http.MethodPost, "/api/v1/submissions", map[string]any{"agent": "lab/uploader", "benchmark": "mini", "subset": "nope", "filename": "a.zip", "size": 10})
		}, 0, "", "", "nope"},
		{"bad status filter", func(t *testing.T, base string) *http.Response {
			return api.get("/api/v1/submissions?status=lost")
		}, http.StatusBadRequest, models.EINVALID, "status", "status"},
		{"bad page", func(t *testing.T, base string) *http.Response {
			return api.get("/api/v1/submissions?page=0")
		}, http.StatusBadRequest, models.EINVALID, "page", "page"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api.t = t
			sub := f.create(t, "bad-"+tc.name, int64(len(part)))
			res := tc.send(t, "/api/v1/submissions/"+strconv.FormatInt(sub.ID, 10))
			if tc.status != 0 {
				require.Equal(t, tc.status, res.StatusCode)
			} else {
				require.GreaterOrEqual(t, res.StatusCode, 400, "refused")
				require.Less(t, res.StatusCode, 500, "refused as the client's mistake")
			}
			e := decodeAPIError(t, res)
			if tc.code != "" {
				require.Equal(t, tc.code, e.Error.Code)
			}
			if tc.field != "" {
				require.Equal(t, tc.field, e.Error.Field)
			}
			require.Contains(t, e.Error.Message, tc.text)
			// Nothing was stored for the refused part.
			shown, err := f.svc.Submission(actorCtx(f.member), sub.ID)
			require.NoError(t, err)
			require.Empty(t, shown.Parts)
		})
	}
}

// TestSubmissions_NoService checks that a server without the submission
// service answers 503 on every route that needs it, and still lists.
func TestSubmissions_NoService(t *testing.T) {
	t.Parallel()
	f := newSubsFixture(t, subsOptions{noService: true})
	api := withToken(t, f.b, f.member)
	res := api.api(http.MethodPost, "/api/v1/submissions", map[string]any{"agent": "lab/uploader", "benchmark": "mini", "filename": "a.zip", "size": 10})
	require.Equal(t, http.StatusServiceUnavailable, res.StatusCode)
	require.Equal(t, models.EUNAVAILABLE, decodeAPIError(t, res).Error.Code)
	for _, path := range []string{"/api/v1/submissions/1", "/api/v1/submissions/1/parts/1/url"} {
		require.Equal(t, http.StatusServiceUnavailable, api.get(path).StatusCode, path)
	}
	require.Equal(t, http.StatusServiceUnavailable, putPart(api, "/api/v1/submissions/1/parts/1", []byte("x"), 1, "").StatusCode)
	require.Equal(t, http.StatusOK, api.get("/api/v1/submissions").StatusCode)
	require.Equal(t, http.StatusServiceUnavailable, f.member.get("/submissions/1").StatusCode)
	body := readBody(t, f.member.get("/submissions/new"))
	require.Contains(t, body, `data-testid="no-submissions-service"`)
	require.Regexp(t, `data-testid="submit-bundle"[^>]* disabled`, body)
}

var submissionLocation = regexp.MustCompile(`^/submissions/(\d+)\?notice=uploaded$`)

// TestSubmissions_FormUpload is the upload form without JavaScript, end to
// end: the form with its choices, refusals re-rendering it with their
// messages, then a WebArena-Verified bundle (over the 2 MB body limit of
// other forms) streamed in one request, validated with its report on the
// page, ingested into a run.
func TestSubmissions_FormUpload(t *testing.T) {
	t.Parallel()
	f := newSubsFixture(t, subsOptions{workers: true})
	member := f.member

	body := readBody(t, member.get("/submissions/new"))
	require.Contains(t, body, `data-testid="submission-form"`)
	require.Contains(t, body, `enctype="multipart/form-data"`)
	require.Regexp(t, `<optgroup label="Team lab"><option value="lab/uploader">Uploader \(uploader\)</option></optgroup>`, body)
	require.NotContains(t, body, `Team other`, "only the caller's teams' agents")
	require.Contains(t, body, `<option value="mini">Mini bench</option>`)
	require.Contains(t, body, `<optgroup label="Mini bench" data-benchmark="mini"><option value="smoke">smoke</option></optgroup>`)
	require.Contains(t, body, `accept=".zip,.tar.gz,.tgz`)
	require.Regexp(t, `name="_csrf"[^>]*>\s*(<[^>]*>\s*)*<label for="f-agent"`, body, "the CSRF token is the form's first field")
	require.Contains(t, body, `docs/bundle-formats.md`)
	require.Contains(t, body, `At most 5000 files`, "the form shows the server's own limits")

	dir := t.TempDir()
	good := bundletest.Write(t, filepath.Join(dir, "results.zip"), bundletest.Zip, append(
		bundletest.WebArenaVerifiedEntries(
			bundletest.WAVTask{ID: "t1"},
			bundletest.WAVTask{ID: "t2", Response: `{"task_type": "RETRIEVE", "status": "SUCC`},
			bundletest.WAVTask{ID: "t3", Missing: true},
			bundletest.WAVTask{ID: "t9"},
		),
		// Over the 2 MB limit of other forms: the upload must stream.
		bundletest.Entry{Name: "t1/padding.bin", Open: bundletest.Random(3<<20, 7), Store: true}))
	fields := func(agent, bench, subset string, file formField) []formField {
		return []formField{{name: "agent", value: agent}, {name: "benchmark", value: bench}, {name: "subset", value: subset}, file}
	}
	goodFile := formField{name: "bundle", filename: "results.zip", path: good}

	for _, tc := range []struct {
		name   string
		csrf   string
		fields []formField
		status int
		testid string
		text   string
	}{
		{"no agent", "", fields("", "mini", "full", goodFile), http.StatusBadRequest, "error-agent", "choose the agent"},
		{"unknown benchmark", "", fields("lab/uploader", "nope", "full", goodFile), http.StatusBadRequest, "error-benchmark", "nope"},
		{"no file chosen", "", fields("lab/uploader", "mini", "full", formField{name: "bundle", filename: "", body: []byte{}}), http.StatusBadRequest, "error-bundle", "Choose the bundle file"},
		{"no file part", "", fields("lab/uploader", "mini", "full", formField{name: "other", value: "x"}), http.StatusBadRequest, "error-bundle", "Choose the bundle file"},
		{"not an archive's name", "", fields("lab/uploader", "mini", "full", formField{name: "bundle", filename: "notes.txt", body: []byte("hello")}), http.StatusBadRequest, "error-bundle", ".zip"},
		{"another team's agent", "", fields("other/uploader", "mini", "full", goodFile), http.StatusForbidden, "form-error", "Only members of this team"},
		{"no CSRF token", "-", fields("lab/uploader", "mini", "full", goodFile), http.StatusForbidden, "", "did not come from this site"},
		{"wrong CSRF token", "-", append([]formField{{name: "_csrf", value: strings.Repeat("x", 43)}}, fields("lab/uploader", "mini", "full", goodFile)...), http.StatusForbidden, "", "did not come from this site"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			member.t = t
			res := uploadForm(member, tc.csrf, tc.fields...)
			page := readBody(t, res)
			if tc.status != 0 {
				require.Equal(t, tc.status, res.StatusCode, page)
			} else {
				require.GreaterOrEqual(t, res.StatusCode, 400, page)
			}
			if tc.testid != "" {
				require.Contains(t, page, `data-testid="`+tc.testid+`"`)
				require.Contains(t, page, `data-testid="submission-form"`, "the form is shown again")
			}
			require.Contains(t, page, tc.text)
		})
	}
	member.t = t
	list, _, err := servicetest.Submissions(f.b.db).ListSubmissions(actorCtx(member), models.SubmissionFilter{})
	require.NoError(t, err)
	require.Empty(t, list, "no refused form left a submission")

	// The good bundle: streamed, then validated by the job.
	res := uploadForm(member, "", fields("lab/uploader", "mini", "full", goodFile)...)
	require.Equal(t, http.StatusSeeOther, res.StatusCode, readBody(t, res))
	m := submissionLocation.FindStringSubmatch(res.Header.Get("Location"))
	require.NotNil(t, m, res.Header.Get("Location"))
	page := "/submissions/" + m[1]
	require.Contains(t, readBody(t, member.get(page)), "results.zip")

	require.Eventually(t, func() bool {
		body = readBody(t, member.get(page))
		return strings.Contains(body, `data-testid="validation-report"`) || strings.Contains(body, `data-testid="submission-error"`)
	}, 30*time.Second, 100*time.Millisecond)
	require.Contains(t, body, `data-testid="submission-status-badge">validated<`, body)
	require.Contains(t, body, models.BundleFormatName(models.BundleWebArenaVerified))
	require.Regexp(t, `data-testid="count-found">\s*<th scope="row">Tasks found</th>\s*<td class="num">2</td>`, body)
	require.Regexp(t, `data-testid="count-not-attempted">\s*<th scope="row">Not attempted</th>\s*<td class="num">1</td>`, body)
	require.Regexp(t, `data-testid="count-missing">\s*<th scope="row">Missing</th>\s*<td class="num">1</td>`, body)
	require.Regexp(t, `data-testid="count-unknown">\s*<th scope="row">Unknown</th>\s*<td class="num">1</td>`, body)
	require.Contains(t, body, `data-testid="report-invalid-files"`)
	require.Contains(t, body, `<code>t2/agent_response.json</code>`)
	require.Contains(t, body, `<code>t9</code>`)
	require.Contains(t, body, `data-testid="ingest"`)
	require.Contains(t, body, `data-testid="discard"`)
	require.NotContains(t, body, `hx-trigger="every 2s"`, "a validated submission is not polled")

	// Another team's member sees nothing of it; an admin sees it.
	f.outsider.t = t
	require.Equal(t, http.StatusNotFound, f.outsider.get(page).StatusCode)
	require.Equal(t, http.StatusOK, f.b.admin.get(page).StatusCode)
	body = readBody(t, member.get("/submissions"))
	require.Contains(t, body, `data-testid="submission-`+m[1]+`"`)
	require.Contains(t, body, `>validated<`)

	// Ingest: the job creates the run and the page links to it.
	res = member.postForm(page+"/ingest", nil)
	require.Equal(t, http.StatusSeeOther, res.StatusCode, readBody(t, res))
	require.Equal(t, page+"?notice=ingesting", res.Header.Get("Location"))
	require.Eventually(t, func() bool {
		body = readBody(t, member.get(page))
		return strings.Contains(body, `data-testid="submission-run"`) || strings.Contains(body, `data-testid="submission-error"`)
	}, 30*time.Second, 100*time.Millisecond)
	require.Contains(t, body, `data-testid="submission-status-badge">ingested<`, body)
	activity := body[strings.Index(body, `data-testid="submission-activity"`):]
	for _, step := range []string{"Upload started", "Validated", "Ingested"} {
		require.Contains(t, activity, "<strong>"+step+"</strong>", "the audit trail on the page")
	}
	require.NotContains(t, activity, ">Address<", "members do not see client addresses")
	runLink := regexp.MustCompile(`href="/runs/(\d+)" role="button" data-testid="submission-run"`).FindStringSubmatch(body)
	require.NotNil(t, runLink, body)
	require.NotContains(t, body, `data-testid="ingest"`)
	require.Equal(t, http.StatusOK, member.get("/runs/"+runLink[1]).StatusCode)

	// Ingesting again is refused on the page with the reason.
	res = member.postForm(page+"/ingest", nil)
	require.Equal(t, http.StatusConflict, res.StatusCode)
	require.Contains(t, readBody(t, res), `data-testid="form-error"`)
}

// TestSubmissions_ProgressPolling checks the status section's polling: the
// fragment while a job works, a full page for a plain request, and the
// refresh once the job is done.
func TestSubmissions_ProgressPolling(t *testing.T) {
	t.Parallel()
	f := newSubsFixture(t, subsOptions{})
	sub := f.create(t, "poll", 10)
	path := "/submissions/" + strconv.FormatInt(sub.ID, 10) + "/progress"

	// Uploading: no job works on it, so the fragment asks for a reload.
	res := getHTMX(f.member, path, nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "true", res.Header.Get("HX-Refresh"))
	body := readBody(t, res)
	require.NotContains(t, body, "<html")
	require.Contains(t, body, `data-testid="submission-progress"`)
	require.Contains(t, body, "0 of 1 parts received")

	// A plain request is a page.
	body = readBody(t, f.member.get(path))
	require.Contains(t, body, "<html")
	require.Contains(t, body, `data-testid="submission-progress"`)

	// Uploaded: validation is queued (no worker here), so the section polls.
	require.Equal(t, http.StatusOK, putPart(withToken(t, f.b, f.member), "/api/v1/submissions/"+strconv.FormatInt(sub.ID, 10)+"/parts/1", []byte("0123456789"), 10, "").StatusCode)
	_, err := f.svc.CompleteSubmission(actorCtx(f.member), sub.ID)
	require.NoError(t, err)
	res = getHTMX(f.member, path, nil)
	require.Empty(t, res.Header.Get("HX-Refresh"))
	body = readBody(t, res)
	require.Contains(t, body, `hx-trigger="every 2s"`)
	require.Contains(t, body, `data-testid="submission-progress-bar"`)
	body = readBody(t, f.member.get("/submissions/"+strconv.FormatInt(sub.ID, 10)+"?notice=uploaded"))
	require.Contains(t, body, `hx-get="`+path+`"`)
	require.NotContains(t, body, `data-testid="ingest"`)
	require.Contains(t, body, `data-testid="flash"`, "the upload's notice holds while validation is queued")
	require.Contains(t, body, "It is being validated")
	body = readBody(t, f.member.get("/submissions/"+strconv.FormatInt(sub.ID, 10)+"?notice=discarded"))
	require.NotContains(t, body, `data-testid="flash"`, "a notice that no longer holds is not shown")
}

// TestSubmissions_Discard discards an upload from its page.
func TestSubmissions_Discard(t *testing.T) {
	t.Parallel()
	f := newSubsFixture(t, subsOptions{})
	sub := f.create(t, "discard", 10)
	page := "/submissions/" + strconv.FormatInt(sub.ID, 10)
	body := readBody(t, f.member.get(page))
	require.Contains(t, body, `data-testid="discard"`)
	require.Contains(t, body, "0 of 1 parts received")
	res := f.member.postForm(page+"/discard", nil)
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.Equal(t, page+"?notice=discarded", res.Header.Get("Location"))
	body = readBody(t, f.member.get(res.Header.Get("Location")))
	require.Contains(t, body, `data-testid="submission-status-badge">discarded<`)
	require.NotContains(t, body, `data-testid="discard"`)
	require.Contains(t, body, fmt.Sprintf("Submission #%d", sub.ID))
}
