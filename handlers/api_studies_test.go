package handlers_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/service/servicetest"
)

// apiStudyClients are the callers of the API tables, with bearer tokens.
func (f *studyPagesFixture) apiStudyClients(t *testing.T) map[string]*client {
	return map[string]*client{
		"anonymous": f.b.anonymous(t), "stranger": withToken(t, f.b, f.stranger), "annotator": withToken(t, f.b, f.annotator),
		"owner": withToken(t, f.b, f.owner), "admin": withToken(t, f.b, f.b.admin),
	}
}

// TestAuthz_APIStudies checks every study API route for each kind of
// caller, each request against a study of its own.
func TestAuthz_APIStudies(t *testing.T) {
	t.Parallel()
	f := newStudyPagesFixture(t)
	const ok, created, unauth, forbidden, notFound = http.StatusOK, http.StatusCreated, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound
	create := fmt.Sprintf(`{"name":"Mine","run_ids":[%d],"sample_size":2,"labels":["success"]}`, f.walker.ID)
	open := studyOptions{state: models.StudyOpen}
	for _, r := range []struct {
		method, path string // {study} and {item}: the row's study and its first item
		json         string
		opts         studyOptions
		want         map[string]int
	}{
		{method: "GET", path: "/api/v1/studies", want: byRole(unauth, ok, ok, ok, ok)},
		{method: "POST", path: "/api/v1/studies", json: create, want: byRole(unauth, created, created, created, created)},
		{method: "GET", path: "/api/v1/studies/{study}", want: byRole(unauth, notFound, ok, ok, ok)},
		{method: "GET", path: "/api/v1/studies/{study}/queue", opts: open, want: byRole(unauth, notFound, ok, ok, ok)},
		{method: "GET", path: "/api/v1/studies/{study}/items/{item}", opts: open, want: byRole(unauth, notFound, ok, ok, ok)},
		{method: "PUT", path: "/api/v1/studies/{study}/items/{item}/labels", opts: open, json: `{"labels":{"success":"Successful"},"action":"submit"}`,
			want: byRole(unauth, notFound, ok, forbidden, forbidden)},
		{method: "GET", path: "/api/v1/studies/{study}/verdicts", opts: open, want: byRole(unauth, notFound, ok, ok, ok)},
		{method: "GET", path: "/api/v1/studies/{study}/verdicts", opts: studyOptions{state: models.StudyOpen, blind: true}, want: byRole(unauth, notFound, forbidden, ok, ok)},
		{method: "GET", path: "/api/v1/studies/{study}/report", opts: open, want: byRole(unauth, notFound, forbidden, ok, ok)},
		{method: "GET", path: "/api/v1/studies/0", want: byRole(unauth, notFound, notFound, notFound, notFound)},
	} {
		for role, want := range r.want {
			t.Run(r.method+" "+r.path+" as "+role, func(t *testing.T) {
				c := f.apiStudyClients(t)[role]
				c.t = t
				st := f.study(t, r.opts)
				items := f.itemsOf(t, st.ID)
				path := strings.ReplaceAll(r.path, "{study}", strconv.FormatInt(st.ID, 10))
				path = strings.ReplaceAll(path, "{item}", strconv.FormatInt(items[0].ItemID, 10))
				var body any
				if r.json != "" {
					body = json.RawMessage(r.json)
				}
				res := c.api(r.method, path, body)
				require.Equal(t, want, res.StatusCode, "%s %s as %s: %s", r.method, path, role, readBody(t, res))
				require.Equal(t, "application/json", strings.Split(res.Header.Get("Content-Type"), ";")[0])
			})
		}
	}
}

// apiItem is the part of an item answer the blind tests read.
type apiItem struct {
	Role     string `json:"role"`
	Timeline struct {
		Run struct {
			Successes int `json:"successes"`
		} `json:"run"`
		Attempt struct {
			Outcome string   `json:"outcome"`
			Score   *float64 `json:"score"`
		} `json:"attempt"`
		Evaluation  json.RawMessage   `json:"evaluation"`
		Evaluations []json.RawMessage `json:"evaluations"`
	} `json:"timeline"`
	Reveal     json.RawMessage `json:"reveal"`
	Assignment *struct {
		Status string            `json:"status"`
		Labels map[string]string `json:"labels"`
	} `json:"assignment"`
}

// TestAPI_Studies goes through a blind study with the API: creation (and a
// refusal naming its field), an annotator's item without verdicts, scores or
// outcome, their labels, the judges' verdicts refused to them and given to
// the owner, and the report.
func TestAPI_Studies(t *testing.T) {
	t.Parallel()
	f := newStudyPagesFixture(t)
	clients := f.apiStudyClients(t)
	owner, annotator := clients["owner"], clients["annotator"]

	res := owner.api(http.MethodPost, "/api/v1/studies", map[string]any{
		"name": "Blind check", "run_ids": []int64{f.walker.ID, f.rover.ID}, "seed": 5, "sample_size": 8, "blind": true,
		"labels": []string{"success", "score"}, "overlap_fraction": 1, "annotators": []string{f.annotator.user.Email, f.annotator2.user.Email},
		"judges": []map[string]any{{"name": "gpt", "prompt": models.StudyPromptTrajectoryV2, "screenshots": true}},
	})
	require.Equal(t, http.StatusCreated, res.StatusCode)
	var st struct {
		ID        int64    `json:"id"`
		Status    string   `json:"status"`
		ItemCount int      `json:"item_count"`
		Labels    []string `json:"labels"`
		Judges    []struct {
			Name string `json:"name"`
		} `json:"judges"`
		APIURL string `json:"api_url"`
	}
	decodeJSON(t, res, &st)
	require.Equal(t, models.StudyDraft, st.Status)
	require.Equal(t, 8, st.ItemCount)
	require.Equal(t, []string{"success", "score"}, st.Labels)
	require.Equal(t, "gpt", st.Judges[0].Name)
	require.Equal(t, st.APIURL, res.Header.Get("Location"))
	base := fmt.Sprintf("/api/v1/studies/%d", st.ID)

	res = owner.api(http.MethodPost, "/api/v1/studies", map[string]any{"name": "x", "run_ids": []int64{f.walker.ID}, "sample_size": 0, "labels": []string{"success"}})
	require.Equal(t, http.StatusBadRequest, res.StatusCode)
	require.Equal(t, "sample_size", decodeAPIError(t, res).Error.Field)
	res = owner.api(http.MethodPost, "/api/v1/studies", map[string]any{"name": "x", "sample": 3})
	require.Equal(t, http.StatusBadRequest, res.StatusCode)
	require.Equal(t, "sample", decodeAPIError(t, res).Error.Field, "unknown fields are refused")

	require.NoError(t, servicetest.Studies(f.b.db, nil).OpenStudy(actorCtx(f.owner), st.ID))
	items := f.itemsOf(t, st.ID)
	var success models.StudyDataItem
	for _, it := range items {
		if it.Outcome == models.OutcomeSuccess {
			success = it
		}
	}
	item := fmt.Sprintf("%s/items/%d", base, success.ItemID)

	t.Run("BlindItem", func(t *testing.T) {
		annotator.t = t
		res := annotator.api(http.MethodGet, item, nil)
		require.Equal(t, http.StatusOK, res.StatusCode)
		raw := readBody(t, res)
		var v apiItem
		require.NoError(t, json.Unmarshal([]byte(raw), &v))
		require.Equal(t, models.StudyRoleAnnotator, v.Role)
		require.Equal(t, "null", string(v.Timeline.Evaluation))
		require.Empty(t, v.Timeline.Evaluations)
		require.Empty(t, v.Timeline.Attempt.Outcome)
		require.Nil(t, v.Timeline.Attempt.Score)
		require.Zero(t, v.Timeline.Run.Successes)
		require.Equal(t, "null", string(v.Reveal))
		require.NotContains(t, raw, "webarena-verified", "no evaluator's name leaks")
		require.NotContains(t, raw, "SECRET-", "hidden task fields never leave")
		require.NotNil(t, v.Assignment)
		require.Equal(t, models.AssignmentPending, v.Assignment.Status)

		owner.t = t
		res = owner.api(http.MethodGet, item, nil)
		require.Equal(t, http.StatusOK, res.StatusCode)
		require.NoError(t, json.NewDecoder(res.Body).Decode(&v))
		require.NotEqual(t, "null", string(v.Timeline.Evaluation), "managers see the verdicts")
		require.Equal(t, models.OutcomeSuccess, v.Timeline.Attempt.Outcome)
		require.NotEqual(t, "null", string(v.Reveal))
		require.Nil(t, v.Assignment)
	})

	t.Run("Labels", func(t *testing.T) {
		annotator.t = t
		res := annotator.api(http.MethodPut, item+"/labels", map[string]any{"labels": map[string]string{"success": "Successful"}, "action": "submit"})
		require.Equal(t, http.StatusBadRequest, res.StatusCode, "the score is asked too")
		require.Equal(t, "score", decodeAPIError(t, res).Error.Field)
		res = annotator.api(http.MethodPut, item+"/labels", map[string]any{"labels": map[string]string{"success": "Successful", "score": "4"}, "action": "submit", "time_spent_ms": 3000})
		require.Equal(t, http.StatusOK, res.StatusCode)
		var a struct {
			ItemID      int64             `json:"item_id"`
			Status      string            `json:"status"`
			Labels      map[string]string `json:"labels"`
			TimeSpentMS int64             `json:"time_spent_ms"`
		}
		decodeJSON(t, res, &a)
		require.Equal(t, success.ItemID, a.ItemID)
		require.Equal(t, models.AssignmentDone, a.Status)
		require.Equal(t, map[string]string{"success": "successful", "score": "4"}, a.Labels)
		require.EqualValues(t, 3000, a.TimeSpentMS)

		res = annotator.api(http.MethodGet, base+"/queue", nil)
		require.Equal(t, http.StatusOK, res.StatusCode)
		var q struct {
			Entries  []struct{ Status string }    `json:"entries"`
			Progress struct{ Done, Assigned int } `json:"progress"`
		}
		decodeJSON(t, res, &q)
		require.Equal(t, 1, q.Progress.Done)
		require.Equal(t, 8, q.Progress.Assigned)
	})

	t.Run("Verdicts", func(t *testing.T) {
		annotator.t = t
		res := annotator.api(http.MethodGet, base+"/verdicts", nil)
		require.Equal(t, http.StatusForbidden, res.StatusCode)
		e := decodeAPIError(t, res)
		require.Equal(t, models.EFORBIDDEN, e.Error.Code)
		require.Equal(t, "This study is blind: its judges' verdicts are hidden from its annotators.", e.Error.Message)
		owner.t = t
		res = owner.api(http.MethodGet, base+"/verdicts", nil)
		require.Equal(t, http.StatusOK, res.StatusCode)
		var list struct {
			Items []json.RawMessage `json:"items"`
		}
		decodeJSON(t, res, &list)
		require.NotNil(t, list.Items)
	})

	t.Run("Report", func(t *testing.T) {
		owner.t = t
		res := owner.api(http.MethodGet, base+"/report", nil)
		require.Equal(t, http.StatusOK, res.StatusCode)
		var r struct {
			Items       int                        `json:"items"`
			Labelled    int                        `json:"labelled"`
			Breakdowns  map[string]json.RawMessage `json:"breakdowns"`
			Leaderboard []struct {
				Judge string `json:"judge"`
				Kind  string `json:"kind"`
			} `json:"leaderboard"`
		}
		decodeJSON(t, res, &r)
		require.Equal(t, 8, r.Items)
		require.Equal(t, 1, r.Labelled)
		require.Len(t, r.Breakdowns, 4)
		var judges []string
		for _, j := range r.Leaderboard {
			judges = append(judges, j.Judge)
		}
		require.Contains(t, judges, "gpt", "a configured judge is listed before it has judged")
		require.Contains(t, judges, "check: webarena-verified")
	})

	t.Run("Overview", func(t *testing.T) {
		annotator.t = t
		res := annotator.api(http.MethodGet, base, nil)
		require.Equal(t, http.StatusOK, res.StatusCode)
		var v struct {
			Role       string             `json:"role"`
			CanManage  bool               `json:"can_manage"`
			Annotators []json.RawMessage  `json:"annotators"`
			Progress   struct{ Done int } `json:"progress"`
		}
		decodeJSON(t, res, &v)
		require.Equal(t, models.StudyRoleAnnotator, v.Role)
		require.False(t, v.CanManage)
		require.Empty(t, v.Annotators)
		require.Equal(t, 1, v.Progress.Done)

		res = annotator.api(http.MethodGet, "/api/v1/studies", nil)
		require.Equal(t, http.StatusOK, res.StatusCode)
		var list struct {
			Items []struct {
				ID       int64  `json:"id"`
				Role     string `json:"role"`
				Assigned int    `json:"assigned"`
				Finished int    `json:"finished"`
			} `json:"items"`
		}
		decodeJSON(t, res, &list)
		require.Len(t, list.Items, 1)
		require.Equal(t, st.ID, list.Items[0].ID)
		require.Equal(t, 8, list.Items[0].Assigned)
		require.Equal(t, 1, list.Items[0].Finished)
	})
}

// TestOpenAPI_StudyAnswersMatchDocument sends a request to every documented
// study operation, as an owner, an annotator and a stranger would, and
// validates each request and answer against the document.
func TestOpenAPI_StudyAnswersMatchDocument(t *testing.T) {
	t.Parallel()
	f := newStudyPagesFixture(t)
	clients := f.apiStudyClients(t)
	owner, annotator, stranger := clients["owner"], clients["annotator"], clients["stranger"]
	d := newDocChecker(t, f.b.anonymous(t))
	send := func(c *client, method, path, body string, want int) []byte {
		return d.send(c, apiRequest{method: method, path: path, json: body}, want)
	}

	createdStudy := send(owner, http.MethodPost, "/api/v1/studies", fmt.Sprintf(`{"name":"Documented","description":"For the document.","run_ids":[%d],"benchmarks":["mini"],"sampling":"stratified","stratify_by":"agent","seed":3,"sample_size":6,"overlap_fraction":0.5,"overlap_annotators":2,"blind":false,"labels":["success","rubric"],"judges":[{"name":"gpt","model":"gpt-4o","prompt":"labels-v1","screenshots":true,"accessibility":false}],"annotators":[%q,%q]}`,
		f.walker.ID, f.annotator.user.Email, f.annotator2.user.Email), http.StatusCreated)
	send(owner, http.MethodPost, "/api/v1/studies", `{"name":"","run_ids":[1],"sample_size":3,"labels":["success"]}`, http.StatusBadRequest)
	id := idOf(t, createdStudy)
	base := "/api/v1/studies/" + id
	studyID, err := strconv.ParseInt(id, 10, 64)
	require.NoError(t, err)
	send(owner, http.MethodGet, "/api/v1/studies", "", http.StatusOK)
	send(owner, http.MethodGet, base, "", http.StatusOK)
	send(stranger, http.MethodGet, base, "", http.StatusNotFound)
	send(owner, http.MethodGet, base+"/report", "", http.StatusOK) // no label yet
	require.NoError(t, servicetest.Studies(f.b.db, nil).OpenStudy(actorCtx(f.owner), studyID))
	send(annotator, http.MethodGet, base, "", http.StatusOK)

	queue := send(annotator, http.MethodGet, base+"/queue", "", http.StatusOK)
	var q struct {
		Entries []struct {
			ItemID int64 `json:"item_id"`
		} `json:"entries"`
	}
	require.NoError(t, json.Unmarshal(queue, &q))
	require.NotEmpty(t, q.Entries)
	item := fmt.Sprintf("%s/items/%d", base, q.Entries[0].ItemID)
	answer := send(annotator, http.MethodGet, item, "", http.StatusOK)
	var it struct {
		RubricItems []struct {
			LabelKey string `json:"label_key"`
		} `json:"rubric_items"`
	}
	require.NoError(t, json.Unmarshal(answer, &it))
	require.NotEmpty(t, it.RubricItems, "the mini benchmark's tasks have rubrics")
	labels := map[string]string{"success": "successful"}
	for _, ri := range it.RubricItems {
		labels[ri.LabelKey] = "pass"
	}
	body, err := json.Marshal(map[string]any{"labels": labels, "action": "submit", "reason": "", "time_spent_ms": 1200})
	require.NoError(t, err)
	send(annotator, http.MethodPut, item+"/labels", string(body), http.StatusOK)
	send(annotator, http.MethodPut, item+"/labels", `{"labels":{"success":"maybe"},"action":"save"}`, http.StatusBadRequest)
	send(owner, http.MethodPut, item+"/labels", `{"labels":{"success":"successful"},"action":"save"}`, http.StatusForbidden)
	send(owner, http.MethodGet, item, "", http.StatusOK)
	send(annotator, http.MethodGet, base+"/verdicts", "", http.StatusOK)
	send(owner, http.MethodGet, base+"/report", "", http.StatusOK)
	send(annotator, http.MethodGet, base+"/report", "", http.StatusForbidden)
	require.NoError(t, servicetest.Studies(f.b.db, nil).CloseStudy(actorCtx(f.owner), studyID))
	send(annotator, http.MethodPut, item+"/labels", `{"labels":{"success":"unsuccessful"},"action":"save"}`, http.StatusConflict)

	for _, op := range []string{"listStudies", "createStudy", "getStudy", "getStudyQueue", "getStudyItem", "saveStudyLabels", "listStudyVerdicts", "getStudyReport"} {
		require.True(t, d.checked[op], "%s was not validated", op)
	}
}
