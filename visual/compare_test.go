package visual

import (
	"image"
	"image/color"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCompare_Identical(t *testing.T) {
	ref := pageLike(120, 80, 11)
	res, err := Compare(ref, ref, Options{})
	require.NoError(t, err)
	require.Equal(t, 1.0, res.SSIM)
	require.Equal(t, 1.0, res.Score)
	require.True(t, res.Passed)
	require.Equal(t, DefaultThreshold, res.Threshold)
	require.Equal(t, 120, res.Width)
	require.Equal(t, 80, res.Height)
	require.False(t, res.Resized)
	require.False(t, res.FlatReference)
	require.Equal(t, color.RGBA{255, 255, 255, 255}, res.BaselineColor)
	require.Equal(t, 110*70, len(res.Map.Values))
}

// TestCompare_BlankCandidate is what the baseline is for: a blank region of
// the reference's background colour has a high raw SSIM against a page that
// is mostly white space, yet scores 0.
func TestCompare_BlankCandidate(t *testing.T) {
	// A 160×100 region with one short paragraph in its top-left corner.
	text := pageLike(60, 32, 12)
	ref := grayFrom(160, 100, func(x, y int) uint8 {
		if x < 60 && y < 32 {
			return text.GrayAt(x, y).Y
		}
		return 255
	})
	blank := flatGray(160, 100, 255)
	res, err := Compare(blank, ref, Options{})
	require.NoError(t, err)
	require.Greater(t, res.SSIM, 0.75, "raw SSIM alone would pass a blank page")
	require.InDelta(t, res.SSIM, res.Baseline, 1e-12, "a blank of the median colour is the baseline itself")
	require.InDelta(t, 0, res.Score, 1e-9)
	require.False(t, res.Passed)

	t.Run("OtherFlatColour", func(t *testing.T) {
		res, err := Compare(flatGray(160, 100, 235), ref, Options{})
		require.NoError(t, err)
		require.Less(t, res.Score, 0.05)
		require.False(t, res.Passed)
	})
}

// TestCompare_BaselineIsSSIMOfFlatImage checks the one-pass baseline against
// SSIM computed on an actual flat image of the median colour, and the score
// against the formula.
func TestCompare_BaselineIsSSIMOfFlatImage(t *testing.T) {
	ref := grayFrom(60, 40, func(x, y int) uint8 {
		if (x/6+y/5)%3 == 0 {
			return 40
		}
		return 210
	})
	cand := shifted(ref, 2, 1)
	res, err := Compare(cand, ref, Options{})
	require.NoError(t, err)
	require.Equal(t, color.RGBA{210, 210, 210, 255}, res.BaselineColor)
	flat := flatGray(60, 40, 210)
	require.InDelta(t, naiveSSIM(t, flat, ref), res.Baseline, 1e-9)
	require.InDelta(t, naiveSSIM(t, cand, ref), res.SSIM, 1e-9)
	require.InDelta(t, (res.SSIM-res.Baseline)/(1-res.Baseline), res.Score, 1e-12)
}

// TestCompare_Shifted: a page moved by a few pixels keeps much of its
// structure, so its score lies strictly between blank (0) and exact (1), and
// equals what the naive implementation gives.
func TestCompare_Shifted(t *testing.T) {
	ref := pageLike(96, 72, 13)
	cand := shifted(ref, 2, 1)
	res, err := Compare(cand, ref, Options{})
	require.NoError(t, err)
	wantSSIM := naiveSSIM(t, cand, ref)
	wantBaseline := naiveSSIM(t, flatGray(96, 72, 255), ref)
	require.InDelta(t, wantSSIM, res.SSIM, 1e-9)
	require.InDelta(t, wantBaseline, res.Baseline, 1e-9)
	require.InDelta(t, (wantSSIM-wantBaseline)/(1-wantBaseline), res.Score, 1e-9)
	require.Greater(t, res.Score, 0.0)
	require.Less(t, res.Score, 1.0)

	// One pixel is a smaller defect than three.
	near, err := Compare(shifted(ref, 1, 0), ref, Options{})
	require.NoError(t, err)
	far, err := Compare(shifted(ref, 3, 0), ref, Options{})
	require.NoError(t, err)
	require.Greater(t, near.Score, far.Score)
}

func TestCompare_Recoloured(t *testing.T) {
	t.Run("Inverted", func(t *testing.T) {
		ref := pageLike(96, 72, 14)
		inv := grayFrom(96, 72, func(x, y int) uint8 { return 255 - ref.GrayAt(x, y).Y })
		res, err := Compare(inv, ref, Options{})
		require.NoError(t, err)
		require.Less(t, res.SSIM, 0.1)
		require.Equal(t, 0.0, res.Score)
		require.False(t, res.Passed)
	})
	t.Run("HueRotated", func(t *testing.T) {
		// Red tiles on a green ground; rotating hue by 120° (R→G, G→B,
		// B→R) turns them into green tiles on a blue ground. Luma goes
		// from 80.8 tiles on 118.6 to 130.4 tiles on 61.2: the contrast
		// flips, which grayscale SSIM sees.
		red := color.RGBA{200, 30, 30, 255}
		green := color.RGBA{40, 170, 60, 255}
		ref := image.NewRGBA(image.Rect(0, 0, 80, 60))
		rotated := image.NewRGBA(ref.Bounds())
		for y := range 60 {
			for x := range 80 {
				c := green
				if (x/8)%2 == 0 && (y/6)%2 == 0 {
					c = red
				}
				ref.SetRGBA(x, y, c)
				rotated.SetRGBA(x, y, color.RGBA{c.B, c.R, c.G, 255})
			}
		}
		res, err := Compare(rotated, ref, Options{})
		require.NoError(t, err)
		require.Less(t, res.Score, 0.2)
		require.False(t, res.Passed)
	})
}

func TestCompare_Resized(t *testing.T) {
	ref := pageLike(48, 36, 15)
	// The candidate renders the same region at twice the size (a 2× device
	// pixel ratio). Halving samples midway between each doubled pair, so
	// the reference comes back exactly.
	double := grayFrom(96, 72, func(x, y int) uint8 { return ref.GrayAt(x/2, y/2).Y })
	res, err := Compare(double, ref, Options{})
	require.NoError(t, err)
	require.True(t, res.Resized)
	require.Equal(t, 48, res.Width)
	require.Equal(t, 36, res.Height)
	require.Equal(t, 96, res.CandidateWidth)
	require.Equal(t, 72, res.CandidateHeight)
	require.InDelta(t, 1, res.Score, 1e-12)
	require.Equal(t, 38*26, len(res.Map.Values))

	t.Run("NonIntegerScale", func(t *testing.T) {
		// 1.25× by nearest neighbour: blurred back, close but not exact.
		big := grayFrom(60, 45, func(x, y int) uint8 { return ref.GrayAt(x*4/5, y*4/5).Y })
		res, err := Compare(big, ref, Options{})
		require.NoError(t, err)
		require.True(t, res.Resized)
		require.Greater(t, res.Score, 0.3)
		require.Less(t, res.Score, 1.0)
	})

	t.Run("SmallerCandidate", func(t *testing.T) {
		res, err := Compare(flatGray(5, 4, 255), ref, Options{})
		require.NoError(t, err)
		require.True(t, res.Resized)
		require.InDelta(t, 0, res.Score, 1e-9)
	})
}

func TestCompare_Masks(t *testing.T) {
	ref := pageLike(100, 70, 16)
	// The candidate's clock shows another time: noise in one corner.
	rng := rand.New(rand.NewPCG(1, 2))
	clock := image.Rect(70, 4, 96, 20)
	cand := grayFrom(100, 70, func(x, y int) uint8 {
		if image.Pt(x, y).In(clock) {
			return uint8(rng.IntN(256))
		}
		return ref.GrayAt(x, y).Y
	})

	unmasked, err := Compare(cand, ref, Options{})
	require.NoError(t, err)
	require.Less(t, unmasked.Score, 1.0)
	require.Zero(t, unmasked.MaskedPositions)
	require.Nil(t, unmasked.Map.Masked)

	masked, err := Compare(cand, ref, Options{Masks: []image.Rectangle{clock}})
	require.NoError(t, err)
	require.Equal(t, 1.0, masked.SSIM, "outside the mask the images are identical")
	require.Equal(t, 1.0, masked.Score)
	// Positions centred in the clock: x 70…95 and y 5…19 of the map's 90×60
	// (centres x 5…94, y 5…64), so 25 × 15.
	require.Equal(t, 25*15, masked.MaskedPositions)
	require.Len(t, masked.Map.Masked, 90*60)

	t.Run("ClippedToRegion", func(t *testing.T) {
		res, err := Compare(cand, ref, Options{Masks: []image.Rectangle{image.Rect(60, -10, 200, 25)}})
		require.NoError(t, err)
		require.Equal(t, 1.0, res.Score)
	})
	t.Run("BaselineIgnoresMaskedPixels", func(t *testing.T) {
		// Half the region is black, but masked: the median is the white
		// of the rest.
		half := grayFrom(40, 30, func(x, y int) uint8 {
			if x < 24 {
				return 0
			}
			return ref.GrayAt(x, y).Y
		})
		res, err := Compare(half, half, Options{Masks: []image.Rectangle{image.Rect(0, 0, 24, 30)}})
		require.NoError(t, err)
		require.Equal(t, color.RGBA{255, 255, 255, 255}, res.BaselineColor)
	})
}

func TestCompare_FlatReference(t *testing.T) {
	white := flatGray(30, 30, 255)
	same, err := Compare(flatGray(30, 30, 255), white, Options{})
	require.NoError(t, err)
	require.True(t, same.FlatReference)
	require.Equal(t, 1.0, same.Score)
	require.True(t, same.Passed)

	// A black candidate against a white reference: the raw SSIM of two
	// flat images, C1 / (255² + C1) ≈ 0.0001.
	black, err := Compare(flatGray(30, 30, 0), white, Options{})
	require.NoError(t, err)
	require.True(t, black.FlatReference)
	require.InDelta(t, 6.5025/65031.5025, black.Score, 1e-12)
	require.False(t, black.Passed)
}

func TestCompare_Threshold(t *testing.T) {
	ref := pageLike(80, 60, 17)
	res, err := Compare(shifted(ref, 1, 0), ref, Options{})
	require.NoError(t, err)
	require.Equal(t, DefaultThreshold, res.Threshold)
	require.Equal(t, res.Score >= 0.75, res.Passed)

	at, err := Compare(shifted(ref, 1, 0), ref, Options{Threshold: res.Score})
	require.NoError(t, err)
	require.True(t, at.Passed, "a score equal to the threshold passes")

	above, err := Compare(shifted(ref, 1, 0), ref, Options{Threshold: res.Score + 1e-4})
	require.NoError(t, err)
	require.False(t, above.Passed)
	require.Equal(t, res.Score+1e-4, above.Threshold)
}

func TestCompare_Errors(t *testing.T) {
	ok := pageLike(40, 30, 18)
	for _, tc := range []struct {
		name       string
		cand, ref  image.Image
		opts       Options
		want       error
		mentioning string
	}{
		{"ErrEmptyImage/NilCandidate", nil, ok, Options{}, ErrEmptyImage, "candidate"},
		{"ErrEmptyImage/EmptyReference", ok, image.NewRGBA(image.Rect(3, 3, 3, 9)), Options{}, ErrEmptyImage, "reference"},
		{"ErrTooSmall/Narrow", ok, flatGray(10, 40, 255), Options{}, ErrTooSmall, "10x40"},
		{"ErrTooSmall/Short", ok, flatGray(40, 8, 255), Options{}, ErrTooSmall, "40x8"},
		{"ErrTooLarge/Reference", ok, hugeImage{4097, 4096}, Options{}, ErrTooLarge, "4097x4096"},
		{"ErrTooLarge/Candidate", hugeImage{20000, 1000}, ok, Options{}, ErrTooLarge, "candidate"},
		{"ErrInvalidOptions/NegativeThreshold", ok, ok, Options{Threshold: -0.1}, ErrInvalidOptions, "threshold"},
		{"ErrInvalidOptions/ThresholdOverOne", ok, ok, Options{Threshold: 1.5}, ErrInvalidOptions, "threshold"},
		{"ErrInvalidOptions/NaNThreshold", ok, ok, Options{Threshold: math.NaN()}, ErrInvalidOptions, "threshold"},
		{"ErrInvalidOptions/MaskOutside", ok, ok, Options{Masks: []image.Rectangle{image.Rect(50, 0, 60, 10)}}, ErrInvalidOptions, "mask 0"},
		{"ErrInvalidOptions/MaskEverything", ok, ok, Options{Masks: []image.Rectangle{image.Rect(0, 0, 40, 30)}}, ErrInvalidOptions, "whole"},
		{"ErrInvalidOptions/MaskEveryCentre", ok, ok, Options{Masks: []image.Rectangle{image.Rect(5, 5, 35, 25)}}, ErrInvalidOptions, "every window position"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Compare(tc.cand, tc.ref, tc.opts)
			require.ErrorIs(t, err, tc.want)
			require.ErrorContains(t, err, tc.mentioning)
			require.Nil(t, res)
		})
	}

	t.Run("SmallestRegionWorks", func(t *testing.T) {
		res, err := Compare(flatGray(11, 11, 10), pageLike(11, 11, 19), Options{})
		require.NoError(t, err)
		require.Len(t, res.Map.Values, 1)
	})
	t.Run("LargestRegionIsAllowed", func(t *testing.T) {
		require.NoError(t, checkImage("reference image", hugeImage{4096, 4096}))
	})
}

// BenchmarkCompare1280x800 measures a full-viewport checkpoint: grayscale
// conversion of both regions, median colour, the separable SSIM pass with the
// baseline, and the result.
func BenchmarkCompare1280x800(b *testing.B) {
	ref := pageLike(1280, 800, 20)
	cand := image.NewRGBA(ref.Bounds())
	shiftedRef := shifted(ref, 2, 1)
	for y := range 800 {
		for x := range 1280 {
			v := shiftedRef.GrayAt(x, y).Y
			cand.SetRGBA(x, y, color.RGBA{v, v, v, 255})
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compare(cand, ref, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
