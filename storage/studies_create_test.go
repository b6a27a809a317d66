package storage_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/service/servicetest"
	"proctor/storage"
	"proctor/storage/storagetest"
)

func TestStore_CreateStudy(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newStudyFixture(t, db)

		t.Run("Validation", func(t *testing.T) {
			// The request's own rules are the study service's
			// (service.TestCheckStudyRequest); these need the database.
			for name, tc := range map[string]struct {
				mod      func(*models.StudyRequest)
				field    string
				contains string
			}{
				"UnknownEmail":   {func(r *models.StudyRequest) { r.Annotators = []string{"nobody@study.test"} }, "annotators", "No member of your teams has the email nobody@study.test; an administrator can invite anyone."},
				"EmptySources":   {func(r *models.StudyRequest) { r.RunIDs = []int64{f.runs[0].ID, f.queued.ID} }, "run_ids", fmt.Sprintf("The sources have no finished attempts to sample: run %d.", f.queued.ID)},
				"OnlyAnEmptyRun": {func(r *models.StudyRequest) { r.RunIDs = []int64{f.queued.ID} }, "run_ids", fmt.Sprintf("run %d", f.queued.ID)},
			} {
				t.Run(name, func(t *testing.T) {
					_, err := servicetest.Studies(db, nil).CreateStudy(f.member, f.request(tc.mod))
					requireField(t, tc.field, tc.contains, err)
				})
			}
			require.EqualValues(t, 0, countRows(t, db, "studies", ""), "nothing half-created")
		})

		t.Run("Permissions", func(t *testing.T) {
			_, err := servicetest.Studies(db, nil).CreateStudy(f.anon, f.request(nil))
			requireCode(t, models.EUNAUTHORIZED, err)
			_, err = servicetest.Studies(db, nil).CreateStudy(f.system, f.request(nil))
			requireCode(t, models.EUNAUTHORIZED, err) // a study has an owner
			_, err = servicetest.Studies(db, nil).CreateStudy(f.outsider, f.request(nil))
			requireCode(t, models.ENOTFOUND, err)
			require.Equal(t, "run_ids", models.ErrorField(err))
			require.Equal(t, fmt.Sprintf("Run %d not found.", f.runs[0].ID), models.ErrorMessage(err), "the first run the outsider may not see")
			_, err = servicetest.Studies(db, nil).CreateStudy(f.member, f.request(func(r *models.StudyRequest) { r.RunIDs, r.Benchmarks = nil, []string{"nope"} }))
			requireCode(t, models.ENOTFOUND, err)
			require.Equal(t, "benchmarks", models.ErrorField(err))
			require.Contains(t, models.ErrorMessage(err), `"nope"`)
			_, err = servicetest.Studies(db, nil).CreateStudy(f.admin, f.request(nil))
			require.NoError(t, err, "administrators see every run")
		})

		t.Run("SameRequestSameSample", func(t *testing.T) {
			a := f.create(t, nil)
			b := f.create(t, nil)
			require.Equal(t, attemptIDs(f.items(t, a.ID)), attemptIDs(f.items(t, b.ID)))
			c := f.create(t, func(r *models.StudyRequest) { r.Seed = 8 })
			require.NotEqual(t, attemptIDs(f.items(t, a.ID)), attemptIDs(f.items(t, c.ID)))
			for i, it := range f.items(t, a.ID) {
				require.Equal(t, i+1, it.Position)
				require.Empty(t, it.Stratum, "random samples have no strata")
			}
		})

		t.Run("SampleLargerThanSources", func(t *testing.T) {
			st := f.create(t, func(r *models.StudyRequest) { r.SampleSize = 50 })
			require.Equal(t, 50, st.SampleSize)
			require.Equal(t, 12, st.ItemCount)
			require.Len(t, f.items(t, st.ID), 12)
		})

		t.Run("Stratified", func(t *testing.T) {
			strata := func(st *models.Study) map[string]int {
				out := map[string]int{}
				for _, it := range f.items(t, st.ID) {
					out[it.Stratum]++
				}
				return out
			}
			// 6 successes, 3 failures, 3 errors: 3, 1.5, 1.5, the half unit to the first of the tied strata.
			st := f.create(t, func(r *models.StudyRequest) {
				r.Sampling, r.StratifyBy, r.SampleSize = models.SampleStratified, models.StratumOutcome, 6
			})
			require.Equal(t, map[string]int{"success": 3, "failure": 1, "error": 2}, strata(st))
			st = f.create(t, func(r *models.StudyRequest) {
				r.Sampling, r.StratifyBy, r.SampleSize = models.SampleStratified, models.StratumAgent, 3
			})
			require.Equal(t, map[string]int{"Walker": 2, "Runner": 1}, strata(st))
			st = f.create(t, func(r *models.StudyRequest) {
				r.Sampling, r.StratifyBy, r.SampleSize = models.SampleStratified, models.StratumDifficulty, 3
			})
			require.Equal(t, map[string]int{"easy": 1, "medium": 1, "hard": 1}, strata(st), "one per stratum when size allows")
			st = f.create(t, func(r *models.StudyRequest) {
				r.Sampling, r.StratifyBy, r.SampleSize = models.SampleStratified, models.StratumSite, 12
			})
			require.Equal(t, map[string]int{"shopping": 6, "gitlab": 3, models.MultiSite: 3}, strata(st))
		})

		t.Run("BenchmarkSources", func(t *testing.T) {
			st, err := servicetest.Studies(db, nil).CreateStudy(f.member, f.request(func(r *models.StudyRequest) { r.RunIDs, r.Benchmarks, r.SampleSize = nil, []string{"mini"}, 100 }))
			require.NoError(t, err)
			require.Equal(t, 12, st.ItemCount, "the completed runs the owner may see; the queued run has nothing")
			require.Len(t, st.BenchmarkIDs, 1)

			_, err = servicetest.Studies(db, nil).CreateStudy(f.outsider, f.request(func(r *models.StudyRequest) { r.RunIDs, r.Benchmarks = nil, []string{"mini"} }))
			requireField(t, "benchmarks", `The sources have no finished attempts to sample: benchmark "mini".`, err)
			f.publish(t, f.runs[0].ID, true)
			defer f.publish(t, f.runs[0].ID, false)
			st, err = servicetest.Studies(db, nil).CreateStudy(f.outsider, f.request(func(r *models.StudyRequest) {
				r.RunIDs, r.Benchmarks, r.SampleSize, r.Annotators = nil, []string{"mini"}, 100, nil
			}))
			require.NoError(t, err)
			require.Equal(t, 4, st.ItemCount, "published runs of other teams")
		})

		t.Run("InvitesInTheSameTransaction", func(t *testing.T) {
			st := f.create(t, func(r *models.StudyRequest) {
				r.Annotators = []string{"ann1@study.test", " ann1@STUDY.test", "ann3@study.test"}
			})
			require.EqualValues(t, 2, countRows(t, db, "study_annotators", "study_id = ?", st.ID))
		})
	})
}
