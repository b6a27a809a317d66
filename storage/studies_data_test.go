package storage_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/agreement"
	"proctor/models"
	"proctor/service"
	"proctor/service/servicetest"
	"proctor/storage"
	"proctor/storage/storagetest"
)

// importRow keys a row for a study item the way exports write it.
func importRow(keys map[int64]agreement.Key, itemID int64, who string, line int, labels models.StudyLabels) models.StudyImportRow {
	k := keys[itemID]
	return models.StudyImportRow{Benchmark: k.Benchmark, Model: k.Model, TaskID: k.TaskID, Who: who, Labels: labels, Line: line}
}

func TestStore_StudyData(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newStudyFixture(t, db)
		st, queues := f.openStudy(t, func(r *models.StudyRequest) {
			r.SampleSize, r.OverlapFraction = 12, 1
			r.Labels = []string{models.StudyLabelSuccess, models.StudyLabelScore}
		})
		// ann1 submits two items, autosaves a third; ann2 skips one.
		for i, e := range queues[0][:3] {
			action := models.LabelActionSubmit
			if i == 2 {
				action = models.LabelActionSave
			}
			_, err := servicetest.Studies(db, nil).SaveStudyLabels(f.ann[0], st.ID, e.ItemID, models.StudyLabelInput{Action: action, TimeSpentMS: 2000,
				Labels: map[string]string{"success": "Successful", "score": "4"}})
			require.NoError(t, err)
		}
		_, err := servicetest.Studies(db, nil).SaveStudyLabels(f.ann[1], st.ID, queues[1][0].ItemID, models.StudyLabelInput{Action: models.LabelActionSkip, Reason: "blank"})
		require.NoError(t, err)
		items := f.items(t, st.ID)
		require.NoError(t, db.SaveStudyVerdict(f.system, &models.StudyVerdict{StudyID: st.ID, StudyItemID: items[0].ID, Judge: "gpt judge",
			Labels: models.StudyLabels{"success": "failure", "score": "2"}, TokensIn: 100, Cost: 0.01}, service.CanonicalVerdictLabels))

		d, err := servicetest.Studies(db, nil).StudyData(f.member, st.ID)
		require.NoError(t, err)
		require.Equal(t, st.ID, d.Study.ID)
		require.Len(t, d.Items, 12)
		agents := map[string]int{}
		for i, it := range d.Items {
			require.Equal(t, i+1, it.Position)
			require.Equal(t, items[i].ID, it.ItemID)
			require.Equal(t, items[i].AttemptID, it.AttemptID)
			require.Equal(t, "mini", it.Benchmark)
			require.NotEmpty(t, it.TaskID)
			require.NotEmpty(t, it.Intent)
			require.NotEmpty(t, it.Site)
			require.NotEmpty(t, it.Difficulty)
			require.Contains(t, []string{models.OutcomeSuccess, models.OutcomeFailure, models.OutcomeError}, it.Outcome)
			require.NotEmpty(t, it.Rubric, "every mini task has a rubric")
			agents[it.Agent+"/"+it.Model]++
			if it.TaskID == "t1" {
				require.Len(t, it.Rubric, 2)
			}
		}
		require.Equal(t, map[string]int{"Walker/": 8, "Runner/model-r": 4}, agents, "the run's model from its agent snapshot")

		require.Len(t, d.Human, 2, "submitted labels only: not the autosaved or skipped items")
		for _, h := range d.Human {
			require.Equal(t, f.annUsers[0].ID, h.UserID)
			require.Equal(t, "ann1", h.Annotator)
			require.Equal(t, models.StudyLabels{"success": "successful", "score": "4"}, h.Labels)
			require.Equal(t, int64(2000), h.TimeSpentMS)
		}
		require.Len(t, d.Verdicts, 1)
		require.Equal(t, "unsuccessful", d.Verdicts[0].Labels["success"], "stored canonical")

		kinds := map[string]int{}
		for _, e := range d.Evaluations {
			kinds[e.Kind]++
			if e.Kind == models.EvaluationJudge {
				require.Equal(t, 4, *e.JudgeScore)
			}
		}
		require.Equal(t, 12, kinds[models.EvaluationCheck], "each attempt's current check")
		require.Equal(t, 3, kinds[models.EvaluationJudge], "the judge beside t1's check in each run")

		t.Run("RubricJudgments", func(t *testing.T) {
			var rubricItems []models.RubricItem
			for _, it := range d.Items {
				if it.TaskID == "t2" {
					rubricItems = it.Rubric
				}
			}
			var attempt int64
			for _, it := range d.Items {
				if it.TaskID == "t2" {
					attempt = it.AttemptID
					break
				}
			}
			ev := &models.Evaluation{AttemptID: attempt, Evaluator: "llm-judge:m:rubric-v1", Kind: models.EvaluationRubric, Verdict: models.OutcomeFailure,
				IsCurrent: true, CreatedAt: time.Now().UTC(),
				RubricJudgments: []models.RubricJudgment{{RubricItemID: rubricItems[0].ID, Passed: true}}}
			require.NoError(t, db.Gorm().Create(ev).Error)
			d, err := servicetest.Studies(db, nil).StudyData(f.member, st.ID)
			require.NoError(t, err)
			found := false
			for _, e := range d.Evaluations {
				if e.Kind == models.EvaluationRubric {
					require.Equal(t, map[int64]bool{rubricItems[0].ID: true}, e.Rubric)
					found = true
				}
			}
			require.True(t, found)
		})

		t.Run("FixedQueries", func(t *testing.T) {
			small, _ := f.openStudy(t, func(r *models.StudyRequest) { r.SampleSize = 2 })
			log := countStatements(t, db.Gorm())
			_, err := servicetest.Studies(db, nil).StudyData(f.member, small.ID)
			require.NoError(t, err)
			few := log.reset()
			_, err = servicetest.Studies(db, nil).StudyData(f.member, st.ID)
			require.NoError(t, err)
			many := log.reset()
			require.NotEmpty(t, few)
			require.Equal(t, len(few), len(many), "the same queries for 2 items as for 12: %v", many)
			require.LessOrEqual(t, len(many), 10, "%v", many)
		})
	})
}

func TestStore_StudyImports(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newStudyFixture(t, db)
		st := f.create(t, nil)
		d, err := servicetest.Studies(db, nil).StudyData(f.member, st.ID)
		require.NoError(t, err)
		keys := agreement.StudyKeys(d.Items)
		a, b := d.Items[0].ItemID, d.Items[1].ItemID

		t.Run("Labels", func(t *testing.T) {
			res, err := servicetest.Studies(db, nil).ImportStudyLabels(f.member, st.ID, []models.StudyImportRow{
				importRow(keys, a, "arb-1", 2, models.StudyLabels{"success": "Successful", "optimality": "2. Suboptimal"}),
				importRow(keys, b, "arb-1", 3, models.StudyLabels{"success": "Unsure"}),
				{Benchmark: "mini", Model: "nobody", TaskID: "t9", Who: "arb-1", Line: 4},
			})
			require.NoError(t, err)
			require.Equal(t, 2, res.Imported)
			require.Zero(t, res.Replaced)
			require.Equal(t, []string{"line 4: mini/nobody/t9"}, res.Unmatched)

			// Keys match whatever their capitals; importing again replaces.
			row := importRow(keys, a, "arb-1", 2, models.StudyLabels{"success": "Unsuccessful"})
			row.Benchmark, row.Model = strings.ToUpper(row.Benchmark), " "+strings.ToUpper(row.Model)
			res, err = servicetest.Studies(db, nil).ImportStudyLabels(f.member, st.ID, []models.StudyImportRow{row, importRow(keys, a, "arb-2", 3, models.StudyLabels{"success": "Successful"})})
			require.NoError(t, err)
			require.Equal(t, 2, res.Imported)
			require.Equal(t, 1, res.Replaced)
			require.EqualValues(t, 3, countRows(t, db, "study_assignments", "study_id = ? AND user_id IS NULL", st.ID))

			d, err := servicetest.Studies(db, nil).StudyData(f.member, st.ID)
			require.NoError(t, err)
			byName := map[string]models.StudyLabels{}
			for _, h := range d.Human {
				require.Zero(t, h.UserID)
				if h.ItemID == a {
					byName[h.Annotator] = h.Labels
				}
			}
			require.Equal(t, map[string]models.StudyLabels{"arb-1": {"success": "unsuccessful"}, "arb-2": {"success": "successful"}}, byName)
		})

		t.Run("UnsureInEveryColumn", func(t *testing.T) {
			// AgentRewardBench's files answer Unsure in optimality and
			// looping too, which the annotation form does not offer.
			all := models.StudyLabels{"success": "Unsure", "side_effect": " unsure", "optimality": "UNSURE", "looping": "Unsure "}
			res, err := servicetest.Studies(db, nil).ImportStudyLabels(f.member, st.ID, []models.StudyImportRow{importRow(keys, b, " arb-3 ", 2, all)})
			require.NoError(t, err)
			require.Equal(t, 1, res.Imported)
			d, err := servicetest.Studies(db, nil).StudyData(f.member, st.ID)
			require.NoError(t, err)
			var got []models.StudyHumanLabel
			for _, h := range d.Human {
				if strings.Contains(h.Annotator, "arb-3") {
					got = append(got, h)
				}
			}
			require.Len(t, got, 1)
			require.Equal(t, "arb-3", got[0].Annotator, "the name is trimmed")
			require.Equal(t, models.StudyLabels{"success": "unsure", "side_effect": "unsure", "optimality": "unsure", "looping": "unsure"}, got[0].Labels)
		})

		t.Run("Refusals", func(t *testing.T) {
			_, err := servicetest.Studies(db, nil).ImportStudyLabels(f.member, st.ID, []models.StudyImportRow{{Benchmark: "mini", Model: "x", TaskID: "t1", Who: "a", Line: 2}})
			requireCode(t, models.EINVALID, err)
			require.Contains(t, models.ErrorMessage(err), "None of the file's 1 rows matches an item of the study")
			require.Contains(t, models.ErrorMessage(err), "line 2: mini/x/t1")
			_, err = servicetest.Studies(db, nil).ImportStudyLabels(f.member, st.ID, nil)
			requireCode(t, models.EINVALID, err)
			_, err = servicetest.Studies(db, nil).ImportStudyLabels(f.member, st.ID, []models.StudyImportRow{importRow(keys, a, "a", 7, models.StudyLabels{"success": "perhaps"})})
			requireCode(t, models.EINVALID, err)
			require.Contains(t, models.ErrorMessage(err), `Line 7: "perhaps" is not an answer to success`)
			_, err = servicetest.Studies(db, nil).ImportStudyLabels(f.member, st.ID, []models.StudyImportRow{importRow(keys, a, "a", 8, models.StudyLabels{"optimality": "Maybe"})})
			requireCode(t, models.EINVALID, err)
			require.Contains(t, models.ErrorMessage(err), `Line 8: "Maybe" is not an answer to optimality`)
			_, err = servicetest.Studies(db, nil).ImportStudyLabels(f.member, st.ID, []models.StudyImportRow{importRow(keys, a, " ", 5, nil)})
			requireCode(t, models.EINVALID, err)
			require.Contains(t, models.ErrorMessage(err), "Line 5 names no annotator.")
			_, err = servicetest.Studies(db, nil).ImportStudyVerdicts(f.member, st.ID, []models.StudyImportRow{importRow(keys, a, "GPT JUDGE", 2, models.StudyLabels{"success": "successful"})})
			requireCode(t, models.EINVALID, err)
			require.Contains(t, models.ErrorMessage(err), "judge configurations")
		})

		t.Run("UnmatchedAreCapped", func(t *testing.T) {
			rows := []models.StudyImportRow{importRow(keys, b, "cap", 1, models.StudyLabels{"looping": "No"})}
			for i := range 150 {
				rows = append(rows, models.StudyImportRow{Benchmark: "mini", Model: "x", TaskID: fmt.Sprintf("u%d", i), Who: "cap", Line: i + 2})
			}
			res, err := servicetest.Studies(db, nil).ImportStudyLabels(f.member, st.ID, rows)
			require.NoError(t, err)
			require.Equal(t, 1, res.Imported)
			require.Len(t, res.Unmatched, 101)
			require.Equal(t, "… and 50 more rows that match no item", res.Unmatched[100])
		})

		t.Run("Verdicts", func(t *testing.T) {
			res, err := servicetest.Studies(db, nil).ImportStudyVerdicts(f.member, st.ID, []models.StudyImportRow{
				importRow(keys, a, "arb-judge", 2, models.StudyLabels{"success": "success"}),
				importRow(keys, b, "arb-judge", 3, models.StudyLabels{"success": "failure"}),
			})
			require.NoError(t, err)
			require.Equal(t, 2, res.Imported)
			res, err = servicetest.Studies(db, nil).ImportStudyVerdicts(f.member, st.ID, []models.StudyImportRow{importRow(keys, a, "arb-judge", 2, models.StudyLabels{"success": "Unsure"})})
			require.NoError(t, err)
			require.Equal(t, 1, res.Replaced)
			verdicts, err := servicetest.Studies(db, nil).StudyVerdicts(f.member, st.ID)
			require.NoError(t, err)
			require.Len(t, verdicts, 2)
			for _, v := range verdicts {
				require.True(t, v.Imported)
				if v.StudyItemID == a {
					require.Equal(t, models.StudyLabels{"success": "unsure"}, v.Labels)
				}
			}
			err = servicetest.Studies(db, nil).SetStudyJudges(f.member, st.ID, []models.StudyJudge{{Name: "arb-judge", Prompt: models.StudyPromptLabelsV1}})
			requireField(t, "judges", "imported from a file", err)
		})
	})
}

func TestStore_StudyJudging(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newStudyFixture(t, db)
		st := f.create(t, func(r *models.StudyRequest) {
			r.Judges = append(r.Judges, models.StudyJudge{Name: "screens", Prompt: models.StudyPromptTrajectoryV2, Screenshots: true})
		})
		items := f.items(t, st.ID)

		work, err := db.StudyJudgeWork(f.system, st.ID, "gpt judge")
		require.NoError(t, err)
		require.Equal(t, attemptIDs(items), attemptIDs(work), "every item, in sample order")
		_, err = db.StudyJudgeWork(f.system, st.ID, "nobody")
		requireCode(t, models.ENOTFOUND, err)
		_, err = db.StudyJudgeWork(f.system, st.ID+1000, "gpt judge")
		requireCode(t, models.ENOTFOUND, err)

		v := &models.StudyVerdict{StudyID: st.ID, StudyItemID: items[0].ID, Judge: "gpt judge", Labels: models.StudyLabels{"success": "Success"},
			Rationale: "first", TokensIn: 1000, TokensOut: 50, Cost: 0.02, LatencyMS: 900}
		require.NoError(t, db.SaveStudyVerdict(f.system, v, service.CanonicalVerdictLabels))
		require.Equal(t, "successful", v.Labels["success"])
		v.Rationale, v.Labels = "again", models.StudyLabels{"success": "failure"}
		require.NoError(t, db.SaveStudyVerdict(f.system, v, service.CanonicalVerdictLabels), "a redelivered job judges again")
		require.EqualValues(t, 1, countRows(t, db, "study_verdicts", "study_item_id = ?", items[0].ID))
		require.NoError(t, db.SaveStudyVerdict(f.system, &models.StudyVerdict{StudyID: st.ID, StudyItemID: items[1].ID, Judge: "gpt judge",
			Error: "the judge timed out", TokensIn: 10}, service.CanonicalVerdictLabels))
		require.NoError(t, db.SaveStudyVerdict(f.system, &models.StudyVerdict{StudyID: st.ID, StudyItemID: items[2].ID, Judge: "screens",
			Labels: models.StudyLabels{"success": "unsure", "score": "3"}}, service.CanonicalVerdictLabels))

		verdicts, err := servicetest.Studies(db, nil).StudyVerdicts(f.member, st.ID)
		require.NoError(t, err)
		require.Len(t, verdicts, 3)
		require.Equal(t, "again", verdicts[0].Rationale)
		require.Equal(t, models.StudyLabels{"success": "unsuccessful"}, verdicts[0].Labels)
		require.False(t, verdicts[0].Imported)

		work, err = db.StudyJudgeWork(f.system, st.ID, "gpt judge")
		require.NoError(t, err)
		require.Len(t, work, len(items)-1, "the failed item is judged again; the judged one is not")
		require.Equal(t, items[1].ID, work[0].ID)

		view, err := servicetest.Studies(db, nil).StudyOverview(f.member, st.ID)
		require.NoError(t, err)
		require.Len(t, view.Judges, 2)
		require.Equal(t, "gpt judge", view.Judges[0].Name)
		require.Equal(t, 1, view.Judges[0].Judged)
		require.Equal(t, 1, view.Judges[0].Errors)
		require.Equal(t, int64(1010), view.Judges[0].TokensIn)
		require.InDelta(t, 0.02, view.Judges[0].Cost, 1e-9)
		require.Equal(t, 1, view.Judges[1].Judged)
		require.True(t, view.Judges[1].Screenshots)

		err = db.SaveStudyVerdict(f.system, &models.StudyVerdict{StudyID: st.ID, StudyItemID: items[0].ID, Judge: "gpt judge", Labels: models.StudyLabels{"score": "9"}}, service.CanonicalVerdictLabels)
		requireField(t, "score", "allowed: 1, 2, 3, 4, 5", err)
		err = db.SaveStudyVerdict(f.system, &models.StudyVerdict{StudyID: st.ID + 1000, StudyItemID: items[0].ID, Judge: "gpt judge"}, service.CanonicalVerdictLabels)
		requireCode(t, models.ENOTFOUND, err)
		requireField(t, "judge", "names no judge", db.SaveStudyVerdict(f.system, &models.StudyVerdict{StudyID: st.ID, StudyItemID: items[0].ID}, service.CanonicalVerdictLabels))
	})
}

// TestStore_SetStudyJudges: verdicts are kept by judge name, so changing or
// removing a configuration drops its verdicts; unchanged configurations and
// imported judges keep theirs.
func TestStore_SetStudyJudges(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newStudyFixture(t, db)
		judges := []models.StudyJudge{
			{Name: "same", Model: "m", Prompt: models.StudyPromptLabelsV1},
			{Name: "model", Model: "m", Prompt: models.StudyPromptLabelsV1},
			{Name: "prompt", Prompt: models.StudyPromptTrajectoryV2},
			{Name: "screenshots", Prompt: models.StudyPromptTrajectoryV2},
			{Name: "accessibility", Prompt: models.StudyPromptTrajectoryV2, Accessibility: true},
			{Name: "removed", Prompt: models.StudyPromptTrajectoryV1},
		}
		st := f.create(t, func(r *models.StudyRequest) { r.Judges = judges })
		items := f.items(t, st.ID)
		for _, j := range judges {
			for _, it := range items[:2] {
				require.NoError(t, db.SaveStudyVerdict(f.system, &models.StudyVerdict{StudyID: st.ID, StudyItemID: it.ID, Judge: j.Name,
					Labels: models.StudyLabels{"success": "successful"}}, service.CanonicalVerdictLabels))
			}
		}
		d, err := servicetest.Studies(db, nil).StudyData(f.member, st.ID)
		require.NoError(t, err)
		_, err = servicetest.Studies(db, nil).ImportStudyVerdicts(f.member, st.ID, []models.StudyImportRow{
			importRow(agreement.StudyKeys(d.Items), items[0].ID, "imported", 2, models.StudyLabels{"success": "unsure"})})
		require.NoError(t, err)

		changed := []models.StudyJudge{
			{Name: "same", Model: " m ", Prompt: models.StudyPromptLabelsV1}, // spaces are not a change
			{Name: "model", Model: "m2", Prompt: models.StudyPromptLabelsV1},
			{Name: "prompt", Prompt: models.StudyPromptTrajectoryV1},
			{Name: "screenshots", Prompt: models.StudyPromptTrajectoryV2, Screenshots: true},
			{Name: "accessibility", Prompt: models.StudyPromptTrajectoryV2},
			{Name: "new", Prompt: models.StudyPromptTrajectoryV1},
		}
		require.NoError(t, servicetest.Studies(db, nil).SetStudyJudges(f.member, st.ID, changed))
		verdicts, err := servicetest.Studies(db, nil).StudyVerdicts(f.member, st.ID)
		require.NoError(t, err)
		perJudge := map[string]int{}
		for _, v := range verdicts {
			perJudge[v.Judge]++
		}
		require.Equal(t, map[string]int{"same": 2, "imported": 1}, perJudge)
		work, err := db.StudyJudgeWork(f.system, st.ID, "model")
		require.NoError(t, err)
		require.Len(t, work, len(items), "a changed configuration judges every item again")

		// A job that started with the old configuration cannot save its
		// verdicts under the new one; a job with the current one can.
		old := judges[1]
		err = db.SaveStudyVerdict(f.system, &models.StudyVerdict{StudyID: st.ID, StudyItemID: items[0].ID, Judge: old.Name,
			Labels: models.StudyLabels{"success": "successful"}, Config: &old}, service.CanonicalVerdictLabels)
		requireCode(t, models.ECONFLICT, err)
		require.Contains(t, models.ErrorMessage(err), `judge "model" changed while it judged`)
		current := changed[1]
		current.Model = "m2"
		require.NoError(t, db.SaveStudyVerdict(f.system, &models.StudyVerdict{StudyID: st.ID, StudyItemID: items[0].ID, Judge: current.Name,
			Labels: models.StudyLabels{"success": "successful"}, Config: &current}, service.CanonicalVerdictLabels))

		require.NoError(t, servicetest.Studies(db, nil).SetStudyJudges(f.member, st.ID, nil))
		verdicts, err = servicetest.Studies(db, nil).StudyVerdicts(f.member, st.ID)
		require.NoError(t, err)
		require.Len(t, verdicts, 1, "no configuration left: only the imported judge's verdict")
		require.True(t, verdicts[0].Imported)
	})
}

// TestStore_StudyVerdictErrors: why a judge gave no verdict may quote the
// judge endpoint's address or reply, so only administrators read it; owners
// and annotators read a fixed sentence, wherever verdicts are listed.
func TestStore_StudyVerdictErrors(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newStudyFixture(t, db)
		st, queues := f.openStudy(t, func(r *models.StudyRequest) { r.Blind = false })
		item := queues[0][0].ItemID
		const raw = "the judge could not be asked: POST http://judge.internal:8000/v1/chat/completions: 502 upstream said {\"detail\":\"quota\"}"
		require.NoError(t, db.SaveStudyVerdict(f.system, &models.StudyVerdict{StudyID: st.ID, StudyItemID: item, Judge: "gpt judge", Error: raw}, service.CanonicalVerdictLabels))

		errorsSeen := func(t *testing.T, ctx context.Context) []string {
			t.Helper()
			var out []string
			verdicts, err := servicetest.Studies(db, nil).StudyVerdicts(ctx, st.ID)
			require.NoError(t, err)
			require.Len(t, verdicts, 1)
			out = append(out, verdicts[0].Error)
			v, err := servicetest.Studies(db, nil).StudyItem(ctx, st.ID, item)
			require.NoError(t, err)
			require.Len(t, v.Reveal.Verdicts, 1)
			out = append(out, v.Reveal.Verdicts[0].Error)
			if d, err := servicetest.Studies(db, nil).StudyData(ctx, st.ID); models.ErrorCode(err) != models.EFORBIDDEN {
				require.NoError(t, err)
				require.Len(t, d.Verdicts, 1)
				out = append(out, d.Verdicts[0].Error)
			}
			return out
		}
		const public = "The judge could not grade this attempt; administrators can see why."
		require.Equal(t, []string{public, public, public}, errorsSeen(t, f.member), "the owner")
		require.Equal(t, []string{public, public}, errorsSeen(t, f.ann[0]), "an annotator of a study that is not blind")
		require.Equal(t, []string{raw, raw, raw}, errorsSeen(t, f.admin))
	})
}

// TestStore_StudyImportCaps: imports may not bring a study more than
// MaxStudyAnnotators imported annotators or MaxStudyJudges imported judges,
// counting those it holds already; names it holds may be imported again.
func TestStore_StudyImportCaps(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newStudyFixture(t, db)
		st := f.create(t, nil)
		d, err := servicetest.Studies(db, nil).StudyData(f.member, st.ID)
		require.NoError(t, err)
		keys := agreement.StudyKeys(d.Items)
		item := d.Items[0].ItemID
		rows := func(prefix string, from, to int) []models.StudyImportRow {
			var out []models.StudyImportRow
			for i := from; i < to; i++ {
				out = append(out, importRow(keys, item, fmt.Sprintf("%s-%d", prefix, i), i+2, models.StudyLabels{"success": "Successful"}))
			}
			return out
		}
		for _, tc := range []struct {
			party string
			limit int
			send  func(rows []models.StudyImportRow) (*models.StudyImportResult, error)
		}{
			{"annotator", models.MaxStudyAnnotators, func(rows []models.StudyImportRow) (*models.StudyImportResult, error) {
				return servicetest.Studies(db, nil).ImportStudyLabels(f.member, st.ID, rows)
			}},
			{"judge", models.MaxStudyJudges, func(rows []models.StudyImportRow) (*models.StudyImportResult, error) {
				return servicetest.Studies(db, nil).ImportStudyVerdicts(f.member, st.ID, rows)
			}},
		} {
			t.Run(tc.party, func(t *testing.T) {
				_, err := tc.send(rows(tc.party, 0, tc.limit+1))
				requireCode(t, models.EINVALID, err)
				require.Equal(t, fmt.Sprintf("A study holds at most %d imported %ss; it has 0 and the file adds %d.", tc.limit, tc.party, tc.limit+1),
					models.ErrorMessage(err))

				res, err := tc.send(rows(tc.party, 0, tc.limit-1))
				require.NoError(t, err)
				require.Equal(t, tc.limit-1, res.Imported)
				_, err = tc.send(rows(tc.party, tc.limit-2, tc.limit+1))
				requireCode(t, models.EINVALID, err)
				require.Equal(t, fmt.Sprintf("A study holds at most %d imported %ss; it has %d and the file adds 2.", tc.limit, tc.party, tc.limit-1),
					models.ErrorMessage(err))
				res, err = tc.send(rows(tc.party, 0, tc.limit))
				require.NoError(t, err, "up to the limit, names already held included")
				require.Equal(t, tc.limit-1, res.Replaced)
			})
		}
	})
}
