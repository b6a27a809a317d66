package agreement_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/agreement"
)

// withoutLines clears the source lines, which an export does not keep.
func withoutLines[T any](records []T, clearLine func(*T)) []T {
	out := append([]T(nil), records...)
	for i := range out {
		clearLine(&out[i])
	}
	return out
}

func TestExport_RoundTrip(t *testing.T) {
	t.Parallel()
	b := fixtureReport(t, 0)
	humans := withoutLines(b.humans, func(h *agreement.HumanLabel) { h.Line = 0 })
	verdicts := withoutLines(b.verdicts, func(v *agreement.Verdict) { v.Line = 0 })

	t.Run("HumanCSV", func(t *testing.T) {
		t.Parallel()
		var buf bytes.Buffer
		require.NoError(t, agreement.WriteHumanCSV(&buf, humans))
		lines := strings.Split(buf.String(), "\n")
		require.Equal(t, "annotator_name,benchmark,task_id,model_name,exp_name,trajectory_success,trajectory_side_effect,trajectory_optimality,trajectory_looping,trajectory_score,rubric_pass", lines[0])
		require.Equal(t, "alice,webarena,webarena.15,GenericAgent-gpt-4o-2024-11-20,gpt4o-webarena,Successful,No,4. Completely Optimal,No,,", lines[1],
			"values are spelled as AgentRewardBench spells them")
		back, skipped, err := agreement.ReadHumanCSV(&buf, agreement.ReadOptions{})
		require.NoError(t, err)
		require.Empty(t, skipped)
		require.Equal(t, humans, withoutLines(back, func(h *agreement.HumanLabel) { h.Line = 0 }))
	})

	t.Run("HumanJSONL", func(t *testing.T) {
		t.Parallel()
		var buf bytes.Buffer
		require.NoError(t, agreement.WriteHumanJSONL(&buf, humans))
		first, _, _ := strings.Cut(buf.String(), "\n")
		require.JSONEq(t, `{"annotator_name":"alice","benchmark":"webarena","task_id":"webarena.15","model_name":"GenericAgent-gpt-4o-2024-11-20",
			"exp_name":"gpt4o-webarena","trajectory_success":"Successful","trajectory_side_effect":"No",
			"trajectory_optimality":"4. Completely Optimal","trajectory_looping":"No"}`, first)
		require.Equal(t, len(humans), strings.Count(buf.String(), "\n"))
	})

	t.Run("VerdictsCSV", func(t *testing.T) {
		t.Parallel()
		var buf bytes.Buffer
		require.NoError(t, agreement.WriteVerdictsCSV(&buf, verdicts))
		back, _, err := agreement.ReadVerdictsCSV(&buf, agreement.ReadOptions{})
		require.NoError(t, err)
		require.Equal(t, verdicts, withoutLines(back, func(v *agreement.Verdict) { v.Line = 0 }))
	})

	t.Run("VerdictsJSONL", func(t *testing.T) {
		t.Parallel()
		var buf bytes.Buffer
		require.NoError(t, agreement.WriteVerdictsJSONL(&buf, verdicts))
		back, _, err := agreement.ReadVerdictsJSONL(&buf, agreement.ReadOptions{})
		require.NoError(t, err)
		require.Equal(t, verdicts, withoutLines(back, func(v *agreement.Verdict) { v.Line = 0 }))
	})
}

func TestWriteReportCSV(t *testing.T) {
	t.Parallel()
	r := fixtureReport(t, 200).report
	var buf bytes.Buffer
	require.NoError(t, agreement.WriteReportCSV(&buf, r))
	rows, err := csv.NewReader(&buf).ReadAll()
	require.NoError(t, err)
	header := rows[0]
	require.Equal(t, []string{"label", "comparison", "judge", "label_items", "labelled", "ties", "unsure_items", "unsure_answers",
		"items", "pairs", "verdicts", "no_human_label", "no_majority", "unsure", "agreement", "agreement_low", "agreement_high"}, header[:17])
	require.Len(t, header, 14+3*len(agreement.ReportMetrics()))

	// One human row per label plus one row per judge that answered it:
	// success 3 judges, side effect 1, looping 2, optimality 1, score 0,
	// rubric 0.
	require.Len(t, rows, 1+6+3+1+2+1)
	cell := func(row []string, column string) string {
		for i, h := range header {
			if h == column {
				return row[i]
			}
		}
		t.Fatalf("no column %s", column)
		return ""
	}
	find := func(label, comparison, judge string) []string {
		for _, row := range rows[1:] {
			if row[0] == label && row[1] == comparison && row[2] == judge {
				return row
			}
		}
		t.Fatalf("no row %s %s %s", label, comparison, judge)
		return nil
	}

	hh := find("success", "human_human", "")
	require.Equal(t, "10", cell(hh, "pairs"))
	require.Equal(t, "6", cell(hh, "items"))
	require.Equal(t, "10", cell(hh, "label_items"))
	require.Equal(t, "1", cell(hh, "unsure_items"))
	require.Equal(t, "3", cell(hh, "unsure_answers"), "every unsure answer of the label, on each of its rows")
	require.Equal(t, "3", cell(find("success", "judge", "gpt-4o-mini"), "unsure_answers"))
	require.Equal(t, "2", cell(find("side_effect", "human_human", ""), "unsure_answers"))
	require.Equal(t, "0", cell(find("optimality", "human_human", ""), "unsure_answers"))
	require.Equal(t, "0.7", cell(hh, "agreement"))
	require.NotEmpty(t, cell(hh, "agreement_low"))
	require.Empty(t, cell(hh, "precision"), "not a human-vs-human metric")

	mini := find("success", "judge", "gpt-4o-mini")
	require.Equal(t, "13", cell(mini, "verdicts"))
	require.Equal(t, "0.4", cell(mini, "cohen_kappa"))
	require.Equal(t, "0.75", cell(mini, "npv"))

	loop := find("looping", "judge", "gpt-4o-mini")
	require.Empty(t, cell(loop, "precision"), "undefined: an empty cell")
	require.Empty(t, cell(loop, "precision_low"))
	require.Equal(t, "0", cell(loop, "recall"))
}

func TestWriteReportJSON(t *testing.T) {
	t.Parallel()
	r := fixtureReport(t, 0).report
	var buf bytes.Buffer
	require.NoError(t, agreement.WriteReportJSON(&buf, r))
	var doc struct {
		Labels map[string]struct {
			Items      int `json:"items"`
			HumanHuman struct {
				Pairs      int      `json:"pairs"`
				Agreement  *float64 `json:"agreement"`
				CohenKappa *float64 `json:"cohen_kappa"`
			} `json:"human_human"`
			Judges map[string]map[string]any `json:"judges"`
		} `json:"labels"`
	}
	require.NoError(t, json.Unmarshal(buf.Bytes(), &doc))
	require.Equal(t, 10, doc.Labels["success"].Items)
	require.Equal(t, 10, doc.Labels["success"].HumanHuman.Pairs)
	require.Nil(t, doc.Labels["looping"].HumanHuman.CohenKappa, "undefined is null")
	for _, key := range []string{"items", "agreement", "cohen_kappa", "precision", "recall", "f1", "accuracy", "npv", "tnr"} {
		require.Contains(t, doc.Labels["optimality"].Judges["claude-3.7-sonnet-noaxtree"], key, "every judge entry has every key")
	}
	require.Nil(t, doc.Labels["optimality"].Judges["claude-3.7-sonnet-noaxtree"]["precision"])
}
