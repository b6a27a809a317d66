package runner_test

import (
	"cmp"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/eval/judge"
	"proctor/internal/evaltest"
	"proctor/models"
	"proctor/runner"
	"proctor/sandbox"
	"proctor/service"
	"proctor/service/servicetest"
	"proctor/storage"
	"proctor/storage/storagetest"
)

// studyJudgeServer is an OpenAI-compatible chat-completions server for study
// judges: it answers the labels prompt, the trajectory prompt and the rubric
// prompt, and counts per model the requests, the screenshots and the
// requests that carried accessibility text. Requests for the models in held
// wait until release is called.
type studyJudgeServer struct {
	mu        sync.Mutex
	requests  map[string]int
	images    map[string]int
	axTexts   map[string]int
	held      map[string]bool
	gate      chan struct{}
	closeOnce sync.Once
}

func newStudyJudgeServer(held ...string) *studyJudgeServer {
	s := &studyJudgeServer{requests: map[string]int{}, images: map[string]int{}, axTexts: map[string]int{},
		held: map[string]bool{}, gate: make(chan struct{})}
	for _, m := range held {
		s.held[m] = true
	}
	return s
}

// release lets held requests through.
func (s *studyJudgeServer) release() { s.closeOnce.Do(func() { close(s.gate) }) }

// counts returns a model's requests, screenshots and accessibility requests.
func (s *studyJudgeServer) counts(model string) (requests, images, ax int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[model], s.images[model], s.axTexts[model]
}

// heldRequests counts the requests for held models.
func (s *studyJudgeServer) heldRequests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for m := range s.held {
		n += s.requests[m]
	}
	return n
}

func (s *studyJudgeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model    string `json:"model"`
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	var prompt strings.Builder
	images := 0
	for _, m := range req.Messages {
		var text string
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		switch {
		case json.Unmarshal(m.Content, &text) == nil:
			prompt.WriteString(text)
		case json.Unmarshal(m.Content, &parts) == nil:
			for _, p := range parts {
				prompt.WriteString(p.Text)
				if p.Type == "image_url" {
					images++
				}
			}
		}
	}
	text := prompt.String()
	s.mu.Lock()
	s.requests[req.Model]++
	s.images[req.Model] += images
	if strings.Contains(text, "  accessibility tree") {
		s.axTexts[req.Model]++
	}
	held := s.held[req.Model]
	s.mu.Unlock()
	if held {
		select {
		case <-s.gate:
		case <-r.Context().Done():
			return
		}
	}
	var reply string
	switch {
	case req.Model == brokenModel:
		reply = "I believe the agent succeeded."
	case strings.Contains(text, `{"items": [`):
		keys := rubricKey.FindAllString(text, -1)
		seen := map[string]bool{}
		var items []string
		for _, k := range keys {
			if !seen[k] {
				seen[k] = true
				items = append(items, `{"key":"`+k+`","passed":true,"rationale":"Shown on the final page.","steps":[1]}`)
			}
		}
		reply = `{"items":[` + strings.Join(items, ",") + `]}`
	case strings.Contains(text, `"side_effect"`):
		reply = `{"success": true, "side_effect": "no", "looping": false, "optimality": 3, "score": 5, "rationale": "The last page shows the answer."}`
	default:
		reply = `{"success": false, "score": 2, "rationale": "The answer is incomplete."}`
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "cmpl-1", "object": "chat.completion", "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": reply}}},
		"usage":   map[string]any{"prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050},
	})
}

// Models of the test's two study judge configurations; the run itself is
// evaluated by serverModel.
const (
	serverModel = "judge-model"
	largeModel  = "judge-large"
	miniModel   = "judge-mini"
	brokenModel = "judge-broken" // answers in prose
)

// studyJobsLeft counts study judge jobs not finished yet.
func studyJobsLeft(t *testing.T, db *storage.DB) int64 {
	t.Helper()
	var n int64
	require.NoError(t, db.Gorm().Table("river_job").Where("kind = ? AND state NOT IN ?", "study_judge",
		[]string{"completed", "cancelled", "discarded"}).Count(&n).Error)
	return n
}

// TestRunner_StudyJudges runs two judge configurations of a study over a
// sandbox run: the labels prompt with screenshots and accessibility text on
// one model, the trajectory prompt without screenshots on another. Every
// item gets one verdict per configuration with its labels, prompt and cost;
// a second click queues nothing twice; judging again judges only what is
// missing.
func TestRunner_StudyJudges(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		js := newStudyJudgeServer(largeModel, miniModel, brokenModel)
		srv := httptest.NewServer(js)
		t.Cleanup(srv.Close)
		t.Cleanup(js.release)
		factory := func(s models.JudgeSettings) (runner.Judges, error) {
			return judge.New(judge.Config{BaseURL: srv.URL + "/v1", Model: cmp.Or(s.Model, serverModel), Timeout: 30 * time.Second,
				PriceInputPerMTok: 2, PriceOutputPerMTok: 8})
		}
		b := setupRunWith(t, db, 3, factory)
		run, err := runService(b.db, b.runner).QueueRun(b.member, models.RunRequest{TeamSlug: "lab", AgentSlug: "replayer", BenchmarkSlug: sandbox.Slug, Subset: "hard", Parallelism: 3})
		require.NoError(t, err)
		got := b.waitRun(t, run.ID, 5*time.Minute)
		require.Equal(t, models.RunCompleted, got.Status)

		st, err := servicetest.Studies(db, nil).CreateStudy(b.member, models.StudyRequest{
			Name: "Judges compared", RunIDs: []int64{run.ID}, Sampling: models.SampleRandom, Seed: 7, SampleSize: 50,
			Labels: models.StudyLabelNames(),
			Judges: []models.StudyJudge{
				{Name: "labels with screenshots", Model: largeModel, Prompt: models.StudyPromptLabelsV1, Screenshots: true, Accessibility: true},
				{Name: "trajectory, text only", Model: miniModel, Prompt: models.StudyPromptTrajectoryV2},
				{Name: "broken", Model: brokenModel, Prompt: models.StudyPromptTrajectoryV1},
			},
		})
		require.NoError(t, err)
		items := st.ItemCount
		require.Equal(t, got.TasksTotal, items)

		// Only managers may judge; names must be the study's.
		outsider, err := db.CreateUser(context.Background(), "outsider@example.org", "Outsider", "correct horse battery", false)
		require.NoError(t, err)
		err = servicetest.Studies(db, b.runner).QueueStudyJudges(models.WithActor(context.Background(), models.Actor{UserID: outsider.ID, Email: outsider.Email}), st.ID, nil)
		require.Equal(t, models.ENOTFOUND, models.ErrorCode(err), "%v", err)
		// The owner configures; judging spends the operator's money, so an
		// administrator starts it.
		err = servicetest.Studies(db, b.runner).QueueStudyJudges(b.member, st.ID, nil)
		require.Equal(t, models.EFORBIDDEN, models.ErrorCode(err), "%v", err)
		require.Equal(t, service.StudyJudgesAdminOnly, models.ErrorMessage(err))
		require.Zero(t, studyJobsLeft(t, db))
		adminUser, err := db.CreateUser(context.Background(), "operator@example.org", "Operator", "correct horse battery", true)
		require.NoError(t, err)
		admin := models.WithActor(context.Background(), models.Actor{UserID: adminUser.ID, Email: adminUser.Email, IsAdmin: true})
		err = servicetest.Studies(db, b.runner).QueueStudyJudges(admin, st.ID, []string{"trajectory, text only", "gpt-7", "claude"})
		require.Equal(t, models.EINVALID, models.ErrorCode(err))
		require.Contains(t, models.ErrorMessage(err), `no judge configuration named "gpt-7", "claude"`)
		require.Zero(t, studyJobsLeft(t, db))

		// A server without a judge refuses before queueing anything.
		bare, err := runner.New(runner.Config{Evaluators: evaltest.Registry(), DB: db, Artifacts: b.artifacts, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			AgentClient: func(time.Duration) *http.Client { return http.DefaultClient }})
		require.NoError(t, err)
		err = servicetest.Studies(db, bare).QueueStudyJudges(admin, st.ID, nil)
		require.Equal(t, models.EUNAVAILABLE, models.ErrorCode(err))
		require.Equal(t, runner.NoJudgeConfigured, models.ErrorMessage(err))

		// Two clicks while the judges are busy queue one job per configuration.
		require.NoError(t, servicetest.Studies(db, b.runner).QueueStudyJudges(admin, st.ID, nil))
		require.Eventually(t, func() bool { return js.heldRequests() > 0 }, time.Minute, 50*time.Millisecond, "a judge job is running, waiting for its answer")
		require.NoError(t, servicetest.Studies(db, b.runner).QueueStudyJudges(admin, st.ID, []string{"labels with screenshots", "trajectory, text only"}))
		var jobs int64
		require.NoError(t, db.Gorm().Table("river_job").Where("kind = ?", "study_judge").Count(&jobs).Error)
		require.EqualValues(t, 3, jobs, "one job per configuration")
		js.release()
		require.Eventually(t, func() bool { return studyJobsLeft(t, db) == 0 }, 2*time.Minute, 100*time.Millisecond)

		// Read as an administrator: only administrators read why a judge
		// gave no verdict in the judge's own words.
		verdicts, err := servicetest.Studies(db, nil).StudyVerdicts(admin, st.ID)
		require.NoError(t, err)
		require.Len(t, verdicts, 3*items, "one verdict per item and configuration")
		prompts := map[string]string{}
		for _, p := range judge.Prompts() {
			prompts[p.Version] = p.SHA256
		}
		rubricItems := 0
		for _, v := range verdicts {
			if v.Judge == "broken" {
				// A judge that gives no verdict is an error verdict, not a
				// failed job: its prompt and both requests are recorded.
				require.Contains(t, v.Error, "the judge's reply is off-format: the reply is not a JSON object")
				require.Empty(t, v.Labels)
				require.Equal(t, models.StudyPromptTrajectoryV1, v.PromptVersion)
				require.Equal(t, prompts[models.StudyPromptTrajectoryV1], v.PromptSHA256)
				require.EqualValues(t, 2000, v.TokensIn, "the reply and the request to correct it")
				continue
			}
			require.Empty(t, v.Error, "%s: %s", v.Judge, v.Error)
			require.False(t, v.Imported)
			rubric := 0
			for k, val := range v.Labels {
				if strings.HasPrefix(k, models.StudyLabelRubric+":") {
					require.Equal(t, models.RubricPass, val)
					rubric++
				}
			}
			require.Positive(t, rubric, "the sandbox's hard tasks have rubric items")
			rubricItems += rubric
			requests := int64(2) // the prompt and the rubric judge
			require.EqualValues(t, 1000*requests, v.TokensIn, v.Judge)
			require.EqualValues(t, 50*requests, v.TokensOut, v.Judge)
			require.InDelta(t, float64(requests)*(1000*2+50*8)/1e6, v.Cost, 1e-12, v.Judge)
			switch v.Judge {
			case "labels with screenshots":
				require.Equal(t, models.StudyPromptLabelsV1, v.PromptVersion)
				require.Equal(t, prompts[models.StudyPromptLabelsV1], v.PromptSHA256)
				require.Equal(t, "The last page shows the answer.", v.Rationale)
				require.Subset(t, map[string]string(v.Labels), map[string]string{"success": "successful", "side_effect": "no", "looping": "no", "optimality": "3", "score": "5"})
				require.Len(t, v.Labels, 5+rubric)
			case "trajectory, text only":
				require.Equal(t, models.StudyPromptTrajectoryV2, v.PromptVersion)
				require.Equal(t, prompts[models.StudyPromptTrajectoryV2], v.PromptSHA256)
				require.Subset(t, map[string]string(v.Labels), map[string]string{"success": "unsuccessful", "score": "2"})
				require.Len(t, v.Labels, 2+rubric)
			default:
				t.Fatalf("unexpected judge %q", v.Judge)
			}
		}

		largeRequests, largeImages, largeAX := js.counts(largeModel)
		miniRequests, miniImages, miniAX := js.counts(miniModel)
		require.Equal(t, 2*items, largeRequests)
		require.Equal(t, 2*items, miniRequests)
		require.Positive(t, largeImages, "the configuration with screenshots sent them")
		require.Zero(t, miniImages, "the configuration without screenshots sent none")
		require.Equal(t, 2*items, largeAX, "accessibility text in the labels and rubric requests")
		require.Zero(t, miniAX)
		brokenRequests, _, _ := js.counts(brokenModel)
		require.Equal(t, 2*items, brokenRequests)
		var failedJobs int64
		require.NoError(t, db.Gorm().Table("river_job").Where("kind = ? AND (state <> ? OR attempt > 1)", "study_judge", "completed").Count(&failedJobs).Error)
		require.Zero(t, failedJobs, "every job completed on its first try")

		// Judging again is idempotent: a verdict lost (a job that died before
		// saving it) is judged again, and nothing else is.
		require.NoError(t, db.Gorm().Where("study_id = ? AND judge = ? AND study_item_id = ?", st.ID, "trajectory, text only", verdicts[0].StudyItemID).
			Delete(&models.StudyVerdict{}).Error)
		require.NoError(t, servicetest.Studies(db, b.runner).QueueStudyJudges(admin, st.ID, nil))
		require.Eventually(t, func() bool { return studyJobsLeft(t, db) == 0 }, 2*time.Minute, 100*time.Millisecond)
		again, err := servicetest.Studies(db, nil).StudyVerdicts(b.member, st.ID)
		require.NoError(t, err)
		require.Len(t, again, 3*items)
		n, _, _ := js.counts(largeModel)
		require.Equal(t, largeRequests, n, "nothing left to judge for the labels configuration")
		n, _, _ = js.counts(miniModel)
		require.Equal(t, miniRequests+2, n, "one item judged again: its prompt and rubric requests")
		n, _, _ = js.counts(brokenModel)
		require.Equal(t, 2*brokenRequests, n, "error verdicts are judged again")

		// The study's page sums each configuration's cost.
		view, err := servicetest.Studies(db, nil).StudyOverview(b.member, st.ID)
		require.NoError(t, err)
		require.Len(t, view.Judges, 3)
		for _, jr := range view.Judges {
			if jr.Name == "broken" {
				require.Equal(t, items, jr.Errors)
				continue
			}
			require.Equal(t, items, jr.Judged, jr.Name)
			require.InDelta(t, float64(2*items)*(1000*2+50*8)/1e6, jr.Cost, 1e-9, jr.Name)
		}
		require.Positive(t, rubricItems)
	})
}
