// Package jpegscale decodes screenshots safely and downscales them to JPEG:
// thumbnails for timelines and the smaller images LLM judges see. Screenshots
// come from Proctor's own browser (JPEG) or from uploaded bundles (PNG or
// JPEG), so every decode checks the image's dimensions before allocating them.
package jpegscale

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
)

// DefaultMaxPixels caps the width × height of a screenshot Scale decodes: 40
// megapixels, far above any screen, far below what would exhaust memory
// (a decoded pixel takes up to 8 bytes).
const DefaultMaxPixels = 40_000_000

// maxHeaderBytes bounds what DecodeConfig may read before the dimensions:
// a JPEG's metadata segments come first, a PNG's dimensions are in its first
// 33 bytes.
const maxHeaderBytes = 1 << 20

// Content types of the formats Decode reads.
const (
	ContentTypePNG  = "image/png"
	ContentTypeJPEG = "image/jpeg"
)

// TooLargeError refuses an image whose dimensions exceed the pixel cap.
type TooLargeError struct {
	Width, Height int
	MaxPixels     int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("the image is %d×%d pixels, over the limit of %d pixels", e.Width, e.Height, e.MaxPixels)
}

// Decode reads a PNG or JPEG image (told apart by content) from r. It first
// reads only the header (DecodeConfig) and refuses, with a *TooLargeError,
// an image of more than maxPixels pixels, so a small file that claims huge
// dimensions never gets its pixels allocated; then it decodes the whole image,
// which proves the file is not truncated or corrupt. contentType is
// ContentTypePNG or ContentTypeJPEG.
func Decode(r io.Reader, maxPixels int64) (img image.Image, contentType string, err error) {
	head := &recorder{r: r, max: maxHeaderBytes}
	var magic [8]byte
	n, _ := io.ReadFull(head, magic[:])
	decodeConfig, decode := png.DecodeConfig, png.Decode
	switch {
	case n == 8 && string(magic[:]) == "\x89PNG\r\n\x1a\n":
		contentType = ContentTypePNG
	case n >= 3 && magic[0] == 0xFF && magic[1] == 0xD8 && magic[2] == 0xFF:
		contentType, decodeConfig, decode = ContentTypeJPEG, jpeg.DecodeConfig, jpeg.Decode
	default:
		if head.err != nil {
			return nil, "", head.err
		}
		return nil, "", errors.New("not a PNG or JPEG image")
	}
	cfg, err := decodeConfig(io.MultiReader(bytes.NewReader(magic[:n]), head))
	if err != nil {
		if head.err != nil {
			return nil, "", head.err
		}
		return nil, "", fmt.Errorf("invalid %s header: %w", contentType, err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return nil, "", fmt.Errorf("invalid %s header: %d×%d pixels", contentType, cfg.Width, cfg.Height)
	}
	if maxPixels > 0 && int64(cfg.Width)*int64(cfg.Height) > maxPixels {
		return nil, "", &TooLargeError{Width: cfg.Width, Height: cfg.Height, MaxPixels: maxPixels}
	}
	// Decode again from the first byte: what the header read was recorded.
	img, err = decode(io.MultiReader(bytes.NewReader(head.buf), r))
	if err != nil {
		return nil, "", fmt.Errorf("invalid %s image: %w", contentType, err)
	}
	return img, contentType, nil
}

// recorder keeps what is read through it, up to max bytes.
type recorder struct {
	r   io.Reader
	buf []byte
	max int
	err error // a read error of r, as opposed to a malformed image
}

func (h *recorder) Read(p []byte) (int, error) {
	if len(h.buf) >= h.max {
		return 0, fmt.Errorf("the image header is larger than %d bytes", h.max)
	}
	p = p[:min(len(p), h.max-len(h.buf))]
	n, err := h.r.Read(p)
	h.buf = append(h.buf, p[:n]...)
	if err != nil && err != io.EOF && h.err == nil {
		h.err = err
	}
	return n, err
}

// Scale decodes a PNG or JPEG screenshot (at most DefaultMaxPixels) and
// returns a JPEG at most width pixels wide, averaging boxes of source pixels.
// Chromium's JPEGs are YCbCr, which is scaled plane by plane without
// per-pixel interface calls (a few milliseconds for 1280×800); any other
// image falls back to the generic path.
func Scale(src []byte, width, quality int) ([]byte, error) {
	img, _, err := Decode(bytes.NewReader(src), DefaultMaxPixels)
	if err != nil {
		return nil, fmt.Errorf("decode screenshot: %w", err)
	}
	b := img.Bounds()
	if b.Dx() <= width {
		width = b.Dx()
	}
	height := max(1, b.Dy()*width/max(1, b.Dx()))
	var out image.Image
	if y, ok := img.(*image.YCbCr); ok {
		out = scaleYCbCr(y, width, height)
	} else {
		out = scaleGeneric(img, width, height)
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, out, &jpeg.Options{Quality: quality}); err != nil {
		return nil, fmt.Errorf("encode thumbnail: %w", err)
	}
	return buf.Bytes(), nil
}

// scaleYCbCr box-filters each plane of src into a 4:2:0 image of w×h.
func scaleYCbCr(src *image.YCbCr, w, h int) *image.YCbCr {
	dst := image.NewYCbCr(image.Rect(0, 0, w, h), image.YCbCrSubsampleRatio420)
	r := src.Rect
	sw, sh := r.Dx(), r.Dy()
	scalePlane(src.Y[src.YOffset(r.Min.X, r.Min.Y):], src.YStride, sw, sh, dst.Y, dst.YStride, w, h)
	cw, ch := chromaSize(sw, sh, src.SubsampleRatio)
	dcw, dch := (w+1)/2, (h+1)/2
	off := src.COffset(r.Min.X, r.Min.Y)
	scalePlane(src.Cb[off:], src.CStride, cw, ch, dst.Cb, dst.CStride, dcw, dch)
	scalePlane(src.Cr[off:], src.CStride, cw, ch, dst.Cr, dst.CStride, dcw, dch)
	return dst
}

// chromaSize is the size of the chroma planes of a w×h image.
func chromaSize(w, h int, ratio image.YCbCrSubsampleRatio) (int, int) {
	switch ratio {
	case image.YCbCrSubsampleRatio422:
		return (w + 1) / 2, h
	case image.YCbCrSubsampleRatio420:
		return (w + 1) / 2, (h + 1) / 2
	case image.YCbCrSubsampleRatio440:
		return w, (h + 1) / 2
	case image.YCbCrSubsampleRatio411:
		return (w + 3) / 4, h
	case image.YCbCrSubsampleRatio410:
		return (w + 3) / 4, (h + 1) / 2
	default:
		return w, h
	}
}

// scalePlane averages the source box behind each destination sample.
func scalePlane(src []uint8, sstride, sw, sh int, dst []uint8, dstride, dw, dh int) {
	for y := range dh {
		y0, y1 := y*sh/dh, max((y+1)*sh/dh, y*sh/dh+1)
		for x := range dw {
			x0, x1 := x*sw/dw, max((x+1)*sw/dw, x*sw/dw+1)
			sum, n := 0, 0
			for sy := y0; sy < y1 && sy < sh; sy++ {
				row := src[sy*sstride:]
				for sx := x0; sx < x1 && sx < sw; sx++ {
					sum += int(row[sx])
					n++
				}
			}
			if n > 0 {
				dst[y*dstride+x] = uint8(sum / n)
			}
		}
	}
}

// scaleGeneric box-filters any image into an RGBA of w×h.
func scaleGeneric(src image.Image, w, h int) *image.RGBA {
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	b := src.Bounds()
	sw, sh := b.Dx(), b.Dy()
	for y := range h {
		y0, y1 := y*sh/h, max((y+1)*sh/h, y*sh/h+1)
		for x := range w {
			x0, x1 := x*sw/w, max((x+1)*sw/w, x*sw/w+1)
			var r, g, bl, a, n uint32
			for sy := y0; sy < y1; sy++ {
				for sx := x0; sx < x1; sx++ {
					cr, cg, cb, ca := src.At(b.Min.X+sx, b.Min.Y+sy).RGBA()
					r, g, bl, a, n = r+cr, g+cg, bl+cb, a+ca, n+1
				}
			}
			dst.SetRGBA(x, y, color.RGBA{uint8(r / n >> 8), uint8(g / n >> 8), uint8(bl / n >> 8), uint8(a / n >> 8)})
		}
	}
	return dst
}
