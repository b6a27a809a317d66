package runner_test

import (
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/bundle/bundletest"
	"proctor/eval/judge"
	"proctor/models"
	"proctor/runner"
	"proctor/sandbox"
	"proctor/storage/storagetest"
)

// TestSubmission_ProctorBundleJudged: a trajectory run elsewhere and uploaded
// as a Proctor bundle is graded like an executed one — beside the
// deterministic check, the LLM judge reads its steps with their uploaded
// screenshots and gives its 1–5 score.
func TestSubmission_ProctorBundleJudged(t *testing.T) {
	t.Parallel()
	fj := &fakeJudge{}
	srv := httptest.NewServer(fj)
	t.Cleanup(srv.Close)
	factory := func(models.JudgeSettings) (runner.Judges, error) {
		return judge.New(judge.Config{BaseURL: srv.URL + "/v1", Model: "judge-model", Timeout: 10 * time.Second})
	}
	// One database and store: the judge's counters are this test's alone
	// (the format tests cover every driver).
	p := newPortal(t, storagetest.OpenSQLite(t), portalStores()[0], portalOptions{judges: factory})
	{
		m := bundletest.ProctorManifest(sandbox.Slug, "hard")
		f := fileOf(t, bundletest.Proctor(t, filepath.Join(t.TempDir(), "judged.zip"), m,
			bundletest.ProctorTask{ID: "shop-admin-biggest-order", Steps: 3,
				Answer: `{"type": "answer", "response": ` + answer(`[{"customer": "Mira Kovac", "total": 408}]`) + `}`},
		))
		_, run := p.ingest(t, f, request(sandbox.Slug, "hard", f))
		a := p.attemptsByTask(t, run.ID)["shop-admin-biggest-order"]
		p.requireEvaluated(t, a, models.OutcomeSuccess, 3)

		var judged []models.Evaluation
		require.NoError(t, p.db.Gorm().Where("attempt_id = ? AND kind = ? AND is_current = ?", a.ID, models.EvaluationJudge, true).
			Find(&judged).Error)
		require.Len(t, judged, 1, "the uploaded trajectory is judged")
		require.NotNil(t, judged[0].JudgeScore)
		require.Equal(t, 4, *judged[0].JudgeScore)
		require.False(t, judged[0].IsPrimary, "the deterministic check sets the outcome")
		require.Positive(t, judged[0].TokensIn)
		require.Equal(t, int64(1), fj.trajectories.Load())
		// Each judge request (the trajectory judge's and the rubric judge's)
		// carries the three uploaded screenshots.
		require.Equal(t, 3*(fj.trajectories.Load()+fj.rubrics.Load()), fj.images.Load(), "the judges were shown the uploaded screenshots")
	}
}
