package bundle

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"image"
	_ "image/jpeg" // DecodeConfig reads JPEG headers
	_ "image/png"  // and PNG headers
	"io"
	"strings"

	"proctor/internal/jpegscale"
	"proctor/models"
)

// Screenshots are checked as they stream past, never decoded: by their magic
// bytes, their header (image.DecodeConfig: the format's dimensions, which
// must be positive and within the pixel cap) and their structure to the end —
// a PNG's chunks, each with its CRC-32, up to IEND; a JPEG's end-of-image
// marker. So a truncated, corrupted or lying file is still found, at the cost
// of reading it once, with a few kilobytes of memory. What only a full decode
// would find (compressed pixel data that is wrong although every checksum
// holds, which only a deliberately crafted file has) is left to the pages
// that show the screenshot, as for any image a browser cannot draw.

// imageHeaderBytes bounds how much of a screenshot is held to read its
// header: a JPEG's metadata segments come before its dimensions (a PNG's are
// in its first 33 bytes).
const imageHeaderBytes = 1 << 20

// imageChecks checks the screenshots of one inspection.
type imageChecks struct {
	maxPixels int64
	// known, when not nil, replaces checking: the bundle's bytes were
	// inspected before (InspectValidated), and known holds the problems found then.
	known map[string]string
}

func newImageChecks(maxPixels int64) *imageChecks {
	return &imageChecks{maxPixels: maxPixels}
}

// imageMagic reads the first bytes of a screenshot and tells its content
// type by them ("" when it is neither PNG nor JPEG).
func imageMagic(r io.Reader) (head []byte, contentType string, err error) {
	var magic [8]byte
	n, err := io.ReadFull(r, magic[:])
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		err = nil
	}
	head = magic[:n]
	switch {
	case n == 8 && string(magic[:]) == "\x89PNG\r\n\x1a\n":
		contentType = jpegscale.ContentTypePNG
	case n >= 3 && magic[0] == 0xFF && magic[1] == 0xD8 && magic[2] == 0xFF:
		contentType = jpegscale.ContentTypeJPEG
	}
	return head, contentType, err
}

// check records whether the screenshot in r is a valid PNG or JPEG, and its
// content type. With store, the screenshot's bytes are handed to store as
// they are checked (one read of each byte); store's error is returned. A
// read error met while reading is only a problem here: the walk reports
// refusals and read errors itself after every entry.
func (c *imageChecks) check(rec *record, r io.Reader, store StoreFunc) error {
	if c.known != nil && store == nil {
		c.recall(rec, r)
		return nil
	}
	head, contentType, err := imageMagic(r)
	if err != nil {
		rec.problem = "not a valid screenshot: " + err.Error()
		return nil
	}
	if contentType == "" {
		rec.problem = "not a valid screenshot: not a PNG or JPEG image"
		return nil
	}
	rec.contentType = contentType
	v := newImageVerifier(contentType, c.maxPixels)
	content := io.MultiReader(bytes.NewReader(head), r)
	if store != nil {
		if err := store(rec.path, contentType, rec.size, io.TeeReader(content, v)); err != nil {
			return err
		}
	} else if _, err := io.Copy(v, content); err != nil {
		rec.problem = "not a valid screenshot: " + err.Error()
		return nil
	}
	if problem := v.finish(); problem != nil {
		rec.problem = "not a valid screenshot: " + problem.Error()
	}
	return nil
}

// recall takes the screenshot's verdict from the earlier inspection and its
// content type from its first bytes.
func (c *imageChecks) recall(rec *record, r io.Reader) {
	if problem, ok := c.known[rec.path]; ok {
		rec.problem = problem
		return
	}
	_, contentType, _ := imageMagic(r)
	if contentType == "" {
		rec.problem = "not a valid screenshot: neither PNG nor JPEG"
		return
	}
	rec.contentType = contentType
}

// imageVerifier checks a screenshot written to it in pieces: it holds the
// header until DecodeConfig can read it, then follows the format's structure
// to the end. finish says what is wrong, or nil.
type imageVerifier struct {
	contentType string
	maxPixels   int64
	header      []byte // until the header is read
	headerDone  bool
	nextTry     int // header bytes at which DecodeConfig is tried next
	problem     error
	n           int64

	// PNG: the chunk being read.
	png      pngChunks
	jpegTail [2]byte // JPEG: the last two bytes
}

func newImageVerifier(contentType string, maxPixels int64) *imageVerifier {
	v := &imageVerifier{contentType: contentType, maxPixels: maxPixels, nextTry: 4 << 10}
	if contentType == jpegscale.ContentTypePNG {
		v.png.crc = crc32.NewIEEE()
	}
	return v
}

func (v *imageVerifier) Write(p []byte) (int, error) {
	if v.problem != nil {
		return len(p), nil
	}
	v.n += int64(len(p))
	if !v.headerDone {
		v.header = append(v.header, p[:min(len(p), imageHeaderBytes-len(v.header))]...)
		v.readHeader(false)
	}
	if v.problem != nil {
		return len(p), nil
	}
	switch v.contentType {
	case jpegscale.ContentTypePNG:
		v.problem = v.png.write(p)
	case jpegscale.ContentTypeJPEG:
		if len(p) >= 2 {
			v.jpegTail = [2]byte{p[len(p)-2], p[len(p)-1]}
		} else if len(p) == 1 {
			v.jpegTail = [2]byte{v.jpegTail[1], p[0]}
		}
	}
	return len(p), nil
}

// readHeader reads the dimensions from the bytes held so far. A header that
// needs more bytes is tried again once twice as many are held, until the
// file ends (last) or the bytes held reach imageHeaderBytes.
func (v *imageVerifier) readHeader(last bool) {
	if v.headerDone {
		return
	}
	full := last || len(v.header) >= imageHeaderBytes
	if !full && len(v.header) < v.nextTry {
		return
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(v.header))
	short := err != nil && (errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF))
	if short && !full {
		v.nextTry = 2 * len(v.header)
		return
	}
	switch {
	case short && !last:
		v.problem = fmt.Errorf("invalid %s header: it is not within the first %d bytes", v.contentType, imageHeaderBytes)
	case err != nil:
		v.problem = fmt.Errorf("invalid %s header: %w", v.contentType, err)
	case cfg.Width <= 0 || cfg.Height <= 0:
		v.problem = fmt.Errorf("invalid %s header: %d×%d pixels", v.contentType, cfg.Width, cfg.Height)
	case v.maxPixels > 0 && int64(cfg.Width)*int64(cfg.Height) > v.maxPixels:
		v.problem = &jpegscale.TooLargeError{Width: cfg.Width, Height: cfg.Height, MaxPixels: v.maxPixels}
	}
	v.headerDone, v.header = true, nil
}

// finish says what is wrong with the whole file, or nil.
func (v *imageVerifier) finish() error {
	v.readHeader(true)
	if v.problem != nil {
		return v.problem
	}
	switch v.contentType {
	case jpegscale.ContentTypePNG:
		if err := v.png.finish(); err != nil {
			return fmt.Errorf("invalid %s image: %w", v.contentType, err)
		}
	case jpegscale.ContentTypeJPEG:
		if v.jpegTail != [2]byte{0xFF, 0xD9} {
			return fmt.Errorf("invalid %s image: it does not end with the end-of-image marker (is it truncated?)", v.contentType)
		}
	}
	return nil
}

// pngChunks follows a PNG's chunks after its signature: length, type, data
// and the CRC-32 of type and data, up to IEND.
type pngChunks struct {
	skipped int    // signature bytes passed
	hdr     []byte // the chunk header or CRC being read
	left    int64  // data bytes left in the current chunk
	inData  bool
	inCRC   bool
	typ     string
	crc     hash.Hash32
	chunks  int
	ended   bool // IEND read, with its CRC
}

const pngSignatureLen = 8

func (c *pngChunks) write(p []byte) error {
	for len(p) > 0 {
		switch {
		case c.skipped < pngSignatureLen:
			n := min(len(p), pngSignatureLen-c.skipped)
			c.skipped += n
			p = p[n:]
		case c.ended:
			return nil // what follows IEND is not read by any decoder
		case c.inData:
			n := int(min(int64(len(p)), c.left))
			c.crc.Write(p[:n])
			c.left -= int64(n)
			p = p[n:]
			if c.left == 0 {
				c.inData, c.inCRC = false, true
			}
		case c.inCRC:
			n := min(len(p), 4-len(c.hdr))
			c.hdr = append(c.hdr, p[:n]...)
			p = p[n:]
			if len(c.hdr) == 4 {
				if binary.BigEndian.Uint32(c.hdr) != c.crc.Sum32() {
					return fmt.Errorf("invalid %s image: chunk %d (%s) fails its checksum", jpegscale.ContentTypePNG, c.chunks, printableChunkType(c.typ))
				}
				c.hdr, c.inCRC = c.hdr[:0], false
				c.ended = c.typ == "IEND"
			}
		default:
			n := min(len(p), 8-len(c.hdr))
			c.hdr = append(c.hdr, p[:n]...)
			p = p[n:]
			if len(c.hdr) < 8 {
				continue
			}
			length := binary.BigEndian.Uint32(c.hdr[:4])
			c.typ = string(c.hdr[4:8])
			c.chunks++
			if length > 1<<31-1 {
				return fmt.Errorf("invalid %s image: chunk %d declares %d bytes", jpegscale.ContentTypePNG, c.chunks, length)
			}
			c.crc.Reset()
			c.crc.Write(c.hdr[4:8])
			c.hdr, c.left = c.hdr[:0], int64(length)
			c.inData = length > 0
			c.inCRC = length == 0
		}
	}
	return nil
}

func (c *pngChunks) finish() error {
	if !c.ended {
		return errors.New("the file ends before its IEND chunk (is it truncated?)")
	}
	return nil
}

func printableChunkType(t string) string {
	if strings.IndexFunc(t, func(r rune) bool { return r < 'A' || r > 'z' }) >= 0 {
		return fmt.Sprintf("%q", t)
	}
	return t
}

// InspectValidated inspects a bundle whose exact bytes were inspected before
// (the ingest of a validated submission, after checking its SHA-256): every
// limit, name and JSON file is checked again, but screenshots are not
// checked a second time; their verdicts are those of the earlier report's
// invalid files. When that list may be incomplete (as long as a report's
// lists are capped, or holding a shortened path), every screenshot is
// checked again: a broken one left off the list would otherwise pass.
func InspectValidated(ctx context.Context, r io.ReaderAt, size int64, lim Limits, earlier []models.FileProblem, progress func(done, total int64)) (*Bundle, error) {
	if len(earlier) >= maxReportList {
		return inspect(ctx, r, size, lim, nil, nil, progress)
	}
	known := make(map[string]string, len(earlier))
	for _, p := range earlier {
		if strings.HasSuffix(p.Path, ellipsis) {
			return inspect(ctx, r, size, lim, nil, nil, progress)
		}
		known[p.Path] = p.Problem
	}
	return inspect(ctx, r, size, lim, known, nil, progress)
}
