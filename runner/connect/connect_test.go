package connect

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/models"
)

// loop plays an episode loop on m: n steps, then the end.
func loop(t *testing.T, m *Mailbox, idle time.Duration) <-chan []models.Action {
	t.Helper()
	done := make(chan []models.Action, 1)
	go func() {
		var got []models.Action
		for i := 0; ; i++ {
			ctx, cancel := context.WithTimeout(context.Background(), idle)
			resp, err := m.Step(ctx, &models.StepRequest{Step: i, Observation: models.Observation{AXTree: "[e1] button \"Go\""}})
			cancel()
			if err != nil {
				m.End("the agent sent no action in time")
				done <- got
				return
			}
			got = append(got, resp.Action)
			if resp.Action.Final() {
				m.End("the answer was submitted")
				done <- got
				return
			}
		}
	}()
	return done
}

func TestMailbox_StepsInOrder(t *testing.T) {
	t.Parallel()
	m := NewMailbox(1, 2, 1)
	done := loop(t, m, 5*time.Second)
	ctx := context.Background()

	obs, err := m.Observation(ctx, -1)
	require.NoError(t, err)
	require.Equal(t, 0, obs.Step)
	_, err = m.Act(ctx, 3, &models.StepResponse{Action: models.Action{Type: models.ActGoBack}})
	require.ErrorIs(t, err, ErrOutOfTurn, "an action for a step that is not waiting")
	step, err := m.Act(ctx, 0, &models.StepResponse{Action: models.Action{Type: models.ActGoBack}})
	require.NoError(t, err)
	require.Equal(t, 0, step)
	next, err := m.Observation(ctx, step)
	require.NoError(t, err)
	require.Equal(t, 1, next.Step, "the observation after the action")

	// Two acting calls at once take turns: each is one step.
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := m.Act(ctx, -1, &models.StepResponse{Action: models.Action{Type: models.ActGoForward}})
			require.NoError(t, err)
		}()
	}
	wg.Wait()
	_, err = m.Act(ctx, -1, &models.StepResponse{Action: models.Action{Type: models.ActStop}})
	require.NoError(t, err)
	got := <-done
	require.Len(t, got, 4)
	require.Equal(t, models.ActStop, got[3].Type)

	_, err = m.Observation(ctx, -1)
	require.ErrorIs(t, err, ErrEnded)
	_, err = m.Act(ctx, -1, &models.StepResponse{Action: models.Action{Type: models.ActStop}})
	require.ErrorIs(t, err, ErrEnded)
	require.Equal(t, "the answer was submitted", m.Ending())
}

func TestMailbox_IdleStepEnds(t *testing.T) {
	t.Parallel()
	m := NewMailbox(1, 2, 1)
	done := loop(t, m, 50*time.Millisecond)
	require.Empty(t, <-done)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := m.Act(ctx, -1, &models.StepResponse{Action: models.Action{Type: models.ActStop}})
	require.True(t, errors.Is(err, ErrEnded), "an action after the idle limit finds the episode over: %v", err)
}

func TestMailbox_ObservationWaitsForTheNextStep(t *testing.T) {
	t.Parallel()
	m := NewMailbox(1, 2, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := m.Observation(ctx, -1)
	require.ErrorIs(t, err, context.DeadlineExceeded, "no step has started")
}

func TestSnapshotYAML(t *testing.T) {
	t.Parallel()
	ax := `[e1] link "Sandbox Shop" -> /sandbox/a1t1/shop
[e3] heading(1) "Products"
[e5] searchbox "Search products" value="keyboard: mech" required
[e7] combobox "Category" value="All" options=["All", "Mugs"] (+3 more)
[e10] list
  [e11] listitem "Mug $12.99"
    [e12] link "Mug" -> /p/1
[e20] checkbox "Gift wrap" unchecked
[e21] checkbox "Express" checked
[e22] button "Place order" disabled
[truncated at 2000 lines]`
	got, err := SnapshotYAML(ax, "", 0)
	require.NoError(t, err)
	require.Equal(t, `- link "Sandbox Shop" [ref=e1]:
  - /url: /sandbox/a1t1/shop
- heading "Products" [level=1] [ref=e3]
- searchbox "Search products" [required] [ref=e5]: "keyboard: mech"
- combobox "Category" [ref=e7]:
  - /value: All
  - option "All"
  - option "Mugs"
  - text: (3 more options)
- list [ref=e10]
  - listitem "Mug $12.99" [ref=e11]
    - link "Mug" [ref=e12]:
      - /url: /p/1
- checkbox "Gift wrap" [ref=e20]
- checkbox "Express" [checked] [ref=e21]
- button "Place order" [disabled] [ref=e22]
- text: "[truncated at 2000 lines]"
`, got)

	sub, err := SnapshotYAML(ax, "e10", 0)
	require.NoError(t, err)
	require.Equal(t, "- list [ref=e10]\n  - listitem \"Mug $12.99\" [ref=e11]\n    - link \"Mug\" [ref=e12]:\n      - /url: /p/1\n- text: \"[truncated at 2000 lines]\"\n", sub)
	shallow, err := SnapshotYAML(ax, "e10", 2)
	require.NoError(t, err)
	require.NotContains(t, shallow, "e12", "depth 2 keeps the root and its children")
	_, err = SnapshotYAML(ax, "e99", 0)
	require.ErrorContains(t, err, "ref e99 is not in the current page snapshot")

	refs := Refs(ax)
	require.True(t, refs["e12"])
	require.False(t, refs["e2"])
}
