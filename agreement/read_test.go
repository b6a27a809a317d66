package agreement_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/agreement"
	"proctor/models"
)

// fixture opens a file of testdata.
func fixture(t *testing.T, name string) *os.File {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

// badRowMessage is the message of line 22 of testdata/annotations.csv.
const badRowMessage = `annotations.csv line 22: trajectory_success: unknown value "Partially successful" (allowed: Successful, Unsuccessful, Unsure)`

func TestReadHumanCSV(t *testing.T) {
	t.Parallel()

	t.Run("FirstBadRowFailsTheImport", func(t *testing.T) {
		t.Parallel()
		labels, skipped, err := agreement.ReadHumanCSV(fixture(t, "annotations.csv"), agreement.ReadOptions{Name: "annotations.csv"})
		require.Error(t, err)
		require.Nil(t, labels)
		require.Nil(t, skipped)
		require.Equal(t, models.EINVALID, models.ErrorCode(err))
		require.Equal(t, badRowMessage, models.ErrorMessage(err))
		require.ErrorIs(t, err, agreement.ErrBadRow)
	})

	t.Run("SkipBadRows", func(t *testing.T) {
		t.Parallel()
		labels, skipped, err := agreement.ReadHumanCSV(fixture(t, "annotations.csv"), agreement.ReadOptions{Name: "annotations.csv", SkipBadRows: true})
		require.NoError(t, err)
		require.Equal(t, []agreement.RowError{{File: "annotations.csv", Line: 22,
			Reason: `trajectory_success: unknown value "Partially successful" (allowed: Successful, Unsuccessful, Unsure)`}}, skipped)
		require.Equal(t, badRowMessage, skipped[0].String())
		require.Len(t, labels, 22, "23 rows, one bad")
		require.Equal(t, agreement.HumanLabel{
			Key:       agreement.Key{Benchmark: "webarena", Model: "GenericAgent-gpt-4o-2024-11-20", TaskID: "webarena.15"},
			Annotator: "alice", Experiment: "gpt4o-webarena", Line: 2,
			Values: agreement.Values{"success": "successful", "side_effect": "no", "optimality": "4", "looping": "no"},
		}, labels[0])
		// Lower-case spellings and a bare optimality number read alike.
		require.Equal(t, agreement.Values{"success": "unsuccessful", "side_effect": "no", "optimality": "2", "looping": "no"}, labels[14].Values)
		require.Equal(t, 16, labels[14].Line)
		require.Equal(t, "2", labels[19].Values[agreement.LabelOptimality])
		require.Equal(t, 24, labels[21].Line, "lines after the bad row keep their numbers")
	})
}

func TestReadHumanCSV_BadInput(t *testing.T) {
	t.Parallel()
	const header = "annotator_name,benchmark,task_id,model_name,exp_name,trajectory_success,trajectory_side_effect,trajectory_optimality,trajectory_looping\n"
	const good = "alice,webarena,webarena.15,gpt-4o,exp,Successful,No,4. Completely Optimal,No\n"

	for _, tc := range []struct {
		name, input, want string
	}{
		// Every input holds one bad row; the rest are good.
		{"ShortRow", header + good + "bob,webarena,webarena.15,gpt-4o,exp,Successful\n",
			"line 3: has 6 fields, the header has 9"},
		{"LongRow", header + "bob,webarena,webarena.15,gpt-4o,exp,Successful,No,1,No,extra\n",
			"line 2: has 10 fields, the header has 9"},
		{"BareQuote", header + good + `bob,webarena,web"arena.15,gpt-4o,exp,Successful,No,1,No` + "\n",
			`line 3: malformed CSV: bare " in non-quoted-field`},
		{"EmptyAnnotator", header + " ,webarena,webarena.15,gpt-4o,exp,Successful,No,1,No\n",
			"line 2: empty annotator_name"},
		{"EmptyTask", header + "bob,webarena,,gpt-4o,exp,Successful,No,1,No\n",
			"line 2: empty task_id"},
		{"UnknownValues", header + "bob,webarena,webarena.15,gpt-4o,exp,Maybe,Sometimes,1,No\n",
			`line 2: trajectory_success: unknown value "Maybe" (allowed: Successful, Unsuccessful, Unsure); trajectory_side_effect: unknown value "Sometimes" (allowed: Yes, No, Unsure)`},
		{"UnsureLooping", header + "bob,webarena,webarena.15,gpt-4o,exp,Successful,No,1,Unsure\n",
			`line 2: trajectory_looping: "Unsure" is not allowed: this label has no unsure answer (allowed: Yes, No)`},
		{"NoLabelValue", header + "bob,webarena,webarena.15,gpt-4o,exp,,,,\n",
			"line 2: no label value: every label column is empty"},
		{"SameAnnotatorTwice", header + good + good,
			`line 3: annotator "alice" already labelled webarena/gpt-4o/webarena.15 on line 2`},
		{"QuotedNewlineCountsLines", header + "\"bob\nsmith\",webarena,webarena.15,gpt-4o,exp,Maybe,No,1,No\n",
			`line 2: trajectory_success: unknown value "Maybe"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := agreement.ReadHumanCSV(strings.NewReader(tc.input), agreement.ReadOptions{Name: "h.csv"})
			require.Error(t, err)
			require.Equal(t, models.EINVALID, models.ErrorCode(err))
			require.ErrorIs(t, err, agreement.ErrBadRow)
			require.Contains(t, models.ErrorMessage(err), "h.csv "+tc.want)

			labels, skipped, err := agreement.ReadHumanCSV(strings.NewReader(tc.input), agreement.ReadOptions{Name: "h.csv", SkipBadRows: true})
			require.NoError(t, err, "skipping bad rows lets the import proceed")
			require.Len(t, skipped, 1)
			require.Contains(t, skipped[0].String(), "h.csv "+tc.want)
			goodRows := strings.Count(tc.input, good)
			if tc.name == "SameAnnotatorTwice" {
				goodRows = 1 // the second copy is the bad row
			}
			require.Len(t, labels, goodRows, "the good rows are kept")
		})
	}

	for _, tc := range []struct {
		name, input, want string
	}{
		{"Empty", "", "h.csv is empty: expected a header row with annotator_name, benchmark, task_id, model_name and label columns"},
		{"MissingColumns", "annotator_name,benchmark,trajectory_success\nalice,webarena,Successful\n",
			"h.csv: missing column task_id, model_name (the header has annotator_name, benchmark, trajectory_success)"},
		{"NoLabelColumn", "annotator_name,benchmark,task_id,model_name\nalice,webarena,1,gpt-4o\n",
			"h.csv: no label column: expected at least one of trajectory_success, trajectory_side_effect, trajectory_looping, trajectory_optimality, trajectory_score, rubric_pass"},
		{"DuplicateColumn", "annotator_name,benchmark,task_id,model_name,trajectory_success,Trajectory_Success\n",
			"h.csv: the header names column trajectory_success twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := agreement.ReadHumanCSV(strings.NewReader(tc.input), agreement.ReadOptions{Name: "h.csv", SkipBadRows: true})
			require.Error(t, err, "a bad header is never skipped")
			require.False(t, errors.Is(err, agreement.ErrBadRow))
			require.Equal(t, models.EINVALID, models.ErrorCode(err))
			require.Equal(t, tc.want, models.ErrorMessage(err))
		})
	}

	t.Run("HeaderIsCaseInsensitiveWithExtraColumnsAndBOM", func(t *testing.T) {
		t.Parallel()
		input := "\ufeffTimestamp, Annotator_Name ,Task_ID,Benchmark,Model_Name,Trajectory_Success,comments\n" +
			"2025-02-28T15:05:49,alice,webarena.15,webarena,gpt-4o,Successful,\"long, quoted\"\n"
		labels, skipped, err := agreement.ReadHumanCSV(strings.NewReader(input), agreement.ReadOptions{})
		require.NoError(t, err)
		require.Empty(t, skipped)
		require.Equal(t, []agreement.HumanLabel{{
			Key:       agreement.Key{Benchmark: "webarena", Model: "gpt-4o", TaskID: "webarena.15"},
			Annotator: "alice", Values: agreement.Values{"success": "successful"}, Line: 2,
		}}, labels)
	})
}

func TestReadVerdictsCSV(t *testing.T) {
	t.Parallel()
	verdicts, skipped, err := agreement.ReadVerdictsCSV(fixture(t, "judges.csv"), agreement.ReadOptions{Name: "judges.csv"})
	require.NoError(t, err)
	require.Empty(t, skipped)
	require.Len(t, verdicts, 21)
	require.Equal(t, agreement.Verdict{
		Key:   agreement.Key{Benchmark: "webarena", Model: "GenericAgent-gpt-4o-2024-11-20", TaskID: "webarena.15"},
		Judge: "gpt-4o-mini", Line: 2,
		Values: agreement.Values{"success": "successful", "side_effect": "no", "looping": "no"},
	}, verdicts[0], "an empty cell is no answer")
	require.Equal(t, agreement.Values{"success": "successful"}, verdicts[13].Values, `"success" is "successful"`)
	require.Equal(t, agreement.Values{"success": "unsuccessful"}, verdicts[14].Values, `"failure" is "unsuccessful"`)

	for _, tc := range []struct {
		name, input, want string
	}{
		{"Duplicate", "benchmark,model_name,task_id,judge,trajectory_success\nwa,m,1,j,Successful\nwa,m,1,j,Unsuccessful\n",
			`j.csv line 3: judge "j" already gave a verdict for wa/m/1 on line 2`},
		{"EmptyJudge", "benchmark,model_name,task_id,judge,trajectory_success\nwa,m,1,,Successful\n",
			"j.csv line 2: empty judge"},
		{"UnknownValue", "benchmark,model_name,task_id,judge,trajectory_success\nwa,m,1,j,n/a\n",
			`j.csv line 2: trajectory_success: unknown value "n/a"`},
		{"NoValue", "benchmark,model_name,task_id,judge,trajectory_success,trajectory_looping\nwa,m,1,j,,\n",
			"j.csv line 2: no label value: every label is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := agreement.ReadVerdictsCSV(strings.NewReader(tc.input), agreement.ReadOptions{Name: "j.csv"})
			require.ErrorIs(t, err, agreement.ErrBadRow)
			require.Contains(t, models.ErrorMessage(err), tc.want)
			_, skipped, err := agreement.ReadVerdictsCSV(strings.NewReader(tc.input), agreement.ReadOptions{Name: "j.csv", SkipBadRows: true})
			require.NoError(t, err)
			require.Len(t, skipped, 1)
		})
	}

	t.Run("MissingJudgeColumn", func(t *testing.T) {
		t.Parallel()
		_, _, err := agreement.ReadVerdictsCSV(strings.NewReader("benchmark,model_name,task_id,trajectory_success\n"), agreement.ReadOptions{Name: "j.csv"})
		require.Equal(t, "j.csv: missing column judge (the header has benchmark, model_name, task_id, trajectory_success)", models.ErrorMessage(err))
	})
}

func TestReadVerdictsJSONL(t *testing.T) {
	t.Parallel()
	verdicts, skipped, err := agreement.ReadVerdictsJSONL(fixture(t, "judges.jsonl"), agreement.ReadOptions{Name: "judges.jsonl"})
	require.NoError(t, err)
	require.Empty(t, skipped)
	require.Len(t, verdicts, 5, "the blank line is skipped")
	key := func(model, task string) agreement.Key {
		return agreement.Key{Benchmark: "webarena", Model: model, TaskID: task}
	}
	const judge = "claude-3.7-sonnet-noaxtree"
	require.Equal(t, []agreement.Verdict{
		{Key: key("GenericAgent-gpt-4o-2024-11-20", "webarena.15"), Judge: judge, Line: 1,
			Values: agreement.Values{"success": "successful", "optimality": "4", "looping": "no"}},
		{Key: key("GenericAgent-gpt-4o-2024-11-20", "webarena.24"), Judge: judge, Line: 2,
			Values: agreement.Values{"success": "unsuccessful", "optimality": "2", "looping": "no"}},
		{Key: key("GenericAgent-anthropic_claude-3.7-sonnet", "webarena.15"), Judge: judge, Line: 4,
			Values: agreement.Values{"success": "unsuccessful", "optimality": "3", "looping": "no"}},
		{Key: key("GenericAgent-anthropic_claude-3.7-sonnet", "webarena.24"), Judge: judge, Line: 5,
			Values: agreement.Values{"success": "successful", "optimality": "3", "looping": "no"}},
		{Key: key("GenericAgent-anthropic_claude-3.7-sonnet", "webarena.40"), Judge: judge, Line: 6,
			Values: agreement.Values{"success": "unsuccessful", "optimality": "4", "looping": "no"}},
	}, verdicts)

	t.Run("NumericTaskID", func(t *testing.T) {
		t.Parallel()
		verdicts, _, err := agreement.ReadVerdictsJSONL(strings.NewReader(`{"benchmark":"wa","model_name":"m","task_id":15,"judge":"j","trajectory_score":4.0}`), agreement.ReadOptions{})
		require.NoError(t, err)
		require.Equal(t, "15", verdicts[0].TaskID)
		require.Equal(t, "4", verdicts[0].Values[agreement.LabelScore])
	})

	for _, tc := range []struct {
		name, input, want string
	}{
		{"NotJSON", `{"benchmark": "wa",`, "j.jsonl line 1: not a JSON object: unexpected EOF"},
		{"NotAnObject", `["wa", "m"]`, "j.jsonl line 1: not a JSON object"},
		{"TwoValues", `{"a": 1} {"b": 2}`, "j.jsonl line 1: more than one JSON value on the line"},
		{"MissingKeys", `{"benchmark": "wa", "task_id": "1", "trajectory_success": "Successful"}`,
			"j.jsonl line 1: missing or empty judge, model_name"},
		{"BadValue", `{"benchmark":"wa","model_name":"m","task_id":"1","judge":"j","trajectory_success":"Maybe"}`,
			`j.jsonl line 1: trajectory_success: unknown value "Maybe"`},
		{"ObjectValue", `{"benchmark":"wa","model_name":"m","task_id":"1","judge":"j","trajectory_success":{"a":1}}`,
			"j.jsonl line 1: trajectory_success: expected text, a number or a boolean, got an object"},
		{"BooleanOrdinal", `{"benchmark":"wa","model_name":"m","task_id":"1","judge":"j","trajectory_optimality":true}`,
			"j.jsonl line 1: trajectory_optimality: true is not a value of an ordinal label"},
		{"NoValue", `{"benchmark":"wa","model_name":"m","task_id":"1","judge":"j","trajectory_success":null}`,
			"j.jsonl line 1: no label value: every label is empty"},
		{"Duplicate", "{\"benchmark\":\"wa\",\"model_name\":\"m\",\"task_id\":\"1\",\"judge\":\"j\",\"trajectory_looping\":\"No\"}\n\n" +
			"{\"benchmark\":\"wa\",\"model_name\":\"m\",\"task_id\":\"1\",\"judge\":\"j\",\"trajectory_looping\":\"Yes\"}",
			`j.jsonl line 3: judge "j" already gave a verdict for wa/m/1 on line 1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := agreement.ReadVerdictsJSONL(strings.NewReader(tc.input), agreement.ReadOptions{Name: "j.jsonl"})
			require.ErrorIs(t, err, agreement.ErrBadRow)
			require.Contains(t, models.ErrorMessage(err), tc.want)
			_, skipped, err := agreement.ReadVerdictsJSONL(strings.NewReader(tc.input), agreement.ReadOptions{Name: "j.jsonl", SkipBadRows: true})
			require.NoError(t, err)
			require.Len(t, skipped, 1)
		})
	}
}
