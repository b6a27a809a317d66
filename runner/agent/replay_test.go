package agent_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/runner/agent"
)

// playAll steps a until it returns a final action, returning every action.
func playAll(t *testing.T, a agent.Agent, req *models.StepRequest) []models.Action {
	t.Helper()
	var out []models.Action
	for range 20 {
		resp, err := a.Step(t.Context(), req)
		require.NoError(t, err)
		require.Zero(t, resp.Usage)
		out = append(out, resp.Action)
		if resp.Action.Final() {
			return out
		}
		req.Step++
	}
	t.Fatal("the replay never ended")
	return nil
}

func TestReplayAgent_Step(t *testing.T) {
	t.Parallel()
	script := json.RawMessage(`[
		{"type": "goto", "url": "http://shop.test/search?q=mug"},
		{"type": "click", "target": {"element_id": "e7"}},
		{"type": "answer", "response": {"task_type": "retrieve", "status": "SUCCESS", "retrieved_data": ["$12.99"], "error_details": null}}
	]`)

	t.Run("PlaysInOrder", func(t *testing.T) {
		t.Parallel()
		a, err := agent.New(agent.Config{Kind: models.AgentReplay, ReferenceActions: script})
		require.NoError(t, err)
		require.False(t, a.WantsScreenshot())
		actions := playAll(t, a, sampleRequest())
		require.Len(t, actions, 3)
		require.Equal(t, "http://shop.test/search?q=mug", actions[0].URL)
		require.Equal(t, "e7", actions[1].Target.ElementID)
		require.JSONEq(t, `{"task_type": "retrieve", "status": "SUCCESS", "retrieved_data": ["$12.99"], "error_details": null}`, string(actions[2].Response))
	})

	t.Run("StopsWhenExhausted", func(t *testing.T) {
		t.Parallel()
		a, err := agent.New(agent.Config{Kind: models.AgentReplay, ReferenceActions: json.RawMessage(`[{"type": "go_back"}]`)})
		require.NoError(t, err)
		req := sampleRequest()
		for _, want := range []string{models.ActGoBack, models.ActStop, models.ActStop} {
			resp, err := a.Step(t.Context(), req)
			require.NoError(t, err)
			require.Equal(t, want, resp.Action.Type)
			if want == models.ActStop {
				require.Equal(t, agent.ReplayEndReason, resp.Action.Reason)
				require.Equal(t, "script ended", resp.Action.Reason)
			}
		}
	})

	t.Run("NoScript", func(t *testing.T) {
		t.Parallel()
		a, err := agent.New(agent.Config{Kind: models.AgentReplay})
		require.NoError(t, err)
		actions := playAll(t, a, sampleRequest())
		require.Equal(t, []models.Action{{Type: models.ActStop, Reason: "script ended"}}, actions)
	})

	t.Run("SettingsOverride", func(t *testing.T) {
		t.Parallel()
		a, err := agent.New(agent.Config{Kind: models.AgentReplay, ReferenceActions: script,
			Settings: json.RawMessage(`{"actions": [{"type": "scroll", "delta_y": 400}, {"type": "answer", "text": "team script"}]}`)})
		require.NoError(t, err)
		actions := playAll(t, a, sampleRequest())
		require.Len(t, actions, 2)
		require.Equal(t, 400.0, actions[0].DeltaY)
		require.Equal(t, "team script", actions[1].Text)
	})

	t.Run("NewAttemptStartsOver", func(t *testing.T) {
		t.Parallel()
		a, err := agent.New(agent.Config{Kind: models.AgentReplay, ReferenceActions: script})
		require.NoError(t, err)
		req := sampleRequest()
		require.Len(t, playAll(t, a, req), 3)
		req.AttemptID++
		require.Len(t, playAll(t, a, req), 3)
	})
}
