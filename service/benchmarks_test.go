package service_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/importer"
	"proctor/internal/testenv"
	"proctor/models"
	"proctor/service"
	"proctor/storage"
	"proctor/storage/storagetest"
)

func TestBenchmarks_Import(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newBenchSvcFixture(t, db)
		t.Run("InvalidSlug", func(t *testing.T) {
			_, err := f.svc.Import(f.admin, f.request("Not A Slug", benchSvcFile))
			require.Equal(t, models.EINVALID, models.ErrorCode(err))
			require.Equal(t, "slug", models.ErrorField(err))
		})
		t.Run("UnknownFormat", func(t *testing.T) {
			req := f.request("csv", benchSvcFile)
			req.Format = "csv"
			_, err := f.svc.Import(f.admin, req)
			require.Equal(t, models.EINVALID, models.ErrorCode(err))
			require.Equal(t, "format", models.ErrorField(err))
		})
		t.Run("ParseError", func(t *testing.T) {
			_, err := f.svc.Import(f.admin, f.request("broken", strings.Replace(benchSvcFile, `"intent": "Open the cart."`, `"intent": ""`, 1)))
			var parse *service.ParseError
			require.True(t, errors.As(err, &parse), "%v", err)
			require.Equal(t, models.EINVALID, models.ErrorCode(err))
			require.Contains(t, models.ErrorMessage(err), `line 3 (task s2)`)
			_, err = f.svc.Benchmark(f.admin, "broken")
			require.Equal(t, models.ENOTFOUND, models.ErrorCode(err), "nothing was written")
		})
		t.Run("SubsetFile", func(t *testing.T) {
			req := f.request("subsets", benchSvcFile)
			req.Subsets = []importer.SubsetFile{{Name: "cart", R: strings.NewReader(`{"description": "The cart", "task_ids": ["s2"]}`)}}
			res, err := f.svc.Import(f.admin, req)
			require.NoError(t, err)
			require.True(t, res.Created)
			require.Equal(t, 2, res.Subsets, "the header's subset and the file's")
			require.Equal(t, 2, res.Version.TaskCount)
			require.NotNil(t, res.Version.ImportedBy, "an administrator's import records them")
		})
		t.Run("FormatChangeConflicts", func(t *testing.T) {
			file, err := os.Open(filepath.Join(testenv.SharedDataDir(t), "odysseys", "odysseys-sample.json"))
			require.NoError(t, err)
			defer file.Close()
			_, err = f.svc.Import(f.admin, service.ImportRequest{Format: models.FormatOdysseys, Slug: "shop", Dataset: file, Source: "odysseys-sample.json"})
			require.Equal(t, models.ECONFLICT, models.ErrorCode(err))
			require.Equal(t, "format", models.ErrorField(err))
			require.Equal(t, `benchmark "shop" holds proctor data; odysseys data cannot become its next version (import it under another name)`, models.ErrorMessage(err))
		})
		t.Run("IdenticalReimportUnchanged", func(t *testing.T) {
			res, err := f.svc.Import(f.system, f.request("shop", benchSvcFile))
			require.NoError(t, err)
			require.False(t, res.Created)
			require.Equal(t, 1, res.Version.Version)
		})
	})
}

func TestBenchmarks_UpdateSite(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newBenchSvcFixture(t, db)
		for _, tc := range []struct {
			url, reset string
			max        int
			field      string
		}{
			{"ftp://shop.test", "", 0, "url"},
			{"shop.test:7770", "", 0, "url"},
			{"/relative", "", 0, "url"},
			{"http://", "", 0, "url"},
			{"http://shop.test", "javascript:alert(1)", 0, "reset_url"},
			{"http://shop.test", "", -1, "max_concurrency"},
			{"http://shop.test", "", 10001, "max_concurrency"},
		} {
			_, err := f.svc.UpdateSite(f.admin, "shop", "shopping", tc.url, tc.reset, tc.max)
			require.Equal(t, models.EINVALID, models.ErrorCode(err), tc.url)
			require.Equal(t, tc.field, models.ErrorField(err), tc.url)
		}
		_, err := f.svc.UpdateSite(f.admin, "shop", "nope", "http://x.test", "", 0)
		require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))

		site, err := f.svc.UpdateSite(f.admin, "shop", "shopping", " https://shop.test:7770/ ", "http://shop.test:7771/reset/", 4)
		require.NoError(t, err)
		require.Equal(t, "https://shop.test:7770", site.URL, "trimmed, without the trailing slash")
		require.Equal(t, "http://shop.test:7771/reset", site.ResetURL)
		require.Equal(t, 4, site.MaxConcurrency)
	})
}

func TestBenchmarks_SetJudge(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newBenchSvcFixture(t, db)
		for _, bad := range []struct {
			u     models.JudgeUpdate
			field string
		}{
			{models.JudgeUpdate{BaseURL: "ftp://judge", Model: "m"}, "judge_base_url"},
			{models.JudgeUpdate{BaseURL: "https://judge.example.org/v1"}, "judge_model"},
			{models.JudgeUpdate{Model: "m"}, "judge_base_url"},
		} {
			err := f.svc.SetJudge(f.admin, "shop", bad.u)
			require.Equal(t, models.EINVALID, models.ErrorCode(err), "%+v", bad.u)
			require.Equal(t, bad.field, models.ErrorField(err))
		}
		key := "sk-judge-secret"
		require.Equal(t, models.ENOTFOUND, models.ErrorCode(f.svc.SetJudge(f.admin, "nope",
			models.JudgeUpdate{BaseURL: "https://judge.example.org/v1", Model: "judge-1", APIKey: &key})))
		require.NoError(t, f.svc.SetJudge(f.admin, "shop", models.JudgeUpdate{BaseURL: " https://judge.example.org/v1/ ", Model: " judge-1 ", APIKey: &key}))
		b, err := f.svc.Benchmark(f.admin, "shop")
		require.NoError(t, err)
		require.Equal(t, "https://judge.example.org/v1", b.JudgeBaseURL)
		require.Equal(t, "judge-1", b.JudgeModel)
		require.NotEmpty(t, b.JudgeAPIKey)
		require.NotContains(t, b.JudgeAPIKey, key, "the key is stored sealed")
	})
}
