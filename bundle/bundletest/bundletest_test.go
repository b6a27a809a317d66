package bundletest

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// names lists an archive's entry names with Go's own readers.
func names(t *testing.T, path string, kind Kind) []string {
	t.Helper()
	var out []string
	if kind == Zip {
		zr, err := zip.OpenReader(path)
		if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
			require.NoError(t, err)
		}
		defer zr.Close()
		for _, f := range zr.File {
			out = append(out, f.Name)
		}
		return out
	}
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	gz, err := gzip.NewReader(f)
	require.NoError(t, err)
	tr := tar.NewReader(gz)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil && !errors.Is(err, tar.ErrInsecurePath) {
			require.NoError(t, err)
		}
		out = append(out, hdr.Name)
	}
}

func TestBuilders(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, kind := range []Kind{Zip, TarGz} {
		ext := "." + string(kind)
		require.Contains(t, names(t, WebArenaVerified(t, filepath.Join(dir, "wav"+ext), WAVTask{ID: "107"}, WAVTask{ID: "108", Missing: true}), kind), "108/.missing")
		require.Contains(t, names(t, Proctor(t, filepath.Join(dir, "p"+ext), ProctorManifest("webarena-verified", "full"), ProctorTask{ID: "1", Steps: 2}), kind), "tasks/1/screenshots/0001.png")
		require.Contains(t, names(t, OnlineMind2Web(t, filepath.Join(dir, "om"+ext), OM2WTask{ID: "abc", Steps: 2}), kind), "abc/trajectory/1_full_screenshot.png")
		require.Contains(t, names(t, AgentLab(t, filepath.Join(dir, "al"+ext), AgentLabTask{TaskName: "webarena.310", Steps: 1, StepsInfo: true}), kind), AgentLabFolder("webarena.310", 0)+"/steps_info.json")
	}
	require.Equal(t, TarGz, KindOf("x.tgz"))
	require.Equal(t, Zip, KindOf("X.ZIP"))
}

func TestLargeHAR(t *testing.T) {
	t.Parallel()
	b, err := io.ReadAll(LargeHAR(1 << 20)())
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(b), 1<<20)
	require.True(t, json.Valid(b))
	require.True(t, json.Valid(HAR(3)))
}

func TestHostileBuild(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, c := range Hostile() {
		require.False(t, seen[c.Name], c.Name)
		seen[c.Name] = true
		require.NotEmpty(t, c.Message, c.Name)
		path := c.Build(t, t.TempDir())
		_, err := os.Stat(path)
		require.NoError(t, err, c.Name)
	}
}
