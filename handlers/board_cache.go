package handlers

import (
	"container/list"
	"context"
	"errors"
	"net/http"
	"sync"

	"proctor/models"
)

// defaultBoardCacheBytes bounds the rendered boards a server keeps when its
// options name no bound: some two hundred boards of 200 runs.
const defaultBoardCacheBytes = 64 << 20

// boardAnswer is one rendered board (a page's content, the table htmx
// swaps in, or a JSON or CSV export) as every visitor who sees the board
// the same way gets it: nothing in it is a visitor's own.
type boardAnswer struct {
	// header is what the rendering set: content type, disposition,
	// HX-Push-Url.
	header http.Header
	body   []byte
}

// boardCache keeps rendered boards, least recently used out first once
// their bodies pass maxBytes. An entry is one variant of a board (its
// address, query, format, and the scope of reads it was rendered with) at
// one version of the board (models.BoardVersion): a newer version replaces
// it, an older one never does. Renderings of the same variant and version at
// once wait for the first one.
type boardCache struct {
	maxBytes int64

	mu      sync.Mutex
	size    int64
	order   *list.List // of *boardEntry, most recently used first
	entries map[string]*list.Element
	flights map[string]*boardFlight
}

type boardEntry struct {
	variant string
	version models.BoardVersion
	answer  *boardAnswer
}

// errBoardRenderPanicked is what those waiting for a rendering get when it
// panicked; the panic itself goes on up the renderer's own stack.
var errBoardRenderPanicked = errors.New("the board's rendering panicked")

// boardFlight is one rendering that others asking for the same variant
// and version wait for.
type boardFlight struct {
	done    chan struct{}
	answer  *boardAnswer
	err     error
	waiters int // how many wait for it; under the cache's mu
}

func newBoardCache(maxBytes int64) *boardCache {
	if maxBytes == 0 {
		maxBytes = defaultBoardCacheBytes
	}
	return &boardCache{maxBytes: maxBytes, order: list.New(), entries: map[string]*list.Element{}, flights: map[string]*boardFlight{}}
}

// get returns the variant's board at version, rendering it with render when
// it is not kept (or is kept at another version). A failed rendering is not
// kept: its error goes to the caller, and to those waiting for it.
func (bc *boardCache) get(ctx context.Context, variant string, version models.BoardVersion, render func() (*boardAnswer, error)) (*boardAnswer, error) {
	variant += "\x00" + version.ScopeKey()
	key := variant + "\x00" + version.Key()
	bc.mu.Lock()
	if el, ok := bc.entries[variant]; ok {
		if e := el.Value.(*boardEntry); e.version == version {
			bc.order.MoveToFront(el)
			bc.mu.Unlock()
			return e.answer, nil
		}
	}
	if f, ok := bc.flights[key]; ok {
		f.waiters++
		bc.mu.Unlock()
		select {
		case <-f.done:
			return f.answer, f.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f := &boardFlight{done: make(chan struct{})}
	bc.flights[key] = f
	bc.mu.Unlock()

	// The flight ends however render does, a panic included, so that no
	// one waits for it forever.
	rendered := false
	defer func() {
		if !rendered {
			f.answer, f.err = nil, errBoardRenderPanicked
		}
		bc.mu.Lock()
		delete(bc.flights, key)
		if f.err == nil {
			bc.put(variant, version, f.answer)
		}
		bc.mu.Unlock()
		close(f.done)
	}()
	f.answer, f.err = render()
	rendered = true
	return f.answer, f.err
}

// put keeps an answer, replacing the variant's at another version unless
// that one is newer (a rendering of an older version that finished last),
// and drops the least recently used ones past the bound. A body larger than
// the whole bound is not kept. Called with mu held.
func (bc *boardCache) put(variant string, version models.BoardVersion, a *boardAnswer) {
	if el, ok := bc.entries[variant]; ok {
		if version.Before(el.Value.(*boardEntry).version) {
			return
		}
		bc.remove(el)
	}
	n := int64(len(a.body))
	if n > bc.maxBytes || bc.maxBytes < 0 {
		return
	}
	bc.entries[variant] = bc.order.PushFront(&boardEntry{variant: variant, version: version, answer: a})
	bc.size += n
	for bc.size > bc.maxBytes {
		bc.remove(bc.order.Back())
	}
}

func (bc *boardCache) remove(el *list.Element) {
	e := bc.order.Remove(el).(*boardEntry)
	delete(bc.entries, e.variant)
	bc.size -= int64(len(e.answer.body))
}

// waiting is how many wait for renderings in flight, for tests.
func (bc *boardCache) waiting() int {
	bc.mu.Lock()
	defer bc.mu.Unlock()
	n := 0
	for _, f := range bc.flights {
		n += f.waiters
	}
	return n
}

// len is how many boards are kept, for tests.
func (bc *boardCache) len() int {
	bc.mu.Lock()
	defer bc.mu.Unlock()
	return bc.order.Len()
}
