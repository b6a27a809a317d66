package handlers

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
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
	a, err := bc.get(ctx, "a", "v1", body("aaaa"))
	require.NoError(t, err)
	require.Equal(t, "aaaa", string(a.body))
	a, _ = bc.get(ctx, "a", "v1", body("other"))
	require.Equal(t, "aaaa", string(a.body), "kept")
	a, _ = bc.get(ctx, "a", "v2", body("AAAA"))
	require.Equal(t, "AAAA", string(a.body), "a new version renders anew")
	require.Equal(t, 1, bc.len(), "and replaces the old")
	_, _ = bc.get(ctx, "b", "v1", body("bbbb"))
	_, _ = bc.get(ctx, "a", "v2", body("x")) // a is used last
	_, _ = bc.get(ctx, "c", "v1", body("cccc"))
	require.Equal(t, 2, bc.len())
	rendered = 0
	_, _ = bc.get(ctx, "a", "v2", body("x"))
	_, _ = bc.get(ctx, "c", "v1", body("x"))
	require.Zero(t, rendered, "a and c are kept")
	_, _ = bc.get(ctx, "b", "v1", body("bbbb"))
	require.Equal(t, 1, rendered, "b, least recently used, was dropped")
	require.LessOrEqual(t, bc.size, int64(10))
	_, _ = bc.get(ctx, "big", "v1", body(strings.Repeat("x", 11)))
	require.Equal(t, 2, bc.len(), "a body past the bound is not kept")

	_, err = bc.get(ctx, "bad", "v1", func() (*boardAnswer, error) { return nil, errors.New("refused") })
	require.Error(t, err)
	rendered = 0
	_, _ = bc.get(ctx, "bad", "v1", body("ok"))
	require.Equal(t, 1, rendered, "a failure is not kept")

	none := newBoardCache(-1)
	_, _ = none.get(ctx, "a", "v1", body("a"))
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
		_, _ = one.get(ctx, "v", "1", func() (*boardAnswer, error) {
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
			a, err := one.get(ctx, "v", "1", func() (*boardAnswer, error) {
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
