package service_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/service"
	"proctor/service/servicetest"
	"proctor/storage"
	"proctor/storage/storagetest"
	"proctor/vault"
)

// benchSvcFile is a two-task benchmark whose first task has hidden fields
// (reference answers, an evaluation spec, reference actions) and a subset.
const benchSvcFile = `{"proctor_benchmark": 1, "name": "Shop bench", "evaluator": "rubric", "subsets": {"one": {"description": "One task", "task_ids": ["s1"]}}}
{"id": "s1", "intent": "Find the cheapest cable.", "start_urls": ["__SHOPPING__"], "rubric": [{"requirement": "Names it"}], "reference_answers": {"must_include": ["SECRET-ANSWER"]}, "eval": {"check": "SECRET-SPEC"}, "reference_actions": [{"type": "stop"}]}
{"id": "s2", "intent": "Open the cart.", "start_urls": ["__SHOPPING__/cart"], "rubric": [{"requirement": "The cart is open"}]}
`

// benchSvcFixture is a database with three benchmarks imported through the
// service: "shop" (published, its site configured), "draft" (unpublished)
// and "verified" (a WebArena-Verified benchmark, so that its reading may be
// chosen); callers: anonymous, a member of team lab, a member of team other,
// an administrator and the system.
type benchSvcFixture struct {
	db                                 *storage.DB
	svc                                *service.Benchmarks
	anon, member, other, admin, system context.Context
}

func newBenchSvcFixture(t *testing.T, db *storage.DB) *benchSvcFixture {
	t.Helper()
	sealer, err := vault.New(strings.Repeat("k", vault.MinSecretLength))
	require.NoError(t, err)
	db.UseAgentSecrets(sealer)
	f := &benchSvcFixture{db: db, svc: servicetest.Benchmarks(db), anon: context.Background(),
		system: models.WithActor(context.Background(), models.SystemActor())}
	user := func(email string, admin bool) context.Context {
		u, err := db.CreateUser(context.Background(), email, strings.Split(email, "@")[0], "correct horse battery", admin)
		require.NoError(t, err)
		return models.WithActor(context.Background(), models.Actor{UserID: u.ID, Email: u.Email, IsAdmin: u.IsAdmin})
	}
	f.member, f.other, f.admin = user("member@bench.test", false), user("other@bench.test", false), user("admin@bench.test", true)
	_, err = servicetest.CreateTeam(db, f.member, "Lab", "lab", "")
	require.NoError(t, err)
	_, err = servicetest.CreateTeam(db, f.other, "Other", "other", "")
	require.NoError(t, err)
	for _, slug := range []string{"shop", "draft", "verified"} {
		_, err := f.svc.Import(f.admin, f.request(slug, benchSvcFile))
		require.NoError(t, err)
	}
	_, err = f.svc.UpdateSite(f.admin, "shop", "shopping", "http://shop.internal:7770", "http://shop.internal:7771/reset", 2)
	require.NoError(t, err)
	require.NoError(t, f.svc.SetPublished(f.admin, "draft", false))
	require.NoError(t, db.Gorm().Model(&models.Benchmark{}).Where("slug = ?", "verified").
		Update("evaluator", models.EvaluatorWebArenaVerified).Error)
	return f
}

// request is an import of file as benchmark slug in the proctor format.
func (f *benchSvcFixture) request(slug, file string) service.ImportRequest {
	return service.ImportRequest{Format: models.FormatProctor, Slug: slug, Dataset: strings.NewReader(file), Source: slug + ".jsonl"}
}

// TestBenchmarks_Authorization drives every read and write of the benchmark
// service as an anonymous visitor, a member of a team, a member of another
// team and an administrator. Benchmarks belong to no team, so the two
// members are treated alike; no read returns a run's results, so the blind
// rule (service.Access) has nothing to withhold here. A code is the error
// the caller gets ("" for none); check, when set, looks at what an allowed
// caller was shown.
func TestBenchmarks_Authorization(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newBenchSvcFixture(t, db)
		type outcome struct {
			code  string
			check func(t *testing.T, got any)
		}
		ok := outcome{}
		notFound := outcome{code: models.ENOTFOUND}
		forbidden := outcome{code: models.EFORBIDDEN}
		unauthorized := outcome{code: models.EUNAUTHORIZED}
		shown := func(check func(t *testing.T, got any)) outcome { return outcome{check: check} }
		// secrets checks whether the first task's hidden fields are shown.
		secrets := func(want bool) outcome {
			return shown(func(t *testing.T, got any) {
				var task models.Task
				switch v := got.(type) {
				case *models.Task:
					task = *v
				case []models.Task:
					task = v[0]
				case *models.TaskPage:
					task = v.Tasks[0]
				}
				require.Equal(t, "s1", task.ExternalID)
				require.Equal(t, want, task.HasSecrets(), "hidden fields shown")
				if !want {
					require.Empty(t, task.ReferenceAnswers)
					require.Empty(t, task.EvalSpec)
					require.Empty(t, task.ReferenceActions)
				}
			})
		}
		// siteURLs checks whether the shop's deployment URLs are shown.
		siteURLs := func(want bool) outcome {
			return shown(func(t *testing.T, got any) {
				var sites []models.Site
				switch v := got.(type) {
				case []models.Site:
					sites = v
				case *models.Benchmark:
					sites = v.Sites
				case *models.BenchmarkDetail:
					sites = v.Sites
				}
				require.Len(t, sites, 1)
				require.Equal(t, want, sites[0].URL != "", "site URL shown")
				require.Equal(t, want, sites[0].ResetURL != "", "reset URL shown")
			})
		}
		listed := func(draft bool) outcome {
			return shown(func(t *testing.T, got any) {
				var slugs []string
				for _, b := range got.([]models.BenchmarkListItem) {
					slugs = append(slugs, b.Slug)
				}
				require.Contains(t, slugs, "shop")
				require.Equal(t, draft, strings.Contains(strings.Join(slugs, " "), "draft"), "the unpublished benchmark listed")
			})
		}
		key := "sk-secret"
		type actors struct{ anon, member, other, admin outcome }
		ops := []struct {
			name string
			call func(ctx context.Context) (any, error)
			want actors
		}{
			{"ListBenchmarks", func(ctx context.Context) (any, error) { return f.svc.ListBenchmarks(ctx) },
				actors{listed(false), listed(false), listed(false), listed(true)}},
			{"Benchmark", func(ctx context.Context) (any, error) { return f.svc.Benchmark(ctx, "shop") },
				actors{siteURLs(false), siteURLs(false), siteURLs(false), siteURLs(true)}},
			{"BenchmarkDetail", func(ctx context.Context) (any, error) { return f.svc.BenchmarkDetail(ctx, "shop") },
				actors{siteURLs(false), siteURLs(false), siteURLs(false), siteURLs(true)}},
			{"BenchmarkSummary", func(ctx context.Context) (any, error) { return f.svc.BenchmarkSummary(ctx, "shop") },
				actors{ok, ok, ok, ok}},
			{"BrowseTasks", func(ctx context.Context) (any, error) { return f.svc.BrowseTasks(ctx, "shop", models.TaskFilter{}) },
				actors{secrets(false), secrets(false), secrets(false), secrets(true)}},
			{"ListTasks", func(ctx context.Context) (any, error) {
				tasks, _, err := f.svc.ListTasks(ctx, "shop", models.TaskFilter{})
				return tasks, err
			}, actors{secrets(false), secrets(false), secrets(false), secrets(true)}},
			{"Task", func(ctx context.Context) (any, error) { return f.svc.Task(ctx, "shop", "s1") },
				actors{secrets(false), secrets(false), secrets(false), secrets(true)}},
			{"TaskDefects", func(ctx context.Context) (any, error) {
				task, err := f.svc.Task(ctx, "shop", "s1")
				require.NoError(t, err)
				return f.svc.TaskDefects(ctx, "shop", task)
			}, actors{ok, ok, ok, ok}},
			{"ListSites", func(ctx context.Context) (any, error) { return f.svc.ListSites(ctx, "shop") },
				actors{siteURLs(false), siteURLs(false), siteURLs(false), siteURLs(true)}},
			{"Benchmark(unpublished)", func(ctx context.Context) (any, error) { return f.svc.Benchmark(ctx, "draft") },
				actors{notFound, notFound, notFound, ok}},
			{"BenchmarkDetail(unpublished)", func(ctx context.Context) (any, error) { return f.svc.BenchmarkDetail(ctx, "draft") },
				actors{notFound, notFound, notFound, ok}},
			{"BenchmarkSummary(unpublished)", func(ctx context.Context) (any, error) { return f.svc.BenchmarkSummary(ctx, "draft") },
				actors{notFound, notFound, notFound, ok}},
			{"BrowseTasks(unpublished)", func(ctx context.Context) (any, error) {
				return f.svc.BrowseTasks(ctx, "draft", models.TaskFilter{})
			}, actors{notFound, notFound, notFound, ok}},
			{"ListTasks(unpublished)", func(ctx context.Context) (any, error) {
				tasks, _, err := f.svc.ListTasks(ctx, "draft", models.TaskFilter{})
				return tasks, err
			}, actors{notFound, notFound, notFound, ok}},
			{"Task(unpublished)", func(ctx context.Context) (any, error) { return f.svc.Task(ctx, "draft", "s1") },
				actors{notFound, notFound, notFound, ok}},
			{"ListSites(unpublished)", func(ctx context.Context) (any, error) { return f.svc.ListSites(ctx, "draft") },
				actors{notFound, notFound, notFound, ok}},
			// Boards pass storage the caller's scope: an unpublished
			// benchmark's exist for administrators only.
			{"Leaderboard", func(ctx context.Context) (any, error) {
				return f.svc.Leaderboard(ctx, "shop", models.SubsetFull, models.LeaderboardQuery{})
			}, actors{ok, ok, ok, ok}},
			{"Leaderboard(unpublished)", func(ctx context.Context) (any, error) {
				return f.svc.Leaderboard(ctx, "draft", models.SubsetFull, models.LeaderboardQuery{})
			}, actors{notFound, notFound, notFound, ok}},
			{"BreakdownBoard(unpublished)", func(ctx context.Context) (any, error) {
				return servicetest.Runs(db, 0).BreakdownBoard(ctx, models.BreakdownQuery{Slug: "draft", Subset: models.SubsetFull, Dimension: models.BreakdownDifficulty})
			}, actors{notFound, notFound, notFound, ok}},
			{"TaskMatrix(unpublished)", func(ctx context.Context) (any, error) {
				return servicetest.Runs(db, 0).TaskMatrix(ctx, models.BreakdownQuery{Slug: "draft", Subset: models.SubsetFull, Page: 1, PerPage: 10})
			}, actors{notFound, notFound, notFound, ok}},
			{"AdminBenchmarks", func(ctx context.Context) (any, error) { return f.svc.AdminBenchmarks(ctx) },
				actors{unauthorized, forbidden, forbidden, ok}},
			{"Import", func(ctx context.Context) (any, error) { return f.svc.Import(ctx, f.request("shop", benchSvcFile)) },
				actors{unauthorized, forbidden, forbidden, ok}},
			{"UpdateSite", func(ctx context.Context) (any, error) {
				return f.svc.UpdateSite(ctx, "shop", "shopping", "http://shop.internal:7770", "http://shop.internal:7771/reset", 2)
			}, actors{unauthorized, forbidden, forbidden, ok}},
			{"SetPublished", func(ctx context.Context) (any, error) { return nil, f.svc.SetPublished(ctx, "shop", true) },
				actors{unauthorized, forbidden, forbidden, ok}},
			{"SetRevealReferences", func(ctx context.Context) (any, error) {
				return nil, f.svc.SetRevealReferences(ctx, "shop", false)
			}, actors{unauthorized, forbidden, forbidden, ok}},
			{"SetJudge", func(ctx context.Context) (any, error) {
				return nil, f.svc.SetJudge(ctx, "shop", models.JudgeUpdate{BaseURL: "https://judge.example.org/v1", Model: "judge-1", APIKey: &key})
			}, actors{unauthorized, forbidden, forbidden, ok}},
			{"SetEvaluator", func(ctx context.Context) (any, error) {
				return nil, f.svc.SetEvaluator(ctx, "verified", models.EvaluatorWebArenaVerified)
			}, actors{unauthorized, forbidden, forbidden, ok}},
		}
		for _, op := range ops {
			for _, who := range []struct {
				name string
				ctx  context.Context
				want outcome
			}{
				{"anonymous", f.anon, op.want.anon},
				{"member", f.member, op.want.member},
				{"other team", f.other, op.want.other},
				{"admin", f.admin, op.want.admin},
			} {
				got, err := op.call(who.ctx)
				require.Equal(t, who.want.code, models.ErrorCode(err), "%s as %s: %v", op.name, who.name, err)
				if err == nil && who.want.check != nil {
					who.want.check(t, got)
				}
			}
		}
		// The system (the CLI, seed, the runner) acts as an administrator.
		_, err := f.svc.Import(f.system, f.request("shop", benchSvcFile))
		require.NoError(t, err)
		require.NoError(t, f.svc.SetRevealReferences(f.system, "shop", true))
		task, err := f.svc.Task(f.system, "draft", "s1")
		require.NoError(t, err)
		require.True(t, task.HasSecrets())
	})
}
