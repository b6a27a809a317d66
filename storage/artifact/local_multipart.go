package artifact

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

// uploadsDir holds the parts of unfinished multipart uploads, one directory
// per upload: "key" names the artifact it is for, "<n>" holds part n and
// "<n>.md5" its digest. Like the metadata tree, it can never collide with a key.
//
// A strided upload (BeginMultipartStrided) also has "stride", the size of
// every part but the last, and "data", the artifact being assembled: part n
// is written at offset (n-1)×stride, then "<n>.placed" records its size and
// digest. "<n>.claim" marks the part's range taken; a part sent again while
// its range is taken goes to "<n>" as in other uploads, and wins.
const uploadsDir = reservedPrefix + "uploads"

const (
	uploadKey    = "key"
	uploadStride = "stride"
	uploadData   = "data"
)

var (
	_ Multipart        = (*Local)(nil)
	_ StridedMultipart = (*Local)(nil)
)

// BeginMultipart starts an upload; see Multipart.
func (l *Local) BeginMultipart(ctx context.Context, key string) (string, error) {
	return l.beginMultipart(key, 0)
}

// BeginMultipartStrided starts an upload whose parts are written in place;
// see StridedMultipart.
func (l *Local) BeginMultipartStrided(ctx context.Context, key string, partSize int64) (string, error) {
	if partSize <= 0 {
		return "", fmt.Errorf("artifact: begin upload of %q: part size %d is not positive", key, partSize)
	}
	return l.beginMultipart(key, partSize)
}

func (l *Local) beginMultipart(key string, stride int64) (string, error) {
	if err := l.checkKey(key); err != nil {
		return "", err
	}
	id := randomHex()
	dir := path.Join(uploadsDir, id)
	if err := l.root.MkdirAll(dir, dirPerm); err != nil {
		return "", fmt.Errorf("artifact: begin upload of %q: %w", key, err)
	}
	err := l.writeFile(dir, uploadKey, strings.NewReader(key), int64(len(key)))
	if err == nil && stride > 0 {
		s := strconv.FormatInt(stride, 10)
		err = l.writeFile(dir, uploadStride, strings.NewReader(s), int64(len(s)))
	}
	if err != nil {
		_ = l.root.RemoveAll(dir)
		return "", fmt.Errorf("artifact: begin upload of %q: %w", key, err)
	}
	return id, nil
}

// stride is the upload's part size when it is strided, else 0.
func (l *Local) stride(dir string) (int64, error) {
	b, err := l.root.ReadFile(path.Join(dir, uploadStride))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("upload part size %q is not a positive number", b)
	}
	return n, nil
}

// PutPart stores part n atomically with its digest; see Multipart.
func (l *Local) PutPart(ctx context.Context, key, uploadID string, n int, r io.Reader, size int64) (Part, error) {
	dir, err := l.uploadDir(key, uploadID)
	if err != nil {
		return Part{}, err
	}
	if err := checkPart(n, size); err != nil {
		return Part{}, fmt.Errorf("artifact: put part %d of %q: %w", n, key, err)
	}
	stride, err := l.stride(dir)
	if err != nil {
		return Part{}, fmt.Errorf("artifact: put part %d of %q: %w", n, key, err)
	}
	if stride > 0 && size <= stride {
		p, placed, err := l.placePart(ctx, dir, n, r, size, stride)
		if err != nil {
			return Part{}, fmt.Errorf("artifact: put part %d of %q: %w", n, key, err)
		}
		if placed {
			return p, nil
		}
	}
	sum := md5.New()
	src := io.TeeReader(ctxReader{ctx: ctx, r: io.LimitReader(r, size)}, sum)
	name := strconv.Itoa(n)
	// The digest goes first and the data second, so a part is listed only
	// once both exist; a crash in between leaves a stale digest that the next
	// PutPart of the same number replaces.
	d, tmp, err := l.writeTemp(dir, true, func(_ *os.Root, f *os.File) error {
		got, err := io.Copy(f, src)
		if err == nil && got < size {
			err = fmt.Errorf("read %d of %d bytes: %w", got, size, io.ErrUnexpectedEOF)
		}
		return err
	})
	if err != nil {
		return Part{}, fmt.Errorf("artifact: put part %d of %q: %w", n, key, err)
	}
	d.Close()
	tmp = path.Join(dir, tmp)
	defer func() { _ = l.root.Remove(tmp) }()
	digest := hex.EncodeToString(sum.Sum(nil))
	if err := l.writeFile(dir, name+".md5", strings.NewReader(digest), int64(len(digest))); err != nil {
		return Part{}, fmt.Errorf("artifact: put part %d of %q: %w", n, key, err)
	}
	if err := l.root.Rename(tmp, path.Join(dir, name)); err != nil {
		return Part{}, fmt.Errorf("artifact: put part %d of %q: %w", n, key, err)
	}
	return Part{Number: n, Size: size, MD5: digest}, nil
}

// placePart writes part n of a strided upload into its range of the data
// file, unless that range is taken (placed is then false and nothing was
// read). A part that fails leaves its range free again and is not listed.
func (l *Local) placePart(ctx context.Context, dir string, n int, r io.Reader, size, stride int64) (p Part, placed bool, err error) {
	name := strconv.Itoa(n)
	claim := path.Join(dir, name+".claim")
	c, err := l.root.OpenFile(claim, os.O_WRONLY|os.O_CREATE|os.O_EXCL, filePerm)
	if errors.Is(err, fs.ErrExist) {
		return Part{}, false, nil
	}
	if err != nil {
		return Part{}, false, err
	}
	_ = c.Close()
	defer func() {
		if err != nil {
			_ = l.root.Remove(claim)
		}
	}()
	f, err := l.root.OpenFile(path.Join(dir, uploadData), os.O_WRONLY|os.O_CREATE, filePerm)
	if err != nil {
		return Part{}, false, err
	}
	defer f.Close()
	sum := md5.New()
	src := io.TeeReader(ctxReader{ctx: ctx, r: io.LimitReader(r, size)}, sum)
	got, err := io.Copy(io.NewOffsetWriter(f, int64(n-1)*stride), src)
	if err == nil && got < size {
		err = fmt.Errorf("read %d of %d bytes: %w", got, size, io.ErrUnexpectedEOF)
	}
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		return Part{}, false, err
	}
	digest := hex.EncodeToString(sum.Sum(nil))
	record := strconv.FormatInt(size, 10) + " " + digest
	if err := l.writeFile(dir, name+".placed", strings.NewReader(record), int64(len(record))); err != nil {
		return Part{}, false, err
	}
	return Part{Number: n, Size: size, MD5: digest}, true, nil
}

// ListParts lists the stored parts by number; see Multipart.
func (l *Local) ListParts(ctx context.Context, key, uploadID string) ([]Part, error) {
	dir, err := l.uploadDir(key, uploadID)
	if err != nil {
		return nil, err
	}
	entries, err := fs.ReadDir(l.root.FS(), dir)
	if err != nil {
		return nil, fmt.Errorf("artifact: list parts of %q: %w", key, mapNotExist(err))
	}
	byNumber := map[int]Part{}
	for _, e := range entries {
		if p, ok := l.placedPart(dir, e); ok {
			if _, sent := byNumber[p.Number]; !sent {
				byNumber[p.Number] = p
			}
			continue
		}
		n, err := strconv.Atoi(e.Name())
		if err != nil || !e.Type().IsRegular() {
			continue // "key", digests and temporary files
		}
		fi, err := e.Info()
		if err != nil {
			continue // replaced while listing
		}
		digest, err := fs.ReadFile(l.root.FS(), path.Join(dir, e.Name()+".md5"))
		if err != nil {
			continue
		}
		byNumber[n] = Part{Number: n, Size: fi.Size(), MD5: string(digest)} // a part sent again wins
	}
	parts := slices.Collect(maps.Values(byNumber))
	slices.SortFunc(parts, func(a, b Part) int { return a.Number - b.Number })
	return parts, nil
}

// placedPart reads a strided upload's "<n>.placed" record.
func (l *Local) placedPart(dir string, e fs.DirEntry) (Part, bool) {
	num, ok := strings.CutSuffix(e.Name(), ".placed")
	if !ok || !e.Type().IsRegular() {
		return Part{}, false
	}
	n, err := strconv.Atoi(num)
	if err != nil {
		return Part{}, false
	}
	b, err := l.root.ReadFile(path.Join(dir, e.Name()))
	if err != nil {
		return Part{}, false
	}
	size, digest, ok := strings.Cut(string(b), " ")
	held, err := strconv.ParseInt(size, 10, 64)
	if !ok || err != nil {
		return Part{}, false
	}
	return Part{Number: n, Size: held, MD5: digest}, true
}

// CompleteMultipart joins the parts into key and removes the upload; see Multipart.
func (l *Local) CompleteMultipart(ctx context.Context, key, uploadID string, parts []Part) error {
	dir, err := l.uploadDir(key, uploadID)
	if err != nil {
		return err
	}
	stored, err := l.ListParts(ctx, key, uploadID)
	if err != nil {
		return err
	}
	if err := checkComplete(parts, stored); err != nil {
		return fmt.Errorf("artifact: complete upload of %q: %w", key, err)
	}
	var total int64
	for _, p := range parts {
		total += p.Size
	}
	stride, err := l.stride(dir)
	if err != nil {
		return fmt.Errorf("artifact: complete upload of %q: %w", key, err)
	}
	if stride > 0 {
		if err := l.completeStrided(ctx, key, dir, parts, stride, total); err != nil {
			l.prune(path.Dir(key))
			return fmt.Errorf("artifact: complete upload of %q: %w", key, err)
		}
		return l.AbortMultipart(ctx, key, uploadID)
	}
	joined := &partsReader{l: l, dir: dir, parts: parts}
	defer joined.Close()
	if err := l.Put(ctx, key, joined, total, ""); err != nil {
		return err
	}
	return l.AbortMultipart(ctx, key, uploadID)
}

// completeStrided finishes a strided upload: parts sent again are copied
// into their ranges of the data file, which is cut to the artifact's size,
// synced and linked in as key. The upload is left whole for the caller to
// remove, so a completion that fails can be tried again.
func (l *Local) completeStrided(ctx context.Context, key, dir string, parts []Part, stride, total int64) error {
	for i, p := range parts {
		if p.Size > stride || (i < len(parts)-1 && p.Size != stride) {
			return fmt.Errorf("part %d holds %d bytes: every part of this upload but the last holds %d", p.Number, p.Size, stride)
		}
	}
	data, err := l.root.OpenFile(path.Join(dir, uploadData), os.O_RDWR|os.O_CREATE, filePerm)
	if err != nil {
		return err
	}
	defer data.Close()
	for _, p := range parts {
		if err := ctx.Err(); err != nil {
			return err
		}
		sent, err := l.root.Open(path.Join(dir, strconv.Itoa(p.Number)))
		if errors.Is(err, fs.ErrNotExist) {
			continue // placed as it arrived
		}
		if err != nil {
			return err
		}
		_, err = io.Copy(io.NewOffsetWriter(data, int64(p.Number-1)*stride), io.LimitReader(sent, p.Size))
		_ = sent.Close()
		if err != nil {
			return err
		}
	}
	if err := data.Truncate(total); err != nil {
		return err
	}
	if err := data.Sync(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	keyDir := path.Dir(key)
	if err := l.root.MkdirAll(keyDir, dirPerm); err != nil {
		return err
	}
	d, err := l.root.OpenRoot(keyDir)
	if err != nil {
		return err
	}
	defer d.Close()
	if fi, err := d.Lstat(path.Base(key)); err == nil && fi.IsDir() {
		return errors.New("key is a directory (a prefix of other keys)")
	}
	// A second name for the data file, in key's folder: commit renames it
	// into place, or removes it and leaves the upload as it was.
	tmp := tmpPrefix + randomHex()
	if err := l.root.Link(path.Join(dir, uploadData), path.Join(keyDir, tmp)); err != nil {
		return err
	}
	return l.commit(key, d, tmp, defaultContentType, true)
}

// AbortMultipart removes the upload's parts; see Multipart.
func (l *Local) AbortMultipart(ctx context.Context, key, uploadID string) error {
	dir, err := l.uploadDir(key, uploadID)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := l.root.RemoveAll(dir); err != nil {
		return fmt.Errorf("artifact: abort upload of %q: %w", key, err)
	}
	return nil
}

// PartURL is not supported by the local store: parts go through the API.
func (l *Local) PartURL(context.Context, string, string, int, int64, time.Duration) (string, error) {
	return "", ErrNoDirectUpload
}

// uploadDir returns the directory of an upload after checking that it exists
// and belongs to key.
func (l *Local) uploadDir(key, uploadID string) (string, error) {
	if err := l.checkKey(key); err != nil {
		return "", err
	}
	if len(uploadID) != 24 || strings.Trim(uploadID, "0123456789abcdef") != "" {
		return "", fmt.Errorf("artifact: upload %q of %q: %w", uploadID, key, ErrNotFound)
	}
	dir := path.Join(uploadsDir, uploadID)
	owner, err := fs.ReadFile(l.root.FS(), path.Join(dir, uploadKey))
	if err != nil || string(owner) != key {
		return "", fmt.Errorf("artifact: upload %q of %q: %w", uploadID, key, ErrNotFound)
	}
	return dir, nil
}

// writeFile writes a small file in dir atomically.
func (l *Local) writeFile(dir, name string, r io.Reader, size int64) error {
	d, tmp, err := l.writeTemp(dir, true, func(_ *os.Root, f *os.File) error {
		_, err := io.CopyN(f, r, size)
		return err
	})
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Rename(tmp, name); err != nil {
		_ = d.Remove(tmp)
		return err
	}
	return nil
}

// checkPart validates a part number and size.
func checkPart(n int, size int64) error {
	if n < 1 || n > MaxParts {
		return fmt.Errorf("part number %d is outside 1–%d", n, MaxParts)
	}
	if size < 0 {
		return fmt.Errorf("negative part size %d", size)
	}
	return nil
}

// checkComplete checks that parts are numbered 1…len without gaps and match
// what the store holds.
func checkComplete(parts, stored []Part) error {
	if len(parts) == 0 {
		return errors.New("no parts")
	}
	held := make(map[int]Part, len(stored))
	for _, p := range stored {
		held[p.Number] = p
	}
	for i, p := range parts {
		if p.Number != i+1 {
			return fmt.Errorf("parts must be numbered 1 to %d without gaps; found %d at position %d", len(parts), p.Number, i+1)
		}
		h, ok := held[p.Number]
		switch {
		case !ok:
			return fmt.Errorf("part %d was never stored", p.Number)
		case h.Size != p.Size:
			return fmt.Errorf("part %d holds %d bytes, not %d", p.Number, h.Size, p.Size)
		case p.MD5 != "" && !strings.EqualFold(h.MD5, p.MD5):
			return fmt.Errorf("part %d has MD5 %s, not %s", p.Number, h.MD5, p.MD5)
		}
	}
	return nil
}

// partsReader reads parts one after the other, opening each only when the
// previous one is done, so joining thousands of parts holds one file open.
type partsReader struct {
	l     *Local
	dir   string
	parts []Part
	cur   *os.File
}

func (r *partsReader) Read(p []byte) (int, error) {
	for {
		if r.cur == nil {
			if len(r.parts) == 0 {
				return 0, io.EOF
			}
			f, err := r.l.root.Open(path.Join(r.dir, strconv.Itoa(r.parts[0].Number)))
			if err != nil {
				return 0, err
			}
			r.cur, r.parts = f, r.parts[1:]
		}
		n, err := r.cur.Read(p)
		if err == io.EOF {
			_ = r.cur.Close()
			r.cur = nil
			if n > 0 {
				return n, nil
			}
			continue
		}
		return n, err
	}
}

// copyToFile copies the parts not yet read into f, each with f.ReadFrom,
// which copies between files inside the kernel, checking ctx between parts.
// It copies at most limit bytes.
func (r *partsReader) copyToFile(ctx context.Context, f *os.File, limit int64) (int64, error) {
	var total int64
	for total < limit {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		if r.cur == nil {
			if len(r.parts) == 0 {
				break
			}
			part, err := r.l.root.Open(path.Join(r.dir, strconv.Itoa(r.parts[0].Number)))
			if err != nil {
				return total, err
			}
			r.cur, r.parts = part, r.parts[1:]
		}
		n, err := f.ReadFrom(io.LimitReader(r.cur, limit-total))
		total += n
		if err != nil {
			return total, err
		}
		if total < limit {
			_ = r.cur.Close() // read to its end
			r.cur = nil
		}
	}
	return total, nil
}

// Close closes the part being read, if any.
func (r *partsReader) Close() error {
	if r.cur == nil {
		return nil
	}
	err := r.cur.Close()
	r.cur = nil
	return err
}
