package bundletest

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"proctor/bundle"
)

// Limits are small limits for tests: every Hostile case breaks them, every
// bundle the format builders make (a few tasks of a few steps) keeps within
// them, and none needs more than a few MiB of disk.
func Limits() bundle.Limits {
	return bundle.Limits{
		MaxBundleBytes: 8 << 20,
		MaxFiles:       500,
		MaxFileBytes:   1 << 20,
		MaxTotalBytes:  4 << 20,
		MaxRatio:       100,
		MaxJSONBytes:   256 << 10,
		MaxHARBytes:    512 << 10,
		MaxImagePixels: 4_000_000,
	}
}

// Case is one hostile or broken archive the bundle reader must refuse.
type Case struct {
	Name string
	// Build writes the archive into dir and returns its path.
	Build func(t testing.TB, dir string) string
	// Message is a substring of the *bundle.RefusedError's message under
	// Limits().
	Message string
}

// Hostile lists archives refused whole under Limits(), each with the message
// the refusal carries. Every archive also holds a valid WebArena-Verified
// task, so only the hostile part can explain the refusal.
func Hostile() []Case {
	valid := WebArenaVerifiedEntries(WAVTask{ID: "107"})
	with := func(kind Kind, extra ...Entry) func(t testing.TB, dir string) string {
		return func(t testing.TB, dir string) string {
			t.Helper()
			return Write(t, filepath.Join(dir, "bundle."+string(kind)), kind, append(append([]Entry{}, valid...), extra...))
		}
	}
	raw := func(name string, content func(t testing.TB, dir string) []byte) func(t testing.TB, dir string) string {
		return func(t testing.TB, dir string) string {
			t.Helper()
			path := filepath.Join(dir, name)
			if err := os.WriteFile(path, content(t, dir), 0o644); err != nil {
				t.Fatalf("bundletest: %v", err)
			}
			return path
		}
	}
	truncated := func(kind Kind) func(t testing.TB, dir string) []byte {
		return func(t testing.TB, dir string) []byte {
			t.Helper()
			entries := append(append([]Entry{}, valid...), Entry{Name: "107/filler.bin", Open: Random(64<<10, 7)})
			full := Write(t, filepath.Join(dir, "full."+string(kind)), kind, entries)
			b, err := os.ReadFile(full)
			if err != nil {
				t.Fatalf("bundletest: %v", err)
			}
			return b[:len(b)/2]
		}
	}
	// damaged writes a valid tar.gz bundle, then lets change spoil its bytes.
	damaged := func(change func([]byte) []byte) func(t testing.TB, dir string) []byte {
		return func(t testing.TB, dir string) []byte {
			t.Helper()
			b, err := os.ReadFile(Write(t, filepath.Join(dir, "whole.tar.gz"), TarGz, valid))
			if err != nil {
				t.Fatalf("bundletest: %v", err)
			}
			return change(b)
		}
	}
	manyFiles := func() []Entry {
		var out []Entry
		for i := range Limits().MaxFiles {
			out = append(out, Entry{Name: fmt.Sprintf("107/extra/%04d.txt", i), Body: []byte("x")})
		}
		return out
	}
	bigFiles := func(n int, content func(i int) func() io.Reader) []Entry {
		var out []Entry
		for i := range n {
			out = append(out, Entry{Name: fmt.Sprintf("107/blob-%d.bin", i), Open: content(i)})
		}
		return out
	}
	randomKiB := func(kib int64) func(i int) func() io.Reader {
		return func(i int) func() io.Reader { return Random(kib<<10, uint64(i)+1) }
	}
	zerosKiB := func(kib int64) func(i int) func() io.Reader {
		return func(int) func() io.Reader { return Zeros(kib << 10) }
	}
	var cases []Case
	for _, kind := range []Kind{Zip, TarGz} {
		k := string(kind)
		cases = append(cases,
			Case{k + " absolute path", with(kind, Entry{Name: "/etc/passwd", Body: []byte("root")}), "absolute path"},
			Case{k + " parent traversal", with(kind, Entry{Name: "../evil.json", Body: []byte("{}")}), `".."`},
			Case{k + " nested traversal", with(kind, Entry{Name: "107/../../evil.json", Body: []byte("{}")}), `".."`},
			Case{k + " backslash traversal", with(kind, Entry{Name: `107\..\..\evil.json`, Body: []byte("{}")}), "backslash"},
			Case{k + " symbolic link", with(kind, Entry{Name: "107/passwd", Type: Symlink, Link: "/etc/passwd"}), "symbolic link"},
			Case{k + " named pipe", with(kind, Entry{Name: "107/pipe", Type: FIFO}), "special file"},
			Case{k + " character device", with(kind, Entry{Name: "107/null", Type: CharDevice}), "special file"},
			Case{k + " name not UTF-8", with(kind, Entry{Name: "107/caf\xe9.json", Body: []byte("{}")}), "not valid UTF-8"},
			Case{k + " too many files", with(kind, manyFiles()...), fmt.Sprintf("more than %d files", Limits().MaxFiles)},
			Case{k + " file over the per-file limit", with(kind, Entry{Name: "107/big.bin", Open: Random(Limits().MaxFileBytes+1, 1)}), "per-file limit"},
			Case{k + " total over the uncompressed limit", with(kind, bigFiles(5, randomKiB(900))...), "uncompressed limit"},
			Case{k + " compression ratio bomb", with(kind, bigFiles(4, zerosKiB(900))...), "compression ratio"},
			Case{k + " duplicate entry", with(kind, Entry{Name: "107/agent_response.json", Body: []byte(DefaultAgentResponse)}), "duplicate entry"},
			Case{k + " over the bundle size limit", with(kind, Entry{Name: "107/big.bin", Open: Random(Limits().MaxBundleBytes+1, 2), Store: true}), "bundle size limit"},
			Case{k + " unknown format", func(t testing.TB, dir string) string {
				t.Helper()
				return Write(t, filepath.Join(dir, "notes."+k), kind, []Entry{{Name: "notes/readme.txt", Body: []byte("hello")}})
			}, "no known bundle format: expected"},
			Case{k + " empty archive", func(t testing.TB, dir string) string {
				t.Helper()
				return Write(t, filepath.Join(dir, "empty."+k), kind, nil)
			}, "no known bundle format: expected"},
			Case{k + " truncated", raw("truncated."+k, truncated(kind)), "corrupt " + k + " archive"},
		)
	}
	cases = append(cases,
		Case{"tar.gz hard link", with(TarGz, Entry{Name: "107/shadow", Type: HardLink, Link: "107/agent_response.json"}), "hard link"},
		Case{"tar.gz block device", with(TarGz, Entry{Name: "107/disk", Type: BlockDevice}), "special file"},
		Case{"zip bomb with lying headers", with(Zip, Entry{Name: "107/bomb.json", Open: Zeros(16 << 20), DeclaredSize: 1000}), "header declares"},
		Case{"zip entry ratio bomb", with(Zip, Entry{Name: "107/zeros.json", Open: Zeros(900 << 10)}), "compression ratio"},
		Case{"random bytes", raw("random.zip", func(testing.TB, string) []byte { return readAll(Random(4096, 3)) }), "not a zip or tar.gz archive"},
		Case{"text file", raw("notes.tar.gz", func(testing.TB, string) []byte { return []byte("just some text\n") }), "not a zip or tar.gz archive"},
		Case{"empty file", raw("empty.zip", func(testing.TB, string) []byte { return nil }), "not a zip or tar.gz archive"},
		// The gzip trailer (CRC-32, then length, 4 bytes each) follows the tar
		// end marker: an archive whose entries all decode is still damaged.
		Case{"tar.gz with a wrong CRC", raw("crc.tar.gz", damaged(func(b []byte) []byte { b[len(b)-8] ^= 0xff; return b })), "gzip checksum or length trailer does not match"},
		Case{"tar.gz with a wrong length", raw("length.tar.gz", damaged(func(b []byte) []byte { b[len(b)-1] ^= 0x01; return b })), "gzip checksum or length trailer does not match"},
		Case{"tar.gz without its trailer", raw("trailer.tar.gz", damaged(func(b []byte) []byte { return b[:len(b)-8] })), "the gzip stream ends early"},
		Case{"tar.gz with bytes after the gzip stream", raw("tail.tar.gz", damaged(func(b []byte) []byte { return append(b, "trailing bytes"...) })), "bytes after the gzip stream are not gzip"},
		Case{"gzip that is not a tar", raw("plain.tar.gz", func(t testing.TB, _ string) []byte { return gzipped(t, []byte("not a tar archive, only text\n")) }), "corrupt tar.gz archive"},
	)
	return cases
}

func readAll(open func() io.Reader) []byte {
	b, err := io.ReadAll(open())
	if err != nil {
		panic(err) // generated content cannot fail
	}
	return b
}

func gzipped(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	if _, err := gz.Write(b); err != nil {
		t.Fatalf("bundletest: %v", err)
	}
	if err := gz.Close(); err != nil {
		t.Fatalf("bundletest: %v", err)
	}
	return buf.Bytes()
}
