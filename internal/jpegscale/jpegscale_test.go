package jpegscale

import (
	"bytes"
	"image"
	"image/color"
	"image/jpeg"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestScale(t *testing.T) {
	t.Parallel()
	// Left half red, right half blue: the thumbnail keeps the halves.
	src := image.NewRGBA(image.Rect(0, 0, 1280, 800))
	for y := range 800 {
		for x := range 1280 {
			c := color.RGBA{R: 220, A: 255}
			if x >= 640 {
				c = color.RGBA{B: 220, A: 255}
			}
			src.SetRGBA(x, y, c)
		}
	}
	var buf bytes.Buffer
	require.NoError(t, jpeg.Encode(&buf, src, &jpeg.Options{Quality: 90}))

	out, err := Scale(buf.Bytes(), 320, 70)
	require.NoError(t, err)
	img, err := jpeg.Decode(bytes.NewReader(out))
	require.NoError(t, err)
	require.Equal(t, image.Rect(0, 0, 320, 200), img.Bounds())
	r, _, b, _ := img.At(40, 100).RGBA()
	require.Greater(t, r>>8, uint32(180))
	require.Less(t, b>>8, uint32(60))
	r, _, b, _ = img.At(280, 100).RGBA()
	require.Less(t, r>>8, uint32(60))
	require.Greater(t, b>>8, uint32(180))

	// A narrow image is not enlarged; the generic path handles gray JPEGs.
	gray := image.NewGray(image.Rect(0, 0, 100, 50))
	buf.Reset()
	require.NoError(t, jpeg.Encode(&buf, gray, nil))
	out, err = Scale(buf.Bytes(), 320, 70)
	require.NoError(t, err)
	img, err = jpeg.Decode(bytes.NewReader(out))
	require.NoError(t, err)
	require.Equal(t, image.Rect(0, 0, 100, 50), img.Bounds())

	_, err = Scale([]byte("not a jpeg"), 320, 70)
	require.Error(t, err)
}
