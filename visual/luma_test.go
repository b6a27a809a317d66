package visual

import (
	"image"
	"image/color"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestToPlane_BT601(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 5, 1))
	img.SetRGBA(0, 0, color.RGBA{255, 0, 0, 255})
	img.SetRGBA(1, 0, color.RGBA{0, 255, 0, 255})
	img.SetRGBA(2, 0, color.RGBA{0, 0, 255, 255})
	img.SetRGBA(3, 0, color.RGBA{255, 255, 255, 255})
	img.SetRGBA(4, 0, color.RGBA{0, 0, 0, 0}) // transparent: white canvas shows
	p := toPlane(img)
	// 0.299·255, 0.587·255, 0.114·255, and white.
	want := []float64{76.245, 149.685, 29.07, 255, 255}
	for i, w := range want {
		require.InDelta(t, w, p.pix[i], 1e-9, "pixel %d", i)
	}
}

func TestToPlane_AlphaOverWhite(t *testing.T) {
	// Black at alpha 51 (20%) over white: 255 · 0.8 = 204.
	n := image.NewNRGBA(image.Rect(0, 0, 1, 1))
	n.SetNRGBA(0, 0, color.NRGBA{0, 0, 0, 51})
	require.InDelta(t, 204, toPlane(n).pix[0], 1e-9)

	r := image.NewRGBA(image.Rect(0, 0, 1, 1))
	r.SetRGBA(0, 0, color.RGBA{0, 0, 0, 51})
	require.InDelta(t, 204, toPlane(r).pix[0], 1e-9)
	require.InDelta(t, 204, toPlane(opaqueOnly{r}).pix[0], 1e-9)
}

// TestToPlane_FastPathsMatchGeneric reads the same opaque picture through
// every typed fast path and through image.Image.At.
func TestToPlane_FastPathsMatchGeneric(t *testing.T) {
	rgba := image.NewRGBA(image.Rect(10, 20, 17, 25)) // a sub-image origin
	nrgba := image.NewNRGBA(rgba.Bounds())
	for y := 20; y < 25; y++ {
		for x := 10; x < 17; x++ {
			c := color.RGBA{uint8(x * 13), uint8(y * 7), uint8(x * y), 255}
			rgba.SetRGBA(x, y, c)
			nrgba.Set(x, y, c)
		}
	}
	generic := toPlane(opaqueOnly{rgba})
	require.Equal(t, 7, generic.width)
	require.Equal(t, 5, generic.height)
	require.Equal(t, generic.pix, toPlane(rgba).pix)
	require.Equal(t, generic.pix, toPlane(nrgba).pix)
	require.Equal(t, toPlane(rgba.SubImage(image.Rect(12, 21, 15, 24))).pix,
		toPlane(opaqueOnly{rgba.SubImage(image.Rect(12, 21, 15, 24))}).pix)

	gray := grayFrom(4, 3, func(x, y int) uint8 { return uint8(40*x + 3*y) })
	require.InDeltaSlice(t, toPlane(opaqueOnly{gray}).pix, toPlane(gray).pix, 1e-12)
	require.InDelta(t, 86, toPlane(gray).pix[2*4+2], 1e-12) // x = 2, y = 2
}

func TestMedianColor(t *testing.T) {
	white := color.RGBA{255, 255, 255, 255}
	navy := color.RGBA{20, 30, 90, 255}
	img := image.NewRGBA(image.Rect(0, 0, 5, 1))
	for x, c := range []color.RGBA{white, navy, white, navy, white} {
		img.SetRGBA(x, 0, c)
	}
	got, ok := medianColor(img, nil)
	require.True(t, ok)
	require.Equal(t, white, got)

	// Excluding two whites leaves navy, white, navy.
	got, ok = medianColor(img, []bool{true, false, true, false, false})
	require.True(t, ok)
	require.Equal(t, navy, got)

	// An even count takes the lower middle value, per channel.
	got, ok = medianColor(img, []bool{true, false, false, false, true})
	require.True(t, ok)
	require.Equal(t, navy, got)

	_, ok = medianColor(img, []bool{true, true, true, true, true})
	require.False(t, ok)
}
