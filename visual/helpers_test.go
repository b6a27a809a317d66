package visual

import (
	"image"
	"image/color"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// naiveSSIM is an independent, deliberately plain reference for the package's
// separable implementation: for every position where the 11×11 window fits it
// builds the 2-D Gaussian weights directly (normalised over all 121 taps, not
// as a product of normalised 1-D taps), takes two-pass weighted means,
// variances and covariance, and averages the local SSIM. O(n·w²).
func naiveSSIM(t *testing.T, a, b *image.Gray) float64 {
	t.Helper()
	require.Equal(t, a.Bounds().Size(), b.Bounds().Size())
	const size, sigma = 11, 1.5
	c1 := math.Pow(0.01*255, 2)
	c2 := math.Pow(0.03*255, 2)
	var weight [size][size]float64
	total := 0.0
	for i := range size {
		for j := range size {
			di, dj := float64(i-size/2), float64(j-size/2)
			weight[i][j] = math.Exp(-(di*di + dj*dj) / (2 * sigma * sigma))
			total += weight[i][j]
		}
	}
	for i := range size {
		for j := range size {
			weight[i][j] /= total
		}
	}
	at := func(img *image.Gray, x, y int) float64 {
		return float64(img.GrayAt(img.Rect.Min.X+x, img.Rect.Min.Y+y).Y)
	}
	w, h := a.Bounds().Dx(), a.Bounds().Dy()
	sum, count := 0.0, 0
	for y0 := 0; y0+size <= h; y0++ {
		for x0 := 0; x0+size <= w; x0++ {
			var mx, my float64
			for i := range size {
				for j := range size {
					mx += weight[i][j] * at(a, x0+j, y0+i)
					my += weight[i][j] * at(b, x0+j, y0+i)
				}
			}
			var vx, vy, cov float64
			for i := range size {
				for j := range size {
					dx := at(a, x0+j, y0+i) - mx
					dy := at(b, x0+j, y0+i) - my
					vx += weight[i][j] * dx * dx
					vy += weight[i][j] * dy * dy
					cov += weight[i][j] * dx * dy
				}
			}
			sum += ((2*mx*my + c1) * (2*cov + c2)) / ((mx*mx + my*my + c1) * (vx + vy + c2))
			count++
		}
	}
	return sum / float64(count)
}

// grayFrom builds a grayscale image from a pixel function.
func grayFrom(w, h int, f func(x, y int) uint8) *image.Gray {
	img := image.NewGray(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.SetGray(x, y, color.Gray{Y: f(x, y)})
		}
	}
	return img
}

// flatGray is a w × h image of one gray value.
func flatGray(w, h int, v uint8) *image.Gray {
	return grayFrom(w, h, func(int, int) uint8 { return v })
}

// pageLike draws a white page with lines of dark, speckled "words", the kind
// of region a checkpoint marks: mostly background, some structure.
func pageLike(w, h int, seed uint64) *image.Gray {
	rng := rand.New(rand.NewPCG(seed, 7))
	img := flatGray(w, h, 255)
	for top := 4; top+9 <= h-4; top += 14 {
		for x := 4; x < w-6; {
			word := 3 + rng.IntN(12)
			for xx := x; xx < min(x+word, w-4); xx++ {
				for yy := top; yy < top+9; yy++ {
					if rng.IntN(3) > 0 {
						img.SetGray(xx, yy, color.Gray{Y: uint8(20 + rng.IntN(60))})
					}
				}
			}
			x += word + 3 + rng.IntN(4)
		}
	}
	return img
}

// shifted moves img right by dx and down by dy, filling the uncovered edge
// with white.
func shifted(img *image.Gray, dx, dy int) *image.Gray {
	b := img.Bounds()
	return grayFrom(b.Dx(), b.Dy(), func(x, y int) uint8 {
		sx, sy := x-dx, y-dy
		if sx < 0 || sy < 0 || sx >= b.Dx() || sy >= b.Dy() {
			return 255
		}
		return img.GrayAt(sx, sy).Y
	})
}

// fromArt turns rows of characters into a grayscale image, one character a
// pixel, through a legend of gray levels.
func fromArt(t *testing.T, rows []string, legend map[rune]uint8) *image.Gray {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, len(rows[0]), len(rows)))
	for y, row := range rows {
		require.Len(t, row, len(rows[0]), "row %d", y)
		for x, ch := range row {
			v, ok := legend[ch]
			require.True(t, ok, "no gray level for %q", ch)
			img.SetGray(x, y, color.Gray{Y: v})
		}
	}
	return img
}

// opaqueOnly hides an image's concrete type, so conversion takes the generic
// At path.
type opaqueOnly struct{ image.Image }

// hugeImage claims enormous bounds without holding any pixels, to check that
// limits are enforced before anything is allocated.
type hugeImage struct{ w, h int }

func (h hugeImage) ColorModel() color.Model { return color.GrayModel }
func (h hugeImage) Bounds() image.Rectangle { return image.Rect(0, 0, h.w, h.h) }
func (h hugeImage) At(int, int) color.Color { return color.White }
