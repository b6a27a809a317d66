package artifact

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

const (
	// metaDir holds one JSON file per artifact, mirroring the key tree, so
	// that metadata can never collide with a key (keys may not start with
	// reservedPrefix).
	metaDir = reservedPrefix + "meta"
	// tmpPrefix names the temporary files written before the atomic rename.
	tmpPrefix = reservedPrefix + "tmp-"

	// Artifacts are private to the server's user: screenshots and HARs may
	// show what a run's sites and agents were given.
	dirPerm  = 0o700
	filePerm = 0o600
)

// Local is a Store on the local file system. All access goes through an
// os.Root, so neither a key nor a symlink planted in the directory can reach
// a file outside it.
//
// A key is a file path, so the local driver cannot hold both "a" and "a/b"
// (S3 can); the second Put fails.
type Local struct {
	dir     string
	root    *os.Root
	signer  URLSigner
	baseURL string

	// locks serialise the data+metadata pair of a key within this process,
	// so a reader never pairs one writer's bytes with another's content type.
	locks [64]sync.Mutex
	// pruneMu serialises the removal of empty directories; see prune.
	pruneMu sync.Mutex
	// minFree is the free space below which Ping reports ErrLowSpace.
	minFree atomic.Int64
}

// SetMinFreeBytes makes Ping fail with ErrLowSpace while the file system
// holding the store has less than n bytes free for this process (0: never).
func (l *Local) SetMinFreeBytes(n int64) { l.minFree.Store(n) }

var (
	_ Store    = (*Local)(nil)
	_ Deferred = (*Local)(nil)
)

type localMeta struct {
	ContentType string `json:"content_type"`
}

// NewLocal opens (creating if needed) a local store in dir; URL returns links
// of the form baseURL + "/artifacts/<key>?expires=…&sig=…" (relative when
// baseURL is ""), served by NewLocalHandler. It fails if signer has no key.
func NewLocal(dir string, signer URLSigner, baseURL string) (*Local, error) {
	if dir == "" {
		return nil, errors.New("artifact: local: empty directory")
	}
	if len(signer.key) == 0 {
		return nil, errors.New("artifact: local: URL signer has no key")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("artifact: local %q: %w", dir, err)
	}
	if err := os.MkdirAll(abs, dirPerm); err != nil {
		return nil, fmt.Errorf("artifact: local: %w", err)
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("artifact: local: %w", err)
	}
	if err := root.MkdirAll(metaDir, dirPerm); err != nil {
		_ = root.Close()
		return nil, fmt.Errorf("artifact: local %q: %w", abs, err)
	}
	return &Local{
		dir:     abs,
		root:    root,
		signer:  signer,
		baseURL: strings.TrimRight(baseURL, "/"),
	}, nil
}

// Close releases the directory handle; the Local must not be used afterwards.
func (l *Local) Close() error {
	return l.root.Close()
}

// Put writes r to key atomically (temporary file, fsync, rename); see Store.
func (l *Local) Put(ctx context.Context, key string, r io.Reader, size int64, contentType string) error {
	if err := l.checkKey(key); err != nil {
		return err
	}
	if err := l.put(ctx, key, r, size, orDefaultContentType(contentType), true); err != nil {
		l.prune(path.Dir(key)) // directories made for a failed Put
		l.prune(path.Dir(metaPath(key)))
		return fmt.Errorf("artifact: put %q: %w", key, err)
	}
	return nil
}

// PutUnsynced writes key as Put does (atomically: the bytes or nothing are
// visible) but does not wait for them to reach the disk; see Deferred.
func (l *Local) PutUnsynced(ctx context.Context, key string, r io.Reader, size int64, contentType string) error {
	if err := l.checkKey(key); err != nil {
		return err
	}
	if err := l.put(ctx, key, r, size, orDefaultContentType(contentType), false); err != nil {
		l.prune(path.Dir(key))
		l.prune(path.Dir(metaPath(key)))
		return fmt.Errorf("artifact: put %q: %w", key, err)
	}
	return nil
}

// syncWorkers is how many fsyncs SyncKeys has in flight: the file system
// commits concurrent ones together, where one after the other each waits
// for a commit of its own.
const syncWorkers = 16

// SyncKeys makes the artifacts PutUnsynced wrote durable: every file, its
// metadata, and the directories holding them (their renames); see Deferred.
func (l *Local) SyncKeys(ctx context.Context, keys []string) error {
	var files []string
	dirs := map[string]bool{}
	for _, key := range keys {
		if err := l.checkKey(key); err != nil {
			return err
		}
		files = append(files, key, metaPath(key))
		dirs[path.Dir(key)], dirs[path.Dir(metaPath(key))] = true, true
	}
	if err := l.syncAll(ctx, files); err != nil {
		return err
	}
	// Every parent up to the root: PutUnsynced may have made them.
	for dir := range dirs {
		for d := path.Dir(dir); d != "." && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	dirs["."] = true
	list := make([]string, 0, len(dirs))
	for dir := range dirs {
		list = append(list, dir)
	}
	return l.syncAll(ctx, list)
}

// syncAll fsyncs the named files or directories, syncWorkers at a time.
// Names are synced in batches of one folder's entries, the folder opened
// once for the batch.
func (l *Local) syncAll(ctx context.Context, names []string) error {
	next := make(chan []string)
	errs := make(chan error, syncWorkers)
	var wg sync.WaitGroup
	for range min(syncWorkers, len(names)) {
		wg.Go(func() {
			var first error
			for batch := range next {
				if first == nil {
					first = l.syncBatch(batch)
				}
			}
			errs <- first
		})
	}
	for _, batch := range syncBatches(names) {
		if ctx.Err() != nil {
			break
		}
		next <- batch
	}
	close(next)
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return errors.Join(append(all, ctx.Err())...)
}

// syncBatchSize bounds a batch, so that a folder of many files still has
// its fsyncs spread over the workers.
const syncBatchSize = 8

// syncBatches groups names by folder, in batches of at most syncBatchSize.
func syncBatches(names []string) [][]string {
	byDir := map[string][]string{}
	var dirs []string
	for _, name := range names {
		dir := path.Dir(name)
		if _, ok := byDir[dir]; !ok {
			dirs = append(dirs, dir)
		}
		byDir[dir] = append(byDir[dir], name)
	}
	var out [][]string
	for _, dir := range dirs {
		for group := range slices.Chunk(byDir[dir], syncBatchSize) {
			out = append(out, group)
		}
	}
	return out
}

// syncBatch fsyncs names, which share a folder. Names in the metadata tree
// may be missing: an artifact whose content type is the one its key implies
// has no metadata file, and its folder there may not exist.
func (l *Local) syncBatch(names []string) error {
	dir := path.Dir(names[0])
	d, err := l.root.OpenRoot(dir)
	if errors.Is(err, fs.ErrNotExist) && inMetaTree(dir) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("artifact: sync %q: %w", names[0], mapNotExist(err))
	}
	defer d.Close()
	for _, name := range names {
		err := syncIn(d, path.Base(name))
		if errors.Is(err, fs.ErrNotExist) && inMetaTree(name) {
			continue
		}
		if err != nil {
			return fmt.Errorf("artifact: sync %q: %w", name, mapNotExist(err))
		}
	}
	return nil
}

// inMetaTree reports whether name lies inside the metadata tree.
func inMetaTree(name string) bool {
	return strings.HasPrefix(name, metaDir+"/")
}

// syncIn fsyncs the file or folder name in d.
func syncIn(d *os.Root, name string) error {
	f, err := d.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

func (l *Local) put(ctx context.Context, key string, r io.Reader, size int64, contentType string, durable bool) error {
	if size < -1 {
		return fmt.Errorf("negative size %d", size)
	}
	// Each file's folder is resolved once: every step below then names a
	// single entry in it, where a path from the store's root would be
	// walked again, folder by folder, at each step.
	base := path.Base(key)
	dataDir, dataTmp, err := l.writeTemp(path.Dir(key), durable, func(dir *os.Root, f *os.File) error {
		if fi, err := dir.Lstat(base); err == nil && fi.IsDir() {
			return errors.New("key is a directory (a prefix of other keys)")
		}
		var n int64
		var err error
		if files, ok := r.(fileSource); ok && size >= 0 {
			n, err = files.copyToFile(ctx, f, size)
		} else {
			src := io.Reader(ctxReader{ctx: ctx, r: r})
			if size >= 0 {
				src = io.LimitReader(src, size)
			}
			n, err = io.Copy(f, src)
		}
		if err != nil {
			return err
		}
		if size >= 0 && n < size {
			return fmt.Errorf("read %d of %d bytes: %w", n, size, io.ErrUnexpectedEOF)
		}
		return nil
	})
	if err != nil {
		return err
	}
	defer dataDir.Close()
	return l.commit(key, dataDir, dataTmp, contentType, durable)
}

// commit makes the temporary file tmp, in key's folder opened as dataDir,
// key's content, with its metadata; on failure it removes tmp. When durable
// it fsyncs the folders (the file itself is already synced); otherwise
// SyncKeys does.
func (l *Local) commit(key string, dataDir *os.Root, tmp, contentType string, durable bool) error {
	dataTmp := tmp
	defer func() {
		if dataTmp != "" {
			_ = dataDir.Remove(dataTmp)
		}
	}()
	base, metaBase := path.Base(key), path.Base(metaPath(key))
	// The metadata file is written only when the content type is not the
	// one the key implies: most artifacts then cost one file, not two.
	var metaDir *os.Root
	var metaTmp string
	if contentType != impliedContentType(key) {
		meta, err := json.Marshal(localMeta{ContentType: contentType})
		if err != nil {
			return err
		}
		metaDir, metaTmp, err = l.writeTemp(path.Dir(metaPath(key)), durable, func(_ *os.Root, f *os.File) error {
			_, err := f.Write(meta)
			return err
		})
		if err != nil {
			return err
		}
		defer metaDir.Close()
		defer func() {
			if metaTmp != "" {
				_ = metaDir.Remove(metaTmp)
			}
		}()
	}

	mu := l.lock(key)
	defer mu.Unlock()
	// Metadata first: the data file decides whether the key exists, so a
	// crash in between leaves the old artifact with the new content type at
	// worst, never a visible artifact without metadata.
	metaRemoved := false
	if metaDir != nil {
		if err := metaDir.Rename(metaTmp, metaBase); err != nil {
			return err
		}
		metaTmp = ""
	} else {
		// A metadata file left by an earlier Put of the key would outlive
		// this one's content type.
		err := l.root.Remove(metaPath(key))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		metaRemoved = err == nil
	}
	if err := dataDir.Rename(dataTmp, base); err != nil {
		return err
	}
	dataTmp = ""
	if !durable {
		return nil // SyncKeys does the rest
	}
	switch {
	case metaDir != nil:
		if err := syncRootDir(metaDir); err != nil {
			return err
		}
	case metaRemoved:
		if err := l.syncBatch([]string{path.Dir(metaPath(key))}); err != nil {
			return err
		}
	}
	return syncRootDir(dataDir)
}

// writeTemp creates a fresh temporary file in dir (inside the root, made if
// missing), fills it with fill, fsyncs it (when durable) and closes it. It
// returns dir opened, which the caller closes, and the file's name in it.
func (l *Local) writeTemp(dir string, durable bool, fill func(*os.Root, *os.File) error) (*os.Root, string, error) {
	var (
		d    *os.Root
		f    *os.File
		name string
		err  error
	)
	// A concurrent Delete may prune dir between MkdirAll and OpenFile; retry.
	for attempt := 0; ; attempt++ {
		// The folder usually exists: make it only when it does not.
		d, err = l.root.OpenRoot(dir)
		if errors.Is(err, fs.ErrNotExist) {
			if err := l.root.MkdirAll(dir, dirPerm); err != nil {
				return nil, "", err
			}
			d, err = l.root.OpenRoot(dir)
		}
		if err == nil {
			name = tmpPrefix + randomHex()
			f, err = d.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, filePerm)
			if err != nil {
				d.Close()
			}
		}
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) || attempt == 3 {
			return nil, "", err
		}
	}
	err = fill(d, f)
	if err == nil && durable {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = d.Remove(name)
		d.Close()
		return nil, "", err
	}
	return d, name, nil
}

// syncRootDir fsyncs the folder d is opened on.
func syncRootDir(d *os.Root) error {
	return syncIn(d, ".")
}

// Get opens key; see Store.
func (l *Local) Get(ctx context.Context, key string) (io.ReadCloser, Info, error) {
	f, info, err := l.open(key)
	if err != nil {
		return nil, Info{}, err
	}
	return f, info, nil
}

// open returns the file itself so the HTTP handler can seek in it.
func (l *Local) open(key string) (*os.File, Info, error) {
	if err := l.checkKey(key); err != nil {
		return nil, Info{}, err
	}
	mu := l.lock(key)
	defer mu.Unlock()
	f, err := l.root.Open(key)
	if err != nil {
		return nil, Info{}, fmt.Errorf("artifact: get %q: %w", key, mapNotExist(err))
	}
	info, err := l.describe(key, f.Stat)
	if err != nil {
		_ = f.Close()
		return nil, Info{}, fmt.Errorf("artifact: get %q: %w", key, err)
	}
	return f, info, nil
}

// Stat describes key; see Store.
func (l *Local) Stat(ctx context.Context, key string) (Info, error) {
	if err := l.checkKey(key); err != nil {
		return Info{}, err
	}
	mu := l.lock(key)
	defer mu.Unlock()
	info, err := l.describe(key, func() (fs.FileInfo, error) { return l.root.Stat(key) })
	if err != nil {
		return Info{}, fmt.Errorf("artifact: stat %q: %w", key, err)
	}
	return info, nil
}

func (l *Local) describe(key string, stat func() (fs.FileInfo, error)) (Info, error) {
	fi, err := stat()
	if err != nil {
		return Info{}, mapNotExist(err)
	}
	if !fi.Mode().IsRegular() {
		return Info{}, ErrNotFound
	}
	ct, err := l.contentType(key)
	if err != nil {
		return Info{}, err
	}
	return Info{Key: key, Size: fi.Size(), ContentType: ct, ModTime: fi.ModTime()}, nil
}

func (l *Local) contentType(key string) (string, error) {
	b, err := l.root.ReadFile(metaPath(key))
	if errors.Is(err, fs.ErrNotExist) {
		return impliedContentType(key), nil
	}
	if err != nil {
		return "", err
	}
	var m localMeta
	if err := json.Unmarshal(b, &m); err != nil {
		return "", fmt.Errorf("metadata: %w", err)
	}
	return orDefaultContentType(m.ContentType), nil
}

// Delete removes key and its metadata; see Store.
func (l *Local) Delete(ctx context.Context, key string) error {
	if err := l.checkKey(key); err != nil {
		return err
	}
	if err := l.delete(key); err != nil {
		return fmt.Errorf("artifact: delete %q: %w", key, err)
	}
	l.prune(path.Dir(key))
	l.prune(path.Dir(metaPath(key)))
	return nil
}

func (l *Local) delete(key string) error {
	mu := l.lock(key)
	defer mu.Unlock()
	fi, err := l.root.Lstat(key)
	if err != nil {
		if errors.Is(mapNotExist(err), ErrNotFound) {
			return nil
		}
		return err
	}
	if fi.IsDir() {
		return nil // a directory is a key prefix, not an artifact
	}
	if err := l.root.Remove(key); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := l.root.Remove(metaPath(key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// prune removes dir and its parents while they are empty directories, so
// deleted runs leave no directory skeletons behind. Failure just stops it.
//
// os.Root has no rmdir-only call, and Remove would also delete a file or a
// symlink, so prune checks with Lstat first. pruneMu makes that check
// reliable: only prune removes directories, and nothing else can put a file
// where a directory stands.
func (l *Local) prune(dir string) {
	l.pruneMu.Lock()
	defer l.pruneMu.Unlock()
	for dir != "." && dir != metaDir {
		fi, err := l.root.Lstat(dir)
		if err != nil || !fi.IsDir() || l.root.Remove(dir) != nil {
			return
		}
		dir = path.Dir(dir)
	}
}

// List walks only the directory the prefix points into; see Store.
func (l *Local) List(ctx context.Context, prefix string) ([]Info, error) {
	if err := validatePrefix(prefix); err != nil {
		return nil, err
	}
	start := "."
	if i := strings.LastIndex(prefix, "/"); i >= 0 {
		start = prefix[:i]
	}
	var out []Info
	err := fs.WalkDir(l.root.FS(), start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == start && errors.Is(mapNotExist(err), ErrNotFound) {
				return fs.SkipAll // nothing under this prefix
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), reservedPrefix) {
			if d.IsDir() {
				return fs.SkipDir // the metadata tree
			}
			return nil // a temporary file
		}
		if d.IsDir() {
			if p != start && p != "." && !strings.HasPrefix(p+"/", prefix) {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !strings.HasPrefix(p, prefix) {
			return nil
		}
		fi, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil // deleted while we walked
		}
		if err != nil {
			return err
		}
		out = append(out, Info{Key: p, Size: fi.Size(), ModTime: fi.ModTime()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("artifact: list %q: %w", prefix, err)
	}
	slices.SortFunc(out, func(a, b Info) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// URL returns a link to NewLocalHandler signed until now+ttl; see Store.
func (l *Local) URL(ctx context.Context, key string, ttl time.Duration) (string, error) {
	if err := l.checkKey(key); err != nil {
		return "", err
	}
	if err := checkTTL(ttl); err != nil {
		return "", fmt.Errorf("artifact: url %q: %w", key, err)
	}
	expires := time.Now().Add(ttl)
	q := url.Values{}
	q.Set("expires", strconv.FormatInt(expires.Unix(), 10))
	q.Set("sig", l.signer.Sign(key, expires))
	return l.baseURL + "/artifacts/" + escapeKey(key) + "?" + q.Encode(), nil
}

// Ping checks that the directory is still the one that was opened; see Store.
func (l *Local) Ping(ctx context.Context) error {
	opened, err := l.root.Stat(".")
	if err != nil {
		return fmt.Errorf("artifact: ping %q: %w", l.dir, err)
	}
	now, err := os.Stat(l.dir)
	if err != nil {
		return fmt.Errorf("artifact: ping: %w", err)
	}
	if !os.SameFile(opened, now) {
		return fmt.Errorf("artifact: ping: %q was replaced after it was opened", l.dir)
	}
	if minFree := l.minFree.Load(); minFree > 0 {
		free, err := freeBytes(l.dir)
		if err != nil {
			return fmt.Errorf("artifact: ping: free space of %q: %w", l.dir, err)
		}
		if free < minFree {
			return fmt.Errorf("%w: %q has %d bytes free, below the %d bytes required", ErrLowSpace, l.dir, free, minFree)
		}
	}
	return nil
}

// freeBytes is the space an unprivileged writer may still use on the file
// system holding dir.
func freeBytes(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// checkKey is ValidateKey plus a belt-and-braces check on the OS path; the
// os.Root is the real guard against escapes.
func (l *Local) checkKey(key string) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	if !filepath.IsLocal(filepath.FromSlash(key)) {
		return fmt.Errorf("artifact: %w %q: not a local path", ErrInvalidKey, shorten(key))
	}
	return nil
}

func (l *Local) lock(key string) *sync.Mutex {
	h := fnv.New32a()
	h.Write([]byte(key))
	mu := &l.locks[h.Sum32()%uint32(len(l.locks))]
	mu.Lock()
	return mu
}

func metaPath(key string) string {
	return metaDir + "/" + key + ".json"
}

// mapNotExist turns "no such file" and "a parent is a file" into ErrNotFound.
func mapNotExist(err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return ErrNotFound
	}
	return err
}

func escapeKey(key string) string {
	segs := strings.Split(key, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

func randomHex() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // never returns an error (crypto/rand, Go 1.24+)
	return hex.EncodeToString(b[:])
}

// fileSource is a reader of files in the store, which can copy up to
// limit bytes of them into f inside the kernel (copy_file_range where the
// system has it) instead of through a buffer.
type fileSource interface {
	copyToFile(ctx context.Context, f *os.File, limit int64) (int64, error)
}

// ctxReader stops a long copy when the context is cancelled.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
