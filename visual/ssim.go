package visual

import (
	"errors"
	"fmt"
	"image"
	"math"
)

// The standard SSIM setting of Wang et al. (2004).
const (
	// WindowSize is the side of the square Gaussian window, in pixels.
	WindowSize = 11
	// WindowSigma is the standard deviation of the Gaussian window.
	WindowSigma = 1.5
	// K1 scales the luminance stabiliser C1 = (K1·L)².
	K1 = 0.01
	// K2 scales the contrast stabiliser C2 = (K2·L)².
	K2 = 0.03
	// DynamicRange is L, the range of 8-bit luma.
	DynamicRange = 255

	c1 = (K1 * DynamicRange) * (K1 * DynamicRange)
	c2 = (K2 * DynamicRange) * (K2 * DynamicRange)

	// windowRadius is how far the map starts inside the region: the map's
	// position (0, 0) is the window centred on pixel (windowRadius, windowRadius).
	windowRadius = (WindowSize - 1) / 2
)

// MaxPixels caps the width × height of either image: 16 megapixels, room for a
// full-page capture of 1920 × 8000, while keeping a comparison under a few
// hundred megabytes.
const MaxPixels = 16 * 1024 * 1024

// Errors Compare and SSIM wrap; test them with errors.Is.
var (
	// ErrEmptyImage: an image is nil or has no pixels.
	ErrEmptyImage = errors.New("empty image")
	// ErrTooSmall: a region is narrower or shorter than the SSIM window.
	ErrTooSmall = errors.New("image smaller than the SSIM window")
	// ErrTooLarge: an image has more than MaxPixels pixels.
	ErrTooLarge = errors.New("image too large")
	// ErrSizeMismatch: SSIM was given images of different sizes.
	ErrSizeMismatch = errors.New("images differ in size")
	// ErrInvalidOptions: a threshold or mask is out of range.
	ErrInvalidOptions = errors.New("invalid comparison options")
)

// gaussianWindow returns the 1-D Gaussian taps (σ = WindowSigma), normalised
// to sum 1; their outer product is the normalised 2-D window.
func gaussianWindow() [WindowSize]float64 {
	var w [WindowSize]float64
	sum := 0.0
	for i := range w {
		d := float64(i - windowRadius)
		w[i] = math.Exp(-d * d / (2 * WindowSigma * WindowSigma))
		sum += w[i]
	}
	for i := range w {
		w[i] /= sum
	}
	return w
}

// Map is the local SSIM of a comparison at every window position, for the
// results page's "SSIM map". Value (x, y) belongs to the window centred on
// region pixel (x+Offset, y+Offset); the Offset-pixel border around it has no
// value of its own because no whole window fits there.
type Map struct {
	// Values holds Width × Height local SSIM values, row-major, in [−1, 1].
	Values []float64
	// Masked marks the positions centred in a mask (nil when there is none);
	// they are left out of the means.
	Masked []bool
	// Width and Height are the map's size: the region's minus 2·Offset.
	Width, Height int
	// Offset is the window's radius.
	Offset int
}

// RegionSize is the width and height of the region the map was computed on.
func (m *Map) RegionSize() (width, height int) {
	return m.Width + 2*m.Offset, m.Height + 2*m.Offset
}

// measurement is one pass over a candidate and a reference plane.
type measurement struct {
	ssim     float64 // mean SSIM(candidate, reference) over counted positions
	baseline float64 // mean SSIM(flat, reference) over the same positions
	counted  int
	values   []float64
}

// measure computes the SSIM map of x (the candidate) against y (the
// reference), and in the same pass the SSIM of a flat plane of value flat
// against y: a flat plane has zero variance and covariance, so its local SSIM
// needs only the reference's window statistics. Positions marked in skip (nil:
// none) stay in the map but out of the means. Both planes must have the same
// size, at least WindowSize on each side.
//
// The window is applied separably: each input row is filtered horizontally
// once into a ring of the last WindowSize rows, and each output row is the
// vertical weighted sum of that ring, so the work is 2·11 taps per pixel and
// quantity instead of 121, and the buffers are a few rows wide.
func measure(x, y plane, flat float64, skip []bool) measurement {
	const n = WindowSize
	const quantities = 5 // μx, μy, E[x²], E[y²], E[xy]
	w := gaussianWindow()
	width, height := x.width, x.height
	ow, oh := width-n+1, height-n+1
	m := measurement{values: make([]float64, ow*oh)}

	stride := quantities * ow
	ring := make([]float64, n*stride)
	xx := make([]float64, width)
	yy := make([]float64, width)
	xy := make([]float64, width)
	acc := make([]float64, stride)
	var sum, baseSum float64

	for row := range height {
		xr := x.pix[row*width : (row+1)*width]
		yr := y.pix[row*width : (row+1)*width]
		for i := range xr {
			xx[i] = xr[i] * xr[i]
			yy[i] = yr[i] * yr[i]
			xy[i] = xr[i] * yr[i]
		}
		slot := ring[(row%n)*stride : (row%n+1)*stride]
		hx, hy, hxx, hyy, hxy := slot[:ow], slot[ow:2*ow], slot[2*ow:3*ow], slot[3*ow:4*ow], slot[4*ow:]
		for ox := range ow {
			// Fixed-length windows let the compiler drop bounds checks.
			wx, wy := xr[ox:ox+n:ox+n], yr[ox:ox+n:ox+n]
			wxx, wyy, wxy := xx[ox:ox+n:ox+n], yy[ox:ox+n:ox+n], xy[ox:ox+n:ox+n]
			var sx, sy, sxx, syy, sxy float64
			for k, wk := range w {
				sx += wk * wx[k]
				sy += wk * wy[k]
				sxx += wk * wxx[k]
				syy += wk * wyy[k]
				sxy += wk * wxy[k]
			}
			hx[ox], hy[ox], hxx[ox], hyy[ox], hxy[ox] = sx, sy, sxx, syy, sxy
		}
		if row < n-1 {
			continue
		}

		oy := row - n + 1
		clear(acc)
		for k, wk := range w {
			src := ring[((oy+k)%n)*stride : ((oy+k)%n+1)*stride]
			for i, v := range src {
				acc[i] += wk * v
			}
		}
		mx, my, mxx, myy, mxy := acc[:ow], acc[ow:2*ow], acc[2*ow:3*ow], acc[3*ow:4*ow], acc[4*ow:]
		out := m.values[oy*ow : (oy+1)*ow]
		for ox := range ow {
			ux, uy := mx[ox], my[ox]
			vx := mxx[ox] - ux*ux
			vy := myy[ox] - uy*uy
			cov := mxy[ox] - ux*uy
			s := ((2*ux*uy + c1) * (2*cov + c2)) / ((ux*ux + uy*uy + c1) * (vx + vy + c2))
			out[ox] = s
			if skip != nil && skip[oy*ow+ox] {
				continue
			}
			sum += s
			baseSum += ((2*flat*uy + c1) * c2) / ((flat*flat + uy*uy + c1) * (vy + c2))
			m.counted++
		}
	}
	if m.counted > 0 {
		m.ssim = sum / float64(m.counted)
		m.baseline = baseSum / float64(m.counted)
	}
	return m
}

// SSIM returns the mean SSIM of two images of the same size and its map,
// without resizing, masks or the flat-colour baseline: the plain Wang et al.
// measure, symmetric in its arguments. Errors wrap ErrEmptyImage, ErrTooLarge,
// ErrTooSmall or ErrSizeMismatch.
func SSIM(a, b image.Image) (float64, *Map, error) {
	if err := checkImage("first image", a); err != nil {
		return 0, nil, err
	}
	if err := checkImage("second image", b); err != nil {
		return 0, nil, err
	}
	ab, bb := a.Bounds(), b.Bounds()
	if ab.Dx() != bb.Dx() || ab.Dy() != bb.Dy() {
		return 0, nil, fmt.Errorf("ssim of %dx%d and %dx%d: %w", ab.Dx(), ab.Dy(), bb.Dx(), bb.Dy(), ErrSizeMismatch)
	}
	if err := checkWindowFits("ssim", ab); err != nil {
		return 0, nil, err
	}
	m := measure(toPlane(a), toPlane(b), 0, nil)
	return m.ssim, newMap(m.values, nil, ab.Dx(), ab.Dy()), nil
}

// newMap wraps a measurement's values for a region of the given size.
func newMap(values []float64, masked []bool, regionWidth, regionHeight int) *Map {
	return &Map{
		Values: values,
		Masked: masked,
		Width:  regionWidth - 2*windowRadius,
		Height: regionHeight - 2*windowRadius,
		Offset: windowRadius,
	}
}

// checkImage refuses a nil, empty or oversized image, naming it by role.
func checkImage(role string, img image.Image) error {
	if img == nil {
		return fmt.Errorf("%s is missing: %w", role, ErrEmptyImage)
	}
	b := img.Bounds()
	if b.Empty() {
		return fmt.Errorf("%s is %dx%d: %w", role, b.Dx(), b.Dy(), ErrEmptyImage)
	}
	if int64(b.Dx())*int64(b.Dy()) > MaxPixels {
		return fmt.Errorf("%s is %dx%d, over the %d-pixel limit: %w", role, b.Dx(), b.Dy(), MaxPixels, ErrTooLarge)
	}
	return nil
}

// checkWindowFits refuses a region the 11×11 window does not fit in. A smaller
// window would make scores of small and large regions incomparable, so a
// checkpoint must mark a region at least WindowSize pixels on each side.
func checkWindowFits(role string, b image.Rectangle) error {
	if b.Dx() < WindowSize || b.Dy() < WindowSize {
		return fmt.Errorf("%s: %dx%d is smaller than the %dx%d SSIM window: %w",
			role, b.Dx(), b.Dy(), WindowSize, WindowSize, ErrTooSmall)
	}
	return nil
}
