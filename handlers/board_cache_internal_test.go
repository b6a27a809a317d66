package handlers

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/models"
)

// Versions of one benchmark's boards, in order, as the public sees them.
var (
	v1 = models.BoardVersion{BenchmarkID: 1, Board: 1, Shared: 1}
	v2 = models.BoardVersion{BenchmarkID: 1, Board: 2, Shared: 1}
	v3 = models.BoardVersion{BenchmarkID: 1, Board: 2, Shared: 2}
)

// TestBoardCache: a variant is kept at one version, a newer one replaces
// it; the least recently used go once the bodies pass the bound, and a body
// larger than the bound is not kept; a failed rendering is not kept; and
// renderings of one variant at once run one rendering.
func TestBoardCache(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rendered := 0
	body := func(s string) func() (*boardAnswer, error) {
		return func() (*boardAnswer, error) {
			rendered++
			return &boardAnswer{body: []byte(s)}, nil
		}
	}
	bc := newBoardCache(10)
	a, err := bc.get(ctx, "a", v1, body("aaaa"))
	require.NoError(t, err)
	require.Equal(t, "aaaa", string(a.body))
	a, _ = bc.get(ctx, "a", v1, body("other"))
	require.Equal(t, "aaaa", string(a.body), "kept")
	a, _ = bc.get(ctx, "a", v2, body("AAAA"))
	require.Equal(t, "AAAA", string(a.body), "a new version renders anew")
	require.Equal(t, 1, bc.len(), "and replaces the old")
	_, _ = bc.get(ctx, "b", v1, body("bbbb"))
	_, _ = bc.get(ctx, "a", v2, body("x")) // a is used last
	_, _ = bc.get(ctx, "c", v1, body("cccc"))
	require.Equal(t, 2, bc.len())
	rendered = 0
	_, _ = bc.get(ctx, "a", v2, body("x"))
	_, _ = bc.get(ctx, "c", v1, body("x"))
	require.Zero(t, rendered, "a and c are kept")
	_, _ = bc.get(ctx, "b", v1, body("bbbb"))
	require.Equal(t, 1, rendered, "b, least recently used, was dropped")
	require.LessOrEqual(t, bc.size, int64(10))
	_, _ = bc.get(ctx, "big", v1, body(strings.Repeat("x", 11)))
	require.Equal(t, 2, bc.len(), "a body past the bound is not kept")

	_, err = bc.get(ctx, "bad", v1, func() (*boardAnswer, error) { return nil, errors.New("refused") })
	require.Error(t, err)
	rendered = 0
	_, _ = bc.get(ctx, "bad", v1, body("ok"))
	require.Equal(t, 1, rendered, "a failure is not kept")

	none := newBoardCache(-1)
	_, _ = none.get(ctx, "a", v1, body("a"))
	require.Zero(t, none.len(), "a negative bound keeps nothing")

	// Several renderings of one variant at once: the first renders, the
	// others wait for it.
	one := newBoardCache(0)
	started, release := make(chan struct{}), make(chan struct{})
	var calls int
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, _ = one.get(ctx, "v", v1, func() (*boardAnswer, error) {
			calls++
			close(started)
			<-release
			return &boardAnswer{body: []byte("board")}, nil
		})
	}()
	<-started
	results := make(chan string, 3)
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, err := one.get(ctx, "v", v1, func() (*boardAnswer, error) {
				return nil, errors.New("a second rendering ran")
			})
			if err != nil {
				results <- err.Error()
				return
			}
			results <- string(a.body)
		}()
	}
	close(release)
	wg.Wait()
	close(results)
	for r := range results {
		require.Equal(t, "board", r)
	}
	require.Equal(t, 1, calls)
}

// TestBoardCache_OlderRenderingFinishingLast: a rendering of an older
// version that ends after one of a newer version does not replace it.
func TestBoardCache_OlderRenderingFinishingLast(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bc := newBoardCache(0)
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		a, err := bc.get(ctx, "board", v2, func() (*boardAnswer, error) {
			close(started)
			<-release
			return &boardAnswer{body: []byte("old")}, nil
		})
		if err != nil || string(a.body) != "old" {
			t.Errorf("the older rendering's own caller got %v, %v", a, err)
		}
	}()
	<-started
	a, err := bc.get(ctx, "board", v3, func() (*boardAnswer, error) { return &boardAnswer{body: []byte("new")}, nil })
	require.NoError(t, err)
	require.Equal(t, "new", string(a.body))
	close(release)
	<-done
	a, err = bc.get(ctx, "board", v3, func() (*boardAnswer, error) { return nil, errors.New("rendered again") })
	require.NoError(t, err, "the newer version is still kept")
	require.Equal(t, "new", string(a.body))

	// A benchmark imported again under the same address is a later board,
	// whatever its counters.
	again := models.BoardVersion{BenchmarkID: 2}
	a, _ = bc.get(ctx, "board", again, func() (*boardAnswer, error) { return &boardAnswer{body: []byte("reimported")}, nil })
	require.Equal(t, "reimported", string(a.body))
	_, _ = bc.get(ctx, "board", v3, func() (*boardAnswer, error) { return &boardAnswer{body: []byte("stale")}, nil })
	a, err = bc.get(ctx, "board", again, func() (*boardAnswer, error) { return nil, errors.New("rendered again") })
	require.NoError(t, err)
	require.Equal(t, "reimported", string(a.body))
}

// TestBoardCache_ScopesKeptApart: the board rendered for the public and
// the one rendered for its maintainers are two entries, neither replacing
// the other.
func TestBoardCache_ScopesKeptApart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bc := newBoardCache(0)
	staff := v1
	staff.Scope = models.BenchmarkScope{Unpublished: true, Secrets: true}
	_, _ = bc.get(ctx, "board", v1, func() (*boardAnswer, error) { return &boardAnswer{body: []byte("public")}, nil })
	_, _ = bc.get(ctx, "board", staff, func() (*boardAnswer, error) { return &boardAnswer{body: []byte("staff")}, nil })
	require.Equal(t, 2, bc.len())
	a, err := bc.get(ctx, "board", v1, func() (*boardAnswer, error) { return nil, errors.New("rendered again") })
	require.NoError(t, err)
	require.Equal(t, "public", string(a.body))
}

// TestBoardCache_PanickingRendering: those waiting for a rendering that
// panics get an error instead of waiting forever, the panic reaches the
// renderer's caller, and the next request renders afresh.
func TestBoardCache_PanickingRendering(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bc := newBoardCache(0)
	started, release := make(chan struct{}), make(chan struct{})
	recovered := make(chan any, 1)
	go func() {
		defer func() { recovered <- recover() }()
		_, _ = bc.get(ctx, "board", v1, func() (*boardAnswer, error) {
			close(started)
			<-release
			panic("template bug")
		})
	}()
	<-started
	waited := make(chan error, 1)
	go func() {
		_, err := bc.get(ctx, "board", v1, func() (*boardAnswer, error) {
			return nil, errors.New("a second rendering ran")
		})
		waited <- err
	}()
	require.Eventually(t, func() bool { return bc.waiting() == 1 }, 10*time.Second, time.Millisecond, "the second request waits for the first")
	close(release)
	require.Equal(t, "template bug", <-recovered)
	require.ErrorIs(t, <-waited, errBoardRenderPanicked)
	a, err := bc.get(ctx, "board", v1, func() (*boardAnswer, error) { return &boardAnswer{body: []byte("fixed")}, nil })
	require.NoError(t, err)
	require.Equal(t, "fixed", string(a.body), "nothing was kept of the panic")
}
