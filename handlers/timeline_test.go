package handlers_test

import (
	"archive/zip"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"html"
	"image"
	"image/jpeg"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/handlers"
	"proctor/importer"
	"proctor/internal/evaltest"
	"proctor/models"
	"proctor/service/servicetest"
	"proctor/static"
	"proctor/storage/artifact"
	"proctor/storage/storagetest"
	"proctor/vault"
)

// timelineEpisode says how playTimeline records an attempt.
type timelineEpisode struct {
	steps      int // steps to record (at least 3 for the scripted actions)
	busyStep2  int // extra requests the browser makes during step 2
	noArtifact bool
}

// harRequest is one request of a generated HAR.
type harRequest struct {
	at          time.Duration // after the episode's start
	method, url string
	status      int
}

// playTimeline records an attempt's episode as the runner would: steps with a
// screenshot, thumbnail and accessibility text each, timed so that the HAR's
// requests fall into known steps (plus one made after the last step, as the
// live-page reads of checks are, whose address comes from the hidden spec), a
// HAR, a page state with a probe, and a judged evaluation. It returns the
// episode's start time.
func (f *runsFixture) playTimeline(t testing.TB, attemptID int64, ep timelineEpisode) time.Time {
	db := f.b.db
	status, spec, err := db.ClaimAttempt(f.sys, attemptID, storagetest.Claimant(time.Hour))
	require.NoError(t, err)
	require.Equal(t, models.ClaimOK, status)
	prefix := fmt.Sprintf("runs/%d/attempts/%d/try-%d", spec.Run.ID, attemptID, spec.Try)
	put := func(key, contentType string, data []byte) {
		require.NoError(t, f.store.Put(context.Background(), key, bytes.NewReader(data), int64(len(data)), contentType))
	}
	t0 := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond)
	shot, thumb := timelineJPEG(t, 40), timelineJPEG(t, 10)
	actions := []string{
		`{"type":"click","target":{"x":320,"y":600}}`,
		`{"type":"fill","target":{"element_id":"e7"},"text":"usb-c cable"}`,
		`{"type":"scroll","delta_y":600}`,
	}
	for i := 0; i < ep.steps; i++ {
		base := fmt.Sprintf("%s/steps/%03d", prefix, i)
		s := &models.Step{
			AttemptID: attemptID, Index: i, URL: fmt.Sprintf("http://shop.test/page/%d", i+1), Title: fmt.Sprintf("Page %d", i+1),
			Thought: fmt.Sprintf("Thinking about step %d.", i+1), Action: `{"type":"go_back"}`,
			ObserveMS: 500, AgentMS: 1000, ActMS: 1000, TokensIn: 100, TokensOut: 10,
			// Step i runs from 0.5 s + 3 s·i to 3 s + 3 s·i after the start.
			CreatedAt: t0.Add(time.Duration(3*(i+1)) * time.Second),
		}
		if i < len(actions) {
			s.Action = actions[i]
		}
		if i == ep.steps-1 {
			s.Action = `{"type":"answer","text":"USB-C cable, 4.99"}`
		}
		if !ep.noArtifact {
			s.ScreenshotKey, s.ThumbnailKey, s.AXTreeKey = base+".jpg", base+"-thumb.jpg", base+".txt"
			put(s.ScreenshotKey, "image/jpeg", shot)
			put(s.ThumbnailKey, "image/jpeg", thumb)
			put(s.AXTreeKey, "text/plain; charset=utf-8", []byte(fmt.Sprintf("[e1] heading \"Page %d\"\n[e2] button \"Add <script>alert(1)</script> to cart\"\n", i+1)))
		}
		require.NoError(t, db.RecordStep(f.sys, s, 1))
	}
	reqs := []harRequest{
		{100 * time.Millisecond, "GET", "http://shop.test/", 200},                                                       // the start page: step 1
		{2600 * time.Millisecond, "POST", "http://shop.test/cart/add", 302},                                             // step 1's click
		{3200 * time.Millisecond, "GET", "http://shop.test/cart", 200},                                                  // still step 1
		{5 * time.Second, "GET", "http://shop.test/search?q=usb-c", 200},                                                // step 2
		{7 * time.Second, "GET", "http://shop.test/api/price", 500},                                                     // step 3
		{time.Duration(3*ep.steps)*time.Second + 2*time.Second, "GET", "http://shop.test/admin/SECRET-PATH/probe", 200}, // after the episode
	}
	for i := range ep.busyStep2 {
		reqs = append(reqs, harRequest{4*time.Second + time.Duration(i)*time.Millisecond, "GET", fmt.Sprintf("http://shop.test/img/%d.png", i), 200})
	}
	harKey := prefix + "/network.har"
	put(harKey, "application/json", testHAR(t, t0, reqs))
	stateKey := prefix + "/page_state.json"
	put(stateKey, "application/json", []byte(`{"final_url":"http://shop.test/cart","probes":[{"url":"http://shop.test/admin/SECRET-PATH/probe","locator":"#SECRET-SKU-7","value":"1"}]}`))
	require.NoError(t, db.FinishEpisode(f.sys, attemptID, spec.Try, models.EpisodeOutcome{
		Steps: ep.steps, FinalAnswer: `{"type":"answer","text":"USB-C cable, 4.99"}`, Duration: 8 * time.Second,
		HARKey: harKey, PageStateKey: stateKey,
	}, func(context.Context, *sql.Tx) error { return nil }, nil))
	score := 0.0
	_, err = db.RecordEvaluation(f.sys, attemptID, &models.Evaluation{
		Evaluator: "webarena-verified", EvaluatorVersion: "sandbox-check@1", Verdict: models.OutcomeFailure, Score: &score,
		Details: `{"status":"failure","evaluators_results":[{"evaluator_name":"AgentResponseEvaluator","actual":"USB-C cable","expected":{"retrieved_data":["SECRET-ANSWER-42"]},"assertions":[{"name":"retrieved_data","passed":false}]}]}`,
	})
	require.NoError(t, err)
	return t0
}

// timelineJPEG encodes a small grey JPEG.
func timelineJPEG(t testing.TB, size int) []byte {
	img := image.NewGray(image.Rect(0, 0, size, size))
	for i := range img.Pix {
		img.Pix[i] = uint8(i % 251)
	}
	var buf bytes.Buffer
	require.NoError(t, jpeg.Encode(&buf, img, nil))
	return buf.Bytes()
}

// testHAR writes a HAR document with the requests, plus an entry with no
// start time (which no step can own).
func testHAR(t testing.TB, t0 time.Time, reqs []harRequest) []byte {
	entries := []map[string]any{{"request": map[string]any{"method": "GET", "url": "http://shop.test/undated"}}}
	for _, r := range reqs {
		entries = append(entries, map[string]any{
			"startedDateTime": t0.Add(r.at).Format(time.RFC3339Nano), "time": 12.5,
			"request":  map[string]any{"method": r.method, "url": r.url, "headers": []any{}},
			"response": map[string]any{"status": r.status, "content": map[string]any{"mimeType": "text/html", "text": "<html>body</html>"}},
		})
	}
	b, err := json.Marshal(map[string]any{"log": map[string]any{"version": "1.2", "creator": map[string]any{"name": "Playwright"}, "entries": entries}})
	require.NoError(t, err)
	return b
}

func attemptURL(runID, attemptID int64) string {
	return "/runs/" + strconv.FormatInt(runID, 10) + "/attempts/" + strconv.FormatInt(attemptID, 10)
}

// TestAuthz_Timeline checks the timeline page and every route it adds for
// each kind of caller, against a fresh played attempt of the lab team:
// private runs are not found for anyone outside the team (whatever the
// guessed address), published ones are visible to all.
func TestAuthz_Timeline(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, runsOptions{})
	b := f.b
	clients := map[string]*client{"anonymous": b.anonymous(t), "member": f.member, "outsider": f.outsider, "admin": b.admin}
	const ok, bad, notFound = http.StatusOK, http.StatusBadRequest, http.StatusNotFound
	const unauth, forbidden = http.StatusUnauthorized, http.StatusForbidden
	all := func(status int) map[string]int {
		return map[string]int{"anonymous": status, "member": status, "outsider": status, "admin": status}
	}
	team := func(outside, inside int) map[string]int {
		return map[string]int{"anonymous": outside, "member": inside, "outsider": outside, "admin": inside}
	}
	var seq atomic.Int64
	for _, tc := range []struct {
		path      string
		published bool
		want      map[string]int
	}{
		{path: "{attempt}?step=2", want: team(notFound, ok)},
		{path: "{attempt}?step=2", published: true, want: all(ok)},
		{path: "{attempt}?step=9", want: team(notFound, bad)},
		{path: "{attempt}?step=9", published: true, want: all(bad)},
		{path: "{attempt}/steps/2", want: team(notFound, ok)},
		{path: "{attempt}/steps/2", published: true, want: all(ok)},
		{path: "{attempt}/steps/9", published: true, want: all(notFound)},
		{path: "{other}/steps/2", published: true, want: all(notFound)},
		{path: "{attempt}/steps/1/axtree", want: team(notFound, ok)},
		{path: "{attempt}/steps/1/axtree", published: true, want: all(ok)},
		{path: "{attempt}/steps/9/axtree", published: true, want: all(notFound)},
		{path: "{attempt}/steps/2/network", want: team(notFound, ok)},
		{path: "{attempt}/steps/2/network", published: true, want: all(ok)},
		{path: "{attempt}/steps/x/network", published: true, want: all(notFound)},
		{path: "{attempt}/artifacts.zip", want: team(notFound, ok)},
		{path: "{attempt}/artifacts.zip", published: true, want: all(ok)},
		// The expected answer is for administrators, who see every run.
		{path: "{attempt}/expected", want: map[string]int{"anonymous": notFound, "member": forbidden, "outsider": notFound, "admin": ok}},
		{path: "{attempt}/expected", published: true, want: map[string]int{"anonymous": unauth, "member": forbidden, "outsider": forbidden, "admin": ok}},
		{path: "{other}/expected", published: true, want: all(notFound)},
		// An attempt under another run's id, and an attempt that does not exist.
		{path: "{other}/steps/1/axtree", published: true, want: all(notFound)},
		{path: "{other}/artifacts.zip", published: true, want: all(notFound)},
		{path: "{missing}/artifacts.zip", published: true, want: all(notFound)},
		{path: "{missing}/steps/1/network", published: true, want: all(notFound)},
	} {
		for _, actor := range []string{"anonymous", "member", "outsider", "admin"} {
			name := tc.path + " as " + actor
			if tc.published {
				name += " (published)"
			}
			t.Run(name, func(t *testing.T) {
				seq.Add(1)
				run, ids := f.queue(t, true, tc.published)
				f.playTimeline(t, ids[0], timelineEpisode{steps: 3})
				other, _ := f.queue(t, true, true)
				path := strings.NewReplacer(
					"{attempt}", attemptURL(run.ID, ids[0]),
					"{other}", attemptURL(other.ID, ids[0]),
					"{missing}", attemptURL(run.ID, 999999),
				).Replace(tc.path)
				c := clients[actor]
				c.t = t
				res := c.get(path)
				body := readBody(t, res)
				require.Equal(t, tc.want[actor], res.StatusCode, "%s as %s: %s", path, actor, body)
				for _, secret := range benchSecrets {
					if actor != "admin" {
						require.NotContains(t, body, secret, "%s as %s", path, actor)
					}
				}
				if res.StatusCode == bad {
					require.Contains(t, body, "step must be from 1 to 3", "the error names the parameter")
				}
			})
		}
	}
}

// TestTimeline_ArtifactURLs: screenshots are served by signed links only; a
// link without its signature, with a changed one, pointing at another
// artifact or past its expiry is refused for everyone, signed in or not.
func TestTimeline_ArtifactURLs(t *testing.T) {
	t.Parallel()
	signing := &signedKeys{}
	f := newRunsFixture(t, runsOptions{signed: signing})
	run, ids := f.queue(t, true, false)
	f.playTimeline(t, ids[0], timelineEpisode{steps: 3})
	signing.take()
	body := readBody(t, f.member.get(attemptURL(run.ID, ids[0])+"?step=2"))
	require.ElementsMatch(t, []string{"steps/000-thumb.jpg", "steps/001.jpg", "steps/001-thumb.jpg", "steps/002-thumb.jpg"}, stepKeys(signing.take()),
		"the page signs every step's thumbnail and the current step's screenshot only")
	require.Contains(t, body, "steps/001.jpg?", "the current step's screenshot is on the page")
	readBody(t, f.member.get(attemptURL(run.ID, ids[0])+"/steps/3"))
	require.ElementsMatch(t, []string{"steps/002.jpg", "steps/002-thumb.jpg"}, stepKeys(signing.take()), "a step's panel signs its own images")
	body = readBody(t, f.member.get(attemptURL(run.ID, ids[0])))
	links := screenPattern.FindAllStringSubmatch(body, -1)
	require.Len(t, links, 1, "the current step's screenshot; the others come with their steps")
	signed, err := url.Parse(html.UnescapeString(links[0][1]))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(signed.Path, "/artifacts/runs/"), signed.Path)
	key := strings.TrimPrefix(signed.Path, "/artifacts/")
	q := signed.Query()
	other := strings.Replace(key, "steps/000.jpg", "steps/001.jpg", 1)
	require.NotEqual(t, key, other)
	signer := artifact.NewURLSigner([]byte(strings.Repeat("s", 32)))
	past := time.Now().Add(-time.Minute)
	tampered := []byte(q.Get("sig"))
	tampered[0] ^= 1
	if tampered[0] > 'f' || (tampered[0] < 'a' && tampered[0] > '9') || tampered[0] < '0' {
		tampered[0] = '0'
	}
	for name, tc := range map[string]struct {
		path string
		want int
	}{
		"signed":          {signed.Path + "?" + q.Encode(), http.StatusOK},
		"unsigned":        {signed.Path, http.StatusForbidden},
		"no expiry":       {signed.Path + "?sig=" + q.Get("sig"), http.StatusForbidden},
		"tampered":        {signed.Path + "?expires=" + q.Get("expires") + "&sig=" + string(tampered), http.StatusForbidden},
		"later expiry":    {signed.Path + "?expires=" + strconv.FormatInt(time.Now().Add(48*time.Hour).Unix(), 10) + "&sig=" + q.Get("sig"), http.StatusForbidden},
		"another's key":   {"/artifacts/" + other + "?" + q.Encode(), http.StatusForbidden},
		"expired":         {signed.Path + "?expires=" + strconv.FormatInt(past.Unix(), 10) + "&sig=" + signer.Sign(key, past), http.StatusForbidden},
		"the HAR guessed": {"/artifacts/" + strings.Replace(key, "steps/000.jpg", "network.har", 1), http.StatusForbidden},
	} {
		for role, c := range map[string]*client{"anonymous": f.b.anonymous(t), "member": f.member, "outsider": f.outsider, "admin": f.b.admin} {
			t.Run(name+" as "+role, func(t *testing.T) {
				c.t = t
				res := c.get(tc.path)
				data := readBody(t, res)
				require.Equal(t, tc.want, res.StatusCode, "%s: %s", tc.path, data)
				if tc.want != http.StatusOK {
					require.NotContains(t, data, "JFIF")
				}
			})
		}
	}
}

// stepKeys trims artifact keys to their part after the attempt's folder.
func stepKeys(keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k[strings.LastIndex(k, "steps/"):]
	}
	return out
}

// TestTimeline_Viewer: the page shows every step in the filmstrip (thumbnails
// loaded lazily), the current step in full and large (the only eager image)
// with its action drawn, ?step=N choosing it, and every other step by its
// heading, linking to it and to its full panel (…/steps/N, which draws its
// action); judges' citations link to steps.
func TestTimeline_Viewer(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, runsOptions{})
	run, ids := f.queue(t, true, false)
	f.playTimeline(t, ids[0], timelineEpisode{steps: 4})
	page := attemptURL(run.ID, ids[0])

	body := readBody(t, f.member.get(page))
	require.Equal(t, 4, strings.Count(body, `data-testid="film-frame"`))
	require.Len(t, imgPattern.FindAllStringSubmatch(body, -1), 4, "every thumbnail is lazy")
	require.Equal(t, 1, strings.Count(body, `loading="eager"`), "only the current screenshot loads at once")
	require.Equal(t, 1, strings.Count(body, `fetchpriority="high"`))
	require.Equal(t, 1, strings.Count(body, `data-testid="step-screenshot"`), "only the current step is in full")
	require.Equal(t, 4, strings.Count(body, `data-testid="step"`))
	require.Regexp(t, `id="step-1" class="timeline-step tl-step tl-current"`, body)
	require.Contains(t, body, `<li id="step-3" class="timeline-step tl-step" data-step="3" data-src="`+page+`/steps/3" data-testid="step">`)
	require.Contains(t, body, `<a href="`+page+`?step=3#viewer" data-step="3" data-testid="step-full-link">Show step 3 in full</a>`)
	require.Regexp(t, `data-testid="step-status" aria-live="polite">Step 1 of 4<`, body)
	require.Contains(t, body, `href="`+page+`?step=2#viewer" class="tl-frame" data-step="2"`)
	require.Contains(t, body, `<script src="/static/js/timeline.js?v=`)
	require.Contains(t, body, `href="`+page+`/artifacts.zip" download`)
	require.Contains(t, body, `<a href="`+page+`/steps/1/axtree" data-testid="step-axtree-link">`)
	require.NotContains(t, body, `/steps/3/axtree`, "a deferred step's parts come with it")
	require.Equal(t, 1, strings.Count(body, `data-testid="click-marker"`))
	require.Contains(t, body, `data-x="25.00%" data-y="75.00%"`)
	require.Contains(t, body, `data-testid="step-tokens">100 in / 10 out<`)

	// A step in full, as timeline.js loads it: its parts, its action drawn
	// (the typed text, the scroll's direction), its screenshot.
	panel := func(n int) string {
		t.Helper()
		res := f.member.get(page + "/steps/" + strconv.Itoa(n))
		body := readBody(t, res)
		require.Equal(t, http.StatusOK, res.StatusCode, body)
		require.True(t, strings.HasPrefix(strings.TrimSpace(body), `<li id="step-`+strconv.Itoa(n)+`" class="timeline-step tl-step tl-current"`), body)
		require.NotContains(t, body, "<html", "a fragment")
		return body
	}
	third := panel(3)
	require.Contains(t, third, `<a href="`+page+`/steps/3/axtree" data-testid="step-axtree-link">`)
	require.Contains(t, third, `<a href="`+page+`/steps/3/network" data-testid="step-network-link">`)
	require.Contains(t, third, `data-testid="scroll-arrow" data-direction="down"`)
	require.Contains(t, third, `scrolled 600 px down</text>`)
	require.Equal(t, 1, strings.Count(third, `data-testid="step-screenshot"`))
	require.Contains(t, panel(2), `font-family="ui-monospace, monospace" fill="#fff">typed &#34;usb-c cable&#34;</text>`)

	// ?step=3 renders the third step as the current one.
	body = readBody(t, f.member.get(page+"?step=3"))
	require.Regexp(t, `id="step-3" class="timeline-step tl-step tl-current"`, body)
	require.Regexp(t, `id="step-1" class="timeline-step tl-step" data-step="1" data-src=`, body)
	require.Regexp(t, `data-step="3" title="Step 3: scroll" data-testid="film-frame" aria-current="step"`, body)
	require.Equal(t, 1, strings.Count(body, `aria-current="step"`))
	require.Regexp(t, `data-testid="step-status" aria-live="polite">Step 3 of 4<`, body)
	eager := regexp.MustCompile(`src="([^"]+)" alt="Step (\d) screenshot: Page \d" width="1280" height="800" decoding="async" data-testid="step-screenshot" fetchpriority="high" loading="eager"`)
	m := eager.FindStringSubmatch(body)
	require.NotNil(t, m, "the current screenshot is eager")
	require.Equal(t, "3", m[2])

	t.Run("BadStep", func(t *testing.T) {
		for _, raw := range []string{"0", "-1", "5", "two", "1.5", "99999999999999999999"} {
			res := f.member.get(page + "?step=" + url.QueryEscape(raw))
			body := readBody(t, res)
			require.Equal(t, http.StatusBadRequest, res.StatusCode, raw)
			require.Contains(t, body, "step must", raw)
		}
		// The API answers in JSON with the field.
		api := withToken(t, f.b, f.member)
		res := api.get("/api/v1/runs/" + strconv.FormatInt(run.ID, 10) + "/attempts/" + strconv.FormatInt(ids[0], 10))
		require.Equal(t, http.StatusOK, res.StatusCode)
		// An attempt without steps has no step to show.
		res = f.member.get(attemptURL(run.ID, ids[1]) + "?step=1")
		require.Equal(t, http.StatusBadRequest, res.StatusCode)
		require.Contains(t, readBody(t, res), "recorded no steps")
		require.Equal(t, http.StatusOK, f.member.get(attemptURL(run.ID, ids[1])+"?step=").StatusCode, "an empty step is no step")
	})

	t.Run("Citations", func(t *testing.T) {
		var items []models.RubricItem
		require.NoError(t, f.b.db.Gorm().Where("task_id = (SELECT task_id FROM attempts WHERE id = ?)", ids[0]).Order("position").Find(&items).Error)
		judge := 2
		_, err := f.b.db.RecordEvaluations(f.sys, ids[0], models.EvaluationBatch{
			Primary: &models.Evaluation{Evaluator: "llm-judge:m:rubric-v1", EvaluatorVersion: "rubric-v1", Kind: models.EvaluationRubric,
				Verdict: models.OutcomeFailure, Score: ptr(0.6),
				RubricJudgments: []models.RubricJudgment{
					{RubricItemID: items[0].ID, Passed: true, Rationale: "Step 2 typed the query; see steps 3.", EvidenceSteps: models.JSONInts{2, 3, 9}},
					{RubricItemID: items[1].ID, Passed: false, Rationale: "No price was compared."},
				}},
			Others: []*models.Evaluation{{Evaluator: "llm-judge:m:trajectory-v1", EvaluatorVersion: "trajectory-v1", Kind: models.EvaluationJudge,
				Verdict: models.OutcomeFailure, Score: ptr(0.0), JudgeScore: &judge, Details: `{"rationale":"It scrolled at step 3 but never compared prices (step 12 does not exist)."}`}},
			RescoreID: "rescore-citations",
		}, nil)
		require.NoError(t, err)
		body := readBody(t, f.member.get(page))
		require.Regexp(t, `<a data-step="2" href="#step-2">step 2</a>,\s+<a data-step="3" href="#step-3">step 3</a>,\s+<span class="muted" title="The attempt has no such step">step 9</span>`, body)
		require.Contains(t, body, `<a data-step="2" href="#step-2">Step 2</a> typed the query; see <a data-step="3" href="#step-3">steps 3</a>.`)
		require.Contains(t, body, `It scrolled at <a data-step="3" href="#step-3">step 3</a> but never compared prices (step 12 does not exist).`)
	})
}

// TestTimeline_ExpectedAnswer: administrators may reveal the task's expected
// answer beside the final answer; nobody else sees it or a way to it.
func TestTimeline_ExpectedAnswer(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, runsOptions{})
	run, ids := f.queue(t, true, true)
	f.playTimeline(t, ids[0], timelineEpisode{steps: 3})
	page := attemptURL(run.ID, ids[0])

	body := readBody(t, f.b.admin.get(page))
	require.Contains(t, body, `data-testid="final-answer">{`)
	require.Contains(t, body, `<a href="`+page+`/expected" data-testid="expected-reveal-link">`)
	require.NotContains(t, body, `data-testid="expected-answer"`, "revealed on purpose, not with every page view")

	frag := htmxGet(t, f.b.admin, page+"/expected", false)
	require.Regexp(t, `data-testid="expected-answer">\{\s+&#34;must_include&#34;: \[\s+&#34;SECRET-ANSWER-42&#34;`, frag)
	require.Contains(t, frag, "From the task's reference answers")
	require.NotContains(t, frag, "SECRET-SKU-7", "the rest of the spec stays on the task's page")
	res := f.b.admin.get(page + "/expected")
	require.Equal(t, "private, no-store", res.Header.Get("Cache-Control"))
	require.Contains(t, readBody(t, res), "<!doctype html>")

	for name, c := range map[string]*client{"member": f.member, "outsider": f.outsider, "anonymous": f.b.anonymous(t)} {
		body := readBody(t, c.get(page))
		require.Contains(t, body, `data-testid="expected-hidden"`, name)
		require.NotContains(t, body, `/expected"`, name)
		for _, secret := range benchSecrets {
			require.NotContains(t, body, secret, name)
		}
		res := c.get(page + "/expected")
		require.Contains(t, []int{http.StatusUnauthorized, http.StatusForbidden}, res.StatusCode, name)
		require.NotContains(t, readBody(t, res), "SECRET", name)
	}
	// A task with neither reference answers nor an evaluation spec says so.
	require.Contains(t, htmxGet(t, f.b.admin, attemptURL(run.ID, ids[1])+"/expected", false), `data-testid="no-expected-answer"`)
}

// TestTimeline_AXText: a step's accessibility text, escaped in the fragment
// the page loads, plain text through the link.
func TestTimeline_AXText(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, runsOptions{})
	run, ids := f.queue(t, true, false)
	f.playTimeline(t, ids[0], timelineEpisode{steps: 3})
	path := attemptURL(run.ID, ids[0]) + "/steps/2/axtree"

	res := f.member.get(path)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "text/plain; charset=utf-8", res.Header.Get("Content-Type"))
	require.Equal(t, "nosniff", res.Header.Get("X-Content-Type-Options"))
	require.Equal(t, "[e1] heading \"Page 2\"\n[e2] button \"Add <script>alert(1)</script> to cart\"\n", readBody(t, res))

	frag := htmxGet(t, f.member, path, false)
	require.Equal(t, `<pre class="tl-axtree" data-testid="axtree-text">[e1] heading &#34;Page 2&#34;
[e2] button &#34;Add &lt;script&gt;alert(1)&lt;/script&gt; to cart&#34;
</pre>`, frag)
	boosted := htmxGet(t, f.member, path, true)
	require.Contains(t, boosted, "<!doctype html>", "a boosted link gets a whole page")
	require.NotContains(t, boosted, "<script>alert")

	t.Run("NotRecorded", func(t *testing.T) {
		run, ids := f.queue(t, true, false)
		f.playTimeline(t, ids[0], timelineEpisode{steps: 3, noArtifact: true})
		p := attemptURL(run.ID, ids[0]) + "/steps/1/axtree"
		require.Equal(t, http.StatusNotFound, f.member.get(p).StatusCode)
		require.Contains(t, htmxGet(t, f.member, p, false), `data-testid="axtree-missing"`)
	})
}

// htmxGet fetches path as htmx would (boosted: as a boosted link) and returns the body.
func htmxGet(t *testing.T, c *client, path string, boosted bool) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.base+path, nil)
	require.NoError(t, err)
	req.Header.Set("HX-Request", "true")
	if boosted {
		req.Header.Set("HX-Boosted", "true")
	}
	res := c.do(req)
	require.Equal(t, http.StatusOK, res.StatusCode, path)
	return readBody(t, res)
}

// TestTimeline_Network: each step lists the requests that started during it,
// from the HAR; what the browser loaded after the last step is on none.
func TestTimeline_Network(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, runsOptions{})
	run, ids := f.queue(t, true, false)
	f.playTimeline(t, ids[0], timelineEpisode{steps: 3})
	base := attemptURL(run.ID, ids[0])
	rows := regexp.MustCompile(`<td>(GET|POST)</td><td class="tl-url"><code>([^<]+)</code></td><td class="([^"]*)">(\d+|—)</td>`)
	listed := func(step int) []string {
		frag := htmxGet(t, f.member, fmt.Sprintf("%s/steps/%d/network", base, step), false)
		var out []string
		for _, m := range rows.FindAllStringSubmatch(frag, -1) {
			out = append(out, m[1]+" "+html.UnescapeString(m[2])+" "+m[4])
		}
		return out
	}
	require.Equal(t, []string{"GET http://shop.test/ 200", "POST http://shop.test/cart/add 302", "GET http://shop.test/cart 200"}, listed(1))
	require.Equal(t, []string{"GET http://shop.test/search?q=usb-c 200"}, listed(2))
	require.Equal(t, []string{"GET http://shop.test/api/price 500"}, listed(3))

	page := readBody(t, f.member.get(base+"/steps/1/network"))
	require.Contains(t, page, "<!doctype html>")
	require.Contains(t, page, "3 requests started during step 1")
	require.Contains(t, page, `<td class="num">−400 ms</td>`, "the start page loaded before the first step began")
	require.NotContains(t, page, "SECRET-PATH")

	t.Run("Capped", func(t *testing.T) {
		run, ids := f.queue(t, true, false)
		f.playTimeline(t, ids[0], timelineEpisode{steps: 3, busyStep2: 250})
		frag := htmxGet(t, f.member, attemptURL(run.ID, ids[0])+"/steps/2/network", false)
		require.Equal(t, models.MaxStepRequests, strings.Count(frag, `data-testid="network-request"`))
		require.Contains(t, frag, "251 requests started during step 2")
		require.Contains(t, frag, `data-testid="network-capped">; the first 200 are listed`)
	})
	t.Run("NoHAR", func(t *testing.T) {
		run, ids := f.queue(t, true, false)
		f.play(t, ids[0], models.OutcomeSuccess, "")
		body := readBody(t, f.member.get(attemptURL(run.ID, ids[0])))
		require.Contains(t, body, `data-testid="no-har"`)
		require.NotContains(t, body, `data-testid="step-network"`)
		frag := htmxGet(t, f.member, attemptURL(run.ID, ids[0])+"/steps/1/network", false)
		require.Contains(t, frag, `data-testid="network-none"`)
	})
}

// TestTimeline_Download: the artifacts zip holds every step's screenshot and
// accessibility text, steps.json, attempt.json, the HAR and the page state;
// only administrators get what came from the hidden spec (the live-page
// reads after the last step, the probes).
func TestTimeline_Download(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, runsOptions{})
	run, ids := f.queue(t, true, true)
	f.playTimeline(t, ids[0], timelineEpisode{steps: 3})
	path := attemptURL(run.ID, ids[0]) + "/artifacts.zip"
	dir := fmt.Sprintf("run-%d-attempt-%d/", run.ID, ids[0])

	download := func(c *client) map[string][]byte {
		t.Helper()
		res := c.get(path)
		data := []byte(readBody(t, res))
		require.Equal(t, http.StatusOK, res.StatusCode, string(data))
		require.Equal(t, "application/zip", res.Header.Get("Content-Type"))
		require.Equal(t, `attachment; filename="`+strings.TrimSuffix(dir, "/")+`.zip"`, res.Header.Get("Content-Disposition"))
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		require.NoError(t, err)
		files := map[string][]byte{}
		for _, zf := range zr.File {
			require.True(t, strings.HasPrefix(zf.Name, dir), zf.Name)
			rc, err := zf.Open()
			require.NoError(t, err)
			b, err := io.ReadAll(rc)
			require.NoError(t, err)
			rc.Close()
			files[strings.TrimPrefix(zf.Name, dir)] = b
		}
		return files
	}
	harURLs := func(b []byte) []string {
		var doc struct {
			Log struct {
				Version string `json:"version"`
				Entries []struct {
					Request struct {
						URL string `json:"url"`
					} `json:"request"`
				} `json:"entries"`
			} `json:"log"`
		}
		require.NoError(t, json.Unmarshal(b, &doc))
		require.Equal(t, "1.2", doc.Log.Version)
		var out []string
		for _, e := range doc.Log.Entries {
			out = append(out, e.Request.URL)
		}
		return out
	}

	files := download(f.outsider)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	require.ElementsMatch(t, []string{
		"steps/001.jpg", "steps/001.txt", "steps/002.jpg", "steps/002.txt", "steps/003.jpg", "steps/003.txt",
		"steps.json", "attempt.json", "network.har", "page_state.json",
	}, names)
	require.Equal(t, timelineJPEG(t, 40), files["steps/002.jpg"])
	require.Contains(t, string(files["steps/003.txt"]), `heading "Page 3"`)
	var steps []struct {
		Step       int            `json:"step"`
		Action     map[string]any `json:"action"`
		Summary    string         `json:"summary"`
		Thought    string         `json:"thought"`
		Screenshot string         `json:"screenshot"`
		AXText     string         `json:"accessibility_text"`
		StartedAt  time.Time      `json:"started_at"`
		SavedAt    time.Time      `json:"saved_at"`
	}
	require.NoError(t, json.Unmarshal(files["steps.json"], &steps))
	require.Len(t, steps, 3)
	require.Equal(t, 2, steps[1].Step)
	require.Equal(t, "fill", steps[1].Action["type"])
	require.Equal(t, `fill [e7] "usb-c cable"`, steps[1].Summary)
	require.Equal(t, "Thinking about step 2.", steps[1].Thought)
	require.Equal(t, "steps/002.jpg", steps[1].Screenshot)
	require.Equal(t, "steps/002.txt", steps[1].AXText)
	require.Equal(t, 2500*time.Millisecond, steps[1].SavedAt.Sub(steps[1].StartedAt))
	var meta map[string]any
	require.NoError(t, json.Unmarshal(files["attempt.json"], &meta))
	require.Equal(t, "t1", meta["task_id"])
	require.Equal(t, "network.har", meta["har"])
	require.Equal(t, "answer", meta["final_answer"].(map[string]any)["type"])
	require.Contains(t, meta["har_note"], "2 requests made after the last step")
	require.Equal(t, []string{"http://shop.test/", "http://shop.test/cart/add", "http://shop.test/cart", "http://shop.test/search?q=usb-c", "http://shop.test/api/price"}, harURLs(files["network.har"]))
	require.JSONEq(t, `{"final_url":"http://shop.test/cart"}`, string(files["page_state.json"]))
	for name, b := range files {
		for _, secret := range benchSecrets {
			require.NotContains(t, string(b), secret, name)
		}
	}

	admin := download(f.b.admin)
	require.Len(t, harURLs(admin["network.har"]), 7, "administrators get the whole HAR")
	require.Contains(t, string(admin["page_state.json"]), "#SECRET-SKU-7")
	require.Equal(t, files["steps.json"], admin["steps.json"])

	t.Run("MissingArtifacts", func(t *testing.T) {
		run, ids := f.queue(t, true, false)
		f.playTimeline(t, ids[0], timelineEpisode{steps: 3})
		key := fmt.Sprintf("runs/%d/attempts/%d/try-1/steps/001.jpg", run.ID, ids[0])
		require.NoError(t, f.store.Delete(context.Background(), key))
		res := f.member.get(attemptURL(run.ID, ids[0]) + "/artifacts.zip")
		data := []byte(readBody(t, res))
		require.Equal(t, http.StatusOK, res.StatusCode)
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		require.NoError(t, err)
		var metaFile *zip.File
		for _, zf := range zr.File {
			require.NotContains(t, zf.Name, "steps/002.jpg")
			if strings.HasSuffix(zf.Name, "attempt.json") {
				metaFile = zf
			}
		}
		require.NotNil(t, metaFile)
		rc, err := metaFile.Open()
		require.NoError(t, err)
		defer rc.Close()
		b, err := io.ReadAll(rc)
		require.NoError(t, err)
		require.Contains(t, string(b), key)
	})
}

// BenchmarkTimeline200Steps serves the timeline page of a 200-step attempt
// and reports its HTML size (html-bytes) and server time per page (ns/op).
// `make bench` reports it; nothing is asserted.
func BenchmarkTimeline200Steps(b *testing.B) {
	db := storagetest.OpenSQLite(b)
	sealer, err := vault.New(strings.Repeat("k", vault.MinSecretLength))
	require.NoError(b, err)
	db.UseAgentSecrets(sealer)
	signer := artifact.NewURLSigner([]byte(strings.Repeat("s", 32)))
	store, err := artifact.NewLocal(b.TempDir(), signer, "")
	require.NoError(b, err)
	b.Cleanup(func() { store.Close() })
	h, err := handlers.New(handlers.Options{LoginAttemptsPerMinute: 1000}, handlers.Deps{Evaluators: evaltest.Registry(), Runs: servicetest.Runs(db, 0), Benchmarks: servicetest.Benchmarks(db), Teams: servicetest.Teams(db), Accounts: servicetest.Accounts(db), Candidates: servicetest.Candidates(db, nil), Moderation: servicetest.Moderation(db),
		Store: db, Artifacts: store, ArtifactHandler: artifact.NewLocalHandler(store, signer), ArtifactURLs: store,
		Static: static.Files(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	require.NoError(b, err)
	srv := httptest.NewServer(h)
	b.Cleanup(srv.Close)
	sys := models.WithActor(context.Background(), models.SystemActor())
	tb := &testBundle{srv: srv, db: db, app: h}

	ds, err := importer.Parse(evaltest.Registry(), models.FormatProctor, strings.NewReader(benchDataset), nil)
	require.NoError(b, err)
	_, err = db.ImportBenchmark(sys, "mini", ds, "mini.jsonl", 0)
	require.NoError(b, err)
	owner, err := db.CreateUser(context.Background(), "owner@bench.test", "owner", "correct horse battery", false)
	require.NoError(b, err)
	ownerCtx := models.WithActor(context.Background(), models.Actor{UserID: owner.ID, Email: owner.Email})
	_, err = servicetest.Teams(db).CreateTeam(ownerCtx, "Lab", "lab", "")
	require.NoError(b, err)
	require.NoError(b, servicetest.CreateAgent(db, ownerCtx, "lab", &models.Agent{Name: "Walker", Kind: models.AgentReplay, Config: `{"actions":[{"type":"stop"}]}`}, nil))
	run, err := servicetest.QueueRun(ownerCtx, db, models.RunRequest{TeamSlug: "lab", AgentSlug: "walker", BenchmarkSlug: "mini"})
	require.NoError(b, err)
	require.NoError(b, db.Gorm().Model(&models.Run{}).Where("id = ?", run.ID).Update("published", true).Error)
	var ids []int64
	require.NoError(b, db.DispatchRun(sys, run.ID, func(context.Context, *sql.Tx, *models.Run, []int64) error { return nil }))
	// Every attempt, queued or not: the test plays them itself.
	require.NoError(b, db.Gorm().Model(&models.Attempt{}).Where("run_id = ?", run.ID).Order("id").Pluck("id", &ids).Error)
	f := &runsFixture{agentFixture: &agentFixture{b: tb}, store: store, sys: sys}
	f.playTimeline(b, ids[0], timelineEpisode{steps: 200})
	thought := strings.Repeat("The page lists cables; the cheapest is further down, so scroll and compare prices. ", 3)
	require.NoError(b, db.Gorm().Model(&models.Step{}).Where("attempt_id = ?", ids[0]).Update("thought", thought).Error)

	page := srv.URL + attemptURL(run.ID, ids[0])
	var size int
	b.ResetTimer()
	for b.Loop() {
		res, err := srv.Client().Get(page)
		require.NoError(b, err)
		n, err := io.Copy(io.Discard, res.Body)
		res.Body.Close()
		require.NoError(b, err)
		require.Equal(b, http.StatusOK, res.StatusCode)
		size = int(n)
	}
	b.ReportMetric(float64(size), "html-bytes")
}
