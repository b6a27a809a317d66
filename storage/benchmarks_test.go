package storage_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/importer"
	"proctor/internal/evaltest"
	"proctor/internal/testenv"
	"proctor/models"
	"proctor/storage"
	"proctor/storage/storagetest"
)

// benchFixture is a small hand-written benchmark in the proctor format: four
// tasks over three sites (t3 spans two), labels of every kind, rubric items,
// hidden fields on t1 and a subset.
const benchFixture = `{"proctor_benchmark": 1, "name": "Mini bench", "description": "Four tasks.", "evaluator": "rubric", "subsets": {"smoke": {"description": "Two tasks", "task_ids": ["t1", "t3"]}}}
{"id": "t1", "intent": "Add the cheapest USB-C cable to the cart.", "start_urls": ["__SHOPPING__"], "sites": ["shopping"], "task_type": "action", "difficulty": "easy", "domain": "e-commerce", "attributes": ["action-based"], "rubric": [{"requirement": "Cart holds one cable", "weight": 0.6}, {"requirement": "It is the cheapest", "weight": 0.4}], "reference_answers": {"must_include": ["SECRET-ANSWER-42"]}, "eval": {"check": "cart_contains", "sku": "SECRET-SKU-7"}, "reference_actions": [{"type": "stop"}]}
{"id": "t2", "intent": "Which project has the most stars?", "start_urls": ["__GITLAB__/explore"], "task_type": "qa", "difficulty": "medium", "domain": "software", "attributes": ["multihop", "structured"], "rubric": [{"requirement": "Names the project"}]}
{"id": "t3", "intent": "Find the repository most discussed on the forum and star it.", "start_urls": ["__REDDIT__", "__GITLAB__"], "task_type": "action", "difficulty": "hard", "domain": "software", "attributes": ["multi-website", "action-based"], "rubric": [{"requirement": "Identifies it"}, {"requirement": "Stars it"}]}
{"id": "t4", "intent": "Are you 100% sure_thing about the shipping fee?", "start_urls": ["__SHOPPING__/checkout"], "task_type": "qa", "difficulty": "easy", "rubric": [{"requirement": "Answers"}]}
`

func parseBenchFixture(t *testing.T, text string) *importer.Dataset {
	t.Helper()
	ds, err := importer.Parse(evaltest.Registry(), models.FormatProctor, strings.NewReader(text), nil)
	require.NoError(t, err)
	return ds
}

func benchSystemCtx() context.Context {
	return models.WithActor(context.Background(), models.SystemActor())
}

// benchActors returns contexts for an anonymous visitor, a signed-in user and a
// signed-in admin (both real rows, as imports reference their user).
func benchActors(t *testing.T, db *storage.DB) (anon, user, admin context.Context) {
	t.Helper()
	ctx := context.Background()
	u, err := db.CreateUser(ctx, "user@example.org", "User", "correct horse battery", false)
	require.NoError(t, err)
	a, err := db.CreateUser(ctx, "admin@example.org", "Admin", "correct horse battery", true)
	require.NoError(t, err)
	return ctx,
		models.WithActor(ctx, models.Actor{UserID: u.ID, Email: u.Email}),
		models.WithActor(ctx, models.Actor{UserID: a.ID, Email: a.Email, IsAdmin: true})
}

func importBenchFixture(t *testing.T, db *storage.DB) models.ImportResult {
	t.Helper()
	res, err := db.ImportBenchmark(benchSystemCtx(), "mini", parseBenchFixture(t, benchFixture), "mini.jsonl", 0)
	require.NoError(t, err)
	require.True(t, res.Created)
	return res
}

func countRows(t *testing.T, db *storage.DB, table, where string, args ...any) int64 {
	t.Helper()
	var n int64
	q := db.Gorm().Table(table)
	if where != "" {
		q = q.Where(where, args...)
	}
	require.NoError(t, q.Count(&n).Error)
	return n
}

func externalIDs(tasks []models.Task) []string {
	ids := make([]string, len(tasks))
	for i, t := range tasks {
		ids[i] = t.ExternalID
	}
	return ids
}

func TestStore_ImportBenchmark(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		sys := benchSystemCtx()
		// Who may import and which requests and datasets are refused is the
		// benchmark service's (service/benchmarks_test.go).
		_, _, admin := benchActors(t, db)
		ds := parseBenchFixture(t, benchFixture)

		var v1 models.ImportResult
		t.Run("Create", func(t *testing.T) {
			var err error
			v1, err = db.ImportBenchmark(admin, "mini", ds, "mini.jsonl", models.ActorFrom(admin).UserID)
			require.NoError(t, err)
			require.True(t, v1.Created)
			require.Equal(t, 1, v1.Version.Version)
			require.Equal(t, 4, v1.Version.TaskCount)
			require.Equal(t, 6, v1.Version.RubricItems)
			require.Equal(t, ds.Checksum, v1.Version.Checksum)
			require.NotNil(t, v1.Version.ImportedBy)
			require.Equal(t, "Mini bench", v1.Benchmark.Name)
			require.Equal(t, models.FormatProctor, v1.Benchmark.Format)
			require.Equal(t, models.EvaluatorRubric, v1.Benchmark.Evaluator)
			require.True(t, v1.Benchmark.Published)
			require.Equal(t, int64(4), countRows(t, db, "tasks", "version_id = ?", v1.Version.ID))
			require.Equal(t, int64(5), countRows(t, db, "task_sites", ""))
			require.Equal(t, int64(5), countRows(t, db, "task_attributes", ""))
			require.Equal(t, int64(2), countRows(t, db, "subset_tasks", ""))

			b, err := db.Benchmark(sys, "mini", benchScope(sys))
			require.NoError(t, err)
			require.Equal(t, v1.Version.ID, *b.CurrentVersionID)
			require.Len(t, b.CurrentVersion.Subsets, 1)
			require.Equal(t, "smoke", b.CurrentVersion.Subsets[0].Name)
			require.Equal(t, 2, b.CurrentVersion.Subsets[0].TaskCount)

			sites, err := db.ListSites(sys, "mini", benchScope(sys))
			require.NoError(t, err)
			require.Len(t, sites, 3)
			require.Equal(t, "gitlab", sites[0].Name)
			require.Equal(t, "__GITLAB__", sites[0].Placeholder)
			require.Empty(t, sites[0].URL)
		})
		t.Run("IdenticalReimportUnchanged", func(t *testing.T) {
			again := parseBenchFixture(t, benchFixture)
			res, err := db.ImportBenchmark(sys, "mini", again, "renamed.jsonl", 0)
			require.NoError(t, err)
			require.False(t, res.Created)
			require.Equal(t, v1.Version.ID, res.Version.ID)
			require.Equal(t, "mini.jsonl", res.Version.SourceName)
			require.Equal(t, int64(1), countRows(t, db, "benchmark_versions", ""))
			require.Equal(t, int64(4), countRows(t, db, "tasks", ""))
		})
		t.Run("ChangedInputMakesVersion2", func(t *testing.T) {
			_, err := db.UpdateSite(admin, "mini", "shopping", "http://shop.test:7770", "", 2)
			require.NoError(t, err)
			changed := strings.Replace(benchFixture, "Which project has the most stars?", "Which project has the fewest stars?", 1)
			changed = strings.Replace(changed, `"start_urls": ["__SHOPPING__/checkout"]`, `"start_urls": ["__MAP__"]`, 1)
			res, err := db.ImportBenchmark(sys, "mini", parseBenchFixture(t, changed), "mini-2.jsonl", 0)
			require.NoError(t, err)
			require.True(t, res.Created)
			require.Equal(t, 2, res.Version.Version)
			require.Nil(t, res.Version.ImportedBy, "the system imports as nobody")

			// Version 1 keeps its rows: runs pointing at it are unaffected.
			require.Equal(t, int64(4), countRows(t, db, "tasks", "version_id = ?", v1.Version.ID))
			require.Equal(t, int64(1), countRows(t, db, "subsets", "version_id = ?", v1.Version.ID))
			require.Equal(t, int64(4), countRows(t, db, "tasks", "version_id = ?", res.Version.ID))

			task, err := db.TaskByExternalID(sys, "mini", "t2", benchScope(sys))
			require.NoError(t, err)
			require.Equal(t, res.Version.ID, task.VersionID)
			require.Contains(t, task.Intent, "fewest")

			sites, err := db.ListSites(sys, "mini", benchScope(sys))
			require.NoError(t, err)
			names := map[string]models.Site{}
			for _, s := range sites {
				names[s.Name] = s
			}
			require.Len(t, names, 4, "the new site map is added")
			require.Equal(t, "__MAP__", names["map"].Placeholder)
			require.Equal(t, "http://shop.test:7770", names["shopping"].URL, "configured URLs survive a new version")
			require.Equal(t, 2, names["shopping"].MaxConcurrency)
		})
		t.Run("FormatChangeConflicts", func(t *testing.T) {
			other := parseBenchFixture(t, benchFixture)
			other.Format = models.FormatOdysseys
			other.Checksum = "other-format"
			_, err := db.ImportBenchmark(sys, "mini", other, "x.json", 0)
			// The service refuses it first, naming both formats
			// (service/benchmarks_test.go); storage refuses it again
			// under the benchmark's lock.
			require.Equal(t, models.ECONFLICT, models.ErrorCode(err))
			require.Equal(t, "format", models.ErrorField(err))
		})
		t.Run("FailureWritesNothing", func(t *testing.T) {
			versions := countRows(t, db, "benchmark_versions", "")
			tasks := countRows(t, db, "tasks", "")
			sites := countRows(t, db, "sites", "")
			broken := func() *importer.Dataset {
				d := parseBenchFixture(t, benchFixture)
				d.Checksum = "hand-made-" + d.Checksum[:8]
				d.Tasks[0].Sites = models.JSONStrings{"wikipedia"}
				d.Subsets = append(d.Subsets, importer.Subset{Name: "ghost", Checksum: "x", ExternalIDs: []string{"t1", "no-such-task"}})
				return d
			}
			_, err := db.ImportBenchmark(sys, "broken", broken(), "broken.jsonl", 0)
			require.Error(t, err)
			require.Contains(t, err.Error(), "no-such-task")
			_, err = db.Benchmark(sys, "broken", benchScope(sys))
			require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))

			_, err = db.ImportBenchmark(sys, "mini", broken(), "broken.jsonl", 0)
			require.Error(t, err)
			require.Equal(t, versions, countRows(t, db, "benchmark_versions", ""))
			require.Equal(t, tasks, countRows(t, db, "tasks", ""))
			require.Equal(t, sites, countRows(t, db, "sites", ""))
			require.Equal(t, int64(0), countRows(t, db, "benchmarks", "slug = ?", "broken"))
			sum, err := db.BenchmarkSummary(sys, "mini", benchScope(sys))
			require.NoError(t, err)
			require.Equal(t, 2, sum.Version)
		})
	})
}

func TestStore_BenchmarkSummary(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		anon, user, admin := benchActors(t, db)
		res := importBenchFixture(t, db)

		sum, err := db.BenchmarkSummary(anon, "mini", benchScope(anon))
		require.NoError(t, err)
		require.Equal(t, &models.BenchmarkSummary{
			Slug: "mini", Name: "Mini bench", Format: models.FormatProctor, Version: 1,
			Checksum: res.Version.Checksum, Tasks: 4,
			BySite:       map[string]int{"shopping": 2, "gitlab": 1, models.MultiSite: 1},
			ByTaskType:   map[string]int{"action": 2, "qa": 2},
			ByDifficulty: map[string]int{"easy": 2, "medium": 1, "hard": 1},
			ByDomain:     map[string]int{"e-commerce": 1, "software": 2},
			ByAttribute:  map[string]int{"action-based": 2, "multihop": 1, "structured": 1, "multi-website": 1},
			RubricItems:  6,
			Subsets: []models.SubsetSummary{
				{Name: "smoke", Tasks: 2, BySite: map[string]int{"shopping": 1, models.MultiSite: 1}},
			},
		}, sum)

		t.Run("UnknownBenchmark", func(t *testing.T) {
			_, err := db.BenchmarkSummary(admin, "nope", benchScope(admin))
			require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))
		})
		t.Run("Unpublished", func(t *testing.T) {
			require.NoError(t, db.SetBenchmarkPublished(admin, "mini", false))
			for _, ctx := range []context.Context{anon, user} {
				_, err := db.BenchmarkSummary(ctx, "mini", benchScope(ctx))
				require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))
				_, _, err = db.ListTasks(ctx, "mini", models.TaskFilter{}, benchScope(ctx))
				require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))
				_, err = db.TaskByExternalID(ctx, "mini", "t1", benchScope(ctx))
				require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))
				list, err := db.ListBenchmarks(ctx, benchScope(ctx))
				require.NoError(t, err)
				require.Empty(t, list)
			}
			_, err := db.BenchmarkSummary(admin, "mini", benchScope(admin))
			require.NoError(t, err)
			require.NoError(t, db.SetBenchmarkPublished(admin, "mini", true))
			_, err = db.BenchmarkSummary(anon, "mini", benchScope(anon))
			require.NoError(t, err)
			require.Equal(t, models.ENOTFOUND, models.ErrorCode(db.SetBenchmarkPublished(admin, "nope", true)))
		})
		t.Run("Detail", func(t *testing.T) {
			d, err := db.BenchmarkDetail(anon, "mini", benchScope(anon))
			require.NoError(t, err)
			require.Equal(t, "Four tasks.", d.Benchmark.Description)
			require.Equal(t, 4, d.Summary.Tasks)
			require.Len(t, d.Sites, 3)
			require.Equal(t, map[string]int{"shopping": 2, "gitlab": 2, "reddit": 1}, d.SiteTasks)
		})
		t.Run("AdminBenchmarks", func(t *testing.T) {
			list, err := db.AdminBenchmarks(admin)
			require.NoError(t, err)
			require.Len(t, list, 1)
			require.Len(t, list[0].Versions, 1)
			require.True(t, list[0].IsCurrent(list[0].Versions[0]))
		})
	})
}

func TestStore_ListTasks(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		importBenchFixture(t, db)
		ctx := context.Background()
		for _, tc := range []struct {
			name   string
			filter models.TaskFilter
			want   []string
		}{
			{"All", models.TaskFilter{}, []string{"t1", "t2", "t3", "t4"}},
			{"SiteThroughTaskSites", models.TaskFilter{Site: "gitlab"}, []string{"t2", "t3"}},
			{"MultiSite", models.TaskFilter{Site: models.MultiSite}, []string{"t3"}},
			{"TaskType", models.TaskFilter{TaskType: "qa"}, []string{"t2", "t4"}},
			{"Difficulty", models.TaskFilter{Difficulty: "easy"}, []string{"t1", "t4"}},
			{"Domain", models.TaskFilter{Domain: "software"}, []string{"t2", "t3"}},
			{"Attribute", models.TaskFilter{Attribute: "action-based"}, []string{"t1", "t3"}},
			{"Subset", models.TaskFilter{Subset: "smoke"}, []string{"t1", "t3"}},
			{"FullSubset", models.TaskFilter{Subset: models.SubsetFull}, []string{"t1", "t2", "t3", "t4"}},
			{"UnknownSubset", models.TaskFilter{Subset: "nope"}, []string{}},
			{"QueryCaseInsensitive", models.TaskFilter{Query: "STARS"}, []string{"t2"}},
			{"QueryPercentIsLiteral", models.TaskFilter{Query: "100%"}, []string{"t4"}},
			{"QueryUnderscoreIsLiteral", models.TaskFilter{Query: "e_t"}, []string{"t4"}},
			{"QueryOnlyPercent", models.TaskFilter{Query: "%"}, []string{"t4"}},
			{"Combined", models.TaskFilter{Site: "shopping", Difficulty: "easy", TaskType: "action"}, []string{"t1"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				tasks, total, err := db.ListTasks(ctx, "mini", tc.filter, benchScope(ctx))
				require.NoError(t, err)
				require.Equal(t, tc.want, externalIDs(tasks))
				require.Equal(t, len(tc.want), total)
			})
		}
		t.Run("Pagination", func(t *testing.T) {
			tasks, total, err := db.ListTasks(ctx, "mini", models.TaskFilter{Page: 2, PerPage: 3}, benchScope(ctx))
			require.NoError(t, err)
			require.Equal(t, 4, total)
			require.Equal(t, []string{"t4"}, externalIDs(tasks))
			tasks, total, err = db.ListTasks(ctx, "mini", models.TaskFilter{Page: 9, PerPage: 3}, benchScope(ctx))
			require.NoError(t, err)
			require.Equal(t, 4, total)
			require.Empty(t, tasks)
		})
		t.Run("RubricItemsPreloaded", func(t *testing.T) {
			tasks, _, err := db.ListTasks(ctx, "mini", models.TaskFilter{}, benchScope(ctx))
			require.NoError(t, err)
			require.Len(t, tasks[0].RubricItems, 2)
			require.Equal(t, "R1", tasks[0].RubricItems[0].Key)
			require.InDelta(t, 0.6, tasks[0].RubricItems[0].Weight, 1e-9)
			require.Equal(t, "It is the cheapest", tasks[0].RubricItems[1].Requirement)
			require.Len(t, tasks[1].RubricItems, 1)
			require.InDelta(t, 1.0, tasks[1].RubricItems[0].Weight, 1e-9)
			require.Equal(t, []string{"reddit", "gitlab"}, []string(tasks[2].Sites))
			require.Equal(t, models.MultiSite, tasks[2].SiteKey)
		})
		t.Run("UnknownBenchmark", func(t *testing.T) {
			_, _, err := db.ListTasks(ctx, "nope", models.TaskFilter{}, benchScope(ctx))
			require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))
			_, err = db.TaskByExternalID(ctx, "mini", "t99", benchScope(ctx))
			require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))
		})
		t.Run("Facets", func(t *testing.T) {
			p, err := db.BrowseTasks(ctx, "mini", models.TaskFilter{}, benchScope(ctx))
			require.NoError(t, err)
			require.Equal(t, models.BenchmarkFacets{
				Sites:        []string{"gitlab", "reddit", "shopping", models.MultiSite},
				TaskTypes:    []string{"action", "qa"},
				Difficulties: []string{"easy", "hard", "medium"},
				Domains:      []string{"e-commerce", "software"},
				Attributes:   []string{"action-based", "multi-website", "multihop", "structured"},
				Subsets:      []string{"smoke"},
			}, p.Facets)
		})
		t.Run("Browse", func(t *testing.T) {
			p, err := db.BrowseTasks(ctx, "mini", models.TaskFilter{Difficulty: "easy", PerPage: 1}, benchScope(ctx))
			require.NoError(t, err)
			require.Equal(t, 2, p.Total)
			require.Equal(t, []string{"t1"}, externalIDs(p.Tasks))
			require.True(t, p.HasNext())
			require.False(t, p.HasPrev())
			require.Equal(t, []string{"smoke"}, p.Facets.Subsets)
		})
	})
}

func TestStore_TaskHiddenFields(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		anon, user, admin := benchActors(t, db)
		importBenchFixture(t, db)
		for _, tc := range []struct {
			name string
			ctx  context.Context
			see  bool
		}{
			{"Anonymous", anon, false},
			{"User", user, false},
			{"Admin", admin, true},
			{"System", benchSystemCtx(), true},
		} {
			t.Run(tc.name, func(t *testing.T) {
				check := func(task models.Task) {
					t.Helper()
					if tc.see {
						require.Contains(t, task.ReferenceAnswers, "SECRET-ANSWER-42")
						require.Contains(t, task.EvalSpec, "SECRET-SKU-7")
						require.JSONEq(t, `[{"type":"stop"}]`, task.ReferenceActions)
					} else {
						require.Empty(t, task.ReferenceAnswers)
						require.Empty(t, task.EvalSpec)
						require.Empty(t, task.ReferenceActions)
					}
					require.NotEmpty(t, task.Intent, "public fields are kept")
					require.Len(t, task.RubricItems, 2, "rubric items are public")
				}
				tasks, _, err := db.ListTasks(tc.ctx, "mini", models.TaskFilter{}, benchScope(tc.ctx))
				require.NoError(t, err)
				check(tasks[0])
				task, err := db.TaskByExternalID(tc.ctx, "mini", "t1", benchScope(tc.ctx))
				require.NoError(t, err)
				check(*task)
				page, err := db.BrowseTasks(tc.ctx, "mini", models.TaskFilter{Query: "cable"}, benchScope(tc.ctx))
				require.NoError(t, err)
				check(page.Tasks[0])
			})
		}
	})
}

func TestStore_UpdateSite(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		anon, _, admin := benchActors(t, db)
		importBenchFixture(t, db)

		// Who may configure a site and which settings are valid is the
		// benchmark service's (service/benchmarks_test.go).
		_, err := db.UpdateSite(admin, "mini", "nope", "http://x.test", "", 0)
		require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))
		_, err = db.UpdateSite(admin, "nope", "shopping", "http://x.test", "", 0)
		require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))

		site, err := db.UpdateSite(admin, "mini", "shopping", "https://shop.test:7770", "http://shop.test:7771/reset", 4)
		require.NoError(t, err)
		require.Equal(t, "https://shop.test:7770", site.URL)
		require.Equal(t, "http://shop.test:7771/reset", site.ResetURL)
		require.Equal(t, 4, site.MaxConcurrency)

		sites, err := db.ListSites(admin, "mini", benchScope(admin))
		require.NoError(t, err)
		require.Equal(t, "https://shop.test:7770", sites[2].URL)
		sites, err = db.ListSites(anon, "mini", benchScope(anon))
		require.NoError(t, err)
		require.Empty(t, sites[2].URL, "deployment URLs are for admins")
		require.Empty(t, sites[2].ResetURL)

		site, err = db.UpdateSite(admin, "mini", "shopping", "", "", 0)
		require.NoError(t, err)
		require.Empty(t, site.URL, "an empty URL clears the setting")
	})
}

func TestStore_ImportWebArenaVerified(t *testing.T) {
	t.Parallel()
	data := testenv.SharedDataDir(t)
	open := func(rel string) *os.File {
		f, err := os.Open(filepath.Join(data, filepath.FromSlash(rel)))
		require.NoError(t, err)
		t.Cleanup(func() { f.Close() })
		return f
	}
	ds, err := importer.Parse(evaltest.Registry(), models.FormatWebArenaVerified, open("webarena-verified/webarena-verified.json"),
		[]importer.SubsetFile{{Name: "hard", R: open("webarena-verified/subsets/webarena-verified-hard.json")}})
	require.NoError(t, err)
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		start := time.Now()
		res, err := db.ImportBenchmark(benchSystemCtx(), "webarena-verified", ds, "webarena-verified.json", 0)
		require.NoError(t, err)
		t.Logf("imported %d tasks in %v", res.Version.TaskCount, time.Since(start))
		require.True(t, res.Created)
		sum, err := db.BenchmarkSummary(context.Background(), "webarena-verified", benchScope(context.Background()))
		require.NoError(t, err)
		require.Equal(t, 812, sum.Tasks)
		require.Equal(t, map[string]int{"shopping": 187, "shopping_admin": 182, "gitlab": 180, "map": 109, "reddit": 106, models.MultiSite: 48}, sum.BySite)
		require.Equal(t, map[string]int{"mutate": 374, "retrieve": 325, "navigate": 113}, sum.ByTaskType)
		require.Len(t, sum.Subsets, 1)
		require.Equal(t, models.SubsetSummary{Name: "hard", Tasks: 258,
			BySite: map[string]int{"shopping_admin": 55, "gitlab": 57, "reddit": 42, "shopping": 56, models.MultiSite: 48}}, sum.Subsets[0])

		start = time.Now()
		again, err := db.ImportBenchmark(benchSystemCtx(), "webarena-verified", ds, "webarena-verified.json", 0)
		require.NoError(t, err)
		require.False(t, again.Created)
		t.Logf("identical re-import checked in %v", time.Since(start))
	})
}

// TestStore_SearchIsUnicodeCaseInsensitive: the intent search folds case for all
// of Unicode on both databases (SQLite's LOWER folds ASCII only).
func TestStore_SearchIsUnicodeCaseInsensitive(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		ds := parseBenchFixture(t, `{"id": "e1", "intent": "Order an Éclair for the ÜBER team", "start_urls": ["__SHOPPING__"]}
{"id": "e2", "intent": "Order a croissant", "start_urls": ["__SHOPPING__"]}
`)
		_, err := db.ImportBenchmark(benchSystemCtx(), "bakery", ds, "bakery.jsonl", 0)
		require.NoError(t, err)
		for _, q := range []string{"éclair", "ÉCLAIR", "Éclair", "über", "ÜBER TEAM"} {
			tasks, total, err := db.ListTasks(context.Background(), "bakery", models.TaskFilter{Query: q}, benchScope(context.Background()))
			require.NoError(t, err, q)
			require.Equal(t, 1, total, q)
			require.Equal(t, "e1", tasks[0].ExternalID, q)
		}
	})
}

// benchScope is what of the benchmarks the benchmark service lets ctx's actor
// see (service/benchmarks.go passes the same to storage).
func benchScope(ctx context.Context) models.BenchmarkScope {
	return models.BenchmarkScopeFor(models.ActorFrom(ctx))
}
