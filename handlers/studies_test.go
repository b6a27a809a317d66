package handlers_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/handlers"
	"proctor/internal/evaltest"
	"proctor/models"
	"proctor/runner"
	"proctor/service/servicetest"
	"proctor/static"
	"proctor/storage/storagetest"
	"proctor/vault"
)

// fakeStudyJudging records the judging the study service asks it to queue
// (the service decides who may and which configurations).
type fakeStudyJudging struct {
	mu     sync.Mutex
	queued []string // "study id: names"
	// unavailable is JudgeAvailable's answer, and JudgeStudy's refusal.
	unavailable error
}

func (j *fakeStudyJudging) JudgeAvailable() error { return j.unavailable }

func (j *fakeStudyJudging) JudgeStudy(ctx context.Context, studyID int64, names []string) error {
	if j.unavailable != nil {
		return j.unavailable
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.queued = append(j.queued, fmt.Sprintf("%d: %s", studyID, strings.Join(names, ",")))
	return nil
}

func (j *fakeStudyJudging) calls() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.queued...)
}

// studyPagesFixture is a server with a study judging queue over the mini
// benchmark with two published, graded runs (see breakdownsFixture):
//
//	walker (lab):  t1 ✓  t2 ✗  t3 ✓  t4 error
//	rover (other): t1 ✓  t2 ✓  t3 ✗  t4 ✓
//
// The lab member owns the studies; the member of team other and a third
// user annotate them; a fourth user is a stranger to them.
type studyPagesFixture struct {
	*breakdownsFixture
	judging              *fakeStudyJudging
	owner, annotator     *client
	annotator2, stranger *client
	invitee              *client // a user no study has invited
	// noJudging is a second server over the same database without a
	// judging queue; clients reach it with noJudgingClient.
	noJudging *httptest.Server
}

func newStudyPagesFixture(t *testing.T) *studyPagesFixture {
	t.Helper()
	db := storagetest.OpenSQLite(t)
	sealer, err := vault.New(strings.Repeat("k", vault.MinSecretLength))
	require.NoError(t, err)
	db.UseAgentSecrets(sealer)
	judging := &fakeStudyJudging{}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	h, err := handlers.New(handlers.Options{LoginAttemptsPerMinute: 1000}, handlers.Deps{Evaluators: evaltest.Registry(), Runs: servicetest.Runs(db, 0), Moderation: servicetest.Moderation(db), Benchmarks: servicetest.Benchmarks(db), Teams: servicetest.Teams(db), Accounts: servicetest.Accounts(db), Candidates: servicetest.Candidates(db, nil),
		Store: db, Static: static.Files(), Logger: logger, Studies: servicetest.Studies(db, judging),
	})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	plain, err := handlers.New(handlers.Options{LoginAttemptsPerMinute: 1000}, handlers.Deps{Evaluators: evaltest.Registry(), Runs: servicetest.Runs(db, 0), Benchmarks: servicetest.Benchmarks(db), Store: db, Static: static.Files(), Logger: logger, Teams: servicetest.Teams(db), Candidates: servicetest.Candidates(db, nil), Studies: servicetest.Studies(db, nil), Accounts: servicetest.Accounts(db), Moderation: servicetest.Moderation(db)})
	require.NoError(t, err)
	noJudging := httptest.NewServer(plain)
	t.Cleanup(noJudging.Close)

	b := &testBundle{srv: srv, db: db, app: h}
	b.admin = b.newUser(t, "admin@example.org", true)
	rf := &runsFixture{agentFixture: newAgentFixture(t, b), sys: models.WithActor(context.Background(), models.SystemActor())}
	importBench(t, b, "mini")
	script := `{"actions":[{"type":"stop","reason":"fixture"}]}`
	require.NoError(t, servicetest.CreateAgent(db, actorCtx(rf.member), "lab", &models.Agent{Name: "Walker", Kind: models.AgentReplay, Config: script}, nil))
	require.NoError(t, servicetest.CreateAgent(db, actorCtx(rf.outsider), "other", &models.Agent{Name: "Rover", Kind: models.AgentReplay, Config: script}, nil))
	bf := &breakdownsFixture{runsFixture: rf, attempts: map[int64][]int64{}}
	const s, x, e = models.OutcomeSuccess, models.OutcomeFailure, models.OutcomeError
	bf.walker = bf.gradedRun(t, rf.member, "lab", "walker", "", []string{s, x, s, e}, 0.10, 3)
	bf.rover = bf.gradedRun(t, rf.outsider, "other", "rover", "", []string{s, s, x, s}, 0.40, 6)
	for _, r := range []*models.Run{bf.walker, bf.rover} {
		require.NoError(t, db.Gorm().Model(&models.Run{}).Where("id = ?", r.ID).Update("published", true).Error)
	}
	f := &studyPagesFixture{
		breakdownsFixture: bf, judging: judging, owner: rf.member, annotator: rf.outsider,
		annotator2: b.newUser(t, "second@annotators.test", false), stranger: b.newUser(t, "stranger@example.org", false),
		invitee: b.newUser(t, "invitee@example.org", false), noJudging: noJudging,
	}
	annotatorPanel(t, b, f.owner, f.annotator, f.annotator2, f.invitee)
	return f
}

// annotatorPanel puts a study owner and the users they invite in a team of
// their own, without runs: owners who are not administrators may invite only
// their teammates.
func annotatorPanel(t *testing.T, b *testBundle, owner *client, members ...*client) {
	t.Helper()
	now := time.Now().UTC()
	team := &models.Team{Slug: "panel", Name: "Panel", CreatedAt: now, UpdatedAt: now}
	require.NoError(t, b.db.Gorm().Create(team).Error)
	require.NoError(t, b.db.Gorm().Create(&models.Membership{TeamID: team.ID, UserID: owner.user.ID, Role: models.RoleOwner, CreatedAt: now}).Error)
	for _, m := range members {
		require.NoError(t, b.db.Gorm().Create(&models.Membership{TeamID: team.ID, UserID: m.user.ID, Role: models.RoleMember, CreatedAt: now}).Error)
	}
}

// noJudgingClient is c talking to the server without a judging queue (the
// cookie jar ignores ports, so c stays signed in).
func (f *studyPagesFixture) noJudgingClient(c *client) *client {
	cp := *c
	cp.base = f.noJudging.URL
	cp.app = nil
	return &cp
}

// studyOptions shape a fixture study.
type studyOptions struct {
	state  string // models.StudyDraft (default), StudyOpen or StudyClosed
	blind  bool
	labels []string // default success
	judges []models.StudyJudge
}

// study creates a study as the owner over both runs (all eight attempts),
// every item for both annotators, in the state asked for.
func (f *studyPagesFixture) study(t *testing.T, o studyOptions) *models.Study {
	t.Helper()
	if o.labels == nil {
		o.labels = []string{models.StudyLabelSuccess}
	}
	db := f.b.db
	st, err := servicetest.Studies(db, nil).CreateStudy(actorCtx(f.owner), models.StudyRequest{
		Name: "Judge check", Description: "Do judges agree with people?", RunIDs: []int64{f.walker.ID, f.rover.ID},
		Sampling: models.SampleRandom, Seed: 11, SampleSize: 8, OverlapFraction: 1, OverlapAnnotators: 2,
		Blind: o.blind, Labels: o.labels, Judges: o.judges,
		Annotators: []string{f.annotator.user.Email, f.annotator2.user.Email},
	})
	require.NoError(t, err)
	if o.state == models.StudyOpen || o.state == models.StudyClosed {
		require.NoError(t, servicetest.Studies(db, nil).OpenStudy(actorCtx(f.owner), st.ID))
	}
	if o.state == models.StudyClosed {
		require.NoError(t, servicetest.Studies(db, nil).CloseStudy(actorCtx(f.owner), st.ID))
	}
	return st
}

// itemsOf lists a study's items in sample order with the attempt each samples.
func (f *studyPagesFixture) itemsOf(t *testing.T, studyID int64) []models.StudyDataItem {
	t.Helper()
	d, err := servicetest.Studies(f.b.db, nil).StudyData(actorCtx(f.owner), studyID)
	require.NoError(t, err)
	return d.Items
}

// label submits an annotator's labels for an item.
func (f *studyPagesFixture) label(t *testing.T, c *client, studyID, itemID int64, labels map[string]string) {
	t.Helper()
	_, err := servicetest.Studies(f.b.db, nil).SaveStudyLabels(actorCtx(c), studyID, itemID, models.StudyLabelInput{Labels: labels, Action: models.LabelActionSubmit})
	require.NoError(t, err)
}

// labelAll has both annotators label every item's success as the attempt's
// outcome says (unsure for an error), but for two items: on the first whose
// attempt did not end in error the second annotator says the opposite (a
// tie), and on the next both do (a disagreement with the check).
func (f *studyPagesFixture) labelAll(t *testing.T, studyID int64) []models.StudyDataItem {
	t.Helper()
	items := f.itemsOf(t, studyID)
	flipped := 0
	opposite := map[string]string{"successful": "unsuccessful", "unsuccessful": "successful"}
	for _, it := range items {
		v := map[string]string{models.OutcomeSuccess: "successful", models.OutcomeFailure: "unsuccessful", models.OutcomeError: "unsure"}[it.Outcome]
		v2 := v
		if it.Outcome != models.OutcomeError && flipped < 2 {
			flipped++
			v2 = opposite[v]
			if flipped == 2 {
				v = v2
			}
		}
		f.label(t, f.annotator, studyID, it.ItemID, map[string]string{models.StudyLabelSuccess: v})
		f.label(t, f.annotator2, studyID, it.ItemID, map[string]string{models.StudyLabelSuccess: v2})
	}
	return items
}

// studyRoles are the callers of the permission tables.
func (f *studyPagesFixture) studyRoles(t *testing.T) map[string]*client {
	return map[string]*client{"anonymous": f.b.anonymous(t), "stranger": f.stranger, "annotator": f.annotator, "owner": f.owner, "admin": f.b.admin}
}

// byRole is a permission table row's statuses: anonymous, stranger,
// annotator, owner, admin.
func byRole(anonymous, stranger, annotator, owner, admin int) map[string]int {
	return map[string]int{"anonymous": anonymous, "stranger": stranger, "annotator": annotator, "owner": owner, "admin": admin}
}

// TestAuthz_Studies checks every study page for each kind of caller, each
// request against a study of its own in the state the route needs:
// anonymous visitors are sent to log in (pages) or refused (posts), a user
// who is neither the owner, an annotator nor an admin gets 404, annotators
// see the overview but manage nothing (403), the owner and admins manage.
func TestAuthz_Studies(t *testing.T) {
	t.Parallel()
	f := newStudyPagesFixture(t)
	const ok, see, unauth, forbidden, notFound = http.StatusOK, http.StatusSeeOther, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound
	judge := []models.StudyJudge{{Name: "gpt", Prompt: models.StudyPromptLabelsV1, Screenshots: true}}
	manage := byRole(unauth, notFound, forbidden, see, see)
	read := byRole(see, notFound, forbidden, ok, ok)
	createForm := url.Values{"name": {"Mine"}, "run_ids": {strconv.FormatInt(f.walker.ID, 10)}, "sample_size": {"2"}, "seed": {"3"},
		"labels": {models.StudyLabelSuccess}, "sampling": {models.SampleRandom}}
	type row struct {
		method, path string // {study} is the row's study, {annotator} its second annotator's user id
		form         url.Values
		opts         studyOptions
		want         map[string]int
	}
	rows := []row{
		{method: "GET", path: "/studies", want: byRole(see, ok, ok, ok, ok)},
		{method: "GET", path: "/studies/new", want: byRole(see, ok, ok, ok, ok)},
		{method: "POST", path: "/studies", form: createForm, want: byRole(unauth, see, see, see, see)},
		{method: "GET", path: "/studies/{study}", want: byRole(see, notFound, ok, ok, ok)},
		{method: "POST", path: "/studies/{study}/annotators", form: url.Values{"email": {"invitee@example.org"}}, want: manage},
		{method: "POST", path: "/studies/{study}/annotators/{annotator}/remove", want: manage},
		{method: "POST", path: "/studies/{study}/judges", form: url.Values{"judge_name_1": {"claude"}, "judge_prompt_1": {models.StudyPromptTrajectoryV2}}, want: manage},
		{method: "POST", path: "/studies/{study}/judges/run", opts: studyOptions{judges: judge}, want: byRole(unauth, notFound, forbidden, forbidden, see)},
		{method: "POST", path: "/studies/{study}/open", want: manage},
		{method: "POST", path: "/studies/{study}/close", opts: studyOptions{state: models.StudyOpen}, want: manage},
		{method: "GET", path: "/studies/{study}/report", opts: studyOptions{state: models.StudyOpen}, want: read},
		{method: "GET", path: "/studies/{study}/report?by=site", opts: studyOptions{state: models.StudyOpen}, want: read},
		{method: "GET", path: "/studies/{study}/disagreements", opts: studyOptions{state: models.StudyOpen}, want: read},
		{method: "GET", path: "/studies/nope", want: byRole(see, notFound, notFound, notFound, notFound)},
		{method: "GET", path: "/studies/999999", want: byRole(see, notFound, notFound, notFound, notFound)},
		{method: "GET", path: "/studies/{study}/export/passwords.txt", want: byRole(see, notFound, notFound, notFound, notFound)},
	}
	for _, file := range []string{"labels.csv", "labels.jsonl", "verdicts.csv", "verdicts.jsonl", "report.json", "report.csv"} {
		rows = append(rows, row{method: "GET", path: "/studies/{study}/export/" + file, want: read})
	}
	for _, r := range rows {
		for role, want := range r.want {
			t.Run(r.method+" "+r.path+" as "+role, func(t *testing.T) {
				c := f.studyRoles(t)[role]
				c.t = t
				st := f.study(t, r.opts)
				path := strings.ReplaceAll(r.path, "{study}", strconv.FormatInt(st.ID, 10))
				path = strings.ReplaceAll(path, "{annotator}", strconv.FormatInt(f.annotator2.user.ID, 10))
				var res *http.Response
				if r.method == http.MethodGet {
					res = c.get(path)
				} else {
					res = c.postForm(path, r.form)
				}
				body := readBody(t, res)
				require.Equal(t, want, res.StatusCode, "%s %s as %s: %s", r.method, path, role, body)
				if role == "anonymous" && want == see {
					require.True(t, strings.HasPrefix(res.Header.Get("Location"), "/login?next="), res.Header.Get("Location"))
				}
				if want == forbidden && role == "owner" {
					require.Contains(t, body, "only an administrator may start it", "the owner may not spend on judging")
				} else if want == forbidden && strings.HasSuffix(r.path, "/judges/run") {
					// The study service's own refusal, as the queue answered it.
					require.Contains(t, body, "Only the study&#39;s owner or an administrator may run its judges.")
				} else if want == forbidden {
					require.Contains(t, body, "Only the study&#39;s owner and administrators may do this.")
				}
			})
		}
	}

	// The import forms take a file: the same table with multipart posts.
	for _, path := range []string{"/studies/{study}/import/labels", "/studies/{study}/import/verdicts"} {
		for role, want := range byRole(unauth, notFound, forbidden, ok, ok) {
			t.Run("POST "+path+" as "+role, func(t *testing.T) {
				c := f.studyRoles(t)[role]
				c.t = t
				st := f.study(t, studyOptions{state: models.StudyOpen})
				items := f.itemsOf(t, st.ID)
				csv := "annotator_name,benchmark,task_id,model_name,judge,trajectory_success\nzoe,mini," + items[0].TaskID + "," + studyModel(items[0]) + ",zoe-judge,Successful\n"
				p := strings.ReplaceAll(path, "{study}", strconv.FormatInt(st.ID, 10))
				res := postMultipart(c, p, nil, benchUpload{field: "file", name: "rows.csv", content: csv})
				body := readBody(t, res)
				require.Equal(t, want, res.StatusCode, "%s as %s: %s", p, role, body)
				if want == ok {
					require.Contains(t, body, `data-testid="import-result"`)
					require.Contains(t, body, `<span data-testid="import-imported">1 imported</span>`)
				}
			})
		}
	}
}

// studyModel is the model name exports and imports give an item.
func studyModel(it models.StudyDataItem) string {
	if it.Model != "" {
		return it.Model
	}
	return it.Agent
}

var errorSummaryField = regexp.MustCompile(`data-field="([a-z_0-9]+)"`)

// summaryFields lists the fields an error summary names.
func summaryFields(body string) []string {
	var out []string
	for _, m := range errorSummaryField.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestStudies_CreateForm goes through the creation form: its defaults,
// values that are not numbers (every one named at once, what was typed kept),
// a request the store refuses (the field named), a source the user may not
// see, and a study created and shown.
func TestStudies_CreateForm(t *testing.T) {
	t.Parallel()
	f := newStudyPagesFixture(t)
	c := f.owner

	t.Run("Defaults", func(t *testing.T) {
		c.t = t
		res := c.get("/studies/new?run=" + strconv.FormatInt(f.walker.ID, 10))
		require.Equal(t, http.StatusOK, res.StatusCode)
		body := readBody(t, res)
		seed := regexp.MustCompile(`id="f-seed" name="seed" type="number" value="(\d+)"`).FindStringSubmatch(body)
		require.NotNil(t, seed, "the seed field shows a seed")
		n, err := strconv.ParseInt(seed[1], 10, 64)
		require.NoError(t, err)
		require.Positive(t, n)
		require.Contains(t, body, fmt.Sprintf(`name="run_ids" value="%d" checked`, f.walker.ID), "?run= preselects the run")
		require.Contains(t, body, fmt.Sprintf(`name="run_ids" value="%d" aria-label`, f.rover.ID))
		require.Contains(t, body, `name="benchmarks" value="mini"`)
		require.Contains(t, body, `name="labels" value="success" checked`)
		require.Contains(t, body, `name="labels" value="score" aria-describedby`, "the score is not asked by default")
		require.Contains(t, body, `<legend>LLM judges</legend>`)
		require.Contains(t, body, `name="judge_name_1"`)
		for _, prompt := range models.StudyPrompts() {
			require.Contains(t, body, `<option value="`+prompt+`"`)
		}
		require.NotContains(t, body, `data-testid="error-summary"`)
	})

	t.Run("NotNumbers", func(t *testing.T) {
		c.t = t
		res := c.postForm("/studies", url.Values{
			"name": {"Typed <name>"}, "run_ids": {strconv.FormatInt(f.rover.ID, 10)}, "other_runs": {"12, x9"},
			"sample_size": {"many"}, "seed": {"1.5"}, "overlap_fraction": {"half"}, "overlap_annotators": {"2"},
			"labels": {"success", "looping"}, "blind": {"1"}, "annotators": {"a@example.org\nb@example.org"},
			"judge_model_2": {"gpt-4o"},
		})
		require.Equal(t, http.StatusBadRequest, res.StatusCode)
		body := readBody(t, res)
		require.Equal(t, []string{"run_ids", "seed", "sample_size", "overlap_fraction", "judge_name_2"}, summaryFields(body))
		require.Contains(t, body, `There is a problem`)
		require.Contains(t, body, `href="#fs-judges"`)
		require.Contains(t, body, `Judge row 2 has a model but no name`)
		require.Contains(t, body, `data-testid="error-sample_size"`)
		require.Contains(t, body, `id="f-sample_size" name="sample_size" type="number" value="many"`, "what was typed stays")
		require.Contains(t, body, `value="Typed &lt;name&gt;"`)
		require.Contains(t, body, fmt.Sprintf(`name="run_ids" value="%d" checked`, f.rover.ID))
		require.Contains(t, body, `name="labels" value="looping" checked`)
		require.Contains(t, body, `id="f-blind" type="checkbox" name="blind" value="1" checked`)
		require.Contains(t, body, "a@example.org\nb@example.org</textarea>")
		require.Contains(t, body, `name="judge_model_2" type="text" value="gpt-4o"`)
	})

	t.Run("StoreRefuses", func(t *testing.T) {
		c.t = t
		for _, tc := range []struct {
			form  url.Values
			field string
			says  string
		}{
			{form: url.Values{"name": {""}, "run_ids": {strconv.FormatInt(f.walker.ID, 10)}, "sample_size": {"3"}, "labels": {"success"}}, field: "name", says: "Name the study."},
			{form: url.Values{"name": {"No labels"}, "run_ids": {strconv.FormatInt(f.walker.ID, 10)}, "sample_size": {"3"}}, field: "labels", says: "Ask at least one label"},
			{form: url.Values{"name": {"No sources"}, "sample_size": {"3"}, "labels": {"success"}}, field: "run_ids", says: "Choose at least one run or benchmark"},
			{form: url.Values{"name": {"Stranger"}, "run_ids": {strconv.FormatInt(f.walker.ID, 10)}, "sample_size": {"3"}, "labels": {"success"}, "annotators": {"nobody@example.org"}}, field: "annotators", says: "No member of your teams has the email nobody@example.org; an administrator can invite anyone."},
			{form: url.Values{"name": {"Judges"}, "run_ids": {strconv.FormatInt(f.walker.ID, 10)}, "sample_size": {"3"}, "labels": {"success"}, "judge_name_1": {"same"}, "judge_name_2": {"same"}}, field: "judges", says: "Two judge configurations are named"},
		} {
			res := c.postForm("/studies", tc.form)
			require.Equal(t, http.StatusBadRequest, res.StatusCode)
			body := readBody(t, res)
			require.Equal(t, []string{tc.field}, summaryFields(body), body)
			require.Contains(t, body, tc.says)
		}
	})

	t.Run("UnseenRun", func(t *testing.T) {
		c.t = t
		// secret is a private run of team lab: the outsider may not see it.
		secret := (&breakdownsFixture{runsFixture: f.runsFixture, attempts: map[int64][]int64{}}).gradedRun(t, f.owner, "lab", "walker", "", []string{"success", "success", "success", "success"}, 0, 1)
		f.annotator.t = t
		res := f.annotator.postForm("/studies", url.Values{"name": {"Peek"}, "run_ids": {strconv.FormatInt(secret.ID, 10)}, "sample_size": {"3"}, "labels": {"success"}})
		require.Equal(t, http.StatusNotFound, res.StatusCode)
		body := readBody(t, res)
		require.Equal(t, []string{"run_ids"}, summaryFields(body))
		require.Contains(t, body, `data-testid="study-form"`)
	})

	t.Run("Created", func(t *testing.T) {
		c.t = t
		form := url.Values{
			"name": {"Cable judges"}, "description": {"Line one.\nLine two."}, "run_ids": {strconv.FormatInt(f.walker.ID, 10)},
			"other_runs": {strconv.FormatInt(f.rover.ID, 10)}, "sampling": {models.SampleStratified}, "stratify_by": {models.StratumOutcome},
			"seed": {"42"}, "sample_size": {"5"}, "overlap_fraction": {"0.4"}, "overlap_annotators": {"2"},
			"labels": {"success", "score"}, "blind": {"1"}, "annotators": {f.annotator.user.Email + "\n" + f.annotator2.user.Email},
			"judge_name_1": {"gpt labels"}, "judge_model_1": {"gpt-4o"}, "judge_prompt_1": {models.StudyPromptLabelsV1}, "judge_screenshots_1": {"1"},
			"judge_name_2": {"plain"}, "judge_prompt_2": {models.StudyPromptTrajectoryV1}, "judge_accessibility_2": {"1"},
		}
		res := c.postForm("/studies", form)
		require.Equal(t, http.StatusSeeOther, res.StatusCode, readBody(t, res))
		loc := res.Header.Get("Location")
		require.Regexp(t, `^/studies/\d+\?notice=created$`, loc)
		page := readBody(t, c.get(loc))
		require.Contains(t, page, `data-testid="flash">Study created and its sample drawn.`)
		require.Contains(t, page, `<h1 data-testid="study-name">Cable judges <span class="badge study-status study-status-draft" data-testid="study-status">draft</span></h1>`)
		require.Contains(t, page, `data-testid="study-sample">5 items (5 asked), stratified by outcome, seed 42</dd>`)
		require.Contains(t, page, `data-testid="study-labels">Success, Score (1–5)</dd>`)
		require.Contains(t, page, "yes: annotators see no verdicts")
		require.Equal(t, 2, strings.Count(page, `data-testid="annotator-row"`))
		require.Equal(t, 2, strings.Count(page, `data-testid="judge-run-row"`))
		require.Contains(t, page, `<td>gpt-4o</td><td>labels-v1</td><td>yes</td><td>no</td>`)
		require.Contains(t, page, `<td>server default</td><td>trajectory-v1</td><td>no</td><td>yes</td>`)

		// The same sources and seed draw the same sample.
		res = c.postForm("/studies", form)
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
		first, err := strconv.ParseInt(regexp.MustCompile(`\d+`).FindString(loc), 10, 64)
		require.NoError(t, err)
		second, err := strconv.ParseInt(regexp.MustCompile(`\d+`).FindString(res.Header.Get("Location")), 10, 64)
		require.NoError(t, err)
		attempts := func(id int64) []int64 {
			var out []int64
			for _, it := range f.itemsOf(t, id) {
				out = append(out, it.AttemptID)
			}
			return out
		}
		require.Equal(t, attempts(first), attempts(second))

		list := readBody(t, c.get("/studies"))
		require.Contains(t, list, fmt.Sprintf(`data-testid="study-%d"`, first))
		require.Contains(t, list, `<td data-testid="study-role">owner</td>`)
	})
}

// TestStudies_Overview checks what the overview shows each role, and the
// management forms' refusals in their sections.
func TestStudies_Overview(t *testing.T) {
	t.Parallel()
	f := newStudyPagesFixture(t)
	st := f.study(t, studyOptions{judges: []models.StudyJudge{{Name: "gpt", Model: "gpt-4o", Prompt: models.StudyPromptLabelsV1}}})
	path := "/studies/" + strconv.FormatInt(st.ID, 10)

	t.Run("Owner", func(t *testing.T) {
		f.owner.t = t
		body := readBody(t, f.owner.get(path))
		for _, id := range []string{"annotators-table", "invite-form", "judges-table", "judges-form", "judging-admin-only", "open-form",
			"import-labels-form", "import-verdicts-form", "study-exports", "report-link", "disagreements-link"} {
			require.Contains(t, body, `data-testid="`+id+`"`, id)
		}
		require.Contains(t, body, "second@annotators.test")
		require.Contains(t, body, `<caption class="visually-hidden">Annotators and their progress</caption>`)
		require.Contains(t, body, `<th scope="col" class="num">Assigned</th>`)
		for _, file := range []string{"labels.csv", "labels.jsonl", "verdicts.csv", "verdicts.jsonl", "report.json", "report.csv"} {
			require.Contains(t, body, fmt.Sprintf(`href="%s/export/%s" download`, path, file))
		}
		require.Contains(t, body, `data-testid="no-assignments">`)
	})

	t.Run("Annotator", func(t *testing.T) {
		f.annotator.t = t
		body := readBody(t, f.annotator.get(path))
		require.Contains(t, body, `data-testid="study-settings"`)
		require.Contains(t, body, "You are this study's annotator.")
		for _, id := range []string{"annotators-table", "invite-form", "judges-table", "open-form", "import-labels-form", "study-exports", "report-link"} {
			require.NotContains(t, body, `data-testid="`+id+`"`, id)
		}
		require.NotContains(t, body, "second@annotators.test", "an annotator does not see the others")
	})

	t.Run("InviteErrors", func(t *testing.T) {
		f.owner.t = t
		res := f.owner.postForm(path+"/annotators", url.Values{"email": {"ghost@example.org"}})
		require.Equal(t, http.StatusBadRequest, res.StatusCode)
		body := readBody(t, res)
		require.Contains(t, body, `data-testid="error-email">No member of your teams has the email ghost@example.org; an administrator can invite anyone.</small>`)
		require.Contains(t, body, `value="ghost@example.org"`)
		require.Contains(t, body, `href="#annotators"`)
		res = f.owner.postForm(path+"/annotators", url.Values{"email": {f.annotator.user.Email}})
		require.Equal(t, http.StatusConflict, res.StatusCode)
		require.Contains(t, readBody(t, res), "is already an annotator of this study.")
	})

	t.Run("InviteAndRemove", func(t *testing.T) {
		f.owner.t = t
		res := f.owner.postForm(path+"/annotators", url.Values{"email": {f.invitee.user.Email}})
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
		require.Equal(t, path+"?notice=invited#annotators", res.Header.Get("Location"))
		body := readBody(t, f.owner.get(path+"?notice=invited"))
		require.Contains(t, body, "Annotator invited.")
		require.Contains(t, body, f.invitee.user.Email)
		res = f.owner.postForm(fmt.Sprintf("%s/annotators/%d/remove", path, f.invitee.user.ID), nil)
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
		require.NotContains(t, readBody(t, f.owner.get(path)), f.invitee.user.Email)
		res = f.owner.postForm(fmt.Sprintf("%s/annotators/%d/remove", path, f.invitee.user.ID), nil)
		require.Equal(t, http.StatusNotFound, res.StatusCode, "not invited any more")
	})

	t.Run("Judges", func(t *testing.T) {
		f.owner.t = t
		res := f.owner.postForm(path+"/judges", url.Values{"judge_name_1": {"a"}, "judge_name_2": {"a"}})
		require.Equal(t, http.StatusBadRequest, res.StatusCode)
		body := readBody(t, res)
		require.Contains(t, body, `data-testid="judges-error">Two judge configurations are named &#34;a&#34;; names must differ.</p>`)
		require.Contains(t, body, `name="judge_name_2" type="text" value="a"`, "the rows as typed")
		res = f.owner.postForm(path+"/judges", url.Values{"judge_name_1": {"claude"}, "judge_model_1": {"claude-3.7"},
			"judge_prompt_1": {models.StudyPromptTrajectoryV2}, "judge_screenshots_1": {"1"}})
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
		body = readBody(t, f.owner.get(path))
		require.Contains(t, body, `<th scope="row">claude</th><td>claude-3.7</td><td>trajectory-v2</td><td>yes</td><td>no</td>`)
		require.NotContains(t, body, `<th scope="row">gpt</th>`, "the configurations are replaced")
	})

	t.Run("RunJudges", func(t *testing.T) {
		f.owner.t, f.b.admin.t = t, t
		res := f.owner.postForm(path+"/judges/run", url.Values{"judge": {"claude"}})
		require.Equal(t, http.StatusForbidden, res.StatusCode, "judging spends the operator's money")
		require.Contains(t, readBody(t, res), "only an administrator may start it")
		require.NotContains(t, readBody(t, f.owner.get(path)), `data-testid="run-judges-form"`)
		require.Contains(t, readBody(t, f.b.admin.get(path)), `data-testid="run-judges-form"`)
		res = f.b.admin.postForm(path+"/judges/run", url.Values{"judge": {"claude"}})
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
		require.Contains(t, f.judging.calls(), fmt.Sprintf("%d: claude", st.ID))
		plain := f.noJudgingClient(f.b.admin)
		res = plain.postForm(path+"/judges/run", nil)
		require.Equal(t, http.StatusServiceUnavailable, res.StatusCode)
		body := readBody(t, res)
		require.Contains(t, body, "Judges cannot run on this server right now: it has no job queue.")
		require.Contains(t, body, `data-testid="judging-unavailable"`)

		// With no LLM judge configured the page says so before any click:
		// the button is disabled, with the reason and where to read how to
		// configure one.
		f.judging.unavailable = &models.Error{Code: models.EUNAVAILABLE, Message: runner.NoJudgeConfigured}
		t.Cleanup(func() { f.judging.unavailable = nil })
		body = readBody(t, f.b.admin.get(path))
		require.Contains(t, body, `<button type="submit" data-testid="run-judges" disabled aria-describedby="judging-unavailable">Run the judges</button>`)
		require.Contains(t, body, `data-testid="judging-unavailable">No LLM judge is configured on this server: an administrator sets PROCTOR_JUDGE_BASE_URL`)
		require.Contains(t, body, `(<a href="/docs/judge.md">/docs/judge.md</a>)`)
		// A refused submission (an older page's button) re-renders the study
		// at the study's own address, so a reload shows it again.
		res = f.b.admin.postBoosted(path+"?notice=judges", path+"/judges/run", nil)
		require.Equal(t, http.StatusServiceUnavailable, res.StatusCode)
		require.Equal(t, path+"?notice=judges", res.Header.Get("HX-Replace-Url"))
		require.Contains(t, readBody(t, res), `data-testid="judges-error">No LLM judge is configured`)
		res = f.b.admin.get(path + "/judges/run")
		require.NotEqual(t, http.StatusOK, res.StatusCode, "the action's address is no page")
		readBody(t, res)
	})

	t.Run("Lifecycle", func(t *testing.T) {
		f.owner.t = t
		lonely, err := servicetest.Studies(f.b.db, nil).CreateStudy(actorCtx(f.owner), models.StudyRequest{Name: "Alone", RunIDs: []int64{f.walker.ID},
			SampleSize: 2, Labels: []string{"success"}, OverlapFraction: 0.5, Annotators: []string{f.annotator.user.Email}})
		require.NoError(t, err)
		lonelyPath := "/studies/" + strconv.FormatInt(lonely.ID, 10)
		res := f.owner.postForm(lonelyPath+"/open", nil)
		require.Equal(t, http.StatusBadRequest, res.StatusCode)
		require.Contains(t, readBody(t, res), `data-testid="lifecycle-error">Overlapping items go to 2 annotators each, but the study has 1`)

		res = f.owner.postForm(path+"/open", nil)
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
		body := readBody(t, f.owner.get(path+"?notice=opened"))
		require.Contains(t, body, "Study opened")
		require.Contains(t, body, `data-testid="close-form"`)
		require.NotContains(t, body, `data-testid="invite-form"`, "invitations are fixed once open")
		require.Contains(t, body, "0 of 16 finished (0%)")
		require.NotContains(t, body, `data-testid="queue-link"`, "the owner annotates nothing")
		require.Contains(t, body, "every item to 2 annotators")

		f.annotator.t = t
		mine := readBody(t, f.annotator.get(path))
		require.Contains(t, mine, "0 of 8 finished (0%)")
		require.Contains(t, mine, `data-testid="queue-link"`)

		res = f.owner.postForm(path+"/open", nil)
		require.Equal(t, http.StatusConflict, res.StatusCode)
		res = f.owner.postForm(path+"/close", nil)
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
		require.Contains(t, readBody(t, f.owner.get(path)), `data-testid="study-status">closed</span>`)
	})

	t.Run("List", func(t *testing.T) {
		f.annotator.t = t
		body := readBody(t, f.annotator.get("/studies"))
		require.Contains(t, body, fmt.Sprintf(`data-testid="study-%d"`, st.ID))
		require.Contains(t, body, `<td data-testid="study-role">annotator</td>`)
		f.stranger.t = t
		body = readBody(t, f.stranger.get("/studies"))
		require.Contains(t, body, `data-testid="no-studies"`)
		f.b.admin.t = t
		require.Contains(t, readBody(t, f.b.admin.get("/studies")), "As an administrator you see every study.")
		require.Contains(t, readBody(t, f.stranger.get("/")), `<a href="/studies" data-testid="nav-studies">Studies</a>`, "signed-in users have the nav link")
		require.NotContains(t, readBody(t, f.b.anonymous(t).get("/")), `data-testid="nav-studies"`)
	})
}
