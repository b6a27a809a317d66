package main

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// agreementFixtures are the agreement package's test files: human labels in
// AgentRewardBench's layout (line 22 is a bad row), a judge CSV and a judge
// JSON Lines file. Their figures are worked by hand in
// agreement/report_test.go.
func agreementFixtures() (human, judgesCSV, judgesJSONL string) {
	dir := filepath.Join("..", "..", "agreement", "testdata")
	return filepath.Join(dir, "annotations.csv"), filepath.Join(dir, "judges.csv"), filepath.Join(dir, "judges.jsonl")
}

// agreementJSON is the report shape scripts rely on (docs/agreement.md).
type agreementJSON struct {
	Labels map[string]struct {
		Items      int `json:"items"`
		Ties       int `json:"ties"`
		HumanHuman struct {
			Pairs      int      `json:"pairs"`
			Agreement  *float64 `json:"agreement"`
			CohenKappa *float64 `json:"cohen_kappa"`
		} `json:"human_human"`
		Judges map[string]judgeJSON `json:"judges"`
	} `json:"labels"`
	SkippedRows int `json:"skipped_rows"`
}

// judgeJSON is one judge's entry under a label.
type judgeJSON struct {
	Items      int      `json:"items"`
	Agreement  *float64 `json:"agreement"`
	CohenKappa *float64 `json:"cohen_kappa"`
	Precision  *float64 `json:"precision"`
	Recall     *float64 `json:"recall"`
	F1         *float64 `json:"f1"`
	Accuracy   *float64 `json:"accuracy"`
	NPV        *float64 `json:"npv"`
	TNR        *float64 `json:"tnr"`
}

// metrics names the judge's metrics as the JSON does.
func (j judgeJSON) metrics() map[string]*float64 {
	items := float64(j.Items)
	return map[string]*float64{"items": &items, "agreement": j.Agreement, "cohen_kappa": j.CohenKappa, "precision": j.Precision,
		"recall": j.Recall, "f1": j.F1, "accuracy": j.Accuracy, "npv": j.NPV, "tnr": j.TNR}
}

func TestAgreement_JSON(t *testing.T) {
	t.Parallel()
	human, judgesCSV, judgesJSONL := agreementFixtures()
	env := testEnv{} // no database settings: the command must not need them
	out := filepath.Join(t.TempDir(), "report.csv")
	code, stdout, stderr := env.run(t, "", "agreement", "--human", human, "--judge", judgesCSV, "--judge", judgesJSONL,
		"--skip-bad-rows", "--json", "--csv", out, "--bootstrap", "200", "--seed", "3")
	require.Equal(t, exitOK, code, stderr)
	require.Empty(t, stderr)

	// The exact keys scripts read.
	var shape struct {
		Labels map[string]map[string]any `json:"labels"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &shape))
	for _, label := range []string{"success", "side_effect", "looping", "optimality"} {
		require.Contains(t, shape.Labels, label)
		for _, key := range []string{"items", "human_human", "judges"} {
			require.Contains(t, shape.Labels[label], key, label)
		}
		hh := shape.Labels[label]["human_human"].(map[string]any)
		for _, key := range []string{"pairs", "agreement", "cohen_kappa"} {
			require.Contains(t, hh, key, label)
		}
		for name, j := range shape.Labels[label]["judges"].(map[string]any) {
			for _, key := range []string{"items", "agreement", "cohen_kappa", "precision", "recall", "f1", "accuracy", "npv", "tnr"} {
				require.Contains(t, j, key, "%s %s", label, name)
			}
		}
	}

	var r agreementJSON
	require.NoError(t, json.Unmarshal([]byte(stdout), &r))
	require.Equal(t, 1, r.SkippedRows)
	success := r.Labels["success"]
	require.Equal(t, 10, success.Items)
	require.Equal(t, 1, success.Ties)
	require.Equal(t, 10, success.HumanHuman.Pairs)
	require.InDelta(t, 0.7, *success.HumanHuman.Agreement, 1e-9)
	require.InDelta(t, 0.16/0.46, *success.HumanHuman.CohenKappa, 1e-9)
	require.Equal(t, []string{"claude-3.7-sonnet-noaxtree", "functional", "gpt-4o-mini"}, sortedSiteKeys(success.Judges))

	// gpt-4o-mini on success: TP 4, FP 2, FN 1, TN 3 (agreement/report_test.go).
	mini := success.Judges["gpt-4o-mini"].metrics()
	for key, want := range map[string]float64{
		"items": 10, "agreement": 0.7, "cohen_kappa": 0.4, "precision": 4.0 / 6, "recall": 0.8,
		"f1": 8.0 / 11, "accuracy": 0.7, "npv": 0.75, "tnr": 0.6,
	} {
		require.NotNil(t, mini[key], key)
		require.InDelta(t, want, *mini[key], 1e-9, key)
	}
	// No positive anywhere on looping for the JSON Lines judge: precision,
	// recall, F1 and kappa are null, never 0 or NaN.
	loop := r.Labels["looping"].Judges["claude-3.7-sonnet-noaxtree"].metrics()
	require.Nil(t, loop["precision"])
	require.Nil(t, loop["cohen_kappa"])
	require.InDelta(t, 1, *loop["tnr"], 1e-9)
	require.Nil(t, r.Labels["looping"].HumanHuman.CohenKappa, "one category: undefined")
	require.InDelta(t, 12.0/17, *r.Labels["optimality"].Judges["claude-3.7-sonnet-noaxtree"].CohenKappa, 1e-9)

	f, err := os.Open(out)
	require.NoError(t, err)
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	require.Len(t, rows, 1+6+3+1+2+1, "header, a human row per label, a row per judge and label")

	t.Run("SameSeedSameReport", func(t *testing.T) {
		t.Parallel()
		_, again, _ := env.run(t, "", "agreement", "--human", human, "--judge", judgesCSV, "--judge", judgesJSONL,
			"--skip-bad-rows", "--json", "--bootstrap", "200", "--seed", "3")
		require.JSONEq(t, stdout, again)
	})
}

func TestAgreement_Text(t *testing.T) {
	t.Parallel()
	human, judgesCSV, _ := agreementFixtures()
	code, stdout, stderr := testEnv{}.run(t, "", "agreement", "--skip-bad-rows", "--human", human, "--judge", judgesCSV, "--bootstrap", "0")
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "human labels: 22 from 3 annotators on 12 items (8 labelled by two or more)\n")
	require.Contains(t, stdout, "skipped 1 bad row:\n  annotations.csv line 22: trajectory_success: unknown value \"Partially successful\"")
	require.Contains(t, stdout, "success: 10 items with a human majority (1 tie, 1 all unsure, 3 unsure answers left out, positive: successful)")
	require.Regexp(t, `humans\s+10 pairs\s+70\.0%\s+0\.348\s+0\.422`, stdout)
	require.Regexp(t, `gpt-4o-mini\s+10\s+70\.0%\s+0\.400\s+—\s+66\.7%\s+80\.0%\s+72\.7%\s+70\.0%\s+75\.0%\s+60\.0%`, stdout)
	require.Contains(t, stdout, "verdicts left out: gpt-4o-mini: 1 no human label, 2 no human majority")
	require.NotContains(t, stdout, "score:", "a label nobody answered is not shown")
	require.NotContains(t, stdout, "bootstrap intervals", "--bootstrap 0 draws none")
}

// TestAgreement_PublishedLayout runs the command on a file laid out and
// spelled as AgentRewardBench publishes annotations.csv, with Unsure in
// every label column and names with stray spaces
// (agreement/testdata/annotations_published_layout.csv, worked by hand in
// agreement/report_test.go): it reads without --skip-bad-rows, and every
// label says how many unsure answers it left out, in the tables, the JSON and
// the CSV.
func TestAgreement_PublishedLayout(t *testing.T) {
	t.Parallel()
	human := filepath.Join("..", "..", "agreement", "testdata", "annotations_published_layout.csv")

	t.Run("Text", func(t *testing.T) {
		t.Parallel()
		code, stdout, stderr := testEnv{}.run(t, "", "agreement", "--human", human, "--bootstrap", "0")
		require.Equal(t, exitOK, code, stderr)
		require.Empty(t, stderr)
		require.Contains(t, stdout, "human labels: 15 from 3 annotators on 7 items (6 labelled by two or more)\n", "names are trimmed")
		for _, line := range []string{
			"success: 6 items with a human majority (1 all unsure, 4 unsure answers left out, positive: successful)\n",
			"side_effect: 7 items with a human majority (2 unsure answers left out, positive: yes)\n",
			"looping: 6 items with a human majority (1 all unsure, 3 unsure answers left out, positive: yes)\n",
			"optimality: 6 items with a human majority (1 all unsure, 4 unsure answers left out)\n",
		} {
			require.Contains(t, stdout, line)
		}
		require.Regexp(t, `humans\s+7 pairs\s+42\.9%`, stdout, "optimality: unsure answers are in no pair")
	})

	t.Run("JSONAndCSV", func(t *testing.T) {
		t.Parallel()
		out := filepath.Join(t.TempDir(), "report.csv")
		code, stdout, stderr := testEnv{}.run(t, "", "agreement", "--human", human, "--json", "--csv", out, "--bootstrap", "0")
		require.Equal(t, exitOK, code, stderr)
		var r struct {
			Labels map[string]struct {
				Unsure        *int `json:"unsure"`
				UnsureAnswers *int `json:"unsure_answers"`
			} `json:"labels"`
		}
		require.NoError(t, json.Unmarshal([]byte(stdout), &r))
		want := map[string][2]int{"success": {1, 4}, "side_effect": {0, 2}, "looping": {1, 3}, "optimality": {1, 4}, "score": {0, 0}, "rubric": {0, 0}}
		for label, w := range want {
			l := r.Labels[label]
			require.NotNil(t, l.Unsure, label)
			require.NotNil(t, l.UnsureAnswers, "%s: every label has the key", label)
			require.Equal(t, w, [2]int{*l.Unsure, *l.UnsureAnswers}, label)
		}

		f, err := os.Open(out)
		require.NoError(t, err)
		defer f.Close()
		rows, err := csv.NewReader(f).ReadAll()
		require.NoError(t, err)
		column := map[string]int{}
		for i, h := range rows[0] {
			column[h] = i
		}
		got := map[string][2]string{}
		for _, row := range rows[1:] {
			got[row[column["label"]]] = [2]string{row[column["unsure_items"]], row[column["unsure_answers"]]}
		}
		require.Equal(t, map[string][2]string{"success": {"1", "4"}, "side_effect": {"0", "2"}, "looping": {"1", "3"},
			"optimality": {"1", "4"}, "score": {"0", "0"}, "rubric": {"0", "0"}}, got)
	})
}

func TestAgreement_BadInput(t *testing.T) {
	t.Parallel()
	human, judgesCSV, _ := agreementFixtures()
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
		return path
	}
	unmatched := write("other.csv", "benchmark,model_name,task_id,judge,trajectory_success\n"+
		"webarena,GenericAgent-gpt-4o-2024-11-20,webarena.998,j,Successful\n"+
		"webarena,GenericAgent-gpt-4o-2024-11-20,webarena.999,j,Unsuccessful\n")
	badJudge := write("bad.jsonl", `{"benchmark":"webarena","model_name":"m","task_id":"1","judge":"j","trajectory_success":"Maybe"}`+"\n")
	empty := write("empty.csv", "benchmark,model_name,task_id,judge,trajectory_success\n")
	clean := write("clean.csv", "annotator_name,benchmark,task_id,model_name,trajectory_success\nalice,webarena,1,m,Successful\n")
	allBad := write("allbad.csv", "annotator_name,benchmark,task_id,model_name,trajectory_success\nalice,webarena,1,m,Maybe\n")

	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"BadRowWithoutSkip", []string{"--human", human}, exitUsage,
			`annotations.csv line 22: trajectory_success: unknown value "Partially successful" (allowed: Successful, Unsuccessful, Unsure) (--skip-bad-rows leaves such rows out and counts them)`},
		{"JudgeMatchesNothing", []string{"--human", human, "--skip-bad-rows", "--judge", unmatched}, exitUsage,
			"other.csv: none of its 2 verdicts is for an item in the human labels (first: webarena/GenericAgent-gpt-4o-2024-11-20/webarena.998); items are matched on benchmark, model_name and task_id"},
		{"BadJudgeLine", []string{"--human", human, "--skip-bad-rows", "--judge", judgesCSV, "--judge", badJudge}, exitUsage,
			"bad.jsonl: no verdicts (1 bad row skipped)"},
		{"BadJudgeLineWithoutSkip", []string{"--human", clean, "--judge", badJudge}, exitUsage,
			`bad.jsonl line 1: trajectory_success: unknown value "Maybe" (allowed: Successful, Unsuccessful, Unsure) (--skip-bad-rows leaves such rows out and counts them)`},
		{"EmptyJudgeFile", []string{"--human", human, "--skip-bad-rows", "--judge", empty}, exitUsage, "empty.csv: no verdicts"},
		{"NoHumanLabelLeft", []string{"--human", allBad, "--skip-bad-rows"}, exitUsage, "allbad.csv: no human labels (1 bad row skipped)"},
		{"MissingHumanFile", []string{"--human", filepath.Join(dir, "nope.csv")}, exitUsage, "--human: " + filepath.Join(dir, "nope.csv") + ": no such file"},
		{"MissingJudgeFile", []string{"--human", human, "--skip-bad-rows", "--judge", filepath.Join(dir, "nope.csv")}, exitUsage, "--judge: "},
		{"UnknownJudgeFormat", []string{"--human", human, "--judge", filepath.Join(dir, "judge.txt")}, exitUsage, "unknown format: name the file .csv or .jsonl"},
		{"NoHuman", []string{"--judge", judgesCSV}, exitUsage, "--human is required"},
		{"NegativeBootstrap", []string{"--human", human, "--bootstrap", "-5"}, exitUsage, "--bootstrap -5"},
		{"Positional", []string{"--human", human, "judges.csv"}, exitUsage, `unexpected argument "judges.csv"`},
		{"UnknownFlag", []string{"--human", human, "--kappa"}, exitUsage, "flag provided but not defined: -kappa"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := testEnv{}.run(t, "", append([]string{"agreement"}, tc.args...)...)
			requireOneLineError(t, tc.code, tc.want, code, stdout, stderr)
			require.True(t, strings.HasPrefix(stderr, "proctor agreement: "), stderr)
		})
	}

	t.Run("Help", func(t *testing.T) {
		t.Parallel()
		code, _, stderr := testEnv{}.run(t, "", "agreement", "-h")
		require.Equal(t, exitOK, code)
		require.Contains(t, stderr, "skip-bad-rows")
		code, stdout, _ := testEnv{}.run(t, "", "help")
		require.Equal(t, exitOK, code)
		require.Contains(t, stdout, "agreement")
	})
}
