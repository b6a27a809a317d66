// Package jpegscale downscales JPEG screenshots: thumbnails for timelines and
// the smaller images LLM judges see.
package jpegscale

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
)

// Scale decodes a JPEG screenshot and returns a JPEG at most width pixels
// wide, averaging boxes of source pixels. Chromium's JPEGs are YCbCr, which is
// scaled plane by plane without per-pixel interface calls (a few milliseconds
// for 1280×800); any other image falls back to the generic path.
func Scale(src []byte, width, quality int) ([]byte, error) {
	img, err := jpeg.Decode(bytes.NewReader(src))
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
