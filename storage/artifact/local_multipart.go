package artifact

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
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
const uploadsDir = reservedPrefix + "uploads"

var _ Multipart = (*Local)(nil)

// BeginMultipart starts an upload; see Multipart.
func (l *Local) BeginMultipart(ctx context.Context, key string) (string, error) {
	if err := l.checkKey(key); err != nil {
		return "", err
	}
	id := randomHex()
	dir := path.Join(uploadsDir, id)
	if err := l.root.MkdirAll(dir, dirPerm); err != nil {
		return "", fmt.Errorf("artifact: begin upload of %q: %w", key, err)
	}
	if err := l.writeFile(dir, "key", strings.NewReader(key), int64(len(key))); err != nil {
		_ = l.root.RemoveAll(dir)
		return "", fmt.Errorf("artifact: begin upload of %q: %w", key, err)
	}
	return id, nil
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
	sum := md5.New()
	src := io.TeeReader(ctxReader{ctx: ctx, r: io.LimitReader(r, size)}, sum)
	name := strconv.Itoa(n)
	// The digest goes first and the data second, so a part is listed only
	// once both exist; a crash in between leaves a stale digest that the next
	// PutPart of the same number replaces.
	var tmp string
	d, err := l.writeTemp(dir, true, func(_ *os.Root, f *os.File) error {
		got, err := io.Copy(f, src)
		if err == nil && got < size {
			err = fmt.Errorf("read %d of %d bytes: %w", got, size, io.ErrUnexpectedEOF)
		}
		return err
	}, &tmp)
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
	var parts []Part
	for _, e := range entries {
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
		parts = append(parts, Part{Number: n, Size: fi.Size(), MD5: string(digest)})
	}
	slices.SortFunc(parts, func(a, b Part) int { return a.Number - b.Number })
	return parts, nil
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
	joined := &partsReader{l: l, dir: dir, parts: parts}
	defer joined.Close()
	if err := l.Put(ctx, key, joined, total, ""); err != nil {
		return err
	}
	return l.AbortMultipart(ctx, key, uploadID)
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
	owner, err := fs.ReadFile(l.root.FS(), path.Join(dir, "key"))
	if err != nil || string(owner) != key {
		return "", fmt.Errorf("artifact: upload %q of %q: %w", uploadID, key, ErrNotFound)
	}
	return dir, nil
}

// writeFile writes a small file in dir atomically.
func (l *Local) writeFile(dir, name string, r io.Reader, size int64) error {
	var tmp string
	d, err := l.writeTemp(dir, true, func(_ *os.Root, f *os.File) error {
		_, err := io.CopyN(f, r, size)
		return err
	}, &tmp)
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
