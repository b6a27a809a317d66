package episode

import (
	"context"
	"fmt"
	"mime"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mxschmitt/playwright-go"

	"proctor/storage/artifact"
)

// maxDownloadBytes caps one stored download; larger files are listed with a
// note and not stored.
const maxDownloadBytes = 100 << 20

// download is one file the page downloaded.
type download struct {
	name string        // sanitised, unique within the episode
	done chan struct{} // closed when path or err is set
	path string        // Playwright's copy, valid until the context closes
	err  error
	kept bool // uploaded (or given up on) and listed
}

// downloads tracks the episode's downloads. Playwright reports them on its
// event goroutine, where waiting for the file would deadlock the connection,
// so each one is awaited on its own goroutine and uploaded later by the
// episode's goroutine (store errors then surface like any other).
type downloads struct {
	mu    sync.Mutex
	items []*download
	names map[string]bool
	log   func(msg string, args ...any)
}

// start records a download as it begins.
func (d *downloads) start(dl playwright.Download) {
	d.mu.Lock()
	name := uniqueName(sanitizeFileName(dl.SuggestedFilename()), d.names)
	if d.names == nil {
		d.names = map[string]bool{}
	}
	d.names[name] = true
	item := &download{name: name, done: make(chan struct{})}
	d.items = append(d.items, item)
	d.mu.Unlock()
	go func() {
		defer close(item.done)
		item.path, item.err = dl.Path()
		if item.err == nil {
			if f := dl.Failure(); f != nil {
				item.err = f
			}
		}
	}()
}

// collect uploads the downloads that finished since the last call under
// prefix/downloads/ and returns the names of all stored downloads so far.
// With wait > 0 it first waits that long for unfinished ones.
func (d *downloads) collect(ctx context.Context, store artifact.Store, prefix string, wait time.Duration) ([]string, error) {
	d.mu.Lock()
	items := append([]*download(nil), d.items...)
	d.mu.Unlock()
	waitCtx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var names []string
	for _, it := range items {
		if !it.kept {
			if !finished(it.done, waitCtx.Done(), wait > 0) {
				continue
			}
			it.kept = true
			if err := d.store(ctx, store, prefix, it); err != nil {
				return names, err
			}
		}
		if it.err == nil {
			names = append(names, it.name)
		}
	}
	return names, nil
}

// finished reports whether done is closed, waiting until stop when block is set.
func finished(done, stop <-chan struct{}, block bool) bool {
	if block {
		select {
		case <-done:
			return true
		case <-stop:
			return false
		}
	}
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// store uploads one finished download; a failed or oversized download is
// logged and left out rather than failing the episode.
func (d *downloads) store(ctx context.Context, store artifact.Store, prefix string, it *download) error {
	if it.err != nil {
		d.log("download failed", "file", it.name, "err", it.err)
		return nil
	}
	f, err := os.Open(it.path)
	if err != nil {
		it.err = err
		d.log("download unreadable", "file", it.name, "err", err)
		return nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		it.err = err
		return nil
	}
	if st.Size() > maxDownloadBytes {
		it.err = fmt.Errorf("%d bytes is over the %d byte limit", st.Size(), maxDownloadBytes)
		d.log("download too large, not stored", "file", it.name, "bytes", st.Size())
		return nil
	}
	ct := mime.TypeByExtension(filepath.Ext(it.name))
	if err := store.Put(ctx, prefix+"/downloads/"+it.name, f, st.Size(), ct); err != nil {
		return fmt.Errorf("store download %s: %w", it.name, err)
	}
	return nil
}

// sanitizeFileName keeps a safe, short artifact key segment of a suggested
// file name.
func sanitizeFileName(s string) string {
	s = filepath.Base(strings.ReplaceAll(s, "\\", "/"))
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteRune('_')
		}
	}
	out := strings.TrimLeft(b.String(), ".")
	if len(out) > 100 {
		out = out[len(out)-100:]
	}
	if out == "" {
		out = "download"
	}
	return out
}

// uniqueName appends -2, -3, … before the extension until name is unused.
func uniqueName(name string, used map[string]bool) string {
	if !used[name] {
		return name
	}
	ext := filepath.Ext(name)
	base := strings.TrimSuffix(name, ext)
	for i := 2; ; i++ {
		n := fmt.Sprintf("%s-%d%s", base, i, ext)
		if !used[n] {
			return n
		}
	}
}
