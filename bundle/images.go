package bundle

import (
	"bytes"
	"context"
	"image"
	"image/color"
	_ "image/jpeg" // decodeCost reads JPEG headers
	_ "image/png"  // and PNG headers
	"io"
	"runtime"
	"strings"
	"sync"

	"proctor/internal/jpegscale"
	"proctor/models"
)

// inlineImageBytes is the largest screenshot decoded on another goroutine;
// larger ones (rare, and still under the pixel cap) are decoded in the walk,
// alone.
const inlineImageBytes = 16 << 20

// decodeBudgetBytes caps the memory screenshots being decoded at once may
// take, by their estimated size (decodeCost): a small file may decode to
// hundreds of megabytes (a 284 KiB 16-bit PNG of 36 megapixels takes
// 276 MiB), so counting decoders alone does not bound memory.
const decodeBudgetBytes = 256 << 20

// imageChecks decodes screenshots on every core while the walk reads on:
// decoding, not reading, is what limits inspecting a screenshot-heavy bundle.
// Each worker writes only its own record; wait returns once all are done.
type imageChecks struct {
	ctx       context.Context
	maxPixels int64
	slots     chan struct{} // one per core
	budget    *byteBudget   // decoding memory
	wg        sync.WaitGroup
	// known, when not nil, replaces decoding: the bundle's bytes were
	// inspected before (InspectValidated), and known holds the problems found then.
	known map[string]string
}

func newImageChecks(ctx context.Context, maxPixels, budgetBytes int64) *imageChecks {
	return &imageChecks{ctx: ctx, maxPixels: maxPixels, slots: make(chan struct{}, max(1, runtime.GOMAXPROCS(0))),
		budget: newByteBudget(budgetBytes)}
}

// check records whether the screenshot in r decodes, and its content type.
// A read error met while reading is only a problem here: the walk reports
// refusals and read errors itself after every entry. It blocks while the
// decoders at work hold too much of the budget for this one.
func (c *imageChecks) check(rec *record, r io.Reader) {
	if c.known != nil {
		c.recall(rec, r)
		return
	}
	if rec.size < 0 || rec.size > inlineImageBytes {
		// Its header may lie past megabytes of metadata: it takes the whole
		// budget rather than buffering the file to read its size.
		cost := c.budget.acquire(c.budget.total)
		defer c.budget.release(cost)
		decodeImage(rec, r, c.maxPixels)
		return
	}
	buf := make([]byte, 0, rec.size)
	w := bytes.NewBuffer(buf)
	if _, err := io.Copy(w, r); err != nil {
		rec.problem = "not a valid screenshot: " + err.Error()
		return
	}
	content := w.Bytes()
	cost := c.budget.acquire(decodeCost(content))
	c.slots <- struct{}{}
	c.wg.Go(func() {
		defer func() {
			<-c.slots
			c.budget.release(cost)
		}()
		if c.ctx.Err() != nil {
			return // the inspection is over: its error is the context's
		}
		decodeImage(rec, bytes.NewReader(content), c.maxPixels)
	})
}

// decodeCost estimates the bytes decoding an image takes at its peak: its
// file, and its pixels at the color model's size, twice for PNG (Adam7
// interlaced images are decoded pass by pass, then copied) and five times
// for JPEG (progressive JPEGs keep a 4-byte coefficient per pixel and
// component until the end). A header that does not decode costs the file
// alone: decoding stops there.
func decodeCost(content []byte) int64 {
	cfg, format, err := image.DecodeConfig(bytes.NewReader(content))
	if err != nil || cfg.Width <= 0 || cfg.Height <= 0 {
		return int64(len(content))
	}
	perPixel := int64(8) // the widest model, for models not named below
	switch cfg.ColorModel {
	case color.GrayModel, color.AlphaModel:
		perPixel = 1
	case color.Gray16Model, color.Alpha16Model:
		perPixel = 2
	case color.YCbCrModel:
		perPixel = 3
	case color.RGBAModel, color.NRGBAModel, color.CMYKModel:
		perPixel = 4
	default:
		if _, ok := cfg.ColorModel.(color.Palette); ok {
			perPixel = 1
		}
	}
	switch format {
	case "png":
		perPixel *= 2
	case "jpeg":
		perPixel *= 5
	}
	return int64(len(content)) + int64(cfg.Width)*int64(cfg.Height)*perPixel
}

// byteBudget is a weighted semaphore of bytes. Only the walk acquires, one
// image at a time, so waiting is first come, first served.
type byteBudget struct {
	mu    sync.Mutex
	freed *sync.Cond
	total int64
	inUse int64
	peak  int64 // the most ever in use, which tests read
}

func newByteBudget(total int64) *byteBudget {
	b := &byteBudget{total: total}
	b.freed = sync.NewCond(&b.mu)
	return b
}

// acquire waits until n bytes are free and takes them, returning what it
// took: n, or the whole budget for more than the whole budget (such an
// image waits for the others to finish and decodes alone).
func (b *byteBudget) acquire(n int64) int64 {
	n = min(max(n, 1), b.total)
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.inUse+n > b.total {
		b.freed.Wait()
	}
	b.inUse += n
	b.peak = max(b.peak, b.inUse)
	return n
}

func (b *byteBudget) release(n int64) {
	b.mu.Lock()
	b.inUse -= n
	b.mu.Unlock()
	b.freed.Broadcast()
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
// files. When that list may be incomplete (as long as a report's lists are
// capped, or holding a shortened path), every screenshot is decoded again:
// a broken one left off the list would otherwise pass.
func InspectValidated(ctx context.Context, r io.ReaderAt, size int64, lim Limits, earlier []models.FileProblem, progress func(done, total int64)) (*Bundle, error) {
	if len(earlier) >= maxReportList {
		return inspect(ctx, r, size, lim, nil, progress)
	}
	known := make(map[string]string, len(earlier))
	for _, p := range earlier {
		if strings.HasSuffix(p.Path, ellipsis) {
			return inspect(ctx, r, size, lim, nil, progress)
		}
		known[p.Path] = p.Problem
	}
	return inspect(ctx, r, size, lim, known, progress)
}
