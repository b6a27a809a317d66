package runner_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/runner"
	"proctor/runner/agent"
	"proctor/storage/storagetest"
)

// TestFaulty_AgentEchoesItsToken runs http agents that echo their bearer
// token through every way an answer can fail (a body that is not JSON, 4xx
// and 5xx pages, an oversize answer, a bad action, a redirect, a thought
// before a timeout, the final answer) and finds the token nowhere Proctor
// records text: the attempt's error (and its administrators' detail), the
// final answer, any step column, the worker's log. The one redaction the
// runner applies where an episode's text is recorded removes it.
func TestFaulty_AgentEchoesItsToken(t *testing.T) {
	t.Parallel()
	f := setupFaulty(t, storagetest.OpenSQLite(t), runner.Options{Episodes: 3})
	const token = "tok-Zq81xLmP" // fits in the 20 characters a non-JSON answer is quoted by
	secrets := map[string]string{agent.SecretAgentToken: token}
	sent := func(r *http.Request) string { return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ") }

	cases := map[string]struct {
		reply func(w http.ResponseWriter, r *http.Request, req *models.StepRequest)
		class string // of the attempt's error, "" for none
		parts []string
	}{
		"not-json": {func(w http.ResponseWriter, r *http.Request, _ *models.StepRequest) {
			_, _ = io.WriteString(w, sent(r)+" is what you sent me")
		}, models.ErrorClassAgent, []string{"not a JSON object", "[redacted]"}},
		"http-401": {func(w http.ResponseWriter, r *http.Request, _ *models.StepRequest) {
			http.Error(w, "bad token "+sent(r), http.StatusUnauthorized)
		}, models.ErrorClassAgent, []string{"401 Unauthorized: bad token [redacted]"}},
		"http-502": {func(w http.ResponseWriter, r *http.Request, _ *models.StepRequest) {
			http.Error(w, "upstream refused key="+sent(r), http.StatusBadGateway)
		}, models.ErrorClassAgent, []string{"502 Bad Gateway", "key=[redacted]"}},
		"oversize": {func(w http.ResponseWriter, r *http.Request, _ *models.StepRequest) {
			_, _ = io.WriteString(w, `{"thought": "`+sent(r)+strings.Repeat("x", 2<<20)+`"}`)
		}, models.ErrorClassAgent, []string{"larger than"}},
		"bad-action": {func(w http.ResponseWriter, r *http.Request, _ *models.StepRequest) {
			answerJSON(w, `{"type": "`+sent(r)+`"}`)
		}, models.ErrorClassAgent, []string{"[redacted]"}},
		"redirect": {func(w http.ResponseWriter, r *http.Request, _ *models.StepRequest) {
			if r.URL.Path == "/step" {
				http.Redirect(w, r, "/elsewhere?t="+sent(r), http.StatusTemporaryRedirect) // keeps the POST and its body
				return
			}
			http.Error(w, "nothing at "+r.URL.String(), http.StatusNotFound)
		}, models.ErrorClassAgent, []string{"404 Not Found", "t=[redacted]"}},
		"thought-then-timeout": {func(w http.ResponseWriter, r *http.Request, req *models.StepRequest) {
			if req.Step == 0 {
				w.Header().Set("Content-Type", "application/json")
				_, _ = fmt.Fprintf(w, `{"thought": "my token is %s", "action": {"type": "scroll", "delta_y": 200}}`, sent(r))
				return
			}
			sleepFor(r, 10*time.Second)
		}, models.ErrorClassAgent, []string{"within 1s"}},
		"answer": {func(w http.ResponseWriter, r *http.Request, _ *models.StepRequest) {
			answerJSON(w, `{"type": "answer", "text": "the key is `+sent(r)+`"}`)
		}, "", nil},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a := f.addAgentWithSecrets(t, "echo-"+name, secrets, func(w http.ResponseWriter, r *http.Request, req *models.StepRequest) {
				require.Equal(t, token, sent(r), "the agent is sent its token")
				c.reply(w, r, req)
			})
			out := f.finish(t, f.queue(t, a, subsetOne, 5, 1), 2*time.Minute)
			tl := out.only(t)
			if c.class != "" {
				requireError(t, tl, c.class, c.parts...)
			} else {
				require.Empty(t, tl.Attempt.ErrorClass, tl.Attempt.ErrorMessage)
				require.Contains(t, tl.Attempt.FinalAnswer, "the key is [redacted]")
			}

			var texts []string
			require.NoError(t, f.db.Gorm().Raw("SELECT error_message || ' ' || error_detail || ' ' || final_answer FROM attempts WHERE id = ?",
				tl.Attempt.ID).Scan(&texts).Error)
			var steps []string
			require.NoError(t, f.db.Gorm().Raw("SELECT action || ' ' || thought || ' ' || url || ' ' || title || ' ' || tabs || ' ' || error || ' ' || blocked_requests "+
				"FROM steps WHERE attempt_id = ?", tl.Attempt.ID).Scan(&steps).Error)
			require.NotEmpty(t, steps)
			for _, text := range append(texts, steps...) {
				require.NotContains(t, text, token)
			}
		})
	}
	t.Cleanup(func() {
		require.NotContains(t, f.logs.String(), token, "the worker's log")
	})
}
