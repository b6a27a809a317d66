package bundle

import (
	"bytes"
	"context"
	"io"
	"runtime"
	"sync"

	"proctor/internal/jpegscale"
	"proctor/models"
)

// inlineImageBytes is the largest screenshot decoded on another goroutine;
// larger ones (rare, and still under the pixel cap) are decoded in the walk,
// so the buffers held at once stay under workers × this size.
const inlineImageBytes = 16 << 20

// imageChecks decodes screenshots on every core while the walk reads on:
// decoding, not reading, is what limits inspecting a screenshot-heavy bundle.
// Each worker writes only its own record; wait returns once all are done.
type imageChecks struct {
	maxPixels int64
	slots     chan struct{}
	wg        sync.WaitGroup
	// known, when not nil, replaces decoding: the bundle's bytes were
	// inspected before (InspectValidated), and known holds the problems found then.
	known map[string]string
}

func newImageChecks(maxPixels int64) *imageChecks {
	return &imageChecks{maxPixels: maxPixels, slots: make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))}
}

// check records whether the screenshot in r decodes, and its content type.
// A read error met while reading is only a problem here: the walk reports
// refusals and read errors itself after every entry.
func (c *imageChecks) check(rec *record, r io.Reader) {
	if c.known != nil {
		c.recall(rec, r)
		return
	}
	if rec.size < 0 || rec.size > inlineImageBytes {
		decodeImage(rec, r, c.maxPixels)
		return
	}
	buf := make([]byte, 0, rec.size)
	w := bytes.NewBuffer(buf)
	if _, err := io.Copy(w, r); err != nil {
		rec.problem = "not a valid screenshot: " + err.Error()
		return
	}
	c.slots <- struct{}{}
	c.wg.Go(func() {
		defer func() { <-c.slots }()
		decodeImage(rec, bytes.NewReader(w.Bytes()), c.maxPixels)
	})
}

// recall takes the screenshot's verdict from the earlier inspection and its
// content type from its first bytes.
func (c *imageChecks) recall(rec *record, r io.Reader) {
	if problem, ok := c.known[rec.path]; ok {
		rec.problem = problem
		return
	}
	head := make([]byte, 8)
	n, _ := io.ReadFull(r, head)
	switch {
	case bytes.HasPrefix(head[:n], []byte("\x89PNG")):
		rec.contentType = jpegscale.ContentTypePNG
	case bytes.HasPrefix(head[:n], []byte{0xff, 0xd8}):
		rec.contentType = jpegscale.ContentTypeJPEG
	default:
		rec.problem = "not a valid screenshot: neither PNG nor JPEG"
	}
}

// wait blocks until every screenshot handed to check is decoded.
func (c *imageChecks) wait() { c.wg.Wait() }

func decodeImage(rec *record, r io.Reader, maxPixels int64) {
	_, contentType, err := jpegscale.Decode(r, maxPixels)
	if err != nil {
		rec.problem = "not a valid screenshot: " + err.Error()
		return
	}
	rec.contentType = contentType
}

// InspectValidated inspects a bundle whose exact bytes were inspected before
// (the ingest of a validated submission, after checking its SHA-256): every
// limit, name and JSON file is checked again, but screenshots are not decoded
// a second time; their verdicts are those of the earlier report's invalid
// files.
func InspectValidated(ctx context.Context, r io.ReaderAt, size int64, lim Limits, earlier []models.FileProblem, progress func(done, total int64)) (*Bundle, error) {
	known := make(map[string]string, len(earlier))
	for _, p := range earlier {
		known[p.Path] = p.Problem
	}
	return inspect(ctx, r, size, lim, known, progress)
}
