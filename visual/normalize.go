package visual

// flatReferenceTolerance is how close to 1 the baseline must be for the
// reference to count as flat: its windows then have no variance to speak of,
// and dividing by 1 − baseline would only amplify rounding noise.
const flatReferenceTolerance = 1e-6

// Normalize maps a raw mean SSIM onto the checkpoint score, given the mean
// SSIM of the flat-colour baseline against the same reference:
// (ssim − baseline) / (1 − baseline), clamped to [0, 1]. A candidate no closer
// to the reference than a flat region of its median colour scores 0, an exact
// copy 1. For a flat reference (baseline within 1e-6 of 1) it returns the raw
// SSIM clamped to [0, 1], since there is nothing to normalise against.
func Normalize(ssim, baseline float64) float64 {
	if isFlatReference(baseline) {
		return clamp01(ssim)
	}
	return clamp01((ssim - baseline) / (1 - baseline))
}

// isFlatReference reports whether a baseline says the reference has no
// structure.
func isFlatReference(baseline float64) bool {
	return baseline >= 1-flatReferenceTolerance
}

// Passes reports whether a checkpoint score reaches its threshold. The
// comparison is inclusive and exact: a score of 0.75 passes τ = 0.75, 0.7499
// does not.
func Passes(score, threshold float64) bool {
	return score >= threshold
}

func clamp01(v float64) float64 {
	switch {
	case v < 0:
		return 0
	case v > 1:
		return 1
	default:
		return v
	}
}
