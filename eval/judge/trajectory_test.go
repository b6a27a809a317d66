package judge

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image/jpeg"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/eval"
	"proctor/models"
)

func TestTrajectory_Verdicts(t *testing.T) {
	t.Parallel()

	t.Run("SuccessScore5", func(t *testing.T) {
		t.Parallel()
		f := replyWith(t, `{"success": true, "score": 5, "rationale": "Step 3 shows the mug at $12.50 and the answer matches."}`)
		c, _ := newTestClient(t, f, nil)
		j := c.Trajectory()
		require.Equal(t, "llm-judge:judge-model:trajectory-v2", j.ID())

		res, err := j.Evaluate(context.Background(), shopInput())
		require.NoError(t, err)
		require.Equal(t, j.ID(), res.Evaluator)
		require.Equal(t, TrajectoryVersion, res.Version)
		require.Equal(t, models.OutcomeSuccess, res.Verdict)
		require.InDelta(t, 1.0, res.Score, 0)
		require.NotNil(t, res.JudgeScore)
		require.Equal(t, 5, *res.JudgeScore)
		require.Nil(t, res.Rubric)

		// Usage and cost come from the completion's usage at the configured prices.
		require.EqualValues(t, fakePromptTokens, res.Usage.InputTokens)
		require.EqualValues(t, fakeCompletionTokens, res.Usage.OutputTokens)
		require.InDelta(t, fakePromptTokens*2.5/1e6+fakeCompletionTokens*10.0/1e6, res.Usage.Cost, 1e-12)

		d := judgeDetails(t, res)
		require.Equal(t, j.ID(), d.Judge)
		require.Equal(t, testModel, d.Model)
		require.Equal(t, TrajectoryVersion, d.PromptVersion)
		require.Equal(t, c.prompts[PromptTrajectory].SHA256, d.PromptSHA256)
		require.Len(t, d.PromptSHA256, 64)
		require.Equal(t, true, *d.Success)
		require.Equal(t, 5, *d.Score)
		require.Contains(t, d.Rationale, "$12.50")
		require.Contains(t, d.RawReply, `"score": 5`)
		require.Equal(t, 1, d.Attempts)
		require.Equal(t, 3, d.StepsSent)
		require.Equal(t, 3, d.StepsTotal)
		require.Zero(t, d.ImagesSent)
		require.Empty(t, d.ErrorKind)
		require.Nil(t, d.ErrorMsg)
		require.Empty(t, d.RepairCause)
		var keys map[string]any
		require.NoError(t, json.Unmarshal(res.Details, &keys))
		for _, k := range []string{"judge", "model", "prompt_version", "prompt_sha256", "success", "score", "rationale", "raw_reply", "images_sent", "steps_sent", "attempts"} {
			require.Contains(t, keys, k)
		}

		// The request: model, JSON mode, temperature 0, bearer key, the prompt.
		reqs := f.seen()
		require.Len(t, reqs, 1)
		r := reqs[0]
		require.Equal(t, "/v1/chat/completions", r.path)
		require.Equal(t, "Bearer sk-test-key", r.auth)
		require.Equal(t, testModel, r.body.Model)
		require.NotNil(t, r.body.ResponseFormat)
		require.Equal(t, "json_object", r.body.ResponseFormat.Type)
		require.NotNil(t, r.body.Temperature)
		require.Zero(t, *r.body.Temperature)
		require.Equal(t, "system", r.body.Messages[0].Role)
		require.Equal(t, "user", r.body.Messages[1].Role)
		system, user := r.texts(t)[0], r.userText(t)
		for _, level := range []string{"5 = fully satisfies", "4 = ", "3 = ", "2 = ", "1 = major errors and no progress"} {
			require.Contains(t, system, level)
		}
		require.Contains(t, user, "Task: What is the price of the blue mug?")
		require.Contains(t, user, "Step 1\n  observation: http://shop.test/page/0?category=kitchen-and-dining&color=blue&sort=price_asc&mode=list&p=0 — \"Page 0\"")
		require.Contains(t, user, `action: {"type":"click","target":{"element_id":"e0"}}`)
		require.Contains(t, user, "thought: thought 0: ")
		require.Contains(t, user, "next observation: http://shop.test/page/1?category=kitchen-and-dining&color=blue&sort=price_asc&mode=list&p=1 — \"Page 1\"")
		require.Contains(t, user, "Step 3\n")
		require.Contains(t, user, "next observation: none (the episode ended after this step)")
		require.Contains(t, user, `the agent gave its final answer: "$12.50"`)
		require.NotContains(t, user, "shortened")
		require.NotContains(t, string(r.raw), "sk-test-key")
	})

	t.Run("FailureScore2", func(t *testing.T) {
		t.Parallel()
		f := replyWith(t, "```json\n{\"success\": false, \"score\": 2, \"rationale\": \"The agent answered with the red mug's price.\"}\n```")
		c, _ := newTestClient(t, f, func(cfg *Config) { cfg.APIKey = "" })
		in := shopInput()
		in.Final = nil
		in.ErrorClass, in.ErrorMessage = "budget", "the step budget of 3 steps ran out"
		in.Trajectory[1].Error = "element e1 is not visible"
		res, err := c.Trajectory().Evaluate(context.Background(), in)
		require.NoError(t, err)
		require.Equal(t, models.OutcomeFailure, res.Verdict)
		require.Zero(t, res.Score)
		require.Equal(t, 2, *res.JudgeScore)
		d := judgeDetails(t, res)
		require.Equal(t, false, *d.Success)
		require.Equal(t, 2, *d.Score)

		r := f.seen()[0]
		require.Empty(t, r.auth, "no key configured: no Authorization header")
		user := r.userText(t)
		require.Contains(t, user, "error: element e1 is not visible")
		require.Contains(t, user, "the episode ended without an answer (budget): the step budget of 3 steps ran out")
	})

	t.Run("OmitTemperature", func(t *testing.T) {
		t.Parallel()
		f := replyWith(t, `{"success": true, "score": 4, "rationale": "ok"}`)
		c, _ := newTestClient(t, f, func(cfg *Config) { cfg.OmitTemperature = true })
		res, err := c.Trajectory().Evaluate(context.Background(), shopInput())
		require.NoError(t, err)
		require.Equal(t, models.OutcomeSuccess, res.Verdict)
		require.NotContains(t, string(f.seen()[0].raw), "temperature")
	})
}

func TestTrajectory_OffFormat(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, reply, cause string
	}{
		{"prose", "The agent clearly succeeded in the task.", "not a JSON object"},
		{"not incorrect", "not incorrect", `it starts with "not incorrect"`},
		{"success as yes", `{"success": "yes", "score": 5, "rationale": "x"}`, `"success" must be a JSON boolean`},
		{"score out of range", `{"success": true, "score": 7, "rationale": "x"}`, `"score" must be an integer from 1 to 5, got 7`},
		{"two objects", `{"success": true, "score": 5, "rationale": "x"} {"success": false, "score": 1, "rationale": "y"}`, "more than one JSON object"},
		{"extra prose", `{"success": true, "score": 5, "rationale": "x"} I hope this helps.`, "text after its JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := replyWith(t, tc.reply)
			c, _ := newTestClient(t, f, nil)
			res, err := c.Trajectory().Evaluate(context.Background(), shopInput())
			require.NoError(t, err)
			require.Equal(t, models.OutcomeError, res.Verdict)
			require.Zero(t, res.Score)
			require.Nil(t, res.JudgeScore)
			d := judgeDetails(t, res)
			require.Equal(t, KindOffFormat, d.ErrorKind)
			require.Contains(t, errorMsg(d), "the judge's reply is off-format: ")
			require.Contains(t, errorMsg(d), tc.cause)
			require.Nil(t, d.Success)
			require.Nil(t, d.Score)
			require.Equal(t, truncate(tc.reply, maxRawReply), d.RawReply)

			// One repair request, carrying the reply and the cause, then the error.
			require.Equal(t, 2, d.Attempts)
			require.Contains(t, d.RepairCause, tc.cause)
			reqs := f.seen()
			require.Len(t, reqs, 2)
			repair := reqs[1].body.Messages
			require.Len(t, repair, 4)
			require.Equal(t, "assistant", repair[2].Role)
			require.Equal(t, "user", repair[3].Role)
			require.Contains(t, string(repair[3].Content), "could not be read")
			// Both requests were paid for.
			require.EqualValues(t, 2*fakePromptTokens, res.Usage.InputTokens)
		})
	}

	t.Run("Repaired", func(t *testing.T) {
		t.Parallel()
		f := newEndpoint(t, func(w http.ResponseWriter, _ *http.Request, n int) {
			if n == 1 {
				writeCompletion(w, "not incorrect")
				return
			}
			writeCompletion(w, `{"success": false, "score": 1, "rationale": "No progress."}`)
		})
		c, _ := newTestClient(t, f, nil)
		res, err := c.Trajectory().Evaluate(context.Background(), shopInput())
		require.NoError(t, err)
		require.Equal(t, models.OutcomeFailure, res.Verdict, "the prose never counts as a verdict")
		require.Equal(t, 1, *res.JudgeScore)
		d := judgeDetails(t, res)
		require.Equal(t, 2, d.Attempts)
		require.Contains(t, d.RepairCause, "not a JSON object")
		require.EqualValues(t, 2*fakeCompletionTokens, res.Usage.OutputTokens)
	})
}

func TestTrajectory_Refusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		message map[string]any
		finish  string
		want    string
	}{
		{"refusal field", map[string]any{"role": "assistant", "content": nil, "refusal": "I can't help with grading this."}, "stop", "the judge refused: I can't help with grading this."},
		{"content filter", map[string]any{"role": "assistant", "content": ""}, "content_filter", "the judge refused: its reply was stopped by the content filter"},
		{"content filter with text", map[string]any{"role": "assistant", "content": `{"success": true, "score": 5, "rationale": "x"}`}, "content_filter", "content filter"},
		{"empty content", map[string]any{"role": "assistant", "content": "  "}, "stop", "the judge refused: its reply is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newEndpoint(t, func(w http.ResponseWriter, _ *http.Request, _ int) { writeChoice(w, tc.message, tc.finish) })
			c, _ := newTestClient(t, f, nil)
			res, err := c.Trajectory().Evaluate(context.Background(), shopInput())
			require.NoError(t, err)
			require.Equal(t, models.OutcomeError, res.Verdict)
			d := judgeDetails(t, res)
			require.Equal(t, KindRefused, d.ErrorKind)
			require.Contains(t, errorMsg(d), tc.want)
			require.Equal(t, 1, d.Attempts, "a refusal is neither retried nor repaired")
			require.Len(t, f.seen(), 1)
			require.EqualValues(t, fakePromptTokens, res.Usage.InputTokens, "a refusal still costs")
		})
	}
}

func TestTrajectory_Retries(t *testing.T) {
	t.Parallel()
	good := `{"success": true, "score": 5, "rationale": "done"}`

	t.Run("SlowServerTimesOut", func(t *testing.T) {
		t.Parallel()
		f := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, _ int) {
			select { // longer than the client's timeout; ends when the client gives up
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		})
		c, sleeps := newTestClient(t, f, func(cfg *Config) {
			// Long enough that each request reaches the server even on a
			// loaded machine; the backoffs are recorded, not slept.
			cfg.Timeout = 300 * time.Millisecond
			cfg.MaxRetries = 2
			cfg.BaseBackoff = 100 * time.Millisecond
		})
		start := time.Now()
		res, err := c.Trajectory().Evaluate(context.Background(), shopInput())
		require.NoError(t, err)
		require.Less(t, time.Since(start), 4*time.Second)
		require.Equal(t, models.OutcomeError, res.Verdict)
		d := judgeDetails(t, res)
		require.Equal(t, KindTimeout, d.ErrorKind)
		require.Contains(t, errorMsg(d), "the judge timed out: no reply within 300ms (3 attempts)")
		require.Equal(t, 3, d.Attempts)
		// The server records a request once it has read its body, which for
		// the last attempt may happen after the client has given up.
		require.Eventually(t, func() bool { return len(f.seen()) == 3 }, 2*time.Second, 10*time.Millisecond)
		// Two backoffs, exponential with jitter: [50ms, 100ms] then [100ms, 200ms].
		waits := sleeps.all()
		require.Len(t, waits, 2)
		require.GreaterOrEqual(t, waits[0], 50*time.Millisecond)
		require.LessOrEqual(t, waits[0], 100*time.Millisecond)
		require.GreaterOrEqual(t, waits[1], 100*time.Millisecond)
		require.LessOrEqual(t, waits[1], 200*time.Millisecond)
	})

	t.Run("RetryAfter429", func(t *testing.T) {
		t.Parallel()
		f := newEndpoint(t, func(w http.ResponseWriter, _ *http.Request, n int) {
			if n == 1 {
				w.Header().Set("Retry-After", "3")
				http.Error(w, `{"error": {"message": "rate limited"}}`, http.StatusTooManyRequests)
				return
			}
			writeCompletion(w, good)
		})
		c, sleeps := newTestClient(t, f, nil)
		res, err := c.Trajectory().Evaluate(context.Background(), shopInput())
		require.NoError(t, err)
		require.Equal(t, models.OutcomeSuccess, res.Verdict)
		require.Equal(t, 2, judgeDetails(t, res).Attempts)
		require.Equal(t, []time.Duration{3 * time.Second}, sleeps.all(), "the wait Retry-After asked for")
	})

	t.Run("RetryAfterTooLong", func(t *testing.T) {
		t.Parallel()
		f := newEndpoint(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
			w.Header().Set("Retry-After", "3600")
			http.Error(w, "slow down", http.StatusTooManyRequests)
		})
		c, sleeps := newTestClient(t, f, nil)
		res, err := c.Trajectory().Evaluate(context.Background(), shopInput())
		require.NoError(t, err)
		require.Equal(t, models.OutcomeError, res.Verdict)
		d := judgeDetails(t, res)
		require.Equal(t, KindUnavailable, d.ErrorKind)
		require.Contains(t, errorMsg(d), "HTTP 429")
		require.Contains(t, errorMsg(d), "asked to retry after 1h0m0s")
		require.Empty(t, sleeps.all())
		require.Len(t, f.seen(), 1)
	})

	t.Run("ServerErrorThenSuccess", func(t *testing.T) {
		t.Parallel()
		f := newEndpoint(t, func(w http.ResponseWriter, _ *http.Request, n int) {
			if n <= 2 {
				http.Error(w, "upstream overloaded", http.StatusInternalServerError)
				return
			}
			writeCompletion(w, good)
		})
		c, _ := newTestClient(t, f, func(cfg *Config) { cfg.BaseBackoff = 40 * time.Millisecond })
		c.sleep = sleepContext // really wait, to see the backoff between requests
		res, err := c.Trajectory().Evaluate(context.Background(), shopInput())
		require.NoError(t, err)
		require.Equal(t, models.OutcomeSuccess, res.Verdict)
		require.Equal(t, 3, judgeDetails(t, res).Attempts)
		reqs := f.seen()
		require.Len(t, reqs, 3)
		require.GreaterOrEqual(t, reqs[1].at.Sub(reqs[0].at), 20*time.Millisecond, "first backoff: at least half of 40ms")
		require.GreaterOrEqual(t, reqs[2].at.Sub(reqs[1].at), 40*time.Millisecond, "second backoff: at least half of 80ms")
	})

	t.Run("ServerErrorsExhausted", func(t *testing.T) {
		t.Parallel()
		f := newEndpoint(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
			http.Error(w, "bad gateway", http.StatusBadGateway)
		})
		c, sleeps := newTestClient(t, f, func(cfg *Config) { cfg.MaxRetries = 1 })
		res, err := c.Trajectory().Evaluate(context.Background(), shopInput())
		require.NoError(t, err)
		d := judgeDetails(t, res)
		require.Equal(t, models.OutcomeError, res.Verdict)
		require.Equal(t, KindUnavailable, d.ErrorKind)
		require.Contains(t, errorMsg(d), "the judge endpoint answered HTTP 502: bad gateway (2 attempts)")
		require.Len(t, sleeps.all(), 1)
	})

	t.Run("RequestTimeout408Retried", func(t *testing.T) {
		t.Parallel()
		f := newEndpoint(t, func(w http.ResponseWriter, _ *http.Request, n int) {
			if n == 1 {
				w.WriteHeader(http.StatusRequestTimeout)
				return
			}
			writeCompletion(w, good)
		})
		c, _ := newTestClient(t, f, nil)
		res, err := c.Trajectory().Evaluate(context.Background(), shopInput())
		require.NoError(t, err)
		require.Equal(t, models.OutcomeSuccess, res.Verdict)
		require.Len(t, f.seen(), 2)
	})

	t.Run("ClientErrorsNotRetried", func(t *testing.T) {
		t.Parallel()
		for _, status := range []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound} {
			f := newEndpoint(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
				http.Error(w, `{"error": {"message": "invalid key sk-test-key"}}`, status)
			})
			c, sleeps := newTestClient(t, f, nil)
			res, err := c.Trajectory().Evaluate(context.Background(), shopInput())
			require.NoError(t, err)
			d := judgeDetails(t, res)
			require.Equal(t, models.OutcomeError, res.Verdict)
			require.Equal(t, KindRejected, d.ErrorKind)
			require.Contains(t, errorMsg(d), "the judge endpoint rejected the request: HTTP "+strconv.Itoa(status))
			require.NotContains(t, errorMsg(d), "sk-test-key", "the key is redacted from echoed bodies")
			require.Equal(t, 1, d.Attempts)
			require.Len(t, f.seen(), 1)
			require.Empty(t, sleeps.all())
		}
	})

	t.Run("NetworkErrorRetried", func(t *testing.T) {
		t.Parallel()
		f := newEndpoint(t, func(w http.ResponseWriter, _ *http.Request, n int) {
			if n == 1 { // drop the connection without an answer
				conn, _, err := w.(http.Hijacker).Hijack()
				if err == nil {
					_ = conn.Close()
				}
				return
			}
			writeCompletion(w, good)
		})
		c, sleeps := newTestClient(t, f, nil)
		res, err := c.Trajectory().Evaluate(context.Background(), shopInput())
		require.NoError(t, err)
		require.Equal(t, models.OutcomeSuccess, res.Verdict)
		require.Len(t, sleeps.all(), 1)
	})
}

func TestTrajectory_BadResponses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body, want string
	}{
		{"not a completion", `<html>gateway</html>`, "not a chat completion"},
		{"no choices", `{"choices": []}`, "has no choices"},
		{"too large", `{"choices": [{"message": {"content": "` + strings.Repeat("x", 5000) + `"}}]}`, "larger than 4096 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newEndpoint(t, func(w http.ResponseWriter, _ *http.Request, _ int) { _, _ = w.Write([]byte(tc.body)) })
			c, _ := newTestClient(t, f, func(cfg *Config) { cfg.MaxResponseBytes = 4096 })
			res, err := c.Trajectory().Evaluate(context.Background(), shopInput())
			require.NoError(t, err)
			d := judgeDetails(t, res)
			require.Equal(t, models.OutcomeError, res.Verdict)
			require.Equal(t, KindBadResponse, d.ErrorKind)
			require.Contains(t, errorMsg(d), tc.want)
			require.Len(t, f.seen(), 1)
		})
	}
}

func TestTrajectory_GoErrors(t *testing.T) {
	t.Parallel()
	f := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		<-r.Context().Done()
	})
	c, _ := newTestClient(t, f, nil)

	_, err := c.Trajectory().Evaluate(context.Background(), eval.Input{})
	require.ErrorIs(t, err, errNoTask)
	_, err = c.Rubric().Evaluate(context.Background(), eval.Input{})
	require.ErrorIs(t, err, errNoTask)

	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = c.Trajectory().Evaluate(canceled, shopInput())
	require.ErrorIs(t, err, context.Canceled)

	// Canceled while the request is in flight: a Go error, not an error verdict.
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for len(f.seen()) == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	res, err := c.Trajectory().Evaluate(ctx, shopInput())
	require.ErrorIs(t, err, context.Canceled)
	require.Nil(t, res)
}

func TestClient_ConcurrencyCap(t *testing.T) {
	t.Parallel()
	var inFlight, most atomic.Int32
	f := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		body, _ := io.ReadAll(r.Body)
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		// Hold the request until a second one is in flight (or briefly), so
		// that an uncapped client would pile up more.
		deadline := time.Now().Add(100 * time.Millisecond)
		for inFlight.Load() < 2 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond)
		if bytes.Contains(body, []byte("rubric")) {
			writeCompletion(w, `{"items": [{"key": "R1", "passed": true, "rationale": "done", "steps": [3]}]}`)
			return
		}
		writeCompletion(w, `{"success": true, "score": 5, "rationale": "done"}`)
	})
	c, _ := newTestClient(t, f, func(cfg *Config) { cfg.Concurrency = 2 })
	var wg sync.WaitGroup
	results := make([]*eval.Result, 8)
	for i := range results {
		wg.Go(func() {
			var j eval.Evaluator = c.Trajectory()
			if i%2 == 1 {
				j = c.Rubric() // one cap for every judge of the client
			}
			in := shopInput()
			in.Task.RubricItems = []models.RubricItem{{ID: 1, Key: "R1", Requirement: "answers"}}
			res, err := j.Evaluate(context.Background(), in)
			require.NoError(t, err)
			results[i] = res
		})
	}
	wg.Wait()
	require.Len(t, f.seen(), 8)
	require.EqualValues(t, 2, most.Load(), "at most two requests in flight, and both slots used")
	for _, res := range results {
		require.Equal(t, models.OutcomeSuccess, res.Verdict)
	}
}

func TestTrajectory_Screenshots(t *testing.T) {
	t.Parallel()
	f := replyWith(t, `{"success": true, "score": 5, "rationale": "done"}`)
	c, _ := newTestClient(t, f, nil)
	in := shopInput()
	in.Trajectory = trajectory(3, 20, testJPEG(t, 1024, 640))
	in.Trajectory[1].Screenshot = func(context.Context) ([]byte, error) { return []byte("not a jpeg"), nil }
	res, err := c.Trajectory().Evaluate(context.Background(), in)
	require.NoError(t, err)
	d := judgeDetails(t, res)
	require.Equal(t, 2, d.ImagesSent)
	require.Equal(t, 1, d.ImagesFailed, "an unreadable screenshot is left out, not fatal")

	r := f.seen()[0]
	images := r.images(t)
	require.Len(t, images, 2)
	for _, u := range images {
		data, ok := strings.CutPrefix(u, "data:image/jpeg;base64,")
		require.True(t, ok, "a JPEG data URL")
		raw, err := base64.StdEncoding.DecodeString(data)
		require.NoError(t, err)
		img, err := jpeg.Decode(bytes.NewReader(raw))
		require.NoError(t, err)
		require.Equal(t, ImageWidth, img.Bounds().Dx(), "downscaled")
		require.Equal(t, 320, img.Bounds().Dy())
	}
	texts := r.texts(t)
	require.Contains(t, texts, imageLabel(1))
	require.Contains(t, texts, imageLabel(3))
	require.NotContains(t, texts, imageLabel(2))
	require.Contains(t, r.userText(t), "2 screenshots follow")

	// MaxImages off: no screenshot is sent even when steps have them.
	f2 := replyWith(t, `{"success": true, "score": 5, "rationale": "done"}`)
	c2, _ := newTestClient(t, f2, func(cfg *Config) { cfg.MaxImages = -1 })
	res, err = c2.Trajectory().Evaluate(context.Background(), in)
	require.NoError(t, err)
	require.Zero(t, judgeDetails(t, res).ImagesSent)
	require.Empty(t, f2.seen()[0].images(t))
}

func TestPickImages(t *testing.T) {
	t.Parallel()
	views := viewsOf(trajectory(10, 0, []byte("x")))
	require.Equal(t, []int{2, 5, 8, 9}, pickImages(views, 4), "two evenly spaced, then the last two")
	require.Equal(t, []int{4, 8, 9}, pickImages(views, 3))
	require.Equal(t, []int{9}, pickImages(views, 1))
	require.Empty(t, pickImages(views, 0))
	require.Len(t, pickImages(views, 20), 10)
	views[9].screenshot = nil
	require.Equal(t, []int{8}, pickImages(views, 1), "the last step that has a screenshot")
}

func TestTrajectory_TokenBudget(t *testing.T) {
	t.Parallel()
	const budget = 5000
	f := replyWith(t, `{"success": false, "score": 2, "rationale": "lost"}`)
	c, _ := newTestClient(t, f, func(cfg *Config) { cfg.TokenBudget = budget })
	in := shopInput()
	in.Trajectory = trajectory(200, 400, testJPEG(t, 64, 40))
	in.Steps = 200
	res, err := c.Trajectory().Evaluate(context.Background(), in)
	require.NoError(t, err)
	require.Equal(t, models.OutcomeFailure, res.Verdict)
	d := judgeDetails(t, res)
	require.Equal(t, 200, d.StepsTotal)
	require.Less(t, d.StepsSent, 200)
	require.LessOrEqual(t, d.EstimatedInputTokens, budget)

	// Measure the request itself: its text at four characters a token, plus a
	// fixed cost per image.
	r := f.seen()[0]
	chars := 0
	for _, s := range r.texts(t) {
		chars += len(s)
	}
	estimate := chars/4 + len(r.images(t))*ImageTokens
	require.LessOrEqual(t, estimate, budget)
	require.Greater(t, estimate, budget/2, "the budget is used, not wasted")

	user := r.userText(t)
	require.Contains(t, user, "Step 1\n", "the first step is kept in full")
	require.Contains(t, user, "Step 200\n", "the last step is kept in full")
	require.Contains(t, user, "Step 2: click [e1] on http://shop.test/page/1", "steps near the ends shrink to one line")
	require.Contains(t, user, "omitted (")
	require.NotContains(t, user, "Step 100: ", "steps in the middle are omitted")
	require.Contains(t, user, "shortened to fit")
	require.Contains(t, user, "Trajectory: 200 steps")

	// A short trajectory is sent whole, with its screenshots.
	f2 := replyWith(t, `{"success": true, "score": 5, "rationale": "done"}`)
	c2, _ := newTestClient(t, f2, func(cfg *Config) { cfg.TokenBudget = budget })
	in.Trajectory = trajectory(4, 400, testJPEG(t, 64, 40))
	res, err = c2.Trajectory().Evaluate(context.Background(), in)
	require.NoError(t, err)
	d = judgeDetails(t, res)
	require.Equal(t, 4, d.StepsSent)
	require.Equal(t, 4, d.ImagesSent)
	require.NotContains(t, f2.seen()[0].userText(t), "shortened")
}

func TestSummarize_ShedsDetailInOrder(t *testing.T) {
	t.Parallel()
	views := viewsOf(trajectory(20, 1000, []byte("x")))
	full := summarize(views, 4, 1_000_000)
	require.Len(t, full.images, 4)
	require.False(t, full.shortened())

	// Just over the full text without images: screenshots go first (but the last).
	textOnly := 0
	for _, v := range views {
		textOnly += v.tokens[levelFull]
	}
	s := summarize(views, 4, textOnly+ImageTokens)
	require.Equal(t, []int{19}, s.images)
	require.False(t, s.shortened())

	// Tighter: middle steps are trimmed, first and last stay in full.
	s = summarize(views, 4, textOnly*3/4)
	require.Equal(t, levelFull, s.level[0])
	require.Equal(t, levelFull, s.level[19])
	require.Equal(t, levelTrim, s.level[10])
	require.LessOrEqual(t, s.tokens(), textOnly*3/4)

	// Tightest: middle steps are omitted from the centre outwards.
	s = summarize(views, 4, views[0].tokens[levelFull]+views[19].tokens[levelFull]+3*views[1].tokens[levelTerse]+omissionTokens)
	require.Empty(t, s.images)
	require.Equal(t, levelFull, s.level[0])
	require.Equal(t, levelFull, s.level[19])
	require.Equal(t, levelOmitted, s.level[10])
	require.Equal(t, levelTerse, s.level[1])
	require.Equal(t, levelTerse, s.level[18])
	require.Contains(t, s.text(), "omitted")
}
