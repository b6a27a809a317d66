package visual

import (
	"image"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestGaussianWindow(t *testing.T) {
	w := gaussianWindow()
	sum := 0.0
	for i, v := range w {
		sum += v
		require.Equal(t, v, w[WindowSize-1-i], "tap %d is not mirrored", i)
	}
	require.InDelta(t, 1, sum, 1e-15)
	// exp(−d²/4.5) for d = 0…5 is 1, 0.8007, 0.4111, 0.1353, 0.0286, 0.0039;
	// the eleven taps sum to 3.7592, so the centre tap is 1/3.7592.
	require.InDelta(t, 0.266011725, w[windowRadius], 1e-9)
	require.InDelta(t, 0.001028380, w[0], 1e-9)
}

func TestSSIM_Identical(t *testing.T) {
	img := pageLike(96, 64, 1)
	got, m, err := SSIM(img, img)
	require.NoError(t, err)
	require.Equal(t, 1.0, got)
	require.Equal(t, 86, m.Width)
	require.Equal(t, 54, m.Height)
	for _, v := range m.Values {
		require.Equal(t, 1.0, v)
	}
}

// TestSSIM_ConstantImages checks the closed form. For two flat images of
// values a and b every window has σx² = σy² = σxy = 0, so the contrast-structure
// factor (2σxy + C2)/(σx² + σy² + C2) is C2/C2 = 1 and
//
//	SSIM = (2ab + C1) / (a² + b² + C1),  C1 = (0.01·255)² = 6.5025.
//
// For a = 100, b = 150: (30000 + 6.5025) / (10000 + 22500 + 6.5025)
// = 30006.5025 / 32506.5025 = 0.9230923105…
// For a = 0, b = 255: 6.5025 / (65025 + 6.5025) = 0.0000999900…
func TestSSIM_ConstantImages(t *testing.T) {
	for _, tc := range []struct {
		a, b uint8
		want float64
	}{
		{100, 150, 30006.5025 / 32506.5025},
		{0, 255, 6.5025 / 65031.5025},
		{30, 40, 2406.5025 / 2506.5025},
		{200, 200, 1},
	} {
		got, _, err := SSIM(flatGray(20, 15, tc.a), flatGray(20, 15, tc.b))
		require.NoError(t, err)
		require.InDelta(t, tc.want, got, 1e-12, "a=%d b=%d", tc.a, tc.b)
	}
}

// TestSSIM_HandMade16x16 compares a small drawn pair (a letter A over a box;
// the candidate's crossbar sits a row lower and its box is darker and shorter)
// with the naive reference implementation.
func TestSSIM_HandMade16x16(t *testing.T) {
	legend := map[rune]uint8{'.': 250, '#': 30, '+': 140, 'o': 90}
	ref := fromArt(t, []string{
		"................",
		"......####......",
		".....##..##.....",
		"....##....##....",
		"...##......##...",
		"...##......##...",
		"...##########...",
		"...##......##...",
		"...##......##...",
		"...##......##...",
		"................",
		"..++++++++++++..",
		"..+..........+..",
		"..++++++++++++..",
		"................",
		"................",
	}, legend)
	cand := fromArt(t, []string{
		"................",
		"......####......",
		".....##..##.....",
		"....##....##....",
		"...##......##...",
		"...##......##...",
		"...##......##...",
		"...##########...",
		"...##......##...",
		"...##......##...",
		"................",
		"..oooooooooooo..",
		"..oooooooooooo..",
		"................",
		"................",
		"................",
	}, legend)
	want := naiveSSIM(t, cand, ref)
	got, m, err := SSIM(cand, ref)
	require.NoError(t, err)
	require.InDelta(t, want, got, 1e-9)
	// scikit-image 0.19.3, structural_similarity(cand, ref,
	// gaussian_weights=True, sigma=1.5, use_sample_covariance=False,
	// data_range=255), on the same pair as float64 arrays.
	require.InDelta(t, 0.3491758044763837, got, 1e-9)
	require.Len(t, m.Values, 36)
	require.Greater(t, got, 0.0)
	require.Less(t, got, 1.0)
}

func TestSSIM_Symmetric(t *testing.T) {
	a := pageLike(70, 50, 3)
	b := shifted(pageLike(70, 50, 4), 1, 2)
	ab, mapAB, err := SSIM(a, b)
	require.NoError(t, err)
	ba, mapBA, err := SSIM(b, a)
	require.NoError(t, err)
	require.Equal(t, ab, ba)
	require.Equal(t, mapAB.Values, mapBA.Values)
}

func TestSSIM_MatchesNaiveOnShiftedPage(t *testing.T) {
	ref := pageLike(64, 48, 5)
	for _, shift := range []struct{ dx, dy int }{{1, 0}, {3, 0}, {0, 2}, {2, 2}} {
		cand := shifted(ref, shift.dx, shift.dy)
		got, _, err := SSIM(cand, ref)
		require.NoError(t, err)
		require.InDelta(t, naiveSSIM(t, cand, ref), got, 1e-9, "shift %+v", shift)
	}
}

func TestSSIM_Errors(t *testing.T) {
	ok := flatGray(11, 11, 0)
	for _, tc := range []struct {
		name string
		a, b image.Image
		want error
	}{
		{"ErrEmptyImage/nil", nil, ok, ErrEmptyImage},
		{"ErrEmptyImage/zero", ok, image.NewGray(image.Rect(0, 0, 0, 5)), ErrEmptyImage},
		{"ErrSizeMismatch", ok, flatGray(12, 11, 0), ErrSizeMismatch},
		{"ErrTooSmall", flatGray(10, 30, 0), flatGray(10, 30, 0), ErrTooSmall},
		{"ErrTooLarge", hugeImage{5000, 5000}, hugeImage{5000, 5000}, ErrTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := SSIM(tc.a, tc.b)
			require.ErrorIs(t, err, tc.want)
		})
	}
}

func TestResizeBilinear(t *testing.T) {
	t.Run("HandChecked", func(t *testing.T) {
		// Upscaling [0 100] to 4 pixels samples source positions
		// (x + 0.5)/2 − 0.5 = −0.25, 0.25, 0.75, 1.25; the outer two clamp
		// to the edges, the inner two blend 3:1 and 1:3.
		src := plane{width: 2, height: 1, pix: []float64{0, 100}}
		got := resizeBilinear(src, 4, 1)
		require.Equal(t, []float64{0, 25, 75, 100}, got.pix)
	})
	t.Run("HalvingAveragesPairs", func(t *testing.T) {
		// Halving samples position 2x + 0.5, midway between two pixels.
		src := plane{width: 4, height: 2, pix: []float64{0, 10, 20, 30, 40, 50, 60, 70}}
		got := resizeBilinear(src, 2, 1)
		require.Equal(t, []float64{25, 45}, got.pix)
	})
	t.Run("SameSizeCopies", func(t *testing.T) {
		src := plane{width: 3, height: 1, pix: []float64{1, 2, 3}}
		got := resizeBilinear(src, 3, 1)
		require.Equal(t, src.pix, got.pix)
		got.pix[0] = 9
		require.Equal(t, 1.0, src.pix[0])
	})
}

func TestMap_Rendering(t *testing.T) {
	m := &Map{Values: []float64{1, 0.5, -0.3, 0}, Masked: []bool{false, false, false, true}, Width: 2, Height: 2, Offset: windowRadius}
	w, h := m.RegionSize()
	require.Equal(t, 12, w)
	require.Equal(t, 12, h)

	gray := m.Gray()
	require.Equal(t, image.Rect(0, 0, 12, 12), gray.Bounds())
	require.Equal(t, uint8(255), gray.GrayAt(0, 0).Y, "border repeats the nearest value")
	require.Equal(t, uint8(255), gray.GrayAt(5, 5).Y)
	require.Equal(t, uint8(128), gray.GrayAt(6, 5).Y)
	require.Equal(t, uint8(0), gray.GrayAt(5, 6).Y, "negative SSIM is black")
	require.Equal(t, uint8(255), gray.GrayAt(11, 11).Y, "masked positions never count against the candidate")

	heat := m.Heat()
	require.Equal(t, image.Rect(0, 0, 12, 12), heat.Bounds())
	require.Equal(t, heatColor(1), heat.RGBAAt(5, 5))
	require.Equal(t, heatColor(0.5), heat.RGBAAt(6, 5))
	require.Equal(t, heatColor(-0.3), heat.RGBAAt(5, 6))
	masked := heat.RGBAAt(6, 6)
	require.NotEqual(t, heatColor(0), masked)
	require.Equal(t, masked.R, uint8(148))

	require.Equal(t, [4]uint8{255, 255, 255, 255}, rgba(heatColor(1)))
	require.Equal(t, [4]uint8{245, 158, 11, 255}, rgba(heatColor(0.5)))
	require.Equal(t, [4]uint8{185, 28, 28, 255}, rgba(heatColor(0)))
	require.Equal(t, heatColor(0), heatColor(-1))
}

func rgba(c interface{ RGBA() (r, g, b, a uint32) }) [4]uint8 {
	r, g, b, a := c.RGBA()
	return [4]uint8{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), uint8(a >> 8)}
}

func TestNormalize(t *testing.T) {
	for _, tc := range []struct {
		name           string
		ssim, baseline float64
		want           float64
	}{
		{"Identical", 1, 0.6, 1},
		{"AsGoodAsBlank", 0.6, 0.6, 0},
		{"WorseThanBlankClamps", 0.3, 0.6, 0},
		{"Between", 0.8, 0.6, 0.5},
		{"NegativeBaseline", 0.5, -0.5, 2.0 / 3},
		{"FlatReferenceUsesRawSSIM", 0.4, 1, 0.4},
		{"FlatReferenceClampsNegative", -0.2, 1 - 1e-7, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.InDelta(t, tc.want, Normalize(tc.ssim, tc.baseline), 1e-15)
		})
	}
}

func TestPasses_Boundary(t *testing.T) {
	require.True(t, Passes(0.75, DefaultThreshold))
	require.False(t, Passes(0.7499, DefaultThreshold))
	require.False(t, Passes(math.Nextafter(0.75, 0), DefaultThreshold))
	require.True(t, Passes(1, 1))
}
