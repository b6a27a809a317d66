package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"sync"
	"time"

	"proctor/models"
)

// storedBundle is a bundle opened for reading at any offset, as the bundle
// reader needs (a zip's directory is at its end).
type storedBundle struct {
	io.ReaderAt
	size  int64
	close func() error
}

func (b *storedBundle) Close() error { return b.close() }

// openBundle opens a stored bundle for random access, calling progress with
// the bytes read so far when it reads the whole bundle once (to hash it or
// to spool it). With wantSum it returns the bundle's SHA-256 in hex.
//
// A local file is read in place. Another store's reader that can read at an
// offset (an S3 object) is read through a cache of a few large blocks,
// because each of its ReadAt calls is a request of its own. A reader that
// cannot is spooled to a temporary file.
func (r *Runner) openBundle(ctx context.Context, key string, wantSum bool, progress func(done int64)) (*storedBundle, string, error) {
	rc, info, err := r.artifacts.Get(ctx, key)
	if err != nil {
		return nil, "", err
	}
	size := info.Size
	var h hash.Hash
	if wantSum {
		h = sha256.New()
	}
	sum := func() string {
		if h == nil {
			return ""
		}
		return hex.EncodeToString(h.Sum(nil))
	}
	switch src := rc.(type) {
	case *os.File:
		if h != nil {
			if err := copyCounted(ctx, h, io.NewSectionReader(src, 0, size), progress); err != nil {
				src.Close()
				return nil, "", fmt.Errorf("hash %s: %w", key, err)
			}
		}
		return &storedBundle{ReaderAt: src, size: size, close: src.Close}, sum(), nil
	case io.ReaderAt:
		if h != nil {
			// One streaming read hashes it; the reader's offset for ReadAt
			// is its own.
			if err := copyCounted(ctx, h, rc, progress); err != nil {
				rc.Close()
				return nil, "", fmt.Errorf("hash %s: %w", key, err)
			}
		}
		return &storedBundle{ReaderAt: newBlockReaderAt(src, size), size: size, close: rc.Close}, sum(), nil
	}
	defer rc.Close()
	f, err := os.CreateTemp(r.opts.Submissions.TempDir, "proctor-bundle-*")
	if err != nil {
		return nil, "", fmt.Errorf("spool %s: %w", key, err)
	}
	cleanup := func() error {
		return errors.Join(f.Close(), os.Remove(f.Name()))
	}
	var w io.Writer = f
	if h != nil {
		w = io.MultiWriter(f, h)
	}
	if err := copyCounted(ctx, w, rc, progress); err != nil {
		cleanup()
		return nil, "", fmt.Errorf("spool %s: %w", key, err)
	}
	return &storedBundle{ReaderAt: f, size: size, close: cleanup}, sum(), nil
}

// copyCounted copies src to dst, telling progress how many bytes went by
// and stopping when ctx ends.
func copyCounted(ctx context.Context, dst io.Writer, src io.Reader, progress func(int64)) error {
	buf := make([]byte, 1<<20)
	var done int64
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return werr
			}
			done += int64(n)
			if progress != nil {
				progress(done)
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// blockReaderAt serves reads at any offset from a few cached blocks of a
// slower ReaderAt, loading one whole block per miss: the bundle reader's
// many small reads, mostly in order, become a few large ones.
type blockReaderAt struct {
	src    io.ReaderAt
	size   int64
	mu     sync.Mutex
	blocks [blockCacheSize]cachedBlock
	clock  uint64
}

const (
	blockCacheSize = 4
	blockBytes     = 4 << 20
)

type cachedBlock struct {
	index int64 // -1 when empty
	data  []byte
	used  uint64
}

func newBlockReaderAt(src io.ReaderAt, size int64) *blockReaderAt {
	b := &blockReaderAt{src: src, size: size}
	for i := range b.blocks {
		b.blocks[i].index = -1
	}
	return b
}

func (b *blockReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("read at negative offset %d", off)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for n < len(p) && off < b.size {
		blk, err := b.block(off / blockBytes)
		if err != nil {
			return n, err
		}
		c := copy(p[n:], blk.data[off-blk.index*blockBytes:])
		n += c
		off += int64(c)
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// block returns the cached block index, loading it in place of the least
// recently used one on a miss.
func (b *blockReaderAt) block(index int64) (*cachedBlock, error) {
	b.clock++
	victim := &b.blocks[0]
	for i := range b.blocks {
		blk := &b.blocks[i]
		if blk.index == index {
			blk.used = b.clock
			return blk, nil
		}
		if blk.used < victim.used {
			victim = blk
		}
	}
	length := min(int64(blockBytes), b.size-index*blockBytes)
	if int64(cap(victim.data)) < length {
		victim.data = make([]byte, blockBytes)
	}
	victim.index = -1
	data := victim.data[:length]
	n, err := b.src.ReadAt(data, index*blockBytes)
	if int64(n) == length {
		err = nil
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF // the store said the bundle was larger
	}
	if err != nil {
		return nil, err
	}
	victim.index, victim.data, victim.used = index, data, b.clock
	return victim, nil
}

// countingReaderAt counts the bytes read through it, for the ingest's
// progress while the bundle reader extracts.
type countingReaderAt struct {
	io.ReaderAt
	mu   sync.Mutex
	done int64
	tell func(done int64)
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.ReaderAt.ReadAt(p, off)
	c.mu.Lock()
	c.done += int64(n)
	done := c.done
	c.mu.Unlock()
	c.tell(done)
	return n, err
}

// progressMeter writes a job's progress to its submission at most every
// quarter of a second, so the progress bar moves without a write per read.
type progressMeter struct {
	r     *Runner
	ctx   context.Context
	id    int64
	total int64
	base  int64 // bytes of the passes already done
	mu    sync.Mutex
	last  time.Time
}

const progressInterval = 250 * time.Millisecond

func (r *Runner) newProgressMeter(ctx context.Context, id, total int64) *progressMeter {
	m := &progressMeter{r: r, ctx: ctx, id: id, total: total}
	m.write(0)
	return m
}

// pass returns the progress function of the next pass over the bundle,
// which reads up to size bytes.
func (m *progressMeter) pass(size int64) func(done int64) {
	m.mu.Lock()
	base := m.base
	m.base += size
	m.mu.Unlock()
	return func(done int64) { m.set(base + min(done, size)) }
}

func (m *progressMeter) set(done int64) {
	m.mu.Lock()
	now := time.Now()
	if now.Sub(m.last) < progressInterval {
		m.mu.Unlock()
		return
	}
	m.last = now
	m.mu.Unlock()
	m.write(done)
}

func (m *progressMeter) write(done int64) {
	if err := m.r.db.SubmissionProgress(m.ctx, m.id, min(done, m.total), m.total); err != nil && m.ctx.Err() == nil {
		m.r.log.Warn("submission progress", "submission_id", m.id, "error", err.Error())
	}
}

// systemContext is ctx acting as the queue.
func systemContext(ctx context.Context) context.Context {
	return models.WithActor(ctx, models.SystemActor())
}

// hashedBundle is a stored bundle whose SHA-256 is computed from the reads
// the bundle reader makes anyway: bytes read in order are hashed as they go
// by, so the bundle is read once for both. sum hashes what was not read in
// order (the zip directory at the end, small gaps the reader skipped).
type hashedBundle struct {
	src  io.ReaderAt
	size int64
	mu   sync.Mutex
	h    hash.Hash
	next int64 // [0, next) is hashed
	// again counts the bytes read a second time, for the hash alone.
	again int64
}

// maxHashGap is the largest run of bytes the reader may skip between two
// reads in order (an entry's data descriptor, say) that is read at once
// to keep hashing in step; a larger jump (to the zip directory at the end)
// leaves the hash behind until reads come back, or until sum.
const maxHashGap = 64 << 10

// openHashedBundle opens a stored bundle for the bundle reader, hashing it
// as it is read.
func (r *Runner) openHashedBundle(ctx context.Context, key string) (*storedBundle, *hashedBundle, error) {
	b, _, err := r.openBundle(ctx, key, false, nil)
	if err != nil {
		return nil, nil, err
	}
	h := &hashedBundle{src: b.ReaderAt, size: b.size, h: sha256.New()}
	b.ReaderAt = h
	return b, h, nil
}

func (b *hashedBundle) ReadAt(p []byte, off int64) (int, error) {
	n, err := b.src.ReadAt(p, off)
	b.mu.Lock()
	defer b.mu.Unlock()
	if off > b.next && off-b.next <= maxHashGap {
		gap := make([]byte, off-b.next)
		if m, gerr := b.src.ReadAt(gap, b.next); m == len(gap) && (gerr == nil || gerr == io.EOF) {
			b.h.Write(gap)
			b.next = off
			b.again += int64(m)
		}
	}
	if off <= b.next && off+int64(n) > b.next {
		b.h.Write(p[b.next-off : n])
		b.next = off + int64(n)
	}
	return n, err
}

// sum hashes the bytes not read in order yet and returns the bundle's
// SHA-256 in hex.
func (b *hashedBundle) sum(ctx context.Context) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.next < b.size {
		rest := b.size - b.next
		if err := copyCounted(ctx, b.h, io.NewSectionReader(b.src, b.next, rest), nil); err != nil {
			return "", fmt.Errorf("hash the bundle: %w", err)
		}
		b.next = b.size
		b.again += rest
	}
	return hex.EncodeToString(b.h.Sum(nil)), nil
}
