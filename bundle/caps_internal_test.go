package bundle

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
)

// tarGz is a tar.gz of the named files, in order.
func tarGz(t testing.TB, files [][2]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range files {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: f[0], Mode: 0o644, Size: int64(len(f[1])), Typeflag: tar.TypeReg}))
		_, err := tw.Write([]byte(f[1]))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
	return buf.Bytes()
}

// TestAssembly_StopsWhenCanceled reads each format's tasks with a canceled
// context: the loops over paths and tasks notice it and return its error
// instead of running to the end.
func TestAssembly_StopsWhenCanceled(t *testing.T) {
	t.Parallel()
	const tasks = 3 * checkEvery
	layouts := map[string]func(i int) [][2]string{
		models.BundleWebArenaVerified: func(i int) [][2]string {
			return [][2]string{{fmt.Sprintf("%d/.missing", i), ""}}
		},
		models.BundleProctor: func(i int) [][2]string {
			return [][2]string{{fmt.Sprintf("tasks/%d/.missing", i), ""}}
		},
		models.BundleOnlineMind2Web: func(i int) [][2]string {
			return [][2]string{{fmt.Sprintf("%d/result.json", i), `{"action_history": ["a"]}`}}
		},
		models.BundleAgentLab: func(i int) [][2]string {
			return [][2]string{{fmt.Sprintf("agent_on_webarena.%d_0/summary_info.json", i), `{}`}}
		},
	}
	for format, layout := range layouts {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			var files [][2]string
			if format == models.BundleProctor {
				files = append(files, [2]string{"manifest.json", `{"format": "proctor-trajectory/1"}`})
			}
			for i := range tasks {
				files = append(files, layout(i)...)
			}
			archive := tarGz(t, files)
			in := newInspector(t.Context(), DefaultLimits())
			_, err := walk(t.Context(), bytes.NewReader(archive), int64(len(archive)), DefaultLimits(), nil, true, in.visit)
			in.images.wait()
			require.NoError(t, err)
			detected, l := detect(in.files)
			require.Equal(t, format, detected)

			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			require.ErrorIs(t, newAssembly(ctx, in, format, l).read(), context.Canceled)
			a := newAssembly(t.Context(), in, format, l)
			require.NoError(t, a.read())
			require.Len(t, a.tasks, tasks)
		})
	}
}

// pngOf encodes an image as PNG.
func pngOf(t testing.TB, img image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, img))
	return buf.Bytes()
}

// TestDecodeCost: the estimate a decoder's memory is weighed by is never
// below what decoding the image allocates for its pixels.
func TestDecodeCost(t *testing.T) {
	t.Parallel()
	rect := image.Rect(0, 0, 300, 200)
	var jpg bytes.Buffer
	require.NoError(t, jpeg.Encode(&jpg, image.NewRGBA(rect), nil))
	cases := map[string][]byte{
		"16-bit RGBA PNG": pngOf(t, image.NewRGBA64(rect)),
		"8-bit RGBA PNG":  pngOf(t, image.NewNRGBA(rect)),
		"gray PNG":        pngOf(t, image.NewGray(rect)),
		"16-bit gray PNG": pngOf(t, image.NewGray16(rect)),
		"paletted PNG":    pngOf(t, image.NewPaletted(rect, color.Palette{color.Black, color.White})),
		"JPEG":            jpg.Bytes(),
	}
	for name, content := range cases {
		img, _, err := image.Decode(bytes.NewReader(content))
		require.NoError(t, err, name)
		pixels := pixelBytes(t, img)
		require.GreaterOrEqual(t, decodeCost(content), int64(len(content)+pixels), name)
	}
	require.Equal(t, int64(9), decodeCost([]byte("not image")), "a file that is no image costs its bytes")
}

func pixelBytes(t *testing.T, img image.Image) int {
	t.Helper()
	switch img := img.(type) {
	case *image.RGBA64:
		return len(img.Pix)
	case *image.NRGBA64:
		return len(img.Pix)
	case *image.NRGBA:
		return len(img.Pix)
	case *image.RGBA:
		return len(img.Pix)
	case *image.Gray:
		return len(img.Pix)
	case *image.Gray16:
		return len(img.Pix)
	case *image.Paletted:
		return len(img.Pix)
	case *image.YCbCr:
		return len(img.Y) + len(img.Cb) + len(img.Cr)
	}
	t.Fatalf("unexpected image type %T", img)
	return 0
}

// TestImageChecks_DecodeBudget decodes screenshots that weigh more together
// than the decoding budget: the bytes in flight never pass it, an image
// larger than the whole budget decodes alone, and every one is decoded.
func TestImageChecks_DecodeBudget(t *testing.T) {
	t.Parallel()
	big := pngOf(t, image.NewRGBA64(image.Rect(0, 0, 400, 400)))
	cost := decodeCost(big) // 400 × 400 × 8 × 2 bytes and the file: about 2.5 MiB
	cases := []struct {
		name   string
		budget int64
		peak   func(t *testing.T, peak int64)
	}{
		{"two fit at once", 2*cost + cost/2, func(t *testing.T, peak int64) {
			require.LessOrEqual(t, peak, 2*cost+cost/2)
			require.GreaterOrEqual(t, peak, cost)
		}},
		{"larger than the budget", cost / 3, func(t *testing.T, peak int64) {
			require.Equal(t, cost/3, peak, "an image over the whole budget takes all of it, alone")
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			checks := newImageChecks(t.Context(), 0, c.budget)
			var recs []*record
			for i := range 12 {
				rec := &record{path: fmt.Sprintf("%d.png", i), role: roleImage, size: int64(len(big))}
				recs = append(recs, rec)
				checks.check(rec, bytes.NewReader(big))
			}
			checks.wait()
			for _, rec := range recs {
				require.Empty(t, rec.problem)
				require.Equal(t, "image/png", rec.contentType)
			}
			c.peak(t, checks.budget.peak)
			require.Zero(t, checks.budget.inUse, "every decoder gave its bytes back")
		})
	}
	t.Run("inline decodes take the whole budget", func(t *testing.T) {
		t.Parallel()
		checks := newImageChecks(t.Context(), 0, 4*cost)
		rec := &record{path: "x.png", role: roleImage, size: -1}
		checks.check(rec, bytes.NewReader(big))
		checks.wait()
		require.Empty(t, rec.problem)
		require.Equal(t, 4*cost, checks.budget.peak)
	})
}

func TestShorten(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"a little too long", 10, "a littl…"},
		{"ééééé", 8, "éé…"}, // never cuts a character in two
		{strings.Repeat("x", 300), 256, strings.Repeat("x", 253) + "…"},
	} {
		got := shorten(c.in, c.max)
		require.Equal(t, c.want, got)
		require.LessOrEqual(t, len(got), c.max)
	}
}
