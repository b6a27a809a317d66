package handlers_test

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/service"
	"proctor/service/servicetest"
)

// studyFixture is an open study over a published, played run of the lab
// team's walker on the mini benchmark (four attempts, each evaluated by
// "webarena-verified sandbox-check@1"), owned by the lab member, with two
// annotators who share its four items, two each.
type studyFixture struct {
	*runsFixture
	study    *models.Study
	runID    int64
	attempts []int64
	ann      *client // annotator "ann"
	ann2     *client // the other annotator
	mine     []int64 // ann's items, in queue order
	theirs   []int64 // ann2's items
}

// allStudyLabels asks every question, rubric items included.
func allStudyLabels() []string { return models.StudyLabelNames() }

func newStudyFixture(t *testing.T, blind bool, labels ...string) *studyFixture {
	t.Helper()
	f := &studyFixture{runsFixture: newRunsFixture(t, runsOptions{})}
	b := f.b
	f.ann = b.newUser(t, "ann@annotators.test", false)
	f.ann2 = b.newUser(t, "bea@annotators.test", false)
	annotatorPanel(t, b, f.member, f.ann, f.ann2)
	run, ids := f.queue(t, true, true)
	for _, id := range ids {
		f.playTimeline(t, id, timelineEpisode{steps: 3})
	}
	f.runID, f.attempts = run.ID, ids
	if len(labels) == 0 {
		labels = allStudyLabels()
	}
	st, err := servicetest.Studies(b.db, nil).CreateStudy(actorCtx(f.member), models.StudyRequest{
		Name: "Cable study", RunIDs: []int64{run.ID}, Sampling: models.SampleRandom, Seed: 7, SampleSize: len(ids),
		Blind: blind, Labels: labels, Annotators: []string{f.ann.user.Email, f.ann2.user.Email},
	})
	require.NoError(t, err)
	require.NoError(t, servicetest.Studies(b.db, nil).OpenStudy(actorCtx(f.member), st.ID))
	f.study = st
	f.mine = f.queueOf(t, f.ann)
	f.theirs = f.queueOf(t, f.ann2)
	require.Len(t, f.mine, 2)
	require.Len(t, f.theirs, 2)
	return f
}

// queueOf lists a user's items in queue order.
func (f *studyFixture) queueOf(t *testing.T, c *client) []int64 {
	t.Helper()
	q, err := servicetest.Studies(f.b.db, nil).StudyQueue(actorCtx(c), f.study.ID)
	require.NoError(t, err)
	var ids []int64
	for _, e := range q.Entries {
		ids = append(ids, e.ItemID)
	}
	return ids
}

func (f *studyFixture) itemPath(itemID int64) string {
	return fmt.Sprintf("/studies/%d/items/%d", f.study.ID, itemID)
}

// attemptOf is the attempt a study item samples.
func (f *studyFixture) attemptOf(t *testing.T, c *client, itemID int64) int64 {
	t.Helper()
	v, err := servicetest.Studies(f.b.db, nil).StudyItem(actorCtx(c), f.study.ID, itemID)
	require.NoError(t, err)
	return v.Item.AttemptID
}

// fullLabels answers every question of an item.
func (f *studyFixture) fullLabels(t *testing.T, c *client, itemID int64) url.Values {
	t.Helper()
	v, err := servicetest.Studies(f.b.db, nil).StudyItem(actorCtx(c), f.study.ID, itemID)
	require.NoError(t, err)
	form := url.Values{"success": {"successful"}, "score": {"4"}, "side_effect": {"no"}, "looping": {"no"}, "optimality": {"3"}}
	for _, it := range v.RubricItems {
		form.Set(models.RubricLabelKey(it.ID), models.RubricPass)
	}
	return form
}

// postLabels posts the label form: as a browser form, or as annotate.js's
// autosave (htmx headers, CSRF in a header) when htmx is set.
func postLabels(t *testing.T, c *client, path string, form url.Values, htmx bool) *http.Response {
	t.Helper()
	if !htmx {
		return c.postForm(path, form)
	}
	token := c.csrf()
	req, err := http.NewRequest(http.MethodPost, c.base+path, strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("HX-Request", "true")
	req.Header.Set("X-CSRF-Token", token)
	return c.do(req)
}

func withAction(form url.Values, action string) url.Values {
	out := cloneValues(form)
	out.Set("action", action)
	return out
}

// verdictTraces are what the page of a blind study's annotator must never
// hold: the evaluation's evaluator and details, its section, the hidden
// answer, and links to the run's own pages.
var verdictTraces = []string{"sandbox-check@1", "webarena-verified", `data-testid="evaluations"`, "evaluation-verdict", "SECRET-ANSWER-42", `href="/runs/`, `data-path="/runs/`, "attempt-outcome"}

// TestAuthz_Annotate checks the annotation routes for every kind of caller:
// anonymous visitors are sent to sign in, strangers find nothing, an
// annotator reaches their own items only, the owner and administrators see
// every item (as a review) but have no labels to give.
func TestAuthz_Annotate(t *testing.T) {
	t.Parallel()
	f := newStudyFixture(t, true)
	b := f.b
	const ok, see, unauth, forbidden, notFound = http.StatusOK, http.StatusSeeOther, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound
	clients := map[string]*client{"anonymous": b.anonymous(t), "stranger": f.outsider, "annotator": f.ann, "other annotator": f.ann2, "owner": f.member, "admin": b.admin}
	mine := f.mine[0]
	for _, tc := range []struct {
		method, path string
		form         url.Values
		want         map[string]int
	}{
		{method: "GET", path: "/studies/{s}/queue", want: map[string]int{"anonymous": see, "stranger": notFound, "annotator": ok, "other annotator": ok, "owner": ok, "admin": ok}},
		{method: "GET", path: "/studies/999999/queue", want: map[string]int{"anonymous": see, "stranger": notFound, "annotator": notFound, "owner": notFound, "admin": notFound}},
		{method: "GET", path: "/studies/{s}/items/{item}", want: map[string]int{"anonymous": see, "stranger": notFound, "annotator": ok, "other annotator": forbidden, "owner": ok, "admin": ok}},
		{method: "GET", path: "/studies/{s}/items/{item}?step=9", want: map[string]int{"annotator": http.StatusBadRequest, "admin": http.StatusBadRequest}},
		{method: "GET", path: "/studies/{s}/items/999999", want: map[string]int{"anonymous": see, "stranger": notFound, "annotator": notFound, "owner": notFound, "admin": notFound}},
		{method: "GET", path: "/studies/{s}/items/x", want: map[string]int{"annotator": notFound, "admin": notFound}},
		{method: "POST", path: "/studies/{s}/items/{item}/labels", form: url.Values{"action": {"save"}, "success": {"unsure"}},
			want: map[string]int{"anonymous": unauth, "stranger": notFound, "annotator": see, "other annotator": forbidden, "owner": forbidden, "admin": forbidden}},
		{method: "GET", path: "/studies/{s}/items/{item}/steps/1/axtree", want: map[string]int{"anonymous": see, "stranger": notFound, "annotator": ok, "other annotator": forbidden, "owner": ok, "admin": ok}},
		{method: "GET", path: "/studies/{s}/items/{item}/steps/9/axtree", want: map[string]int{"annotator": notFound, "admin": notFound}},
		{method: "GET", path: "/studies/{s}/items/{item}/steps/2/network", want: map[string]int{"anonymous": see, "stranger": notFound, "annotator": ok, "other annotator": forbidden, "owner": ok, "admin": ok}},
	} {
		for who, want := range tc.want {
			t.Run(tc.method+" "+tc.path+" as "+who, func(t *testing.T) {
				c := clients[who]
				c.t = t
				path := strings.NewReplacer("{s}", strconv.FormatInt(f.study.ID, 10), "{item}", strconv.FormatInt(mine, 10)).Replace(tc.path)
				var res *http.Response
				if tc.method == http.MethodGet {
					res = c.get(path)
				} else {
					res = c.postForm(path, tc.form)
				}
				body := readBody(t, res)
				require.Equal(t, want, res.StatusCode, "%s %s as %s: %s", tc.method, path, who, body)
				if who == "anonymous" && res.StatusCode == see {
					require.Contains(t, res.Header.Get("Location"), "/login?next=")
				}
				for _, secret := range benchSecrets {
					if who != "admin" {
						require.NotContains(t, body, secret)
					}
				}
			})
		}
	}
}

// TestAnnotate_BlindStudy: an annotator of a blind study sees the trajectory
// and a label form, never a verdict, score or link to the run, and the run's
// own attempt page, API and download refuse them until they finish the item;
// the owner's review of the same item shows the evaluation and, once
// submitted, the annotator's labels.
func TestAnnotate_BlindStudy(t *testing.T) {
	t.Parallel()
	f := newStudyFixture(t, true)
	item := f.mine[0]
	attempt := f.attemptOf(t, f.ann, item)

	res := f.ann.get(f.itemPath(item))
	page := readBody(t, res)
	require.Equal(t, http.StatusOK, res.StatusCode, page)
	for _, want := range []string{`data-testid="label-form"`, `data-testid="question-success"`, `data-testid="question-rubric:`, `data-testid="film-frame"`,
		`data-testid="blind-note"`, "Item 1 of 2"} {
		require.Contains(t, page, want)
	}
	for _, trace := range verdictTraces {
		require.NotContains(t, page, trace, "the blind annotator's item page")
	}
	require.NotContains(t, page, `data-testid="item-review"`)
	// The viewer's steps link to the item page itself.
	require.Contains(t, page, fmt.Sprintf(`href="%s?step=2#viewer"`, f.itemPath(item)))
	require.Contains(t, page, fmt.Sprintf(`href="%s/steps/1/axtree"`, f.itemPath(item)))
	require.Equal(t, "private, no-store", res.Header.Get("Cache-Control"))

	// The run's own pages keep the verdicts from the annotator, and only from them.
	run := attemptURL(f.runID, attempt)
	for _, path := range []string{run, run + "/artifacts.zip", "/api/v1/runs/" + strconv.FormatInt(f.runID, 10) + "/attempts/" + strconv.FormatInt(attempt, 10)} {
		res := f.ann.get(path)
		body := readBody(t, res)
		require.Equal(t, http.StatusForbidden, res.StatusCode, "%s: %s", path, body)
		require.Contains(t, body, "This attempt is in a blind study you annotate; its verdicts are hidden until ")
		require.NotContains(t, body, "sandbox-check@1")
		res = f.ann2.get(path)
		require.Equal(t, http.StatusForbidden, res.StatusCode, "%s as the study's other annotator: an item of the study, whoever it is assigned to", path)
		res = f.outsider.get(path)
		require.Equal(t, http.StatusOK, res.StatusCode, "%s as a visitor who annotates nothing", path)
	}
	// Also through an API token.
	tokenAnn := withToken(t, f.b, f.ann)
	res = tokenAnn.api(http.MethodGet, "/api/v1/runs/"+strconv.FormatInt(f.runID, 10)+"/attempts/"+strconv.FormatInt(attempt, 10), nil)
	require.Equal(t, http.StatusForbidden, res.StatusCode, readBody(t, res))

	// The run's attempt list, metrics, results export and comparisons are kept
	// from the annotator too, whose other attempts' outcomes would show there.
	runID := strconv.FormatInt(f.runID, 10)
	res = f.ann.get("/runs/" + runID)
	body := readBody(t, res)
	require.Equal(t, http.StatusOK, res.StatusCode, body)
	require.Contains(t, body, `data-testid="attempts-blind"`)
	require.NotContains(t, body, "sandbox-check@1")
	require.NotContains(t, body, `data-testid="attempt-row"`)
	other, _ := f.queue(t, true, true)
	for _, path := range []string{"/api/v1/runs/" + runID + "/attempts", "/api/v1/runs/" + runID + "/metrics",
		"/runs/" + runID + "/results.jsonl", "/api/v1/compare?runs=" + runID + "," + strconv.FormatInt(other.ID, 10)} {
		res := f.ann.get(path)
		body := readBody(t, res)
		require.Equal(t, http.StatusForbidden, res.StatusCode, "%s: %s", path, body)
		require.Contains(t, body, service.BlindRunMessage)
		res = f.outsider.get(path)
		require.Equal(t, http.StatusOK, res.StatusCode, "%s as a visitor who annotates nothing: %s", path, readBody(t, res))
	}
	require.NotContains(t, readBody(t, f.outsider.get("/runs/"+runID)), `data-testid="attempts-blind"`)

	// The run's page and its progress endpoint show how far it got, not its
	// successes, failures or errors.
	for _, path := range []string{"/runs/" + runID, "/runs/" + runID + "/progress"} {
		body := readBody(t, f.ann.get(path))
		require.Contains(t, body, `data-testid="run-results-blind"`, path)
		for _, id := range []string{`data-testid="run-successes"`, `data-testid="run-failures"`, `data-testid="run-errors"`} {
			require.NotContains(t, body, id, path)
		}
		outside := readBody(t, f.outsider.get(path))
		require.Contains(t, outside, `data-testid="run-successes"`, path)
		require.NotContains(t, outside, `data-testid="run-results-blind"`, path)
	}
	// So does the API, saying so.
	for _, path := range []string{"/api/v1/runs/" + runID, "/api/v1/runs"} {
		body := readBody(t, f.ann.get(path))
		require.Contains(t, body, `"results_withheld":true`, path)
		require.NotContains(t, readBody(t, f.outsider.get(path)), `"results_withheld"`, path)
	}
	// Lists of runs withhold its successes.
	for _, path := range []string{"/runs", "/teams/lab/runs"} {
		require.Contains(t, readBody(t, f.ann.get(path)), `data-testid="blind-cell"`, path)
		require.NotContains(t, readBody(t, f.outsider.get(path)), `data-testid="blind-cell"`, path)
	}
	// The board's breakdowns withhold the run's groups and per-task outcomes.
	require.NoError(t, service.NewMetrics(f.b.db).RefreshRunMetrics(f.sys, f.runID))
	breakdowns := "/benchmarks/mini/leaderboard/breakdowns"
	body = readBody(t, f.ann.get(breakdowns))
	require.Contains(t, body, `data-testid="blind-cell"`)
	require.NotContains(t, body, attemptURL(f.runID, attempt), "no per-task outcome links to the run's attempts")
	outside := readBody(t, f.outsider.get(breakdowns))
	require.NotContains(t, outside, `data-testid="blind-cell"`)
	require.Contains(t, outside, attemptURL(f.runID, attempt))

	// The owner's review: the evaluation, and no label yet.
	res = f.member.get(f.itemPath(item))
	review := readBody(t, res)
	require.Equal(t, http.StatusOK, res.StatusCode, review)
	require.Contains(t, review, `data-testid="item-review"`)
	require.Contains(t, review, "sandbox-check@1")
	require.Contains(t, review, `data-testid="review-labels"`, "the annotator's (empty) assignment is listed")
	require.NotContains(t, review, `data-testid="label-form"`, "the owner annotates nothing")
	require.Contains(t, review, `data-testid="attempt-link"`)

	// Submitted: the owner sees the labels, and the run's pages stay closed to
	// the annotator, who may still edit the labels while the study is open.
	res = f.ann.postForm(f.itemPath(item)+"/labels", withAction(f.fullLabels(t, f.ann, item), models.LabelActionSubmit))
	require.Equal(t, http.StatusSeeOther, res.StatusCode, readBody(t, res))
	res = f.ann.get(run)
	require.Equal(t, http.StatusForbidden, res.StatusCode, readBody(t, res))
	res = f.member.get(f.itemPath(item))
	review = readBody(t, res)
	require.Regexp(t, regexp.MustCompile(`(?s)data-testid="review-labels-row".*ann.*submitted.*Successful.*4.*No.*No.*3\. Somewhat Optimal.*Pass`), review)
	// The annotator's own page after submitting: still no verdict.
	page = readBody(t, f.ann.get(f.itemPath(item)))
	for _, trace := range verdictTraces {
		require.NotContains(t, page, trace, "the blind annotator's submitted item")
	}

	// Closed: the labels are final, and the run's pages open to the annotator.
	require.NoError(t, servicetest.Studies(f.b.db, nil).CloseStudy(actorCtx(f.member), f.study.ID))
	for _, path := range []string{run, "/api/v1/runs/" + runID + "/attempts/" + strconv.FormatInt(attempt, 10), "/api/v1/runs/" + runID + "/attempts"} {
		res := f.ann.get(path)
		require.Equal(t, http.StatusOK, res.StatusCode, "%s: %s", path, readBody(t, res))
	}
	require.NotContains(t, readBody(t, f.ann.get("/runs/"+runID)), `data-testid="attempts-blind"`)
}

// TestAnnotate_OpenStudyReveals: in a study that is not blind, annotators
// get the reveal (collapsed under their form), without links to the run.
func TestAnnotate_OpenStudyReveals(t *testing.T) {
	t.Parallel()
	f := newStudyFixture(t, false, models.StudyLabelSuccess)
	page := readBody(t, f.ann.get(f.itemPath(f.mine[0])))
	require.Contains(t, page, `data-testid="review-details"`)
	require.Contains(t, page, "sandbox-check@1")
	require.NotContains(t, page, `data-testid="attempt-link"`)
	require.NotContains(t, page, `data-testid="blind-note"`)
	require.NotContains(t, page, `data-testid="question-score"`, "only the asked labels are questions")
}

// TestAnnotate_Labels walks an annotator's queue through the form as a
// browser without JavaScript would post it, and as the script autosaves.
func TestAnnotate_Labels(t *testing.T) {
	t.Parallel()
	f := newStudyFixture(t, true)
	c := f.ann
	first, second := f.mine[0], f.mine[1]
	labels := f.itemPath(first) + "/labels"

	t.Run("Queue", func(t *testing.T) {
		c.t = t
		res := c.get(fmt.Sprintf("/studies/%d/queue", f.study.ID))
		page := readBody(t, res)
		require.Equal(t, http.StatusOK, res.StatusCode, page)
		require.Contains(t, page, `<progress value="0" max="2"`)
		require.Contains(t, page, "0 of 2 finished")
		require.Regexp(t, `href="`+regexp.QuoteMeta(f.itemPath(first))+`"[^>]*data-testid="queue-next">Start<`, page)
		require.Equal(t, 2, strings.Count(page, `data-testid="queue-entry"`))
		for _, trace := range verdictTraces {
			require.NotContains(t, page, trace)
		}
	})

	t.Run("SaveKeepsAnswers", func(t *testing.T) {
		c.t = t
		res := postLabels(t, c, labels, url.Values{"action": {"save"}, "success": {"Unsuccessful"}, "time_spent_ms": {"1500"}}, false)
		require.Equal(t, http.StatusSeeOther, res.StatusCode, readBody(t, res))
		require.Equal(t, f.itemPath(first)+"?notice=saved", res.Header.Get("Location"))
		page := readBody(t, c.get(res.Header.Get("Location")))
		require.Contains(t, page, `data-testid="flash">Saved.`)
		require.Regexp(t, `value="unsuccessful" checked`, page, "the saved answer is shown, in its canonical spelling")
		require.Contains(t, page, `data-testid="item-status">to do`)
	})

	t.Run("Autosave", func(t *testing.T) {
		c.t = t
		res := postLabels(t, c, labels, url.Values{"action": {"save"}, "score": {"2"}, "time_spent_ms": {"2500"}}, true)
		require.Equal(t, http.StatusNoContent, res.StatusCode, readBody(t, res))
		v, err := servicetest.Studies(f.b.db, nil).StudyItem(actorCtx(c), f.study.ID, first)
		require.NoError(t, err)
		require.Equal(t, models.StudyLabels{"success": "unsuccessful", "score": "2"}, v.Assignment.Labels)
		require.Equal(t, int64(4000), v.Assignment.TimeSpentMS, "time adds up")
		// A cleared answer is sent as "".
		res = postLabels(t, c, labels, url.Values{"action": {"save"}, "score": {""}, "time_spent_ms": {"0"}}, true)
		require.Equal(t, http.StatusNoContent, res.StatusCode)
		v, err = servicetest.Studies(f.b.db, nil).StudyItem(actorCtx(c), f.study.ID, first)
		require.NoError(t, err)
		require.Equal(t, models.StudyLabels{"success": "unsuccessful"}, v.Assignment.Labels)
		// A refused autosave is an error fragment naming the field.
		res = postLabels(t, c, labels, url.Values{"action": {"save"}, "looping": {"maybe"}}, true)
		body := readBody(t, res)
		require.Equal(t, http.StatusBadRequest, res.StatusCode, body)
		require.Equal(t, "looping", res.Header.Get("X-Error-Field"))
		require.Contains(t, body, `role="alert"`)
		require.NotContains(t, body, "<html")
	})

	t.Run("BadInputRerendersTheForm", func(t *testing.T) {
		c.t = t
		for _, tc := range []struct {
			form  url.Values
			field string
			msg   string
		}{
			{url.Values{"action": {"save"}, "score": {"9"}}, "score", "9"},
			{url.Values{"action": {"submit"}, "score": {"5"}}, "side_effect", "Answer every question before submitting"},
			{url.Values{"action": {"skip"}, "reason": {"  "}}, "reason", "Say why you skip this item."},
			{url.Values{"action": {"save"}, "time_spent_ms": {"soon"}}, "time_spent_ms", "whole number"},
		} {
			res := postLabels(t, c, labels, tc.form, false)
			page := readBody(t, res)
			require.Equal(t, http.StatusBadRequest, res.StatusCode, page)
			if tc.field == "time_spent_ms" {
				require.Contains(t, page, `data-testid="form-error"`)
			} else {
				require.Contains(t, page, `data-testid="error-`+tc.field+`"`, "the field is named: %s", page)
			}
			require.Contains(t, page, tc.msg)
			require.Contains(t, page, `data-testid="label-form"`)
			require.Regexp(t, `value="unsuccessful" checked`, page, "the saved answers stay")
			for _, trace := range verdictTraces {
				require.NotContains(t, page, trace)
			}
		}
		// The submitted values are kept on the re-rendered form.
		page := readBody(t, postLabels(t, c, labels, url.Values{"action": {"submit"}, "score": {"5"}}, false))
		require.Regexp(t, `name="score" value="5" checked`, page)
	})

	t.Run("SubmitGoesToTheNextItem", func(t *testing.T) {
		c.t = t
		res := postLabels(t, c, labels, withAction(f.fullLabels(t, c, first), models.LabelActionSubmit), false)
		require.Equal(t, http.StatusSeeOther, res.StatusCode, readBody(t, res))
		require.Equal(t, f.itemPath(second)+"?last=submit", res.Header.Get("Location"))
		page := readBody(t, c.get(res.Header.Get("Location")))
		require.Contains(t, page, "Labels submitted. Here is the next item of your queue.")
		require.Contains(t, page, "Item 2 of 2")
		// Submitting with htmx answers an HX-Redirect.
		res = postLabels(t, c, labels, withAction(f.fullLabels(t, c, first), models.LabelActionSubmit), true)
		require.Equal(t, http.StatusNoContent, res.StatusCode)
		require.Equal(t, f.itemPath(second)+"?last=submit", res.Header.Get("HX-Redirect"))
	})

	t.Run("SkipTheLastGoesToTheQueue", func(t *testing.T) {
		c.t = t
		res := postLabels(t, c, f.itemPath(second)+"/labels", url.Values{"action": {"skip"}, "reason": {"The screenshots are blank."}, "time_spent_ms": {"700"}}, false)
		require.Equal(t, http.StatusSeeOther, res.StatusCode, readBody(t, res))
		require.Equal(t, fmt.Sprintf("/studies/%d/queue?last=skip", f.study.ID), res.Header.Get("Location"))
		page := readBody(t, c.get(res.Header.Get("Location")))
		require.Contains(t, page, "Item skipped. No pending item is left in your queue.")
		require.Contains(t, page, `<progress value="2" max="2"`)
		require.Contains(t, page, "2 of 2 finished: 1 submitted, 1 skipped")
		require.Contains(t, page, `data-testid="queue-reason">The screenshots are blank.`)
		require.Contains(t, page, `data-testid="queue-finished"`)
		require.NotContains(t, page, `data-testid="queue-next"`)
	})

	t.Run("ClosedStudy", func(t *testing.T) {
		c.t = t
		require.NoError(t, servicetest.Studies(f.b.db, nil).CloseStudy(actorCtx(f.member), f.study.ID))
		res := postLabels(t, c, labels, url.Values{"action": {"save"}, "success": {"unsure"}}, false)
		page := readBody(t, res)
		require.Equal(t, http.StatusConflict, res.StatusCode, page)
		require.Contains(t, page, "The study is closed; labels can no longer be changed.")
		require.Contains(t, page, `data-testid="study-status-note"`)
		res = postLabels(t, c, labels, url.Values{"action": {"save"}, "success": {"unsure"}}, true)
		require.Equal(t, http.StatusConflict, res.StatusCode)
	})
}
