package judge

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/eval"
)

func TestClient_FuzzyMatch(t *testing.T) {
	t.Parallel()
	var _ eval.FuzzyMatcher = (*Client)(nil)
	const intent = "How long does the drive from CMU to the airport take?"

	for _, tc := range []struct {
		name  string
		reply string
		want  bool
	}{
		{"equivalent", `{"equivalent": true, "rationale": "120 minutes is 2 hours."}`, true},
		{"not equivalent", `{"equivalent": false, "rationale": "3 hours is not 2 hours."}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := replyWith(t, tc.reply)
			c, _ := newTestClient(t, f, nil)
			ok, usage, err := c.FuzzyMatch(context.Background(), intent, "2 hours", "About 120 minutes")
			require.NoError(t, err)
			require.Equal(t, tc.want, ok)
			require.EqualValues(t, fakePromptTokens, usage.InputTokens)
			require.EqualValues(t, fakeCompletionTokens, usage.OutputTokens)
			require.Greater(t, usage.Cost, 0.0)

			r := f.seen()[0]
			require.Equal(t, testModel, r.body.Model)
			require.Equal(t, "json_object", r.body.ResponseFormat.Type)
			require.Contains(t, r.texts(t)[0], `{"equivalent": <true or false>`)
			user := r.userText(t)
			require.Contains(t, user, "Task: "+intent)
			require.Contains(t, user, `Reference answer: "2 hours"`)
			require.Contains(t, user, `Agent's answer: "About 120 minutes"`)
		})
	}

	t.Run("Verdict", func(t *testing.T) {
		t.Parallel()
		f := replyWith(t, `{"equivalent": true, "rationale": "same"}`)
		c, _ := newTestClient(t, f, nil)
		v, err := c.FuzzyJudge(context.Background(), intent, "2 hours", "two hours")
		require.NoError(t, err)
		require.True(t, v.Equivalent)
		require.Equal(t, "same", v.Rationale)
		require.Equal(t, FuzzyMatchVersion, v.PromptVersion)
		require.Equal(t, c.prompts[PromptFuzzyMatch].SHA256, v.PromptSHA256)
		require.Equal(t, 1, v.Attempts)
	})

	t.Run("EmptyAnswerCostsNothing", func(t *testing.T) {
		t.Parallel()
		f := replyWith(t, `{"equivalent": true, "rationale": "x"}`)
		c, _ := newTestClient(t, f, nil)
		ok, usage, err := c.FuzzyMatch(context.Background(), intent, "2 hours", "  ")
		require.NoError(t, err)
		require.False(t, ok)
		require.Zero(t, usage)
		require.Empty(t, f.seen())
	})

	t.Run("OffFormatIsAnError", func(t *testing.T) {
		t.Parallel()
		for _, reply := range []string{"not incorrect", "correct", `{"equivalent": "yes", "rationale": "x"}`, `{"equivalent": true}`} {
			f := replyWith(t, reply)
			c, _ := newTestClient(t, f, nil)
			ok, usage, err := c.FuzzyMatch(context.Background(), intent, "2 hours", "two hours")
			require.False(t, ok, reply)
			var jerr *Error
			require.True(t, errors.As(err, &jerr), reply)
			require.Equal(t, KindOffFormat, jerr.Kind, reply)
			require.Contains(t, jerr.Error(), "the judge's reply is off-format", reply)
			require.Equal(t, 2, jerr.Attempts, "one repair request")
			require.EqualValues(t, 2*fakePromptTokens, usage.InputTokens, "both requests cost")
		}
	})

	t.Run("RejectedIsAnError", func(t *testing.T) {
		t.Parallel()
		f := newEndpoint(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
			http.Error(w, "no such model", http.StatusNotFound)
		})
		c, _ := newTestClient(t, f, nil)
		_, _, err := c.FuzzyMatch(context.Background(), intent, "2 hours", "two hours")
		var jerr *Error
		require.True(t, errors.As(err, &jerr))
		require.Equal(t, KindRejected, jerr.Kind)
		require.Contains(t, err.Error(), "HTTP 404: no such model")
	})

	t.Run("Canceled", func(t *testing.T) {
		t.Parallel()
		f := replyWith(t, `{"equivalent": true, "rationale": "x"}`)
		c, _ := newTestClient(t, f, nil)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, _, err := c.FuzzyMatch(ctx, intent, "2 hours", "two hours")
		require.ErrorIs(t, err, context.Canceled)
	})
}
