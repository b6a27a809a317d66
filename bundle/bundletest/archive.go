// Package bundletest builds submission bundles on the fly for tests: each
// format of docs/bundle-formats.md as a zip or tar.gz file, and hostile
// archives (links, special files, traversal, bombs, corrupt bytes) that the
// bundle reader must refuse. Builders write to a file and return its path;
// they fail the test on any I/O error.
package bundletest

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"hash/crc32"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Kind is an archive container.
type Kind string

// Archive containers.
const (
	Zip   Kind = "zip"
	TarGz Kind = "tar.gz"
)

// KindOf is the container a path's extension names: Zip for ".zip", TarGz
// otherwise (".tar.gz", ".tgz").
func KindOf(path string) Kind {
	if strings.HasSuffix(strings.ToLower(path), ".zip") {
		return Zip
	}
	return TarGz
}

// EntryType is the type of an archive entry.
type EntryType int

// Entry types. Zip has no hard links: writing one to a zip fails the test.
const (
	Regular EntryType = iota
	Dir
	Symlink
	HardLink
	FIFO
	CharDevice
	BlockDevice
)

// Entry is one archive entry. Its content is Body, or what Open returns
// (called again each time the content is needed, so large contents are
// streamed instead of held in memory).
type Entry struct {
	Name string
	Body []byte
	Open func() io.Reader
	Type EntryType
	Link string      // target of a symbolic or hard link
	Mode fs.FileMode // permission bits; 0644 (files) or 0755 (folders) when zero
	// Store writes a zip entry uncompressed.
	Store bool
	// DeclaredSize, when positive, is the uncompressed size a zip entry's
	// headers claim instead of the real one: a zip bomb that lies about its size.
	DeclaredSize int64
}

// content opens the entry's content.
func (e Entry) content() io.Reader {
	if e.Open != nil {
		return e.Open()
	}
	return bytes.NewReader(e.Body)
}

// Zeros is content of n zero bytes: compresses about a thousandfold.
func Zeros(n int64) func() io.Reader {
	return func() io.Reader { return io.LimitReader(zeroReader{}, n) }
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// Random is content of n pseudo-random bytes from seed: does not compress.
func Random(n int64, seed uint64) func() io.Reader {
	return func() io.Reader {
		return io.LimitReader(&randomReader{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}, n)
	}
}

type randomReader struct{ rng *rand.Rand }

func (r *randomReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r.rng.Uint32())
	}
	return len(p), nil
}

// Wrap puts every entry under a top-level folder, as archivers do when a
// folder is compressed ("results/107/agent_response.json").
func Wrap(folder string, entries []Entry) []Entry {
	out := make([]Entry, 0, len(entries)+1)
	out = append(out, Entry{Name: folder + "/", Type: Dir})
	for _, e := range entries {
		e.Name = folder + "/" + e.Name
		out = append(out, e)
	}
	return out
}

// Write writes entries to path as a kind archive, whatever path's extension
// (a tar.gz named .zip is how a disguised archive is made), and returns path.
func Write(t testing.TB, path string, kind Kind, entries []Entry) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatalf("bundletest: %v", err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatalf("bundletest: %v", err)
	}
	defer f.Close()
	switch kind {
	case Zip:
		err = writeZip(f, entries)
	case TarGz:
		err = writeTarGz(f, entries)
	default:
		t.Fatalf("bundletest: unknown archive kind %q", kind)
	}
	if err != nil {
		t.Fatalf("bundletest: write %s: %v", path, err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("bundletest: %v", err)
	}
	return path
}

// modTime is every entry's modification time, so archives are reproducible.
func modTime() time.Time { return time.Date(2025, 10, 19, 14, 40, 0, 0, time.UTC) }

func writeZip(w io.Writer, entries []Entry) error {
	zw := zip.NewWriter(w)
	for _, e := range entries {
		fh := &zip.FileHeader{Name: e.Name, Method: zip.Deflate, Modified: modTime()}
		if e.Store {
			fh.Method = zip.Store
		}
		mode := e.Mode
		switch e.Type {
		case Regular:
			fh.SetMode(perm(mode, 0o644))
		case Dir:
			fh.Method = zip.Store
			fh.SetMode(fs.ModeDir | perm(mode, 0o755))
		case Symlink:
			fh.SetMode(fs.ModeSymlink | 0o777)
			e.Body, e.Open = []byte(e.Link), nil
		case FIFO:
			fh.SetMode(fs.ModeNamedPipe | perm(mode, 0o644))
		case CharDevice:
			fh.SetMode(fs.ModeDevice | fs.ModeCharDevice | perm(mode, 0o644))
		case BlockDevice:
			fh.SetMode(fs.ModeDevice | perm(mode, 0o644))
		case HardLink:
			return errString("zip archives have no hard links")
		}
		if e.DeclaredSize > 0 {
			if err := writeLyingZipEntry(zw, fh, e); err != nil {
				return err
			}
			continue
		}
		ew, err := zw.CreateHeader(fh)
		if err != nil {
			return err
		}
		if e.Type != Dir {
			if _, err := io.Copy(ew, e.content()); err != nil {
				return err
			}
		}
	}
	return zw.Close()
}

// writeLyingZipEntry compresses the entry itself and writes headers that
// declare e.DeclaredSize uncompressed bytes, whatever the content holds.
func writeLyingZipEntry(zw *zip.Writer, fh *zip.FileHeader, e Entry) error {
	var compressed bytes.Buffer
	crc := crc32.NewIEEE()
	fw, err := flate.NewWriter(&compressed, flate.BestCompression)
	if err != nil {
		return err
	}
	if _, err := io.Copy(io.MultiWriter(fw, crc), e.content()); err != nil {
		return err
	}
	if err := fw.Close(); err != nil {
		return err
	}
	fh.Method = zip.Deflate
	fh.CRC32 = crc.Sum32()
	fh.CompressedSize64 = uint64(compressed.Len())
	fh.UncompressedSize64 = uint64(e.DeclaredSize)
	ew, err := zw.CreateRaw(fh)
	if err != nil {
		return err
	}
	_, err = ew.Write(compressed.Bytes())
	return err
}

func writeTarGz(w io.Writer, entries []Entry) error {
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.Name, ModTime: modTime(), Mode: int64(perm(e.Mode, 0o644)), Linkname: e.Link}
		switch e.Type {
		case Regular:
			hdr.Typeflag = tar.TypeReg
			size, err := io.Copy(io.Discard, e.content())
			if err != nil {
				return err
			}
			hdr.Size = size
		case Dir:
			hdr.Typeflag, hdr.Mode = tar.TypeDir, int64(perm(e.Mode, 0o755))
		case Symlink:
			hdr.Typeflag = tar.TypeSymlink
		case HardLink:
			hdr.Typeflag = tar.TypeLink
		case FIFO:
			hdr.Typeflag = tar.TypeFifo
		case CharDevice:
			hdr.Typeflag = tar.TypeChar
		case BlockDevice:
			hdr.Typeflag = tar.TypeBlock
		}
		if !isASCII(e.Name) {
			// PAX records must be UTF-8; the GNU format takes any bytes,
			// which is how a name that is not UTF-8 gets into a tar.
			hdr.Format = tar.FormatGNU
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if hdr.Typeflag == tar.TypeReg {
			if _, err := io.Copy(tw, e.content()); err != nil {
				return err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

func perm(mode, def fs.FileMode) fs.FileMode {
	if mode.Perm() == 0 {
		return def
	}
	return mode.Perm()
}

func isASCII(s string) bool {
	for i := range len(s) {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

type errString string

func (e errString) Error() string { return string(e) }

// FromDir returns the regular files under root as entries named by their
// path relative to root, each under prefix ("" for none): real agent outputs
// become a bundle this way.
func FromDir(t testing.TB, root, prefix string) []Entry {
	t.Helper()
	var entries []Entry
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		body, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		if prefix != "" {
			name = prefix + "/" + name
		}
		entries = append(entries, Entry{Name: name, Body: body})
		return nil
	})
	if err != nil {
		t.Fatalf("bundletest: read %s: %v", root, err)
	}
	return entries
}
