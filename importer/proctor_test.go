package importer_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/importer"
	"proctor/models"
)

// proctorTask is a valid proctor task line.
func proctorTask(id string, edit func(m map[string]any)) map[string]any {
	m := map[string]any{
		"id":                id,
		"intent":            "How many trees in the census are oaks?",
		"start_urls":        []any{"https://data.example.org/trees"},
		"domain":            "environment",
		"attributes":        []any{"structured", "tool-usage"},
		"difficulty":        "medium",
		"task_type":         "qa",
		"modality":          "table",
		"file_format":       "csv",
		"access_type":       "download",
		"budget":            map[string]any{"max_tool_calls": 20, "max_seconds": 600},
		"rubric":            []any{map[string]any{"requirement": "Reports the count", "verification": "Equals 1843"}},
		"reference_answers": map[string]any{"exact_match": "1843"},
		"eval":              map[string]any{"kind": "exact"},
		"reference_actions": []any{map[string]any{"type": "goto", "url": "https://data.example.org/trees"}, map[string]any{"type": "answer", "text": "1843"}},
		"metadata":          map[string]any{"source": "city open data"},
	}
	if edit != nil {
		edit(m)
	}
	return m
}

func TestParse_ProctorFixtures(t *testing.T) {
	t.Parallel()

	t.Run("Valid", func(t *testing.T) {
		t.Parallel()
		input := jsonl(t,
			map[string]any{"proctor_benchmark": 1, "name": " Trees ", "description": "Open data tasks", "evaluator": "llm-judge",
				"subsets": map[string]any{"quick": map[string]any{"description": "Fast ones", "task_ids": []any{"t2", "t1"}}}},
			proctorTask("t1", nil),
			"",
			proctorTask("t2", func(m map[string]any) {
				delete(m, "rubric")
				delete(m, "budget")
				delete(m, "metadata")
				delete(m, "reference_actions")
				m["start_urls"] = []any{"__SHOPPING_ADMIN__/admin", "https://Shop.Example.com:8080/x", "__SHOPPING_ADMIN__"}
			}))
		d, err := parse(models.FormatProctor, strings.ReplaceAll(input, "\n", "\r\n"))
		require.NoError(t, err)
		require.Equal(t, models.FormatProctor, d.Format)
		require.Equal(t, models.EvaluatorLLMJudge, d.Evaluator)
		require.Equal(t, "Trees", d.Name)
		require.Equal(t, "Open data tasks", d.Description)
		require.Len(t, d.Tasks, 2)

		t1 := d.Tasks[0]
		require.Equal(t, "t1", t1.ExternalID)
		require.Equal(t, models.JSONStrings{"data.example.org"}, t1.Sites) // derived from start_urls
		require.Equal(t, "data.example.org", t1.SiteKey)
		require.Equal(t, "environment", t1.Domain)
		require.Equal(t, models.JSONStrings{"structured", "tool-usage"}, t1.Attributes)
		require.Equal(t, "medium", t1.Difficulty)
		require.Equal(t, "qa", t1.TaskType)
		require.Equal(t, "table", t1.Modality)
		require.Equal(t, "csv", t1.FileFormat)
		require.Equal(t, "download", t1.AccessType)
		require.Equal(t, 20, t1.MaxToolCalls)
		require.Equal(t, 600, t1.MaxSeconds)
		require.Equal(t, []models.RubricItem{{Key: "R1", Requirement: "Reports the count", Verification: "Equals 1843", Weight: 1}}, t1.RubricItems)
		require.Equal(t, `{"exact_match":"1843"}`, t1.ReferenceAnswers)
		require.Equal(t, `{"kind":"exact"}`, t1.EvalSpec)
		require.Equal(t, `[{"type":"goto","url":"https://data.example.org/trees"},{"text":"1843","type":"answer"}]`, t1.ReferenceActions)
		require.Equal(t, `{"source":"city open data"}`, t1.Metadata)

		t2 := d.Tasks[1]
		require.Equal(t, 1, t2.Position)
		require.Equal(t, models.JSONStrings{"shopping_admin", "shop.example.com"}, t2.Sites)
		require.Equal(t, models.MultiSite, t2.SiteKey)
		require.Equal(t, "", t2.Metadata)
		require.Equal(t, "", t2.ReferenceActions)
		require.Empty(t, t2.RubricItems)

		require.Equal(t, []importer.SiteSpec{
			{Name: "data.example.org", Placeholder: "__DATA.EXAMPLE.ORG__"},
			{Name: "shop.example.com", Placeholder: "__SHOP.EXAMPLE.COM__"},
			{Name: "shopping_admin", Placeholder: "__SHOPPING_ADMIN__"},
		}, d.Sites)
		require.Len(t, d.Subsets, 1)
		require.Equal(t, "quick", d.Subsets[0].Name)
		require.Equal(t, "Fast ones", d.Subsets[0].Description)
		require.Equal(t, []string{"t1", "t2"}, d.Subsets[0].ExternalIDs)
	})

	t.Run("DefaultEvaluator", func(t *testing.T) {
		t.Parallel()
		d, err := parse(models.FormatProctor, jsonl(t, proctorTask("t1", nil)))
		require.NoError(t, err)
		require.Equal(t, models.EvaluatorRubric, d.Evaluator) // every task has a rubric
		require.Empty(t, d.Name)
		d, err = parse(models.FormatProctor, jsonl(t, proctorTask("t1", nil), proctorTask("t2", func(m map[string]any) { delete(m, "rubric") })))
		require.NoError(t, err)
		require.Equal(t, models.EvaluatorNone, d.Evaluator)
	})

	t.Run("WebArenaVerifiedEvaluator", func(t *testing.T) {
		t.Parallel()
		verified := func(id string, edit func(m map[string]any)) map[string]any {
			return proctorTask(id, func(m map[string]any) {
				delete(m, "task_type")
				m["eval"] = verifiedTask(1, nil)["eval"]
				if edit != nil {
					edit(m)
				}
			})
		}
		header := map[string]any{"proctor_benchmark": 1, "evaluator": "webarena-verified"}
		d, err := parse(models.FormatProctor, jsonl(t, header, verified("t1", nil)))
		require.NoError(t, err)
		require.Equal(t, models.TaskRetrieve, d.Tasks[0].TaskType) // from the AgentResponseEvaluator

		_, err = parse(models.FormatProctor, jsonl(t, header, verified("t1", func(m map[string]any) { m["task_type"] = "mutate" })))
		requireError(t, err, models.EINVALID, `line 2 (task t1): field "task_type": "mutate" contradicts the evaluation spec, which says "retrieve"`)
		_, err = parse(models.FormatProctor, jsonl(t, header, verified("t1", func(m map[string]any) { m["eval"] = []any{} })))
		requireError(t, err, models.EINVALID, `line 2 (task t1): field "eval": expected exactly one AgentResponseEvaluator, found 0`)

		header["evaluator"] = "webarena"
		d, err = parse(models.FormatProctor, jsonl(t, header, proctorTask("t1", func(m map[string]any) {
			delete(m, "task_type")
			m["eval"] = map[string]any{"eval_types": []any{"url_match"}}
		})))
		require.NoError(t, err)
		require.Equal(t, models.TaskNavigate, d.Tasks[0].TaskType)
	})

	header := map[string]any{"proctor_benchmark": 1}
	cases := []struct {
		name  string
		input string
		parts []string
	}{
		{"UnknownField", jsonl(t, header, proctorTask("t1", func(m map[string]any) { m["colour"] = "red" })),
			[]string{`line 2 (task t1): field "colour": unknown field`}},
		{"UnknownNestedField", jsonl(t, proctorTask("t1", func(m map[string]any) { m["budget"] = map[string]any{"max_tokens": 5} })),
			[]string{`line 1 (task t1): field "max_tokens": unknown field`}},
		{"UnknownHeaderField", jsonl(t, map[string]any{"proctor_benchmark": 1, "title": "x"}, proctorTask("t1", nil)),
			[]string{`line 1: field "title": unknown field`}},
		{"MissingID", jsonl(t, header, proctorTask("t1", nil), proctorTask("", func(m map[string]any) { delete(m, "id") })),
			[]string{`line 3: field "id": missing or empty`}},
		{"NumericID", jsonl(t, proctorTask("t1", func(m map[string]any) { m["id"] = 7 })),
			[]string{`line 1: field "id": expected a string, found number`}},
		{"MissingIntent", jsonl(t, proctorTask("t1", func(m map[string]any) { m["intent"] = "  " })),
			[]string{`line 1 (task t1): field "intent": missing or empty`}},
		{"BadDifficulty", jsonl(t, header, proctorTask("t1", nil), proctorTask("t2", nil), proctorTask("t3", func(m map[string]any) { m["difficulty"] = "extreme" })),
			[]string{`line 4 (task t3): field "difficulty": "extreme" is not one of easy, medium, hard`}},
		{"BadTaskType", jsonl(t, proctorTask("t1", func(m map[string]any) { m["task_type"] = "chat" })),
			[]string{`line 1 (task t1): field "task_type": "chat" is not one of retrieve, mutate, navigate, qa, action`}},
		{"AttributeNotSlug", jsonl(t, proctorTask("t1", func(m map[string]any) { m["attributes"] = []any{"Multi Hop"} })),
			[]string{`line 1 (task t1): field "attributes": "Multi Hop" is not a slug`}},
		{"AttributeTwice", jsonl(t, proctorTask("t1", func(m map[string]any) { m["attributes"] = []any{"multihop", "multihop"} })),
			[]string{`line 1 (task t1): field "attributes": "multihop" is listed twice`}},
		{"FileFormatNotSlug", jsonl(t, proctorTask("t1", func(m map[string]any) { m["file_format"] = ".CSV" })),
			[]string{`line 1 (task t1): field "file_format": ".CSV" is not a slug`}},
		{"NegativeBudget", jsonl(t, proctorTask("t1", func(m map[string]any) { m["budget"] = map[string]any{"max_seconds": -1} })),
			[]string{`line 1 (task t1): field "budget.max_seconds": must not be negative`}},
		{"BudgetWrongType", jsonl(t, proctorTask("t1", func(m map[string]any) { m["budget"] = map[string]any{"max_seconds": "10"} })),
			[]string{`line 1 (task t1): field "budget.max_seconds": expected an integer, found string`}},
		{"BadSite", jsonl(t, proctorTask("t1", func(m map[string]any) { m["sites"] = []any{"WWW.Example.com"} })),
			[]string{`line 1 (task t1): field "sites": "WWW.Example.com" is not a site name`}},
		{"WeightsNotSummingToOne", jsonl(t, proctorTask("t1", func(m map[string]any) {
			m["rubric"] = []any{map[string]any{"requirement": "a", "weight": 0.6}, map[string]any{"requirement": "b", "weight": 0.6}}
		})), []string{`line 1 (task t1): field "rubric": rubric weights sum to 1.2, not 1`}},
		{"PartialWeights", jsonl(t, proctorTask("t1", func(m map[string]any) {
			m["rubric"] = []any{map[string]any{"requirement": "a", "weight": 1}, map[string]any{"requirement": "b"}}
		})), []string{`line 1 (task t1): field "rubric": only 1 of 2 rubric items have a weight`}},
		{"RubricKeyTwice", jsonl(t, proctorTask("t1", func(m map[string]any) {
			m["rubric"] = []any{map[string]any{"requirement": "a"}, map[string]any{"key": "R1", "requirement": "b"}}
		})), []string{`line 1 (task t1): field "rubric[1].key": "R1" is used twice`}},
		{"RubricNoRequirement", jsonl(t, proctorTask("t1", func(m map[string]any) { m["rubric"] = []any{map[string]any{"verification": "a"}} })),
			[]string{`line 1 (task t1): field "rubric[0].requirement": missing or empty`}},
		{"RubricEvaluatorNeedsRubric", jsonl(t, map[string]any{"proctor_benchmark": 1, "evaluator": "rubric"}, proctorTask("t1", func(m map[string]any) { delete(m, "rubric") })),
			[]string{`line 2 (task t1): field "rubric": missing or empty: the evaluator is rubric`}},
		{"BadActionType", jsonl(t, proctorTask("t1", func(m map[string]any) { m["reference_actions"] = []any{map[string]any{"type": "teleport"}} })),
			[]string{`line 1 (task t1): field "reference_actions[0].type": "teleport" is not one of click, fill`}},
		{"ActionNotObject", jsonl(t, proctorTask("t1", func(m map[string]any) { m["reference_actions"] = []any{"click"} })),
			[]string{`line 1 (task t1): field "reference_actions[0]": expected an action object, found a string`}},
		{"ActionsNotList", jsonl(t, proctorTask("t1", func(m map[string]any) { m["reference_actions"] = map[string]any{"type": "click"} })),
			[]string{`line 1 (task t1): field "reference_actions": expected a list of action objects, found an object`}},
		{"MetadataNotObject", jsonl(t, proctorTask("t1", func(m map[string]any) { m["metadata"] = []any{1} })),
			[]string{`line 1 (task t1): field "metadata": expected an object, found an array`}},
		{"MalformedLine", jsonl(t, proctorTask("t1", nil), `{"id": "t2", "intent": "x" "difficulty": "easy"}`),
			[]string{`line 2, column 28: malformed JSON: invalid character '"' after object key:value pair`}},
		{"TruncatedLine", jsonl(t, proctorTask("t1", nil), `{"id": "t2", "intent": `),
			[]string{`line 2: malformed JSON: unexpected end of input`}},
		{"TwoObjectsOnALine", jsonl(t, `{"id": "t1", "intent": "x"} {"id": "t2", "intent": "y"}`),
			[]string{`line 1: malformed JSON: extra data after the JSON object`}},
		{"NotAnObject", jsonl(t, `["t1"]`), []string{`line 1: expected an object, found array`}},
		{"HeaderNotFirst", jsonl(t, proctorTask("t1", nil), header), []string{`line 2: the header line must be the first line of the file`}},
		{"HeaderVersion", jsonl(t, map[string]any{"proctor_benchmark": 2}, proctorTask("t1", nil)),
			[]string{`line 1: field "proctor_benchmark": this importer reads version 1`}},
		{"HeaderEvaluator", jsonl(t, map[string]any{"proctor_benchmark": 1, "evaluator": "human"}, proctorTask("t1", nil)),
			[]string{`line 1: field "evaluator": "human" is not one of webarena-verified, webarena, rubric, llm-judge, hidden-tests, none`}},
		{"HeaderSubsetUnknownID", jsonl(t, map[string]any{"proctor_benchmark": 1, "subsets": map[string]any{"smoke": map[string]any{"task_ids": []any{"t1", "t9"}}}}, proctorTask("t1", nil)),
			[]string{`line 1: subset "smoke": task id t9 is not in the benchmark`}},
		{"HeaderSubsetChecksum", jsonl(t, map[string]any{"proctor_benchmark": 1, "subsets": map[string]any{"smoke": map[string]any{"task_ids": []any{"t1"}, "checksum": "cd34"}}}, proctorTask("t1", nil)),
			[]string{`line 1: subset "smoke": checksum mismatch: file says cd34, sorted task ids hash to `}},
		{"HeaderSubsetFull", jsonl(t, map[string]any{"proctor_benchmark": 1, "subsets": map[string]any{"full": map[string]any{"task_ids": []any{"t1"}}}}, proctorTask("t1", nil)),
			[]string{`line 1: subset "full": the name "full" is reserved`}},
		{"DuplicateID", jsonl(t, header, proctorTask("t1", nil), proctorTask("t2", nil), proctorTask("t1", nil)),
			[]string{`line 4 (task t1): duplicate task id: at line 2 and line 4`}},
		{"OnlyHeader", jsonl(t, header), []string{"the benchmark has no tasks"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := parse(models.FormatProctor, c.input)
			requireError(t, err, models.EINVALID, c.parts...)
		})
	}

	t.Run("SubsetFileNamesHeaderSubset", func(t *testing.T) {
		t.Parallel()
		input := jsonl(t, map[string]any{"proctor_benchmark": 1, "subsets": map[string]any{"smoke": map[string]any{"task_ids": []any{"t1"}}}}, proctorTask("t1", nil))
		_, err := parse(models.FormatProctor, input, subsetFile("smoke", `{"task_ids": ["t1"]}`))
		requireError(t, err, models.EINVALID, `subset "smoke": a subset with this name is given twice`)
	})

	t.Run("OversizedLine", func(t *testing.T) {
		t.Parallel()
		long := `{"id": "t2", "intent": "` + strings.Repeat("x", importer.MaxLineBytes) + `"}`
		_, err := parse(models.FormatProctor, jsonl(t, proctorTask("t1", nil), long))
		requireError(t, err, models.ETOOLARGE, "line 2: longer than 16 MiB")
	})
}

// docsExample extracts the first ```jsonl block of docs/benchmark-format.md.
func docsExample(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "docs", "benchmark-format.md"))
	require.NoError(t, err)
	_, rest, ok := bytes.Cut(doc, []byte("```jsonl\n"))
	require.True(t, ok, "docs/benchmark-format.md has no ```jsonl block")
	block, _, ok := bytes.Cut(rest, []byte("\n```"))
	require.True(t, ok, "the ```jsonl block is not closed")
	return string(block)
}

func TestParse_DocsExample(t *testing.T) {
	t.Parallel()
	d, err := parse(models.FormatProctor, docsExample(t))
	require.NoError(t, err)
	require.Equal(t, "WebDS mini", d.Name)
	require.Equal(t, models.EvaluatorRubric, d.Evaluator)
	require.Len(t, d.Tasks, 4)
	names := []string{}
	for _, s := range d.Sites {
		names = append(names, s.Name)
	}
	require.Equal(t, []string{"data.census.gov", "data.example.org", "gitlab", "reddit", "shopping"}, names)
	byID := map[string]models.Task{}
	for _, task := range d.Tasks {
		byID[task.ExternalID] = task
	}
	require.Equal(t, models.MultiSite, byID["wds-003"].SiteKey)
	require.Equal(t, 0.5, byID["wds-002"].RubricItems[0].Weight)
	require.NotEmpty(t, byID["wds-002"].ReferenceActions)
	require.Equal(t, 40, byID["ods-001"].MaxToolCalls)
	require.Equal(t, "count", byID["ods-001"].RubricItems[0].Key)
	require.Equal(t, []importer.Subset{{Name: "smoke", Description: "One task of each kind", Checksum: d.Subsets[0].Checksum,
		ExternalIDs: []string{"wds-001", "ods-001"}}}, d.Subsets)
}
