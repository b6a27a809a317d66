package visual

import (
	"fmt"
	"image"
	"image/color"
	"math"
)

// DefaultThreshold is WebsiteBench's checkpoint threshold τ.
const DefaultThreshold = 0.75

// Options tune one checkpoint comparison. The zero value is the standard
// checkpoint: τ = 0.75, no masks.
type Options struct {
	// Threshold is the score the checkpoint must reach, in (0, 1]; 0 means
	// DefaultThreshold.
	Threshold float64
	// Masks are rectangles of the reference region that must not count
	// (clocks, advertisements, other declared non-deterministic parts), in
	// coordinates relative to the reference image's top-left corner. A mask
	// reaching past the region is clipped to it; one entirely outside is an
	// error, since it can only be a mistake in the checkpoint.
	Masks []image.Rectangle
}

// Result is the outcome of one checkpoint comparison.
type Result struct {
	// SSIM is the mean SSIM of the candidate against the reference.
	SSIM float64 `json:"ssim"`
	// Baseline is the mean SSIM of a flat region of the reference's median
	// colour against the reference.
	Baseline float64 `json:"baseline"`
	// Score is SSIM normalised against Baseline (see Normalize), in [0, 1].
	Score float64 `json:"score"`
	// Passed is Score ≥ Threshold.
	Passed bool `json:"passed"`
	// Threshold is the threshold the score was held to.
	Threshold float64 `json:"threshold"`
	// Width and Height are the compared size: the reference region's.
	Width  int `json:"width"`
	Height int `json:"height"`
	// CandidateWidth and CandidateHeight are the candidate region's size
	// before any rescaling.
	CandidateWidth  int `json:"candidate_width"`
	CandidateHeight int `json:"candidate_height"`
	// Resized is true when the candidate was rescaled to the reference's size.
	Resized bool `json:"resized"`
	// BaselineColor is the reference's median colour, the flat baseline's fill.
	BaselineColor color.RGBA `json:"baseline_color"`
	// FlatReference is true when the reference region has no structure, so
	// Score is the raw SSIM rather than the normalised one.
	FlatReference bool `json:"flat_reference"`
	// MaskedPositions counts the window positions left out by masks.
	MaskedPositions int `json:"masked_positions"`
	// Map is the local SSIM map; it is rendered as an image rather than
	// serialised.
	Map *Map `json:"-"`
}

// Compare scores a candidate region against a reference region: mean SSIM,
// the flat-colour baseline, the normalised score and the pass verdict. A
// candidate of another size is rescaled to the reference's size (Resized).
// Errors wrap ErrEmptyImage, ErrTooLarge, ErrTooSmall (a reference region
// under 11×11) or ErrInvalidOptions (threshold outside (0, 1], a mask outside
// the region, or masks covering every window position).
func Compare(candidate, reference image.Image, opts Options) (*Result, error) {
	threshold := opts.Threshold
	if threshold == 0 {
		threshold = DefaultThreshold
	}
	if math.IsNaN(threshold) || threshold < 0 || threshold > 1 {
		return nil, fmt.Errorf("threshold %v is outside (0, 1]: %w", opts.Threshold, ErrInvalidOptions)
	}
	if err := checkImage("candidate image", candidate); err != nil {
		return nil, err
	}
	if err := checkImage("reference image", reference); err != nil {
		return nil, err
	}
	refBounds, candBounds := reference.Bounds(), candidate.Bounds()
	if err := checkWindowFits("reference region", refBounds); err != nil {
		return nil, err
	}
	width, height := refBounds.Dx(), refBounds.Dy()

	maskedPixels, err := maskPixels(opts.Masks, width, height)
	if err != nil {
		return nil, err
	}
	flatColor, ok := medianColor(reference, maskedPixels)
	if !ok {
		return nil, fmt.Errorf("masks cover the whole %dx%d reference region: %w", width, height, ErrInvalidOptions)
	}
	flat := luma(float64(flatColor.R), float64(flatColor.G), float64(flatColor.B))

	ref := toPlane(reference)
	cand := toPlane(candidate)
	resized := candBounds.Dx() != width || candBounds.Dy() != height
	if resized {
		cand = resizeBilinear(cand, width, height)
	}

	// Masked pixels get the same flat value in both images, so windows that
	// straddle a mask's edge compare only what lies outside it.
	var skip []bool
	masked := 0
	if maskedPixels != nil {
		for i, m := range maskedPixels {
			if m {
				ref.pix[i] = flat
				cand.pix[i] = flat
			}
		}
		ow, oh := width-2*windowRadius, height-2*windowRadius
		skip = make([]bool, ow*oh)
		for oy := range oh {
			for ox := range ow {
				if maskedPixels[(oy+windowRadius)*width+ox+windowRadius] {
					skip[oy*ow+ox] = true
					masked++
				}
			}
		}
	}

	m := measure(cand, ref, flat, skip)
	if m.counted == 0 {
		return nil, fmt.Errorf("masks cover every window position of the %dx%d reference region: %w", width, height, ErrInvalidOptions)
	}
	score := Normalize(m.ssim, m.baseline)
	return &Result{
		SSIM:            m.ssim,
		Baseline:        m.baseline,
		Score:           score,
		Passed:          Passes(score, threshold),
		Threshold:       threshold,
		Width:           width,
		Height:          height,
		CandidateWidth:  candBounds.Dx(),
		CandidateHeight: candBounds.Dy(),
		Resized:         resized,
		BaselineColor:   flatColor,
		FlatReference:   isFlatReference(m.baseline),
		MaskedPositions: masked,
		Map:             newMap(m.values, skip, width, height),
	}, nil
}

// maskPixels marks the pixels of a width × height region covered by masks;
// nil when there are no masks.
func maskPixels(masks []image.Rectangle, width, height int) ([]bool, error) {
	if len(masks) == 0 {
		return nil, nil
	}
	region := image.Rect(0, 0, width, height)
	marked := make([]bool, width*height)
	for i, mask := range masks {
		clipped := mask.Canon().Intersect(region)
		if clipped.Empty() {
			return nil, fmt.Errorf("mask %d %v lies outside the %dx%d region: %w", i, mask, width, height, ErrInvalidOptions)
		}
		for y := clipped.Min.Y; y < clipped.Max.Y; y++ {
			row := marked[y*width : (y+1)*width]
			for x := clipped.Min.X; x < clipped.Max.X; x++ {
				row[x] = true
			}
		}
	}
	return marked, nil
}
