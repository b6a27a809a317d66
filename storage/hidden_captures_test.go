package storage_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/png"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/importer"
	"proctor/internal/evaltest"
	"proctor/models"
	"proctor/storage"
	"proctor/storage/storagetest"
)

// capturePNG encodes a w × h image of one shade.
func capturePNG(t *testing.T, w, h int, shade uint8) []byte {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = shade
	}
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, img))
	return b.Bytes()
}

// hiddenBenchFile is a hidden-tests benchmark of one task whose journey
// compares two captures, with the given images.
func hiddenBenchFile(t *testing.T, header, card []byte) string {
	t.Helper()
	suite := map[string]any{
		"version": 1, "site": "shop",
		"tests": []any{
			map[string]any{"id": "home-look", "group": "browser", "level": 1, "title": "SECRET-TITLE the home page looks right",
				"journey": map[string]any{"steps": []any{map[string]any{"action": "goto", "url": "/"}}},
				"checkpoints": []any{
					map[string]any{"capture": "header", "region": map[string]any{"css": "header"}},
					map[string]any{"capture": "card", "region": map[string]any{"css": ".card"}},
				}},
		},
	}
	task := map[string]any{
		"id": "shop-rebuild", "intent": "Explore the shop at __SHOP__ and rebuild it.", "start_urls": []any{"__SHOP__/"},
		"eval": map[string]any{"suite": suite, "captures": map[string]any{
			"header": base64.StdEncoding.EncodeToString(header),
			"card":   base64.StdEncoding.EncodeToString(card),
		}},
	}
	var b strings.Builder
	for _, line := range []any{map[string]any{"proctor_benchmark": 1, "name": "Rebuild", "evaluator": "hidden-tests"}, task} {
		enc, err := json.Marshal(line)
		require.NoError(t, err)
		b.Write(enc)
		b.WriteByte('\n')
	}
	return b.String()
}

func TestStore_ReferenceCaptures(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		sys := benchSystemCtx()
		anon, user, admin := benchActors(t, db)
		header, card := capturePNG(t, 40, 10, 30), capturePNG(t, 12, 20, 200)
		ds, err := importer.Parse(evaltest.Registry(), models.FormatProctor, strings.NewReader(hiddenBenchFile(t, header, card)), nil)
		require.NoError(t, err)

		v1, err := db.ImportBenchmark(sys, "rebuild", ds, "rebuild.jsonl", 0)
		require.NoError(t, err)
		require.True(t, v1.Created)
		require.Equal(t, models.EvaluatorHiddenTests, v1.Benchmark.Evaluator)
		task, err := db.TaskByExternalID(admin, "rebuild", "shop-rebuild", benchScope(admin))
		require.NoError(t, err)
		require.Equal(t, ds.Tasks[0].EvalSpec, task.EvalSpec)
		require.Empty(t, task.ReferenceCaptures, "task reads never load the images")

		t.Run("RoundTrip", func(t *testing.T) {
			for _, ctx := range []context.Context{sys, admin} {
				caps, err := db.ReferenceCaptures(ctx, task.ID)
				require.NoError(t, err)
				require.Len(t, caps, 2)
				require.Equal(t, "card", caps[0].Name)
				require.Equal(t, card, caps[0].PNG, "the bytes come back unchanged")
				require.Equal(t, ds.Tasks[0].ReferenceCaptures[0].SHA256, caps[0].SHA256)
				require.Equal(t, [2]int{12, 20}, [2]int{caps[0].Width, caps[0].Height})
				require.Equal(t, "header", caps[1].Name)
				require.Equal(t, header, caps[1].PNG)
				require.Equal(t, task.ID, caps[1].TaskID)
			}
		})

		// Captures are read for the hidden-tests job only: HiddenTask, the
		// one read that loads them, refuses every caller but the system.
		t.Run("Permissions", func(t *testing.T) {
			for _, ctx := range []context.Context{anon, user, admin} {
				_, err := db.HiddenTask(ctx, 1)
				require.Equal(t, models.EFORBIDDEN, models.ErrorCode(err))
			}
			public, err := db.TaskByExternalID(user, "rebuild", "shop-rebuild", benchScope(user))
			require.NoError(t, err)
			require.Empty(t, public.EvalSpec)
		})

		t.Run("UnchangedImportAddsNothing", func(t *testing.T) {
			again, err := db.ImportBenchmark(sys, "rebuild", ds, "rebuild.jsonl", 0)
			require.NoError(t, err)
			require.False(t, again.Created)
			require.Equal(t, int64(2), countRows(t, db, "reference_captures", ""))
		})

		t.Run("NewImageIsANewVersion", func(t *testing.T) {
			changed := capturePNG(t, 12, 20, 90)
			ds2, err := importer.Parse(evaltest.Registry(), models.FormatProctor, strings.NewReader(hiddenBenchFile(t, header, changed)), nil)
			require.NoError(t, err)
			v2, err := db.ImportBenchmark(sys, "rebuild", ds2, "rebuild.jsonl", 0)
			require.NoError(t, err)
			require.True(t, v2.Created)
			require.Equal(t, 2, v2.Version.Version)
			task2, err := db.TaskByExternalID(admin, "rebuild", "shop-rebuild", benchScope(admin))
			require.NoError(t, err)
			require.NotEqual(t, task.ID, task2.ID)
			caps, err := db.ReferenceCaptures(sys, task2.ID)
			require.NoError(t, err)
			require.Equal(t, changed, caps[0].PNG)
			old, err := db.ReferenceCaptures(sys, task.ID)
			require.NoError(t, err)
			require.Equal(t, card, old[0].PNG, "the first version keeps its images")
		})

		t.Run("TaskWithoutCaptures", func(t *testing.T) {
			importBenchFixture(t, db)
			plain, err := db.TaskByExternalID(admin, "mini", "t1", benchScope(admin))
			require.NoError(t, err)
			caps, err := db.ReferenceCaptures(sys, plain.ID)
			require.NoError(t, err)
			require.Empty(t, caps)
		})
	})
}
