package jpegscale

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"testing"
	"testing/iotest"

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

// pngHeader is a PNG that is only a header claiming w×h pixels.
func pngHeader(w, h uint32) []byte {
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 2 // 8-bit RGB
	chunk := func(kind string, data []byte) []byte {
		out := binary.BigEndian.AppendUint32(nil, uint32(len(data)))
		out = append(out, kind...)
		out = append(out, data...)
		return binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(append([]byte(kind), data...)))
	}
	out := []byte("\x89PNG\r\n\x1a\n")
	out = append(out, chunk("IHDR", ihdr)...)
	return append(out, chunk("IEND", nil)...)
}

func TestDecode(t *testing.T) {
	t.Parallel()
	img := image.NewRGBA(image.Rect(0, 0, 40, 30))
	var pngBuf, jpegBuf bytes.Buffer
	require.NoError(t, png.Encode(&pngBuf, img))
	require.NoError(t, jpeg.Encode(&jpegBuf, img, nil))
	cases := []struct {
		name        string
		data        []byte
		maxPixels   int64
		contentType string
		problem     string
	}{
		{"png", pngBuf.Bytes(), 1200, ContentTypePNG, ""},
		{"jpeg", jpegBuf.Bytes(), 1200, ContentTypeJPEG, ""},
		{"no cap", pngBuf.Bytes(), 0, ContentTypePNG, ""},
		{"one pixel over the cap", pngBuf.Bytes(), 1199, "", "the image is 40×30 pixels, over the limit of 1199 pixels"},
		{"a small file claiming a huge image", pngHeader(100_000, 100_000), DefaultMaxPixels, "", "100000×100000 pixels, over the limit"},
		{"a header without pixels", pngHeader(10, 10), DefaultMaxPixels, "", "invalid image/png image"},
		{"truncated png", pngBuf.Bytes()[:pngBuf.Len()-30], 0, "", "invalid image/png image"},
		{"truncated jpeg", jpegBuf.Bytes()[:jpegBuf.Len()/2], 0, "", "invalid image/jpeg"},
		{"jpeg header only", jpegBuf.Bytes()[:4], 0, "", "invalid image/jpeg header"},
		{"gif", []byte("GIF89a\x01\x00\x01\x00"), 0, "", "not a PNG or JPEG image"},
		{"empty", nil, 0, "", "not a PNG or JPEG image"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			img, contentType, err := Decode(bytes.NewReader(c.data), c.maxPixels)
			if c.problem != "" {
				require.ErrorContains(t, err, c.problem)
				require.Nil(t, img)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.contentType, contentType)
			require.Equal(t, image.Rect(0, 0, 40, 30), img.Bounds())
		})
	}
	var tooLarge *TooLargeError
	_, _, err := Decode(bytes.NewReader(pngHeader(50_000, 50_000)), DefaultMaxPixels)
	require.ErrorAs(t, err, &tooLarge)
	require.Equal(t, TooLargeError{Width: 50_000, Height: 50_000, MaxPixels: DefaultMaxPixels}, *tooLarge)

	// A read error of the source is returned as is, not as a bad image.
	_, _, err = Decode(io.MultiReader(bytes.NewReader(pngBuf.Bytes()[:20]), iotest.ErrReader(io.ErrClosedPipe)), 0)
	require.ErrorIs(t, err, io.ErrClosedPipe)
}

func TestScale_PNGAndLimits(t *testing.T) {
	t.Parallel()
	src := image.NewRGBA(image.Rect(0, 0, 640, 400))
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, src))
	out, err := Scale(buf.Bytes(), 320, 70)
	require.NoError(t, err)
	img, err := jpeg.Decode(bytes.NewReader(out))
	require.NoError(t, err)
	require.Equal(t, image.Rect(0, 0, 320, 200), img.Bounds(), "uploaded PNG screenshots scale to JPEG")

	_, err = Scale(pngHeader(20_000, 20_000), 320, 70)
	var tooLarge *TooLargeError
	require.ErrorAs(t, err, &tooLarge)
}
