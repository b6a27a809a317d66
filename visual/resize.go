package visual

import "math"

// resizeBilinear rescales src to width × height by bilinear interpolation.
// Pixel centres are aligned (destination pixel x samples source position
// (x + 0.5)·sw/dw − 0.5) and positions outside the source are clamped to its
// edge, so the result is deterministic and an unchanged size is an exact copy.
// Working on luma rather than colour gives the same result, since luma is a
// linear combination of the channels.
func resizeBilinear(src plane, width, height int) plane {
	dst := plane{width: width, height: height, pix: make([]float64, width*height)}
	if width == src.width && height == src.height {
		copy(dst.pix, src.pix)
		return dst
	}
	x0, x1, tx := bilinearTaps(src.width, width)
	y0, y1, ty := bilinearTaps(src.height, height)
	for y := 0; y < height; y++ {
		top := src.pix[y0[y]*src.width : (y0[y]+1)*src.width]
		bottom := src.pix[y1[y]*src.width : (y1[y]+1)*src.width]
		out := dst.pix[y*width : (y+1)*width]
		fy := ty[y]
		for x := range out {
			fx := tx[x]
			upper := top[x0[x]]*(1-fx) + top[x1[x]]*fx
			lower := bottom[x0[x]]*(1-fx) + bottom[x1[x]]*fx
			out[x] = upper*(1-fy) + lower*fy
		}
	}
	return dst
}

// bilinearTaps returns, for each of the dst positions along one axis, the two
// source indices it blends and the weight of the second.
func bilinearTaps(src, dst int) (lo, hi []int, frac []float64) {
	lo, hi, frac = make([]int, dst), make([]int, dst), make([]float64, dst)
	scale := float64(src) / float64(dst)
	last := float64(src - 1)
	for i := range dst {
		pos := math.Min(last, math.Max(0, (float64(i)+0.5)*scale-0.5))
		l := int(math.Floor(pos))
		lo[i] = l
		hi[i] = min(l+1, src-1)
		frac[i] = pos - float64(l)
	}
	return lo, hi, frac
}
