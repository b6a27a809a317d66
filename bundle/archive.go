package bundle

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"io/fs"
)

// ratioFloor is the uncompressed size under which compression ratios are
// not checked: small, repetitive files (pretty-printed JSON, empty markers
// padded to tar blocks) compress far better than 100:1 without being bombs,
// and a bomb needs to expand much further than this to hurt.
const ratioFloor = 256 << 10

// progressStep is how many compressed bytes pass between progress calls.
const progressStep = 256 << 10

// entry is one archive entry as the walk hands it over.
type entry struct {
	Name string // cleaned (cleanName)
	Dir  bool
	// Size is the uncompressed size the archive declares (exact in a tar,
	// a claim in a zip header: the content reader enforces it).
	Size int64
}

// visitFunc is called once per entry in archive order. open returns the
// entry's content; entries whose content is not read to the end are drained
// by the walk (tar) or left unread (zip, where nothing forces reading them).
type visitFunc func(e entry, open func() (io.Reader, error)) error

// walker reads an archive once, refusing it as soon as it breaks a limit.
type walker struct {
	ctx      context.Context
	lim      Limits
	size     int64
	src      *sourceReader
	files    int   // entries, folders included
	total    int64 // uncompressed bytes of all files
	expanded int64 // bytes the archive expanded to (tar.gz: the whole tar stream)
	names    map[string]bool
	fatal    error // the first refusal or read error met inside a content reader
	tar      bool  // a tar.gz: expanded counts the whole tar stream
	// drain reads every zip entry even when visit does not (Inspect: every
	// byte is checked once); Extract leaves unread the entries it skips.
	drain bool
}

// walk opens the archive in r (zip or tar.gz by its first bytes) and visits
// every entry. Errors are *RefusedError for the archive's faults, the
// context's error, or a wrapped read error of r.
func walk(ctx context.Context, r io.ReaderAt, size int64, lim Limits, progress func(done, total int64), drain bool, visit visitFunc) (*walker, error) {
	if size > lim.MaxBundleBytes && lim.MaxBundleBytes > 0 {
		return nil, refuse("", "the archive is %s, over the bundle size limit of %s", humanBytes(size), humanBytes(lim.MaxBundleBytes))
	}
	w := &walker{ctx: ctx, lim: lim, size: size, names: map[string]bool{}, drain: drain,
		src: &sourceReader{r: r, size: size, progress: progress}}
	var magic [4]byte
	n, err := r.ReadAt(magic[:], 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read bundle: %w", err)
	}
	switch {
	case n >= 2 && magic[0] == 0x1f && magic[1] == 0x8b:
		err = w.walkTarGz(visit)
	case n == 4 && magic[0] == 'P' && magic[1] == 'K' && (magic[2] == 3 && magic[3] == 4 || magic[2] == 5 && magic[3] == 6):
		err = w.walkZip(visit)
	default:
		return nil, refuse("", "not a zip or tar.gz archive")
	}
	if err != nil {
		return nil, w.classify(err)
	}
	if progress != nil {
		progress(size, size)
	}
	return w, nil
}

// classify turns an error met while walking into the one to report: the
// context's, a read error of the underlying reader, the first refusal, or err.
func (w *walker) classify(err error) error {
	if ctxErr := w.ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	if w.src.err != nil {
		return fmt.Errorf("read bundle: %w", w.src.err)
	}
	if w.fatal != nil {
		return w.fatal
	}
	return err
}

func (w *walker) fail(err error) error {
	if w.fatal == nil {
		w.fatal = err
	}
	return w.fatal
}

// admit checks an entry's header before any of its content is read.
func (w *walker) admit(rawName string, kind fs.FileMode, declared int64) (entry, bool, error) {
	w.files++
	if w.lim.MaxFiles > 0 && w.files > w.lim.MaxFiles {
		return entry{}, false, refuse("", "the bundle holds more than %d files (entries, folders included)", w.lim.MaxFiles)
	}
	shown := printableName(rawName)
	clean, dir, reason := cleanName(rawName)
	if reason != "" {
		return entry{}, false, refuse(shown, "%s", reason)
	}
	switch {
	case kind&fs.ModeSymlink != 0:
		return entry{}, false, refuse(shown, "symbolic link: links are refused")
	case kind&fs.ModeDevice != 0 || kind&fs.ModeCharDevice != 0:
		return entry{}, false, refuse(shown, "special file (device): only files and folders are accepted")
	case kind&fs.ModeNamedPipe != 0:
		return entry{}, false, refuse(shown, "special file (named pipe): only files and folders are accepted")
	case kind&fs.ModeSocket != 0:
		return entry{}, false, refuse(shown, "special file (socket): only files and folders are accepted")
	case kind&fs.ModeIrregular != 0:
		return entry{}, false, refuse(shown, "special file: only files and folders are accepted")
	}
	dir = dir || kind.IsDir()
	if clean == "" {
		if !dir {
			return entry{}, false, refuse(shown, "file without a name")
		}
		return entry{}, false, nil // the archive's own root ("./")
	}
	if !dir && w.lim.MaxFileBytes > 0 && declared > w.lim.MaxFileBytes {
		return entry{}, false, refuse(clean, "the file is %s, over the per-file limit of %s", humanBytes(declared), humanBytes(w.lim.MaxFileBytes))
	}
	if seenDir, seen := w.names[clean]; seen {
		if dir && seenDir {
			return entry{}, false, nil // a folder listed twice holds nothing twice
		}
		return entry{}, false, refuse(clean, "duplicate entry: the name appears more than once in the archive")
	}
	w.names[clean] = dir
	return entry{Name: clean, Dir: dir, Size: declared}, true, nil
}

// count records n more uncompressed bytes of the entry name and checks the
// limits that depend on actual bytes, never on headers.
func (w *walker) count(c *contentReader, n int) error {
	c.n += int64(n)
	w.total += int64(n)
	if c.zipEntry {
		w.expanded += int64(n)
	}
	switch {
	case w.lim.MaxFileBytes > 0 && c.n > w.lim.MaxFileBytes:
		return refuse(c.name, "the file is over the per-file limit of %s", humanBytes(w.lim.MaxFileBytes))
	case c.declared >= 0 && c.n > c.declared:
		return refuse(c.name, "decompresses to more bytes than its header declares (%d): a zip bomb", c.declared)
	case w.lim.MaxTotalBytes > 0 && w.total > w.lim.MaxTotalBytes:
		return refuse(c.name, "the bundle's files add up to more than %s, over the uncompressed limit", humanBytes(w.lim.MaxTotalBytes))
	case c.zipEntry && w.lim.MaxRatio > 0 && c.n > ratioFloor && float64(c.n) > w.lim.MaxRatio*float64(max(c.compressed, 1)):
		return refuse(c.name, "compression ratio over %g: %s compressed expands past %s (a zip bomb)", w.lim.MaxRatio, humanBytes(c.compressed), humanBytes(c.n))
	}
	return w.checkArchiveRatio()
}

// tarEntryAllowance is how many bytes of each tar entry's header, name
// records and padding are left out of the archive's ratio: a bundle of many
// empty .missing markers is almost only headers, which compress about 70:1,
// while a bomb made of headers needs far more than this per entry.
const tarEntryAllowance = 2048

func (w *walker) checkArchiveRatio() error {
	expanded := w.expanded
	if w.tar {
		expanded -= tarEntryAllowance * int64(w.files)
	}
	if w.lim.MaxRatio > 0 && expanded > ratioFloor && float64(expanded) > w.lim.MaxRatio*float64(max(w.size, 1)) {
		return refuse("", "compression ratio over %g: the %s archive expands past %s (a zip bomb)", w.lim.MaxRatio, humanBytes(w.size), humanBytes(w.expanded))
	}
	return nil
}

// contentReader is an entry's content as the visitor reads it: counted
// against every limit as it is read, and checked against the zip CRC at the end.
type contentReader struct {
	w          *walker
	src        io.Reader
	name       string
	n          int64
	declared   int64 // zip: the header's uncompressed size; -1 for tar
	compressed int64 // zip: the compressed size
	zipEntry   bool
	crc        hash.Hash32
	wantCRC    uint32
	corrupt    string // "corrupt zip archive" or "corrupt tar.gz archive"
	err        error
}

func (c *contentReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if err := c.w.ctx.Err(); err != nil {
		c.err = err
		return 0, err
	}
	n, err := c.src.Read(p)
	if lerr := c.w.count(c, n); lerr != nil {
		c.err = c.w.fail(lerr)
		return 0, c.err
	}
	if c.crc != nil {
		c.crc.Write(p[:n])
	}
	switch {
	case err == io.EOF:
		if c.crc != nil && c.crc.Sum32() != c.wantCRC {
			c.err = c.w.fail(refuse(c.name, "%s: checksum mismatch", c.corrupt))
			return n, c.err
		}
		if c.zipEntry && c.n < c.declared {
			c.err = c.w.fail(refuse(c.name, "%s: the content is shorter than its header declares", c.corrupt))
			return n, c.err
		}
		c.err = io.EOF
	case err != nil:
		c.err = c.w.fail(c.w.classify(refuse(c.name, "%s: %v", c.corrupt, err)))
		return n, c.err
	}
	return n, err
}

// finish reads what the visitor left of the entry, so its bytes are checked.
func (c *contentReader) finish() error {
	if c.err == io.EOF {
		return nil
	}
	if _, err := io.Copy(io.Discard, c); err != nil {
		return err
	}
	return nil
}

// walkZip checks every header first (names, types, counts, declared sizes),
// so a hostile zip is refused before anything is decompressed, then reads
// the entries, counting actual bytes.
func (w *walker) walkZip(visit visitFunc) error {
	if err := w.countZipDirectory(); err != nil {
		return err
	}
	zr, err := zip.NewReader(w.src, w.size)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) { // names are checked here, more strictly
		return w.classify(refuse("", "corrupt zip archive: %v", err))
	}
	type admitted struct {
		f *zip.File
		e entry
	}
	var entries []admitted
	var declaredTotal uint64
	for _, f := range zr.File {
		if f.UncompressedSize64 > 1<<62 || f.CompressedSize64 > 1<<62 {
			return refuse(printableName(f.Name), "corrupt zip archive: impossible sizes in the header")
		}
		e, ok, err := w.admit(f.Name, f.Mode().Type(), int64(f.UncompressedSize64))
		if err != nil {
			return err
		}
		if !ok || e.Dir {
			if ok {
				entries = append(entries, admitted{f, e})
			}
			continue
		}
		switch {
		case f.Flags&0x1 != 0:
			return refuse(e.Name, "encrypted entry: encryption is not supported")
		case f.Method != zip.Store && f.Method != zip.Deflate:
			return refuse(e.Name, "unsupported compression method %d: use deflate or store", f.Method)
		case w.lim.MaxRatio > 0 && f.UncompressedSize64 > ratioFloor &&
			float64(f.UncompressedSize64) > w.lim.MaxRatio*float64(max(f.CompressedSize64, 1)):
			return refuse(e.Name, "compression ratio over %g: %s compressed declares %s (a zip bomb)", w.lim.MaxRatio,
				humanBytes(int64(f.CompressedSize64)), humanBytes(int64(f.UncompressedSize64)))
		}
		declaredTotal += f.UncompressedSize64
		if w.lim.MaxTotalBytes > 0 && declaredTotal > uint64(w.lim.MaxTotalBytes) {
			return refuse(e.Name, "the bundle's files add up to more than %s, over the uncompressed limit", humanBytes(w.lim.MaxTotalBytes))
		}
		entries = append(entries, admitted{f, e})
	}
	for _, a := range entries {
		if err := w.ctx.Err(); err != nil {
			return err
		}
		if a.e.Dir {
			if err := visit(a.e, nil); err != nil {
				return err
			}
			continue
		}
		var content *contentReader
		open := func() (io.Reader, error) {
			if content != nil {
				return content, nil
			}
			raw, err := a.f.OpenRaw()
			if err != nil {
				return nil, w.fail(w.classify(refuse(a.e.Name, "corrupt zip archive: %v", err)))
			}
			var src io.Reader = raw
			if a.f.Method == zip.Deflate {
				src = flate.NewReader(raw)
			}
			content = &contentReader{w: w, src: src, name: a.e.Name, declared: int64(a.f.UncompressedSize64),
				compressed: int64(a.f.CompressedSize64), zipEntry: true, crc: crc32.NewIEEE(), wantCRC: a.f.CRC32,
				corrupt: "corrupt zip archive"}
			return content, nil
		}
		if err := visit(a.e, open); err != nil {
			return err
		}
		if w.fatal != nil {
			return w.fatal
		}
		if content == nil && w.drain {
			if _, err := open(); err != nil {
				return err
			}
		}
		if content != nil {
			if err := content.finish(); err != nil {
				return err
			}
		}
	}
	return nil
}

// countZipDirectory counts the central directory's records before
// archive/zip reads them all into memory, refusing a directory of more than
// MaxFiles records (a small archive can list millions of entries).
func (w *walker) countZipDirectory() error {
	const eocdLen, maxComment = 22, 1<<16 - 1
	tailLen := min(w.size, eocdLen+maxComment)
	tail := make([]byte, tailLen)
	if _, err := w.src.ReadAt(tail, w.size-tailLen); err != nil && !errors.Is(err, io.EOF) {
		return w.classify(err)
	}
	eocd := -1
	for i := len(tail) - eocdLen; i >= 0; i-- {
		if bytes.Equal(tail[i:i+4], []byte("PK\x05\x06")) && i+eocdLen+int(binary.LittleEndian.Uint16(tail[i+20:])) <= len(tail) {
			eocd = i
			break
		}
	}
	if eocd < 0 {
		return refuse("", "corrupt zip archive: no central directory (is the file truncated?)")
	}
	endOffset := w.size - tailLen + int64(eocd)
	dirSize := int64(binary.LittleEndian.Uint32(tail[eocd+12:]))
	dirOffset := int64(binary.LittleEndian.Uint32(tail[eocd+16:]))
	if eocd >= 20 && bytes.Equal(tail[eocd-20:eocd-16], []byte("PK\x06\x07")) { // zip64 locator
		var rec [56]byte
		off := int64(binary.LittleEndian.Uint64(tail[eocd-12:]))
		if off >= 0 && off < w.size {
			if _, err := w.src.ReadAt(rec[:], off); err == nil && bytes.Equal(rec[:4], []byte("PK\x06\x06")) {
				endOffset = off
				dirSize = int64(binary.LittleEndian.Uint64(rec[40:]))
				dirOffset = int64(binary.LittleEndian.Uint64(rec[48:]))
			}
		}
	}
	// Where archive/zip starts reading: right before the directory's end,
	// or at the declared offset when a record is found there.
	start := endOffset - dirSize
	if start < 0 || start > w.size || !w.directoryRecordAt(start) {
		start = dirOffset
	}
	if start < 0 || start >= w.size {
		return nil // archive/zip refuses it
	}
	br := bufio.NewReaderSize(io.NewSectionReader(w.src, start, w.size-start), 64<<10)
	var hdr [46]byte
	for records := 0; ; records++ {
		if w.lim.MaxFiles > 0 && records > w.lim.MaxFiles {
			return refuse("", "the bundle holds more than %d files (entries, folders included)", w.lim.MaxFiles)
		}
		if _, err := io.ReadFull(br, hdr[:]); err != nil || !bytes.Equal(hdr[:4], []byte("PK\x01\x02")) {
			return nil
		}
		skip := int64(binary.LittleEndian.Uint16(hdr[28:])) + int64(binary.LittleEndian.Uint16(hdr[30:])) + int64(binary.LittleEndian.Uint16(hdr[32:]))
		if _, err := br.Discard(int(skip)); err != nil {
			return nil
		}
	}
}

func (w *walker) directoryRecordAt(off int64) bool {
	var sig [4]byte
	_, err := w.src.ReadAt(sig[:], off)
	return err == nil && bytes.Equal(sig[:], []byte("PK\x01\x02"))
}

// walkTarGz reads the archive as one stream. The gzip output is counted
// against the compression ratio as it is produced, so header-only bombs
// (long names, large PAX records) are caught too.
func (w *walker) walkTarGz(visit visitFunc) error {
	w.tar = true
	gz, err := gzip.NewReader(bufio.NewReaderSize(io.NewSectionReader(w.src, 0, w.size), 64<<10))
	if err != nil {
		return w.classify(refuse("", "corrupt tar.gz archive: %v", err))
	}
	stream := &expansionReader{w: w, src: gz}
	tr := tar.NewReader(stream)
	for {
		if err := w.ctx.Err(); err != nil {
			return err
		}
		hdr, err := tr.Next()
		if err == io.EOF {
			return w.finishGzip(stream)
		}
		if err != nil && !errors.Is(err, tar.ErrInsecurePath) { // names are checked here, more strictly
			return w.classify(refuse("", "corrupt tar.gz archive: %v", err))
		}
		var kind fs.FileMode
		switch hdr.Typeflag {
		case tar.TypeReg: // archive/tar reads the old TypeRegA as TypeReg
		case tar.TypeDir:
			kind = fs.ModeDir
		case tar.TypeXGlobalHeader:
			continue // PAX defaults for the following entries, not a file
		case tar.TypeSymlink:
			kind = fs.ModeSymlink
		case tar.TypeLink:
			return refuse(printableName(hdr.Name), "hard link: links are refused")
		case tar.TypeChar:
			kind = fs.ModeDevice | fs.ModeCharDevice
		case tar.TypeBlock:
			kind = fs.ModeDevice
		case tar.TypeFifo:
			kind = fs.ModeNamedPipe
		default:
			return refuse(printableName(hdr.Name), "special file (tar type %q): only files and folders are accepted", hdr.Typeflag)
		}
		e, ok, err := w.admit(hdr.Name, kind, hdr.Size)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if e.Dir {
			if err := visit(e, nil); err != nil {
				return err
			}
			continue
		}
		content := &contentReader{w: w, src: tr, name: e.Name, declared: -1, corrupt: "corrupt tar.gz archive"}
		if err := visit(e, func() (io.Reader, error) { return content, nil }); err != nil {
			return err
		}
		if w.fatal != nil {
			return w.fatal
		}
		if err := content.finish(); err != nil {
			return err
		}
	}
}

// finishGzip reads the gzip stream past the tar end marker to its end:
// only there does the gzip reader check each member's CRC-32 and length
// trailer, so a damaged or truncated archive whose tar entries happen to
// decode is refused too. What follows the end marker (tar's zero blocks)
// still counts against the compression ratio.
func (w *walker) finishGzip(stream *expansionReader) error {
	if _, err := io.Copy(io.Discard, stream); err != nil {
		return w.classify(refuse("", "corrupt tar.gz archive: %s", gzipProblem(err)))
	}
	return nil
}

// gzipProblem names what the gzip reader found wrong in words a submitter
// can act on.
func gzipProblem(err error) string {
	switch {
	case errors.Is(err, gzip.ErrChecksum):
		return "the gzip checksum or length trailer does not match the data (the file is damaged)"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the gzip stream ends early (is the file truncated?)"
	case errors.Is(err, gzip.ErrHeader):
		return "bytes after the gzip stream are not gzip"
	}
	return err.Error()
}

// expansionReader counts the bytes a gzip stream expands to.
type expansionReader struct {
	w   *walker
	src io.Reader
}

func (e *expansionReader) Read(p []byte) (int, error) {
	n, err := e.src.Read(p)
	e.w.expanded += int64(n)
	if rerr := e.w.checkArchiveRatio(); rerr != nil {
		return 0, e.w.fail(rerr)
	}
	return n, err
}

// sourceReader is the archive's bytes: it reports progress, remembers the
// first read error (a storage failure, not the bundle's fault), and counts
// what was read.
type sourceReader struct {
	r        io.ReaderAt
	size     int64
	read     int64
	reported int64
	progress func(done, total int64)
	err      error
}

func (s *sourceReader) ReadAt(p []byte, off int64) (int, error) {
	// Offsets come from the archive's own headers: one outside the archive
	// is the archive's fault, never asked of the store.
	if off < 0 || off > s.size {
		return 0, errors.New("offset outside the archive")
	}
	if rest := s.size - off; int64(len(p)) > rest {
		n, err := s.ReadAt(p[:rest], off)
		if err == nil {
			err = io.EOF
		}
		return n, err
	}
	n, err := s.r.ReadAt(p, off)
	if err != nil && !errors.Is(err, io.EOF) && s.err == nil {
		s.err = err
	}
	s.read += int64(n)
	if s.progress != nil && s.read-s.reported >= progressStep {
		s.reported = s.read
		s.progress(min(s.read, s.size), s.size)
	}
	return n, err
}

// refuse builds a *RefusedError. The path is shortened: a name may be
// megabytes long, and the message is stored and shown.
func refuse(path, format string, args ...any) error {
	return &RefusedError{Path: shorten(path, maxShownBytes), Reason: fmt.Sprintf(format, args...)}
}
