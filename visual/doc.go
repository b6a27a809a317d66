// Package visual scores the visual checkpoints of hidden-test benchmarks
// (WebsiteBench style): a marked region of the candidate site's screenshot is
// compared with the same region of the reference site, and the checkpoint
// passes when the normalised similarity reaches a threshold (τ = 0.75 by
// default).
//
// # Similarity
//
// The similarity is the mean structural similarity (SSIM) of Wang, Bovik,
// Sheikh and Simoncelli, "Image Quality Assessment: From Error Visibility to
// Structural Similarity" (IEEE TIP, 2004), in its standard setting:
//
//   - grayscale: ITU-R BT.601 luma, Y = 0.299 R + 0.587 G + 0.114 B on 8-bit
//     channels, so L = 255; transparent pixels are composited over white, the
//     browser's default canvas;
//   - an 11×11 Gaussian window with σ = 1.5, normalised to sum 1, applied as
//     two separable 11-tap passes;
//   - K1 = 0.01, K2 = 0.03, so C1 = (K1·L)² and C2 = (K2·L)²;
//   - population (weighted, not sample) variances and covariance;
//   - the "valid" region only: SSIM is computed at every position where the
//     whole window lies inside the region, and the mean is taken over those
//     positions. This is what Wang et al.'s original ssim_index.m does (with
//     no automatic downsampling), and what scikit-image's
//     structural_similarity reports with gaussian_weights=True, sigma=1.5,
//     use_sample_covariance=False, data_range=255 (it filters the whole image
//     but averages only the positions the window fully covers).
//
// # Flat-colour baseline
//
// Raw SSIM rewards large blank areas: a candidate that shows nothing but the
// page's background colour still matches every blank window of the reference,
// and against a region that is mostly white space it can score 0.9.
// WebsiteBench therefore measures SSIM "against a flat-colour baseline": a
// flat image filled with the reference region's median colour. Its public
// description states the baseline but not the formula, so Proctor uses the
// natural affine one:
//
//	baseline = SSIM(flat, reference)
//	score    = clamp((SSIM(candidate, reference) − baseline) / (1 − baseline), 0, 1)
//
// A candidate no better than a blank region of the reference's dominant colour
// scores 0; an exact copy scores 1. The median rather than the mean colour is
// used because a page region's median is its background colour, which is what a
// blank rebuild shows, whereas the mean of a white page with dark text is a grey
// nobody renders. When the reference region itself is flat (baseline within
// 1e-6 of 1) there is no structure to normalise against and the score is the
// raw SSIM, clamped to [0, 1].
//
// # Regions of different sizes, masks and limits
//
// A checkpoint compares regions, so when the candidate's region has another
// size than the reference's, the candidate is rescaled to the reference's size
// with bilinear interpolation on its luma (pixel centres aligned, edges
// clamped) and the result says so. Masks (rectangles in the reference region's
// coordinates) mark parts that must not count, such as a clock or an
// advertisement: they are painted with the baseline colour in both images and
// the window positions centred in them are left out of every mean. Regions
// smaller than the 11×11 window are refused rather than scored with a smaller
// window, because a smaller window changes what the number means; images over
// MaxPixels are refused before any work.
package visual
