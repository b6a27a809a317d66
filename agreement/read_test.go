package agreement_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
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
		// Unsure is read in every column AgentRewardBench has
		// (TestReadHumanCSV_PublishedLayout); a label of Proctor's own may
		// not have it, and an unknown value is refused in any column.
		{"UnknownLooping", header + "bob,webarena,webarena.15,gpt-4o,exp,Successful,No,1,Maybe\n",
			`line 2: trajectory_looping: unknown value "Maybe" (allowed: Yes, No, Unsure)`},
		{"UnsureScore", "annotator_name,benchmark,task_id,model_name,trajectory_score\nbob,webarena,webarena.15,gpt-4o,Unsure\n",
			`line 2: trajectory_score: "Unsure" is not allowed: this label has no unsure answer (allowed: 1, 2, 3, 4, 5)`},
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

// publishedLayout is testdata/annotations_published_layout.csv: laid out and
// spelled as AgentRewardBench publishes annotations.csv, with Unsure in every
// label column and names and keys with stray spaces (A alice, B bob, C carol
// in file order; S successful, U unsuccessful, ? unsure; optimality 1–4; side
// effect and looping Y/N).
//
//	#  item (line: annotator)                   success  side effect  optimality  looping
//	1  webarena gpt-4o webarena.15 (2A 8B 13C)  S S S    N N N        4 4 3       N N N
//	2  webarena gpt-4o webarena.24 (3A 9B 14C)  U ? U    N N Y        1 2 2       N ? N
//	3  webarena claude webarena.15 (4A 10B)     U U      ? N          2 ?         N N
//	4  webarena claude webarena.24 (5A 11B)     S ?      N ?          3 ?         N ?
//	5  visualwebarena gpt-4o vwa.4 (6A 15C)     ? U      N N          1 1         Y Y
//	6  assistantbench gpt-4o val.0 (12B 16C)    S S      Y Y          4 ?         N N
//	7  workarena gpt-4o create-user (7A)        ?        N            ?           ?
//
// " alice" and "alice", "bob " and "bob", " carol " and "carol" are one
// annotator each; bob's " webarena.24" (line 9), carol's "visualwebarena "
// (line 15) and bob's model with a trailing space (line 12) name items 2, 5
// and 6.
const publishedLayout = "annotations_published_layout.csv"

func TestReadHumanCSV_PublishedLayout(t *testing.T) {
	t.Parallel()

	t.Run("Imports", func(t *testing.T) {
		t.Parallel()
		labels, skipped, err := agreement.ReadHumanCSV(fixture(t, publishedLayout), agreement.ReadOptions{Name: publishedLayout})
		require.NoError(t, err, "Unsure in any label column is an answer, not a bad row")
		require.Empty(t, skipped)
		require.Len(t, labels, 15)

		annotators := map[string]int{}
		items := map[agreement.Key]bool{}
		unsure := map[agreement.Label]int{}
		for _, h := range labels {
			annotators[h.Annotator]++
			items[h.Key] = true
			for l, v := range h.Values {
				if v == agreement.Unsure {
					unsure[l]++
				}
			}
		}
		require.Equal(t, map[string]int{"alice": 6, "bob": 5, "carol": 4}, annotators, "names are trimmed")
		require.Len(t, items, 7, "key fields are trimmed")
		require.Equal(t, map[agreement.Label]int{agreement.LabelSuccess: 4, agreement.LabelSideEffect: 2,
			agreement.LabelOptimality: 4, agreement.LabelLooping: 3}, unsure, "unsure answers by label")

		require.Equal(t, agreement.HumanLabel{
			Key:       agreement.Key{Benchmark: "webarena", Model: "GenericAgent-gpt-4o-2024-11-20", TaskID: "webarena.24"},
			Annotator: "bob", Experiment: "gpt4o-webarena", Line: 9,
			Values: agreement.Values{"success": agreement.Unsure, "side_effect": "no", "optimality": "2", "looping": agreement.Unsure},
		}, labels[7])
		require.Equal(t, agreement.HumanLabel{
			Key:       agreement.Key{Benchmark: "webarena", Model: "GenericAgent-anthropic_claude-3.7-sonnet", TaskID: "webarena.24"},
			Annotator: "bob", Experiment: "claude-webarena", Line: 11,
			Values: agreement.Values{"success": agreement.Unsure, "side_effect": agreement.Unsure, "optimality": agreement.Unsure, "looping": agreement.Unsure},
		}, labels[9], "a row of nothing but Unsure is a row of answers")
		require.Equal(t, agreement.Key{Benchmark: "visualwebarena", Model: "GenericAgent-gpt-4o-2024-11-20", TaskID: "visualwebarena.4"}, labels[13].Key)
		require.Equal(t, "carol", labels[13].Annotator)
	})

	t.Run("ExportsAndReadsBack", func(t *testing.T) {
		t.Parallel()
		labels, _, err := agreement.ReadHumanCSV(fixture(t, publishedLayout), agreement.ReadOptions{})
		require.NoError(t, err)
		var buf bytes.Buffer
		require.NoError(t, agreement.WriteHumanCSV(&buf, labels))
		require.Contains(t, buf.String(), "\nbob,webarena,webarena.24,GenericAgent-anthropic_claude-3.7-sonnet,claude-webarena,Unsure,Unsure,Unsure,Unsure,,\n")
		back, _, err := agreement.ReadHumanCSV(&buf, agreement.ReadOptions{})
		require.NoError(t, err)
		for i := range back {
			require.Equal(t, labels[i].Values, back[i].Values)
			require.Equal(t, labels[i].Annotator, back[i].Annotator)
		}
	})

	t.Run("UnknownValueNamesRowAndColumn", func(t *testing.T) {
		t.Parallel()
		raw, err := os.ReadFile(filepath.Join("testdata", publishedLayout))
		require.NoError(t, err)
		lines := strings.Split(string(raw), "\n")
		// Line 11 is bob's row of four Unsure answers: one of them replaced
		// by a value no label has.
		require.Equal(t, "bob ,webarena,webarena.24,GenericAgent-anthropic_claude-3.7-sonnet,claude-webarena,Unsure,Unsure,Unsure,Unsure", lines[10])
		for _, tc := range []struct {
			column int // field index in the row
			value  string
			want   string
		}{
			{5, "Partially successful", `trajectory_success: unknown value "Partially successful" (allowed: Successful, Unsuccessful, Unsure)`},
			{6, "Maybe", `trajectory_side_effect: unknown value "Maybe" (allowed: Yes, No, Unsure)`},
			{7, "Maybe", `trajectory_optimality: unknown value "Maybe" (allowed: 1. Complete Failure, 2. Suboptimal, 3. Somewhat Optimal, 4. Completely Optimal, Unsure)`},
			{7, "5. Perfect", `trajectory_optimality: "5. Perfect": 5 is out of range`},
			{8, "Sometimes", `trajectory_looping: unknown value "Sometimes" (allowed: Yes, No, Unsure)`},
		} {
			fields := strings.Split(lines[10], ",")
			fields[tc.column] = tc.value
			edited := slices.Clone(lines)
			edited[10] = strings.Join(fields, ",")
			input := strings.Join(edited, "\n")

			_, _, err := agreement.ReadHumanCSV(strings.NewReader(input), agreement.ReadOptions{Name: publishedLayout})
			require.ErrorIs(t, err, agreement.ErrBadRow)
			require.Equal(t, models.EINVALID, models.ErrorCode(err))
			msg := models.ErrorMessage(err)
			require.True(t, strings.HasPrefix(msg, publishedLayout+" line 11: "+tc.want), msg)

			labels, skipped, err := agreement.ReadHumanCSV(strings.NewReader(input), agreement.ReadOptions{Name: publishedLayout, SkipBadRows: true})
			require.NoError(t, err)
			require.Len(t, labels, 14)
			require.Len(t, skipped, 1)
			require.Equal(t, 11, skipped[0].Line)
			require.True(t, strings.HasPrefix(skipped[0].Reason, tc.want), skipped[0].Reason)
		}
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
