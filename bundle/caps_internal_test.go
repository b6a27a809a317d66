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
			in := newInspector(DefaultLimits())
			_, err := walk(t.Context(), bytes.NewReader(archive), int64(len(archive)), DefaultLimits(), nil, true, in.visit)
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

// TestImageVerifier checks screenshots by header and structure, written
// in pieces of every size: valid PNGs of each color model and JPEGs pass;
// a truncated file, a flipped byte in a PNG, a lying signature, dimensions
// over the cap and a header past its limit are named.
func TestImageVerifier(t *testing.T) {
	t.Parallel()
	rect := image.Rect(0, 0, 300, 200)
	var jpg bytes.Buffer
	require.NoError(t, jpeg.Encode(&jpg, image.NewRGBA(rect), nil))
	valid := map[string][]byte{
		"16-bit RGBA PNG": pngOf(t, image.NewRGBA64(rect)),
		"8-bit RGBA PNG":  pngOf(t, image.NewNRGBA(rect)),
		"gray PNG":        pngOf(t, image.NewGray(rect)),
		"paletted PNG":    pngOf(t, image.NewPaletted(rect, color.Palette{color.Black, color.White})),
		"JPEG":            jpg.Bytes(),
	}
	flipped := bytes.Clone(valid["gray PNG"])
	flipped[len(flipped)/2] ^= 0x40
	// A JPEG whose metadata pushes its dimensions past the header limit.
	bigHeader := append([]byte{0xFF, 0xD8}, bytes.Repeat(append([]byte{0xFF, 0xE1, 0xFF, 0xFF}, make([]byte, 0xFFFD)...), imageHeaderBytes/0xFFFF+1)...)
	bigHeader = append(bigHeader, jpg.Bytes()[2:]...)
	invalid := map[string]struct {
		content []byte
		problem string
	}{
		"truncated PNG":       {valid["gray PNG"][:len(valid["gray PNG"])-20], "ends before its IEND chunk"},
		"flipped PNG byte":    {flipped, "fails its checksum"},
		"truncated JPEG":      {jpg.Bytes()[:jpg.Len()-100], "does not end with the end-of-image marker"},
		"lying PNG":           {append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 64)...), "invalid image/png header"},
		"JPEG over the cap":   {jpg.Bytes(), "300×200 pixels, over the limit of 100 pixels"},
		"JPEG header too far": {bigHeader, "not within the first"},
	}
	pieces := []int{1, 7, 4096, 1 << 30}
	verify := func(content []byte, maxPixels int64, piece int) (string, error) {
		_, contentType, err := imageMagic(bytes.NewReader(content))
		require.NoError(t, err)
		require.NotEmpty(t, contentType)
		v := newImageVerifier(contentType, maxPixels)
		for rest := content; len(rest) > 0; {
			n := min(piece, len(rest))
			_, err := v.Write(rest[:n])
			require.NoError(t, err)
			rest = rest[n:]
		}
		return contentType, v.finish()
	}
	for name, content := range valid {
		for _, piece := range pieces {
			contentType, err := verify(content, 0, piece)
			require.NoError(t, err, "%s in pieces of %d", name, piece)
			require.True(t, strings.HasPrefix(contentType, "image/"))
		}
	}
	for name, c := range invalid {
		maxPixels := int64(0)
		if name == "JPEG over the cap" {
			maxPixels = 100
		}
		for _, piece := range pieces {
			_, err := verify(c.content, maxPixels, piece)
			require.ErrorContains(t, err, c.problem, "%s in pieces of %d", name, piece)
		}
	}
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
