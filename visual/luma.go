package visual

import (
	"image"
	"image/color"
)

// ITU-R BT.601 luma weights, the ones JPEG and most SSIM tools use for
// grayscale.
const (
	lumaRed   = 0.299
	lumaGreen = 0.587
	lumaBlue  = 0.114
)

// plane is a grayscale image as luma values in [0, 255], row-major, with its
// origin at (0, 0) whatever the source image's bounds were.
type plane struct {
	width, height int
	pix           []float64
}

// luma returns the ITU-R BT.601 luma of 8-bit channel values, in [0, 255].
func luma(r, g, b float64) float64 {
	return lumaRed*r + lumaGreen*g + lumaBlue*b
}

// forEachPixel calls fn with the index (row-major from the image's top-left)
// and the 8-bit-scale red, green and blue of every pixel, composited over
// white. The common screenshot types are read straight from their pixel
// buffers, because image.Image.At allocates an interface value per pixel.
func forEachPixel(img image.Image, fn func(i int, r, g, b float64)) {
	bounds := img.Bounds()
	w := bounds.Dx()
	switch src := img.(type) {
	case *image.RGBA:
		// Premultiplied: compositing over white adds the uncovered share.
		for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
			row := src.Pix[src.PixOffset(bounds.Min.X, y):]
			base := (y - bounds.Min.Y) * w
			for x := 0; x < w; x++ {
				p := row[4*x : 4*x+4 : 4*x+4]
				under := float64(255 - p[3])
				fn(base+x, float64(p[0])+under, float64(p[1])+under, float64(p[2])+under)
			}
		}
	case *image.NRGBA:
		for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
			row := src.Pix[src.PixOffset(bounds.Min.X, y):]
			base := (y - bounds.Min.Y) * w
			for x := 0; x < w; x++ {
				p := row[4*x : 4*x+4 : 4*x+4]
				if p[3] == 255 {
					fn(base+x, float64(p[0]), float64(p[1]), float64(p[2]))
					continue
				}
				a := float64(p[3]) / 255
				under := 255 * (1 - a)
				fn(base+x, float64(p[0])*a+under, float64(p[1])*a+under, float64(p[2])*a+under)
			}
		}
	case *image.Gray:
		for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
			row := src.Pix[src.PixOffset(bounds.Min.X, y):]
			base := (y - bounds.Min.Y) * w
			for x := 0; x < w; x++ {
				v := float64(row[x])
				fn(base+x, v, v, v)
			}
		}
	default:
		// RGBA() is premultiplied 16-bit; 65535/255 = 257.
		for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
			base := (y - bounds.Min.Y) * w
			for x := 0; x < w; x++ {
				r, g, b, a := img.At(bounds.Min.X+x, y).RGBA()
				under := float64(0xffff - a)
				fn(base+x, (float64(r)+under)/257, (float64(g)+under)/257, (float64(b)+under)/257)
			}
		}
	}
}

// toPlane converts img to its luma plane.
func toPlane(img image.Image) plane {
	bounds := img.Bounds()
	p := plane{width: bounds.Dx(), height: bounds.Dy()}
	p.pix = make([]float64, p.width*p.height)
	forEachPixel(img, func(i int, r, g, b float64) {
		p.pix[i] = luma(r, g, b)
	})
	return p
}

// medianColor returns the per-channel median colour of img's pixels,
// composited over white, skipping the pixels marked in excluded (nil: none).
// With an even count it takes the lower of the two middle values, so the
// colour is always one a channel actually has. ok is false when every pixel is
// excluded.
func medianColor(img image.Image, excluded []bool) (c color.RGBA, ok bool) {
	var hist [3][256]int
	n := 0
	forEachPixel(img, func(i int, r, g, b float64) {
		if excluded != nil && excluded[i] {
			return
		}
		hist[0][channel8(r)]++
		hist[1][channel8(g)]++
		hist[2][channel8(b)]++
		n++
	})
	if n == 0 {
		return color.RGBA{}, false
	}
	rank := (n - 1) / 2
	var out [3]uint8
	for ch := range hist {
		seen := 0
		for v, count := range hist[ch] {
			seen += count
			if seen > rank {
				out[ch] = uint8(v)
				break
			}
		}
	}
	return color.RGBA{R: out[0], G: out[1], B: out[2], A: 255}, true
}

// channel8 rounds an 8-bit-scale channel value (never negative) to its
// nearest byte; it runs once per channel and pixel, hence no math.Round.
func channel8(v float64) int {
	return min(int(v+0.5), 255)
}
