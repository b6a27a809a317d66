package runner

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/storage/artifact"
)

func TestQueue_JudgeAvailable(t *testing.T) {
	t.Parallel()
	q := &Queue{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	err := q.judgeAvailable()
	require.Equal(t, models.EUNAVAILABLE, models.ErrorCode(err), "no factory: no judge")
	require.Equal(t, NoJudgeConfigured, models.ErrorMessage(err))

	q.judgeReady = func() error { return errNoJudge }
	require.Equal(t, NoJudgeConfigured, models.ErrorMessage(q.judgeAvailable()))

	q.judgeReady = func() error { return errors.New("judge http://judge.test: base_url: bad") }
	err = q.judgeAvailable()
	require.Equal(t, models.EUNAVAILABLE, models.ErrorCode(err))
	require.NotContains(t, models.ErrorMessage(err), "judge.test", "the cause is logged, not shown")

	q.judgeReady = func() error { return nil }
	require.NoError(t, q.judgeAvailable())
}

func TestRunner_ReadArtifactText(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, err := artifact.NewLocal(filepath.Join(t.TempDir(), "artifacts"), artifact.NewURLSigner([]byte(strings.Repeat("s", 32))), "http://proctor.test")
	require.NoError(t, err)
	r := &Runner{artifacts: store}
	put := func(key, text string) {
		require.NoError(t, store.Put(ctx, key, bytes.NewReader([]byte(text)), int64(len(text)), "text/plain; charset=utf-8"))
	}

	put("small.txt", "RootWebArea 'Shop'\n\tlink 'Home'")
	text, err := r.readArtifactText(ctx, "small.txt", 1024)
	require.NoError(t, err)
	require.Equal(t, "RootWebArea 'Shop'\n\tlink 'Home'", text)

	// Cut at the limit, never inside a character, and marked as cut.
	put("large.txt", strings.Repeat("é", 1000)) // two bytes each
	text, err = r.readArtifactText(ctx, "large.txt", 1025)
	require.NoError(t, err)
	body, mark, ok := strings.Cut(text, "\n… (cut at 1 KiB)")
	require.True(t, ok, text[len(text)-40:])
	require.Empty(t, mark)
	require.True(t, utf8.ValidString(body))
	require.Equal(t, strings.Repeat("é", 512), body)

	text, err = r.readArtifactText(ctx, "missing.txt", 1024)
	require.NoError(t, err)
	require.Empty(t, text, "a missing artifact reads as no text")
}

func TestJudgeAll(t *testing.T) {
	t.Parallel()
	items := make([]models.StudyItem, 10)
	for i := range items {
		items[i] = models.StudyItem{ID: int64(i + 1)}
	}
	ctx := context.Background()
	// judged records the items judged, failing the one numbered failOn.
	judge := func(failOn int64) (func(context.Context, models.StudyItem) error, func() []int64) {
		var mu sync.Mutex
		var seen []int64
		return func(ctx context.Context, it models.StudyItem) error {
				if it.ID == failOn {
					return errors.New("artifact store unreachable")
				}
				mu.Lock()
				seen = append(seen, it.ID)
				mu.Unlock()
				return nil
			}, func() []int64 {
				mu.Lock()
				defer mu.Unlock()
				return seen
			}
	}

	t.Run("All", func(t *testing.T) {
		t.Parallel()
		fn, seen := judge(0)
		done, err := judgeAll(ctx, items, time.Now().Add(time.Hour), fn)
		require.NoError(t, err)
		require.Equal(t, 10, done)
		require.ElementsMatch(t, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, seen())
	})

	t.Run("SliceOver", func(t *testing.T) {
		t.Parallel()
		// A slice that has already ended still judges a first round, so that
		// every slice makes progress.
		fn, seen := judge(0)
		done, err := judgeAll(ctx, items, time.Now().Add(-time.Second), fn)
		require.NoError(t, err)
		require.Equal(t, studyJudgeParallel, done)
		require.ElementsMatch(t, []int64{1, 2, 3, 4}, seen())
	})

	t.Run("PlatformFailure", func(t *testing.T) {
		t.Parallel()
		fn, seen := judge(2)
		done, err := judgeAll(ctx, items, time.Now().Add(time.Hour), fn)
		require.EqualError(t, err, "artifact store unreachable")
		require.Less(t, done, 10, "the failure stops the job")
		require.Len(t, seen(), done)
	})

	t.Run("Canceled", func(t *testing.T) {
		t.Parallel()
		canceled, cancel := context.WithCancel(ctx)
		cancel()
		done, err := judgeAll(canceled, items, time.Now().Add(time.Hour), func(ctx context.Context, _ models.StudyItem) error {
			return ctx.Err()
		})
		require.ErrorIs(t, err, context.Canceled)
		require.Zero(t, done)
	})
}
