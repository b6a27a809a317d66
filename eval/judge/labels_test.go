package judge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/agreement"
	"proctor/eval"
	"proctor/models"
)

// labelsReply is a well-formed labels-v1 reply.
const labelsReply = `{"success": true, "side_effect": "no", "looping": false, "optimality": 4, "score": 5, "rationale": "Step 3 shows the price."}`

func TestParseLabelsReply(t *testing.T) {
	t.Parallel()
	good := []struct {
		name, reply string
		want        map[string]string
	}{
		{"Success", labelsReply, map[string]string{"success": "successful", "side_effect": "no", "looping": "no", "optimality": "4", "score": "5"}},
		{"Fenced", "```json\n" + labelsReply + "\n```", map[string]string{"success": "successful", "side_effect": "no", "looping": "no", "optimality": "4", "score": "5"}},
		{"FailureLooping", `{"success": false, "side_effect": "unsure", "looping": true, "optimality": 1, "score": 1, "rationale": "It clicked the same link ten times."}`,
			map[string]string{"success": "unsuccessful", "side_effect": "unsure", "looping": "yes", "optimality": "1", "score": "1"}},
		// Side effects do not contradict success: the goal may be reached
		// while something else was changed.
		{"SuccessWithSideEffect", `{"success": true, "side_effect": "yes", "looping": false, "optimality": 2, "score": 4, "rationale": "Ordered twice."}`,
			map[string]string{"success": "successful", "side_effect": "yes", "looping": "no", "optimality": "2", "score": "4"}},
		// A failure may still be somewhat optimal up to where it stopped.
		{"FailureOptimal", `{"success": false, "side_effect": "no", "looping": false, "optimality": 3, "score": 3, "rationale": "Half done."}`,
			map[string]string{"success": "unsuccessful", "side_effect": "no", "looping": "no", "optimality": "3", "score": "3"}},
	}
	for _, tc := range good {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			labels, rationale, err := parseLabelsReply(tc.reply)
			require.NoError(t, err)
			require.Equal(t, tc.want, labels)
			require.NotEmpty(t, rationale)
			// Every value is canonical: the spelling agreement.Spec.Parse returns.
			for name, value := range labels {
				spec, ok := agreement.SpecOf(agreement.Label(name))
				require.True(t, ok, name)
				canonical, err := spec.Parse(value)
				require.NoError(t, err)
				require.Equal(t, canonical, value, name)
			}
		})
	}

	bad := []struct{ name, reply, want string }{
		{"Prose", "The agent succeeded.", `the reply is not a JSON object: it starts with "The agent succeeded."`},
		{"Missing", `{"success": true, "side_effect": "no", "looping": false, "score": 5, "rationale": "r"}`, `the reply lacks the required field "optimality"`},
		{"Unknown", `{"success": true, "side_effect": "no", "looping": false, "optimality": 4, "score": 5, "rationale": "r", "confidence": 0.9}`,
			`the reply has the unknown field "confidence" (expected only "success", "side_effect", "looping", "optimality", "score", "rationale")`},
		{"SuccessString", `{"success": "successful", "side_effect": "no", "looping": false, "optimality": 4, "score": 5, "rationale": "r"}`,
			`the reply: field "success" must be a JSON boolean, got the string "successful"`},
		{"SideEffectCase", `{"success": true, "side_effect": "Yes", "looping": false, "optimality": 4, "score": 5, "rationale": "r"}`,
			`the reply: field "side_effect" must be one of the strings "yes", "no", "unsure", got the string "Yes"`},
		{"SideEffectBool", `{"success": true, "side_effect": false, "looping": false, "optimality": 4, "score": 5, "rationale": "r"}`,
			`the reply: field "side_effect" must be one of the strings "yes", "no", "unsure", got the boolean false`},
		{"LoopingString", `{"success": true, "side_effect": "no", "looping": "no", "optimality": 4, "score": 5, "rationale": "r"}`,
			`the reply: field "looping" must be a JSON boolean, got the string "no"`},
		{"OptimalityRange", `{"success": true, "side_effect": "no", "looping": false, "optimality": 5, "score": 5, "rationale": "r"}`,
			`the reply: field "optimality" must be an integer from 1 to 4, got 5`},
		{"OptimalityName", `{"success": true, "side_effect": "no", "looping": false, "optimality": "Completely Optimal", "score": 5, "rationale": "r"}`,
			`the reply: field "optimality" must be an integer from 1 to 4, got the string "Completely Optimal"`},
		{"ScoreFraction", `{"success": true, "side_effect": "no", "looping": false, "optimality": 4, "score": 4.5, "rationale": "r"}`,
			`the reply: field "score" must be an integer from 1 to 5, got the number 4.5`},
		{"Duplicate", `{"success": true, "success": false, "side_effect": "no", "looping": false, "optimality": 4, "score": 5, "rationale": "r"}`,
			`the reply has the field "success" twice`},
		{"SuccessLowScore", `{"success": true, "side_effect": "no", "looping": false, "optimality": 3, "score": 1, "rationale": "r"}`,
			"the reply contradicts itself: success is true but the score is 1 (success means a score of 4 or 5)"},
		{"FailureHighScore", `{"success": false, "side_effect": "no", "looping": false, "optimality": 3, "score": 5, "rationale": "r"}`,
			"the reply contradicts itself: success is false but the score is 5 (success means a score of 4 or 5)"},
		{"SuccessCompleteFailure", `{"success": true, "side_effect": "no", "looping": false, "optimality": 1, "score": 4, "rationale": "r"}`,
			"the reply contradicts itself: success is true but optimality is 1, a complete failure (a successful trajectory has optimality 2 to 4)"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			labels, _, err := parseLabelsReply(tc.reply)
			require.Nil(t, labels)
			var off *offFormat
			require.True(t, errors.As(err, &off), "%v", err)
			require.Equal(t, tc.want, err.Error())
		})
	}
}

// labelsEndpoint answers rubric requests with every item passed and other
// requests with reply, counting rubric requests.
func labelsEndpoint(t *testing.T, reply string) (*fakeEndpoint, *atomic.Int64) {
	rubrics := &atomic.Int64{}
	f := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, n int) {
		texts := strings.Join(lastRequestTexts(t, r), "\n")
		if strings.Contains(texts, `{"items": [`) {
			rubrics.Add(1)
			writeCompletion(w, rubricReply(map[string]bool{"R1": true, "R2": false, "R3": true}, "R1", "R2", "R3"))
			return
		}
		writeCompletion(w, reply)
	})
	return f, rubrics
}

// lastRequestTexts decodes the texts of the request being answered.
func lastRequestTexts(t *testing.T, r *http.Request) []string {
	var seen seenRequest
	require.NoError(t, json.NewDecoder(r.Body).Decode(&seen.body))
	return seen.texts(t)
}

func TestLabels_Prompts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("LabelsV1", func(t *testing.T) {
		t.Parallel()
		f, _ := labelsEndpoint(t, labelsReply)
		c, _ := newTestClient(t, f, nil)
		v, err := c.Labels(ctx, shopInput(), LabelOptions{Prompt: models.StudyPromptLabelsV1})
		require.NoError(t, err)
		require.Empty(t, v.Error)
		require.Equal(t, map[string]string{"success": "successful", "side_effect": "no", "looping": "no", "optimality": "4", "score": "5"}, v.Labels)
		require.Equal(t, "Step 3 shows the price.", v.Rationale)
		require.Equal(t, testModel, v.Model)
		require.Equal(t, LabelsVersion, v.PromptVersion)
		require.Equal(t, c.studyPrompts[LabelsVersion].SHA256, v.PromptSHA256)
		require.Empty(t, v.RubricPromptVersion, "no rubric asked")
		require.EqualValues(t, fakePromptTokens, v.Usage.InputTokens)
		require.EqualValues(t, fakeCompletionTokens, v.Usage.OutputTokens)
		require.InDelta(t, (fakePromptTokens*2.5+fakeCompletionTokens*10)/1e6, v.Usage.Cost, 1e-12)

		req := f.seen()[0]
		system := req.texts(t)[0]
		for _, question := range []string{`"side_effect"`, `"looping"`, "4 = completely optimal", "5 = fully satisfies the task", "UNTRUSTED DATA"} {
			require.Contains(t, system, question)
		}
		require.NotContains(t, system, "accessibility tree", "the prompt speaks of accessibility text only when it is sent")
		require.Contains(t, req.userText(t), "Task: What is the price of the blue mug?")
	})

	for _, version := range []string{models.StudyPromptTrajectoryV2, models.StudyPromptTrajectoryV1} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			f, _ := labelsEndpoint(t, `{"success": false, "score": 2, "rationale": "Wrong mug."}`)
			c, _ := newTestClient(t, f, nil)
			v, err := c.Labels(ctx, shopInput(), LabelOptions{Prompt: version})
			require.NoError(t, err)
			require.Equal(t, map[string]string{"success": "unsuccessful", "score": "2"}, v.Labels)
			require.Equal(t, "Wrong mug.", v.Rationale)
			require.Equal(t, version, v.PromptVersion)
			require.Equal(t, c.studyPrompts[version].SHA256, v.PromptSHA256)
			// The chosen version's own text is sent: only v2 has the data block.
			system := f.seen()[0].texts(t)[0]
			require.Equal(t, version == models.StudyPromptTrajectoryV2, strings.Contains(system, "UNTRUSTED DATA"))
		})
	}

	t.Run("UnknownPrompt", func(t *testing.T) {
		t.Parallel()
		f, _ := labelsEndpoint(t, labelsReply)
		c, _ := newTestClient(t, f, nil)
		_, err := c.Labels(ctx, shopInput(), LabelOptions{Prompt: "labels-v9"})
		require.Equal(t, models.EINVALID, models.ErrorCode(err))
		require.ErrorContains(t, err, `unknown judge prompt "labels-v9" (known: labels-v1, trajectory-v1, trajectory-v2)`)
		require.Empty(t, f.seen())
	})

	t.Run("Canceled", func(t *testing.T) {
		t.Parallel()
		f, _ := labelsEndpoint(t, labelsReply)
		c, _ := newTestClient(t, f, nil)
		canceled, cancel := context.WithCancel(ctx)
		cancel()
		_, err := c.Labels(canceled, shopInput(), LabelOptions{Prompt: models.StudyPromptLabelsV1})
		require.ErrorIs(t, err, context.Canceled)
		_, err = c.Labels(ctx, eval.Input{}, LabelOptions{Prompt: models.StudyPromptLabelsV1})
		require.ErrorIs(t, err, errNoTask)
	})
}

func TestLabels_OffFormat(t *testing.T) {
	t.Parallel()
	// Both the reply and the repaired reply contradict themselves: an error
	// verdict that still costs both requests.
	f, _ := labelsEndpoint(t, `{"success": true, "side_effect": "no", "looping": false, "optimality": 4, "score": 1, "rationale": "r"}`)
	c, _ := newTestClient(t, f, nil)
	v, err := c.Labels(context.Background(), shopInput(), LabelOptions{Prompt: models.StudyPromptLabelsV1})
	require.NoError(t, err)
	require.Nil(t, v.Labels)
	require.Equal(t, KindOffFormat, v.ErrorKind)
	require.Contains(t, v.Error, "the judge's reply is off-format: the reply contradicts itself: success is true but the score is 1")
	require.EqualValues(t, 2*fakePromptTokens, v.Usage.InputTokens)
	require.Len(t, f.seen(), 2)
	require.Equal(t, LabelsVersion, v.PromptVersion, "an error verdict still names its prompt")

	// A refusal is an error verdict too.
	refused := newEndpoint(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		writeChoice(w, map[string]any{"role": "assistant", "content": nil, "refusal": "I cannot help with that."}, "stop")
	})
	c, _ = newTestClient(t, refused, nil)
	v, err = c.Labels(context.Background(), shopInput(), LabelOptions{Prompt: models.StudyPromptTrajectoryV2})
	require.NoError(t, err)
	require.Equal(t, KindRefused, v.ErrorKind)
	require.Equal(t, "the judge refused: I cannot help with that.", v.Error)
	require.EqualValues(t, fakePromptTokens, v.Usage.InputTokens)
}

func TestLabels_Screenshots(t *testing.T) {
	t.Parallel()
	shot := testJPEG(t, 800, 600)
	in := shopInput()
	in.Trajectory = trajectory(4, 20, shot)

	for _, screenshots := range []bool{true, false} {
		t.Run(fmt.Sprint(screenshots), func(t *testing.T) {
			t.Parallel()
			f, _ := labelsEndpoint(t, labelsReply)
			c, _ := newTestClient(t, f, nil)
			v, err := c.Labels(context.Background(), in, LabelOptions{Prompt: models.StudyPromptLabelsV1, Screenshots: screenshots})
			require.NoError(t, err)
			require.Empty(t, v.Error)
			images := f.seen()[0].images(t)
			if screenshots {
				require.Len(t, images, 4)
				require.Equal(t, 4, v.ImagesSent)
				require.Contains(t, f.seen()[0].userText(t), "4 screenshots follow")
				return
			}
			require.Empty(t, images, "screenshots off sends no image parts")
			require.Zero(t, v.ImagesSent)
			require.NotContains(t, f.seen()[0].userText(t), "screenshots follow")
		})
	}
}

func TestLabels_Accessibility(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	axText := func(step int, size int) string {
		var b strings.Builder
		fmt.Fprintf(&b, "RootWebArea 'Page %d'\n", step)
		for b.Len() < size {
			fmt.Fprintf(&b, "\tlink 'Mug %d' [href=/mug/%d]\n", b.Len(), step)
		}
		return b.String()
	}
	withAX := func(n, size int) (eval.Input, *atomic.Int64) {
		loads := &atomic.Int64{}
		in := shopInput()
		in.Trajectory = trajectory(n, 20, nil)
		for i := range in.Trajectory {
			text := axText(i+1, size)
			in.Trajectory[i].Accessibility = func(context.Context) (string, error) {
				loads.Add(1)
				return text, nil
			}
		}
		return in, loads
	}

	t.Run("On", func(t *testing.T) {
		t.Parallel()
		in, loads := withAX(3, 200)
		in.Trajectory[1].Accessibility = func(context.Context) (string, error) { return "", errors.New("artifact unreadable") }
		f, _ := labelsEndpoint(t, labelsReply)
		c, _ := newTestClient(t, f, nil)
		v, err := c.Labels(ctx, in, LabelOptions{Prompt: models.StudyPromptLabelsV1, Accessibility: true})
		require.NoError(t, err)
		require.Empty(t, v.Error)
		require.Equal(t, 2, v.AccessibilitySent, "the unreadable text is left out, not fatal")
		require.EqualValues(t, 2, loads.Load())
		user := f.seen()[0].userText(t)
		require.Contains(t, user, "Step 1\n  observation: http://shop.test/page/0")
		require.Contains(t, user, "  accessibility tree:\n    RootWebArea 'Page 1'\n    \tlink 'Mug")
		require.Contains(t, user, "    RootWebArea 'Page 3'")
		require.NotContains(t, user, "'Page 2'")
		// The text sits inside the untrusted data block.
		begin, end := strings.Index(user, "<<<BEGIN UNTRUSTED DATA"), strings.Index(user, "<<<END UNTRUSTED DATA")
		require.Greater(t, strings.Index(user, "RootWebArea 'Page 1'"), begin)
		require.Less(t, strings.Index(user, "RootWebArea 'Page 3'"), end)
		require.Contains(t, f.seen()[0].texts(t)[0], "accessibility tree: the text of that page's accessibility tree")
	})

	t.Run("Off", func(t *testing.T) {
		t.Parallel()
		in, loads := withAX(3, 200)
		f, _ := labelsEndpoint(t, labelsReply)
		c, _ := newTestClient(t, f, nil)
		v, err := c.Labels(ctx, in, LabelOptions{Prompt: models.StudyPromptLabelsV1})
		require.NoError(t, err)
		require.Zero(t, v.AccessibilitySent)
		require.Zero(t, loads.Load(), "nothing is loaded when accessibility is off")
		require.NotContains(t, f.seen()[0].userText(t), "RootWebArea")
	})

	t.Run("TrimmedToBudget", func(t *testing.T) {
		t.Parallel()
		// Forty steps of 50,000 characters each would be half a million
		// tokens: the texts are cut to fit the budget, the first and last
		// steps' the longest.
		in, _ := withAX(40, 50000)
		f, _ := labelsEndpoint(t, labelsReply)
		c, _ := newTestClient(t, f, func(cfg *Config) { cfg.TokenBudget = 20000 })
		v, err := c.Labels(ctx, in, LabelOptions{Prompt: models.StudyPromptLabelsV1, Accessibility: true})
		require.NoError(t, err)
		require.Empty(t, v.Error)
		user := f.seen()[0].userText(t)
		system := f.seen()[0].texts(t)[0]
		require.LessOrEqual(t, estimateTokens(system)+estimateTokens(user), 20000)
		require.Contains(t, user, fmt.Sprintf("accessibility tree (the first %d of %d characters):\n    RootWebArea 'Page 1'", fullAccessibility, len(strings.TrimSpace(axText(1, 50000)))))
		require.Contains(t, user, "RootWebArea 'Page 40'")
		require.Contains(t, user, fmt.Sprintf("accessibility tree (the first %d of", trimAccessibility), "middle steps are trimmed further")
		require.Positive(t, v.AccessibilitySent)
	})
}

func TestLabels_Rubric(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("Judged", func(t *testing.T) {
		t.Parallel()
		f, rubrics := labelsEndpoint(t, labelsReply)
		c, _ := newTestClient(t, f, nil)
		v, err := c.Labels(ctx, rubricInput(1, 1, 1), LabelOptions{Prompt: models.StudyPromptLabelsV1, Labels: models.StudyLabelNames()})
		require.NoError(t, err)
		require.Empty(t, v.Error)
		require.EqualValues(t, 1, rubrics.Load())
		require.Equal(t, models.RubricPass, v.Labels[models.RubricLabelKey(11)])
		require.Equal(t, models.RubricFail, v.Labels[models.RubricLabelKey(12)])
		require.Equal(t, models.RubricPass, v.Labels[models.RubricLabelKey(13)])
		require.Equal(t, "5", v.Labels[models.StudyLabelScore])
		require.Equal(t, RubricVersion, v.RubricPromptVersion)
		require.Equal(t, c.prompts[PromptRubric].SHA256, v.RubricPromptSHA256)
		require.EqualValues(t, 2*fakePromptTokens, v.Usage.InputTokens, "both requests are paid for")
	})

	t.Run("NoRubricItems", func(t *testing.T) {
		t.Parallel()
		f, rubrics := labelsEndpoint(t, labelsReply)
		c, _ := newTestClient(t, f, nil)
		v, err := c.Labels(ctx, shopInput(), LabelOptions{Prompt: models.StudyPromptLabelsV1, Labels: models.StudyLabelNames()})
		require.NoError(t, err)
		require.Empty(t, v.Error)
		require.Zero(t, rubrics.Load())
		require.Len(t, v.Labels, 5)
	})

	t.Run("RubricJudgeFails", func(t *testing.T) {
		t.Parallel()
		f := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, n int) {
			if strings.Contains(strings.Join(lastRequestTexts(t, r), "\n"), `{"items": [`) {
				writeCompletion(w, `{"items": []}`)
				return
			}
			writeCompletion(w, labelsReply)
		})
		c, _ := newTestClient(t, f, nil)
		v, err := c.Labels(ctx, rubricInput(1, 1, 1), LabelOptions{Prompt: models.StudyPromptLabelsV1, Labels: models.StudyLabelNames()})
		require.NoError(t, err)
		require.Nil(t, v.Labels, "a verdict has every label asked or none")
		require.Equal(t, KindOffFormat, v.ErrorKind)
		require.Contains(t, v.Error, "the rubric judge gave no verdict: the judge's reply is off-format: the reply does not judge the rubric's items")
		require.EqualValues(t, 3*fakePromptTokens, v.Usage.InputTokens, "the labels request and the rubric request with its repair")
	})

	t.Run("NoScreenshotsForRubric", func(t *testing.T) {
		t.Parallel()
		in := rubricInput(1, 1, 1)
		in.Trajectory = trajectory(3, 20, testJPEG(t, 64, 64))
		f, _ := labelsEndpoint(t, labelsReply)
		c, _ := newTestClient(t, f, nil)
		v, err := c.Labels(ctx, in, LabelOptions{Prompt: models.StudyPromptLabelsV1, Labels: models.StudyLabelNames()})
		require.NoError(t, err)
		require.Empty(t, v.Error)
		require.Len(t, f.seen(), 2)
		for _, req := range f.seen() {
			require.Empty(t, req.images(t), "screenshots off holds for the rubric judge too")
		}
	})
}

func TestLabels_Wanted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("OnlyAsked", func(t *testing.T) {
		t.Parallel()
		f, rubrics := labelsEndpoint(t, labelsReply)
		c, _ := newTestClient(t, f, nil)
		v, err := c.Labels(ctx, rubricInput(1, 1, 1), LabelOptions{Prompt: models.StudyPromptLabelsV1,
			Labels: []string{models.StudyLabelSuccess, models.StudyLabelLooping}})
		require.NoError(t, err)
		require.Equal(t, map[string]string{"success": "successful", "looping": "no"}, v.Labels)
		require.Zero(t, rubrics.Load(), "rubric items are judged only when asked")
	})

	t.Run("RubricOnly", func(t *testing.T) {
		t.Parallel()
		f, rubrics := labelsEndpoint(t, labelsReply)
		c, _ := newTestClient(t, f, nil)
		v, err := c.Labels(ctx, rubricInput(1, 1, 1), LabelOptions{Prompt: models.StudyPromptTrajectoryV2,
			Labels: []string{models.StudyLabelSideEffect, models.StudyLabelRubric}})
		require.NoError(t, err)
		require.Len(t, f.seen(), 1, "the trajectory prompt answers nothing asked: only the rubric judge is asked")
		require.EqualValues(t, 1, rubrics.Load())
		require.Len(t, v.Labels, 3)
		require.Equal(t, RubricVersion, v.PromptVersion)
		require.Equal(t, c.prompts[PromptRubric].SHA256, v.PromptSHA256)
	})

	t.Run("NothingAnswerable", func(t *testing.T) {
		t.Parallel()
		f, _ := labelsEndpoint(t, labelsReply)
		c, _ := newTestClient(t, f, nil)
		_, err := c.Labels(ctx, shopInput(), LabelOptions{Prompt: models.StudyPromptTrajectoryV1,
			Labels: []string{models.StudyLabelSideEffect, models.StudyLabelLooping}})
		require.Equal(t, models.EINVALID, models.ErrorCode(err))
		require.ErrorContains(t, err, "the prompt trajectory-v1 answers success, score, none of which is asked (asked: side_effect, looping)")
		require.Empty(t, f.seen())
	})

	t.Run("PromptAnswers", func(t *testing.T) {
		t.Parallel()
		for _, version := range models.StudyPrompts() {
			require.NotEmpty(t, PromptAnswers(version), version)
		}
		require.Len(t, PromptAnswers(LabelsVersion), 5)
		require.Nil(t, PromptAnswers("rubric-v2"))
	})
}
