package episode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/storage/artifact"
)

// journal records, in order, the artifacts stored and the rows saved, and
// can fail one of either.
type journal struct {
	mu      sync.Mutex
	events  []string // "put KEY" or "row N"
	failPut string   // a key suffix whose Put fails
	failRow int      // the step whose row fails; -1 for none
}

type journalStore struct {
	artifact.Store
	j *journal
}

func (s journalStore) Put(ctx context.Context, key string, r io.Reader, size int64, contentType string) error {
	s.j.mu.Lock()
	fail := s.j.failPut != "" && strings.HasSuffix(key, s.j.failPut)
	s.j.mu.Unlock()
	if fail {
		return errors.New("disk full")
	}
	if err := s.Store.Put(ctx, key, r, size, contentType); err != nil {
		return err
	}
	s.j.add("put " + key)
	return nil
}

type journalSink struct {
	memSink
	j *journal
}

func (s *journalSink) SaveStep(ctx context.Context, st *models.Step) error {
	if st.Index == s.j.failRow {
		return errors.New("database is locked")
	}
	if err := s.memSink.SaveStep(ctx, st); err != nil {
		return err
	}
	s.j.add(fmt.Sprintf("row %d", st.Index))
	return nil
}

func (j *journal) add(e string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.events = append(j.events, e)
}

func (j *journal) all() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.events...)
}

// scrolls scrolls n times, then answers.
func scrolls(n int) *scripted {
	return &scripted{next: func(_ context.Context, i int, _ *models.StepRequest) (*models.StepResponse, error) {
		if i >= n {
			return &models.StepResponse{Action: answer("done")}, nil
		}
		return &models.StepResponse{Action: models.Action{Type: models.ActScroll, DeltaY: 100}}, nil
	}}
}

// persistedEpisode is an episode whose artifacts and rows go through j.
func persistedEpisode(b *bundle, agent Agent, j *journal) (Episode, *journalSink) {
	sink := &journalSink{j: j}
	ep := b.episode(agent, "/grow")
	ep.Artifacts = journalStore{Store: b.store, j: j}
	ep.Steps = sink
	return ep, sink
}

func TestRun_PersistsInStepOrderAfterArtifacts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	j := &journal{failRow: -1}
	agent := scrolls(3)
	ep, sink := persistedEpisode(b, agent, j)
	res := b.run(t, ep)
	require.Empty(t, res.ErrorClass, res.ErrorMessage)
	require.Equal(t, 4, res.Steps)

	// Each row comes after its own three artifacts, and rows come in order.
	events := j.all()
	pos := map[string]int{}
	for i, e := range events {
		pos[e] = i
	}
	lastRow := -1
	for i := range 4 {
		row, ok := pos[fmt.Sprintf("row %d", i)]
		require.True(t, ok, "row %d saved: %v", i, events)
		require.Greater(t, row, lastRow, "rows in step order: %v", events)
		lastRow = row
		base := fmt.Sprintf("put %s/steps/%03d", testPrefix, i)
		for _, suffix := range []string{".jpg", "-thumb.jpg", ".txt"} {
			put, ok := pos[base+suffix]
			require.True(t, ok, "%s%s stored: %v", base, suffix, events)
			require.Less(t, put, row, "step %d's %s stored before its row: %v", i, suffix, events)
			if i > 0 {
				require.Greater(t, put, pos[fmt.Sprintf("row %d", i-1)], "step %d's %s stored after the previous row: %v", i, suffix, events)
			}
		}
	}
	// The agent was asked about step i only once step i-1's row was
	// committed: a crash while it thinks loses only the step in flight.
	require.Len(t, agent.requests(), 4)
	for _, s := range sink.all() {
		require.False(t, s.CreatedAt.IsZero(), "step %d records when it ended", s.Index)
		require.GreaterOrEqual(t, s.PersistMS, int64(0))
	}
}

func TestRun_AgentAskedOnlyAfterThePreviousRowIsCommitted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	j := &journal{failRow: -1}
	var sink *journalSink
	agent := scrolls(3)
	inner := agent.next
	agent.next = func(ctx context.Context, i int, req *models.StepRequest) (*models.StepResponse, error) {
		if got := len(sink.all()); got != i {
			return nil, fmt.Errorf("asked about step %d with %d rows committed", i, got)
		}
		return inner(ctx, i, req)
	}
	ep, s := persistedEpisode(b, agent, j)
	sink = s
	res := b.run(t, ep)
	require.Empty(t, res.ErrorClass, res.ErrorMessage)
	require.Equal(t, 4, res.Steps)
}

func TestRun_ArtifactFailureFailsTheEpisode(t *testing.T) {
	t.Parallel()
	b := setup(t)
	j := &journal{failRow: -1, failPut: "/steps/001-thumb.jpg"}
	ep, sink := persistedEpisode(b, scrolls(5), j)
	res, err := Run(context.Background(), b.browser, ep)
	require.Error(t, err)
	require.Contains(t, err.Error(), "store "+testPrefix+"/steps/001-thumb.jpg: disk full")
	require.Equal(t, 1, res.Steps)
	for _, s := range sink.all() {
		require.Zero(t, s.Index, "no row is committed past the step that failed to store")
	}
}

func TestRun_RowFailureFailsTheEpisode(t *testing.T) {
	t.Parallel()
	b := setup(t)
	j := &journal{failRow: 2}
	ep, sink := persistedEpisode(b, scrolls(5), j)
	res, err := Run(context.Background(), b.browser, ep)
	require.Error(t, err)
	require.Contains(t, err.Error(), "save step 2 of attempt 2: database is locked")
	require.Equal(t, 2, res.Steps)
	require.Len(t, sink.all(), 2)
}

func TestRun_FinalRowIsStoredBeforeRunReturns(t *testing.T) {
	t.Parallel()
	b := setup(t)
	j := &journal{failRow: -1}
	ep, sink := persistedEpisode(b, actions(fixed(answer("at once"))), j)
	res := b.run(t, ep)
	require.Equal(t, "at once", res.Final.Text)
	require.Equal(t, 1, res.Steps)
	require.Len(t, sink.all(), 1)
	events := j.all()
	require.Equal(t, []string{"row 0", "put " + testPrefix + "/network.har"}, events[len(events)-2:], "the last row is committed before the HAR is stored")
}
