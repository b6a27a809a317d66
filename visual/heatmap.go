package visual

import (
	"image"
	"image/color"
	"math"
)

// valueAt returns the map value for region pixel (x, y): the window centred
// there, or the nearest one for pixels in the border no window is centred on.
func (m *Map) valueAt(x, y int) (v float64, masked bool) {
	mx := min(max(x-m.Offset, 0), m.Width-1)
	my := min(max(y-m.Offset, 0), m.Height-1)
	i := my*m.Width + mx
	return m.Values[i], m.Masked != nil && m.Masked[i]
}

// Gray renders the map at the region's size as a grayscale image: white where
// the candidate matches (SSIM 1), black where it does not (SSIM ≤ 0). Masked
// positions are white, like matching ones, because they never count against
// the candidate. The border the window cannot be centred on repeats the
// nearest value, so the image lines up with the region pixel for pixel.
func (m *Map) Gray() *image.Gray {
	width, height := m.RegionSize()
	img := image.NewGray(image.Rect(0, 0, width, height))
	for y := range height {
		row := img.Pix[y*img.Stride : y*img.Stride+width]
		for x := range row {
			v, masked := m.valueAt(x, y)
			if masked {
				v = 1
			}
			row[x] = uint8(math.Round(clamp01(v) * 255))
		}
	}
	return img
}

// Heat renders the map at the region's size as a colour image for the results
// page: red where SSIM ≤ 0, amber at 0.5, white at 1, slate for masked
// positions; the border repeats the nearest value, as in Gray.
func (m *Map) Heat() *image.RGBA {
	width, height := m.RegionSize()
	img := image.NewRGBA(image.Rect(0, 0, width, height))
	for y := range height {
		row := img.Pix[y*img.Stride : y*img.Stride+4*width]
		for x := range width {
			v, masked := m.valueAt(x, y)
			// Slate reads as "not scored" next to the red-to-white ramp.
			c := color.RGBA{R: 148, G: 163, B: 184, A: 255}
			if !masked {
				c = heatColor(v)
			}
			row[4*x], row[4*x+1], row[4*x+2], row[4*x+3] = c.R, c.G, c.B, c.A
		}
	}
	return img
}

// heatColor interpolates the heat ramp at a local SSIM value: dissimilar
// windows red, half-similar amber, identical white, so differences stand out
// on a mostly white map.
func heatColor(v float64) color.RGBA {
	heatLow := [3]float64{185, 28, 28}
	heatMiddle := [3]float64{245, 158, 11}
	heatHigh := [3]float64{255, 255, 255}
	t := clamp01(v)
	from, to, f := heatLow, heatMiddle, t*2
	if t > 0.5 {
		from, to, f = heatMiddle, heatHigh, (t-0.5)*2
	}
	var c [3]uint8
	for i := range c {
		c[i] = uint8(math.Round(from[i] + (to[i]-from[i])*f))
	}
	return color.RGBA{R: c[0], G: c[1], B: c[2], A: 255}
}
