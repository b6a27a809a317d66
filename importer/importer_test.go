package importer_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/importer"
	"proctor/internal/evaltest"
	"proctor/models"
)

// verifiedTask is a valid WebArena-Verified task; edit tweaks it before encoding.
func verifiedTask(id int, edit func(m map[string]any)) map[string]any {
	m := map[string]any{
		"task_id":            id,
		"sites":              []any{"gitlab"},
		"start_urls":         []any{"__GITLAB__"},
		"intent":             "How many open issues does the project have?",
		"intent_template":    "How many open issues does {{project}} have?",
		"intent_template_id": 7,
		"instantiation_dict": map[string]any{"project": "the project"},
		"revision":           1,
		"eval": []any{
			map[string]any{
				"evaluator": "AgentResponseEvaluator",
				"expected":  map[string]any{"task_type": "RETRIEVE", "status": "SUCCESS", "retrieved_data": []any{3}},
			},
			map[string]any{"evaluator": "NetworkEventEvaluator", "expected": map[string]any{"url": "__GITLAB__/issues"}},
		},
	}
	if edit != nil {
		edit(m)
	}
	return m
}

// webArenaTask is a valid original WebArena task.
func webArenaTask(id int, edit func(m map[string]any)) map[string]any {
	m := map[string]any{
		"task_id":            id,
		"sites":              []any{"shopping"},
		"start_url":          "__SHOPPING__",
		"intent":             "What is the price of the cheapest cable?",
		"intent_template":    "What is the price of the cheapest {{item}}?",
		"intent_template_id": 3,
		"require_login":      true,
		"require_reset":      false,
		"storage_state":      "./.auth/shopping_state.json",
		"geolocation":        nil,
		"eval": map[string]any{
			"eval_types":        []any{"string_match"},
			"reference_answers": map[string]any{"exact_match": "$4.99"},
			"reference_url":     "",
			"program_html":      []any{},
		},
	}
	if edit != nil {
		edit(m)
	}
	return m
}

// odysseysTask is a valid Odysseys task without weights.
func odysseysTask(id string, edit func(m map[string]any)) map[string]any {
	m := map[string]any{
		"task_id":          id,
		"confirmed_task":   "Compare two laptops and summarise.",
		"website":          "https://WWW.Example.com/start",
		"reference_length": 4,
		"level":            "medium",
		"rubrics": map[string]any{
			"R1": map[string]any{"requirement": "Opens both product pages", "verification": "Both tabs are open"},
			"R2": map[string]any{"requirement": "Summarises the difference", "verification": "The answer names both"},
		},
		"categories":     []any{"Shopping > Laptops"},
		"num_categories": 1,
	}
	if edit != nil {
		edit(m)
	}
	return m
}

func encode(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// jsonl joins objects (or raw strings) into JSON Lines.
func jsonl(t *testing.T, lines ...any) string {
	t.Helper()
	var b strings.Builder
	for _, l := range lines {
		if s, ok := l.(string); ok {
			b.WriteString(s)
		} else {
			b.WriteString(encode(t, l))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func parse(format, input string, subsets ...importer.SubsetFile) (*importer.Dataset, error) {
	return importer.Parse(evaltest.Registry(), format, strings.NewReader(input), subsets)
}

func subsetFile(name, content string) importer.SubsetFile {
	return importer.SubsetFile{Name: name, R: strings.NewReader(content)}
}

func TestParse_WebArenaVerifiedFixtures(t *testing.T) {
	t.Parallel()

	t.Run("Valid", func(t *testing.T) {
		t.Parallel()
		d, err := parse(models.FormatWebArenaVerified, encode(t, []any{verifiedTask(4, nil), verifiedTask(2, nil)}),
			subsetFile("small", `{"description": "Two", "task_ids": [4, 2]}`))
		require.NoError(t, err)
		require.Len(t, d.Tasks, 2)
		require.Equal(t, "4", d.Tasks[0].ExternalID)
		require.Equal(t, 1, d.Tasks[1].Position)
		require.Equal(t, models.TaskRetrieve, d.Tasks[0].TaskType) // lower-cased
		require.Equal(t, []importer.SiteSpec{{Name: "gitlab", Placeholder: "__GITLAB__"}}, d.Sites)
		require.Equal(t, []importer.Subset{{
			Name: "small", Description: "Two", ExternalIDs: []string{"4", "2"},
			// sha256("[2,4]")
			Checksum: "f25ed8cd5464710aff6e5d655a575ac273cb9c19d696e53fa13de05db97454ca",
		}}, d.Subsets)
	})

	cases := []struct {
		name  string
		input string
		parts []string
	}{
		{"MalformedJSON", "[\n  {\"task_id\": 1,\n  }\n]", []string{"malformed JSON at line 3, column 3", "invalid character '}'"}},
		{"Truncated", `[{"task_id": 1`, []string{"malformed JSON at line 1", "unexpected end of JSON input"}},
		{"Empty", "  \n", []string{"the input is empty"}},
		{"NotAnArray", `{"task_id": 1}`, []string{"expected a JSON array of tasks, found object"}},
		{"NoTasks", `[]`, []string{"the benchmark has no tasks"}},
		{"NotAnObject", `[42]`, []string{"task at index 0: expected a task object, found a number"}},
		{"MissingTaskID", encode(t, []any{verifiedTask(1, nil), verifiedTask(2, func(m map[string]any) { delete(m, "task_id") })}),
			[]string{`task at index 1: field "task_id": missing`}},
		{"StringTaskID", encode(t, []any{verifiedTask(1, func(m map[string]any) { m["task_id"] = "one" })}),
			[]string{`task at index 0: field "task_id": expected an integer, found a string`}},
		{"MissingIntent", encode(t, []any{verifiedTask(17, func(m map[string]any) { delete(m, "intent") })}),
			[]string{`task 17: field "intent": missing or empty`}},
		{"WrongFieldType", encode(t, []any{verifiedTask(17, func(m map[string]any) { m["intent"] = 5 })}),
			[]string{`task 17: field "intent": expected a string, found number`}},
		{"NoSites", encode(t, []any{verifiedTask(17, func(m map[string]any) { m["sites"] = []any{} })}),
			[]string{`task 17: field "sites": missing or empty`}},
		{"BadSite", encode(t, []any{verifiedTask(17, func(m map[string]any) { m["sites"] = []any{"Shopping Admin"} })}),
			[]string{`task 17: field "sites": "Shopping Admin" is not a site name`}},
		{"NoStartURL", encode(t, []any{verifiedTask(17, func(m map[string]any) { delete(m, "start_urls") })}),
			[]string{`task 17: field "start_urls": missing or empty`}},
		{"NoAgentResponseEvaluator", encode(t, []any{verifiedTask(17, func(m map[string]any) { m["eval"] = m["eval"].([]any)[1:] })}),
			[]string{`task 17: field "eval": expected exactly one AgentResponseEvaluator, found 0`}},
		{"TwoAgentResponseEvaluators", encode(t, []any{verifiedTask(17, func(m map[string]any) {
			e := m["eval"].([]any)
			m["eval"] = []any{e[0], e[0]}
		})}), []string{`task 17: field "eval": expected exactly one AgentResponseEvaluator, found 2`}},
		{"MissingEval", encode(t, []any{verifiedTask(17, func(m map[string]any) { delete(m, "eval") })}),
			[]string{`task 17: field "eval": missing`}},
		{"BadTaskType", encode(t, []any{verifiedTask(17, func(m map[string]any) {
			m["eval"].([]any)[0].(map[string]any)["expected"].(map[string]any)["task_type"] = "delete"
		})}), []string{`task 17: field "eval[0].expected.task_type": "delete" is not one of retrieve, mutate, navigate`}},
		{"DuplicateID", encode(t, []any{verifiedTask(1, nil), verifiedTask(2, nil), verifiedTask(1, nil)}),
			[]string{`task 1: duplicate task id: at index 0 and index 2`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := parse(models.FormatWebArenaVerified, c.input)
			requireError(t, err, models.EINVALID, c.parts...)
		})
	}
}

func TestParse_Subsets(t *testing.T) {
	t.Parallel()
	tasks := encode(t, []any{verifiedTask(1, nil), verifiedTask(2, nil), verifiedTask(3, nil)})

	t.Run("ChecksumVerified", func(t *testing.T) {
		t.Parallel()
		// sha256 of "[1,3]": ids are sorted before hashing, whatever the file's order.
		d, err := parse(models.FormatWebArenaVerified, tasks, subsetFile("odd", `{"task_ids": [3, 1],
			"checksum": "2335C54FFE3749CEAFAC20EEA51040B4FA52BEAB7682F26D5D1BB75D1878478B"}`))
		require.NoError(t, err)
		require.Equal(t, "2335c54ffe3749ceafac20eea51040b4fa52beab7682f26d5d1bb75d1878478b", d.Subsets[0].Checksum)
		require.Equal(t, []string{"1", "3"}, d.Subsets[0].ExternalIDs) // dataset order
		// Without a checksum the subset's own is computed; ids written as strings count too.
		d, err = parse(models.FormatWebArenaVerified, tasks, subsetFile("odd", `{"task_ids": ["3", 1], "description": null, "checksum": null}`))
		require.NoError(t, err)
		require.Equal(t, "2335c54ffe3749ceafac20eea51040b4fa52beab7682f26d5d1bb75d1878478b", d.Subsets[0].Checksum)
	})

	cases := []struct {
		name    string
		subsets []importer.SubsetFile
		code    string
		parts   []string
	}{
		{"UnknownID", []importer.SubsetFile{subsetFile("hard", `{"task_ids": [1, 99]}`)}, models.EINVALID,
			[]string{`subset "hard": task id 99 is not in the benchmark`}},
		{"ChecksumMismatch", []importer.SubsetFile{subsetFile("hard", `{"task_ids": [1, 2], "checksum": "ab12"}`)}, models.EINVALID,
			[]string{`subset "hard": checksum mismatch: file says ab12, sorted task ids hash to `}},
		{"ListedTwice", []importer.SubsetFile{subsetFile("hard", `{"task_ids": [1, 1]}`)}, models.EINVALID,
			[]string{`subset "hard": task id 1 is listed twice`}},
		{"Empty", []importer.SubsetFile{subsetFile("hard", `{"task_ids": []}`)}, models.EINVALID,
			[]string{`subset "hard": the subset has no tasks`}},
		{"NoTaskIDs", []importer.SubsetFile{subsetFile("hard", `{"description": "x"}`)}, models.EINVALID,
			[]string{`subset "hard": field "task_ids": missing`}},
		{"BadID", []importer.SubsetFile{subsetFile("hard", `{"task_ids": [1, {"id": 2}]}`)}, models.EINVALID,
			[]string{`subset "hard": field "task_ids": item 1: expected a task id (integer or string), found an object`}},
		{"Malformed", []importer.SubsetFile{subsetFile("hard", "{\"task_ids\": [1,\n 2,]}")}, models.EINVALID,
			[]string{`subset "hard": malformed JSON at line 2, column 4`}},
		{"NameFull", []importer.SubsetFile{subsetFile("full", `{"task_ids": [1]}`)}, models.EINVALID,
			[]string{`subset "full": the name "full" is reserved`}},
		{"NameNotSlug", []importer.SubsetFile{subsetFile("Hard Tasks", `{"task_ids": [1]}`)}, models.EINVALID,
			[]string{`subset "Hard Tasks": "Hard Tasks" is not a valid subset name`}},
		{"NameTwice", []importer.SubsetFile{subsetFile("hard", `{"task_ids": [1]}`), subsetFile("hard", `{"task_ids": [2]}`)}, models.EINVALID,
			[]string{`subset "hard": a subset with this name is given twice`}},
		{"NoReader", []importer.SubsetFile{{Name: "hard"}}, models.EINVALID, []string{`subset "hard": no file given`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := importer.Parse(evaltest.Registry(), models.FormatWebArenaVerified, strings.NewReader(tasks), c.subsets)
			requireError(t, err, c.code, c.parts...)
		})
	}
}

func TestParse_WebArenaFixtures(t *testing.T) {
	t.Parallel()

	t.Run("TaskTypes", func(t *testing.T) {
		t.Parallel()
		withTypes := func(id int, types ...any) map[string]any {
			return webArenaTask(id, func(m map[string]any) { m["eval"].(map[string]any)["eval_types"] = types })
		}
		d, err := parse(models.FormatWebArena, encode(t, []any{
			withTypes(0, "string_match"),
			withTypes(1, "string_match", "url_match"),
			withTypes(2, "url_match"),
			withTypes(3, "url_match", "program_html"),
			withTypes(4, "program_html"),
			webArenaTask(5, func(m map[string]any) { m["eval"].(map[string]any)["reference_answers"] = nil }),
		}))
		require.NoError(t, err)
		got := []string{}
		for _, task := range d.Tasks {
			got = append(got, task.TaskType)
		}
		require.Equal(t, []string{"retrieve", "retrieve", "navigate", "mutate", "mutate", "retrieve"}, got)
		require.Equal(t, models.JSONStrings{"__SHOPPING__"}, d.Tasks[0].StartURLs)
		require.Equal(t, `{"exact_match":"$4.99"}`, d.Tasks[0].ReferenceAnswers)
		require.Equal(t, "", d.Tasks[5].ReferenceAnswers)
		require.Equal(t, `{"geolocation":null,"intent_template_id":3,"require_login":true,"require_reset":false,"storage_state":"./.auth/shopping_state.json"}`, d.Tasks[0].Metadata)
	})

	cases := []struct {
		name  string
		input string
		parts []string
	}{
		{"BadEvalType", encode(t, []any{webArenaTask(0, func(m map[string]any) { m["eval"].(map[string]any)["eval_types"] = []any{"exact"} })}),
			[]string{`task 0: field "eval.eval_types": "exact" is not one of string_match, url_match, program_html`}},
		{"NoEvalTypes", encode(t, []any{webArenaTask(0, func(m map[string]any) { delete(m["eval"].(map[string]any), "eval_types") })}),
			[]string{`task 0: field "eval.eval_types": missing or empty`}},
		{"EvalNotObject", encode(t, []any{webArenaTask(0, func(m map[string]any) { m["eval"] = []any{} })}),
			[]string{`task 0: field "eval": expected an object with eval_types, found an array`}},
		{"NoStartURL", encode(t, []any{webArenaTask(0, func(m map[string]any) { m["start_url"] = "" })}),
			[]string{`task 0: field "start_url": missing or empty`}},
		{"StartURLList", encode(t, []any{webArenaTask(0, func(m map[string]any) { m["start_url"] = []any{"__SHOPPING__"} })}),
			[]string{`task 0: field "start_url": expected a string, found array`}},
		{"DuplicateID", encode(t, []any{webArenaTask(0, nil), webArenaTask(0, nil)}),
			[]string{`task 0: duplicate task id: at index 0 and index 1`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := parse(models.FormatWebArena, c.input)
			requireError(t, err, models.EINVALID, c.parts...)
		})
	}
}

func TestParse_OdysseysFixtures(t *testing.T) {
	t.Parallel()
	weights := func(ws ...any) func(m map[string]any) {
		return func(m map[string]any) {
			r := map[string]any{}
			for i, w := range ws {
				item := map[string]any{"requirement": "Requirement", "verification": "Check"}
				if w != nil {
					item["weight"] = w
				}
				r["R"+string(rune('1'+i))] = item
			}
			m["rubrics"] = r
		}
	}

	t.Run("Valid", func(t *testing.T) {
		t.Parallel()
		d, err := parse(models.FormatOdysseys, encode(t, []any{
			odysseysTask("a1", nil),
			odysseysTask("b2", weights(0.5, 0.25, 0.25)),
			odysseysTask("c3", func(m map[string]any) {
				delete(m, "categories")
				delete(m, "num_categories")
				m["rubrics"] = map[string]any{
					"R10": map[string]any{"requirement": "tenth"},
					"R2":  map[string]any{"requirement": "second"},
					"R1":  map[string]any{"requirement": "first"},
				}
			}),
		}))
		require.NoError(t, err)
		require.Equal(t, models.EvaluatorRubric, d.Evaluator)
		a := d.Tasks[0]
		require.Equal(t, "Compare two laptops and summarise.", a.Intent)
		require.Equal(t, models.JSONStrings{"https://WWW.Example.com/start"}, a.StartURLs)
		require.Equal(t, models.JSONStrings{"www.example.com"}, a.Sites)
		require.Equal(t, "www.example.com", a.SiteKey)
		require.Equal(t, "medium", a.Difficulty)
		require.Equal(t, models.JSONStrings{"Shopping > Laptops"}, a.Attributes)
		require.Equal(t, `{"num_categories":1,"reference_length":4}`, a.Metadata)
		require.Equal(t, []models.RubricItem{
			{Key: "R1", Position: 0, Requirement: "Opens both product pages", Verification: "Both tabs are open", Weight: 0.5},
			{Key: "R2", Position: 1, Requirement: "Summarises the difference", Verification: "The answer names both", Weight: 0.5},
		}, a.RubricItems)
		require.Equal(t, []float64{0.5, 0.25, 0.25}, []float64{d.Tasks[1].RubricItems[0].Weight, d.Tasks[1].RubricItems[1].Weight, d.Tasks[1].RubricItems[2].Weight})
		c := d.Tasks[2]
		require.Equal(t, []string{"R1", "R2", "R10"}, []string{c.RubricItems[0].Key, c.RubricItems[1].Key, c.RubricItems[2].Key})
		require.InDelta(t, 1.0/3, c.RubricItems[2].Weight, 1e-12)
		require.Equal(t, `{"reference_length":4}`, c.Metadata)
		require.Nil(t, c.Attributes)
	})

	cases := []struct {
		name  string
		input string
		parts []string
	}{
		{"WeightsNotSummingToOne", encode(t, []any{odysseysTask("a1", weights(0.5, 0.25, 0.15))}),
			[]string{`task a1: field "rubrics": rubric weights sum to 0.9, not 1`}},
		{"PartialWeights", encode(t, []any{odysseysTask("a1", weights(0.5, nil, 0.5))}),
			[]string{`task a1: field "rubrics": only 2 of 3 rubric items have a weight`}},
		{"NegativeWeight", encode(t, []any{odysseysTask("a1", weights(1.5, -0.5))}),
			[]string{`task a1: field "rubrics": item R1: weight 1.5 is not between 0 and 1`}},
		{"BadLevel", encode(t, []any{odysseysTask("a1", func(m map[string]any) { m["level"] = "extreme" })}),
			[]string{`task a1: field "level": "extreme" is not one of easy, medium, hard`}},
		{"BadRubricKey", encode(t, []any{odysseysTask("a1", func(m map[string]any) {
			m["rubrics"] = map[string]any{"Q1": map[string]any{"requirement": "x"}}
		})}), []string{`task a1: field "rubrics": key "Q1" is not of the form R1, R2`}},
		{"NoRubrics", encode(t, []any{odysseysTask("a1", func(m map[string]any) { delete(m, "rubrics") })}),
			[]string{`task a1: field "rubrics": missing or empty`}},
		{"EmptyRequirement", encode(t, []any{odysseysTask("a1", func(m map[string]any) {
			m["rubrics"] = map[string]any{"R1": map[string]any{"requirement": " "}}
		})}), []string{`task a1: field "rubrics.R1.requirement": missing or empty`}},
		{"WebsiteNotURL", encode(t, []any{odysseysTask("a1", func(m map[string]any) { m["website"] = "google" })}),
			[]string{`task a1: field "website": "google" is not an http(s) URL`}},
		{"MissingTaskID", encode(t, []any{odysseysTask("a1", func(m map[string]any) { delete(m, "task_id") })}),
			[]string{`task at index 0: field "task_id": missing`}},
		{"MissingPrompt", encode(t, []any{odysseysTask("a1", func(m map[string]any) { delete(m, "confirmed_task") })}),
			[]string{`task a1: field "confirmed_task": missing or empty`}},
		{"CategoriesNotList", encode(t, []any{odysseysTask("a1", func(m map[string]any) { m["categories"] = "Shopping" })}),
			[]string{`task a1: field "categories": expected an array of strings, found string`}},
		{"DuplicateID", encode(t, []any{odysseysTask("a1", nil), odysseysTask("b2", nil), odysseysTask("a1", nil)}),
			[]string{`task a1: duplicate task id: at index 0 and index 2`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := parse(models.FormatOdysseys, c.input)
			requireError(t, err, models.EINVALID, c.parts...)
		})
	}
}

func TestParse_UnknownFormat(t *testing.T) {
	t.Parallel()
	_, err := parse("csv", "[]")
	requireError(t, err, models.EINVALID, `unknown format "csv": use one of webarena-verified, webarena, odysseys, proctor`)

	_, err = importer.Parse(evaltest.Registry(), models.FormatWebArena, nil, nil)
	requireError(t, err, models.EINVALID, "no benchmark input given")
}

func TestParse_Checksum(t *testing.T) {
	t.Parallel()
	header := map[string]any{"proctor_benchmark": 1, "name": "Mini", "evaluator": "rubric",
		"subsets": map[string]any{"one": map[string]any{"task_ids": []any{"t1"}}}}
	task := func(id string, edit func(m map[string]any)) map[string]any {
		m := map[string]any{"id": id, "intent": "Find the answer.", "start_urls": []any{"__WIKI__"},
			"rubric": []any{map[string]any{"requirement": "Answers", "weight": 0.5},
				map[string]any{"requirement": "Cites a source", "weight": 0.5}},
			"reference_answers": map[string]any{"exact_match": "42"}}
		if edit != nil {
			edit(m)
		}
		return m
	}
	base := jsonl(t, header, task("t1", nil), task("t2", nil))
	sum := func(t *testing.T, input string) string {
		t.Helper()
		d, err := parse(models.FormatProctor, input)
		require.NoError(t, err)
		require.Len(t, d.Checksum, 64)
		return d.Checksum
	}
	baseSum := sum(t, base)

	t.Run("IdenticalInput", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, baseSum, sum(t, base))
	})
	t.Run("FormattingOnly", func(t *testing.T) {
		t.Parallel()
		reformatted := "\n" + strings.ReplaceAll(base, `":`, `" :  `) + "\n\n"
		require.NotEqual(t, base, reformatted)
		require.Equal(t, baseSum, sum(t, reformatted))
		// Key order inside hidden JSON does not matter either.
		swapped := jsonl(t, header, task("t1", nil), task("t2", func(m map[string]any) {
			m["reference_answers"] = json.RawMessage(`{"exact_match": "42"}`)
			m["eval"] = json.RawMessage(`{"b": 1, "a": 2}`)
		}))
		swappedBack := jsonl(t, header, task("t1", nil), task("t2", func(m map[string]any) {
			m["eval"] = json.RawMessage(`{"a":2,"b":1}`)
		}))
		require.Equal(t, sum(t, swappedBack), sum(t, swapped))
	})
	t.Run("SameWeightsSameChecksum", func(t *testing.T) {
		t.Parallel()
		// Equal weights written out or left implicit store the same rubric.
		implicit := jsonl(t, header, task("t1", nil), task("t2", func(m map[string]any) {
			m["rubric"] = []any{map[string]any{"requirement": "Answers"}, map[string]any{"requirement": "Cites a source"}}
		}))
		require.Equal(t, baseSum, sum(t, implicit))
	})
	t.Run("RenameKeepsVersion", func(t *testing.T) {
		t.Parallel()
		renamed := map[string]any{}
		for k, v := range header {
			renamed[k] = v
		}
		renamed["name"] = "Mini, renamed"
		require.Equal(t, baseSum, sum(t, jsonl(t, renamed, task("t1", nil), task("t2", nil))))
	})
	changes := map[string]string{
		"Intent":       jsonl(t, header, task("t1", nil), task("t2", func(m map[string]any) { m["intent"] = "Find the answer!" })),
		"HiddenAnswer": jsonl(t, header, task("t1", nil), task("t2", func(m map[string]any) { m["reference_answers"] = map[string]any{"exact_match": "43"} })),
		"RubricWeight": jsonl(t, header, task("t1", nil), task("t2", func(m map[string]any) {
			m["rubric"].([]any)[0].(map[string]any)["weight"] = 0.6
			m["rubric"].([]any)[1].(map[string]any)["weight"] = 0.4
		})),
		"TaskOrder":      jsonl(t, header, task("t2", nil), task("t1", nil)),
		"ExtraTask":      jsonl(t, header, task("t1", nil), task("t2", nil), task("t3", nil)),
		"SubsetMembers":  strings.Replace(base, `"task_ids":["t1"]`, `"task_ids":["t2"]`, 1),
		"SubsetAdded":    jsonl(t, header, task("t1", nil), task("t2", nil)) + "",
		"EvaluatorNamed": strings.Replace(base, `"evaluator":"rubric"`, `"evaluator":"llm-judge"`, 1),
	}
	for name, input := range changes {
		t.Run("Changed"+name, func(t *testing.T) {
			t.Parallel()
			if name == "SubsetAdded" {
				d, err := parse(models.FormatProctor, input, subsetFile("two", `{"task_ids": ["t2"]}`))
				require.NoError(t, err)
				require.NotEqual(t, baseSum, d.Checksum)
				return
			}
			require.NotEqual(t, base, input)
			require.NotEqual(t, baseSum, sum(t, input))
		})
	}
}

// TestParse_InvalidUTF8 shows a byte that is not UTF-8 refused with its line
// and column, in every format and in a subset file: decoding JSON would
// otherwise import U+FFFD in its place, a task other than the file's.
func TestParse_InvalidUTF8(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, format, input string
		subsets             []importer.SubsetFile
		want                string
	}{
		{"ProctorLine", models.FormatProctor,
			`{"id": "t1", "intent": "Find it."}` + "\n\n" + `{"id": "t2", "intent": "Caf` + "\xe9" + ` menu"}` + "\n", nil,
			"input: line 3, column 28: byte 0xe9 is not valid UTF-8; save the file as UTF-8"},
		{"ProctorHeader", models.FormatProctor,
			`{"proctor_benchmark": 1, "name": "Bad ` + "\xff" + `"}` + "\n" + `{"id": "t1", "intent": "Find it."}`, nil,
			"input: line 1, column 39: byte 0xff is not valid UTF-8"},
		{"JSONArray", models.FormatWebArena,
			"[\n  {\"task_id\": 1,\n   \"intent\": \"caf\xc3\"}\n]", nil,
			"input: line 3, column 18: byte 0xc3 is not valid UTF-8"},
		{"SubsetFile", models.FormatProctor, `{"id": "t1", "intent": "Find it."}`,
			[]importer.SubsetFile{subsetFile("hard", "{\"task_ids\": [\"t1\"],\n \"description\": \"\x80\"}")},
			`subset "hard": line 2, column 18: byte 0x80 is not valid UTF-8`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := parse(c.format, c.input, c.subsets...)
			requireError(t, err, models.EINVALID, c.want)
		})
	}
	// Valid multi-byte text, a byte order mark included, is imported as written.
	d, err := parse(models.FormatProctor, "\xef\xbb\xbf"+`{"id": "t1", "intent": "Café ✓ 東京"}`)
	require.NoError(t, err)
	require.Equal(t, "Café ✓ 東京", d.Tasks[0].Intent)
}
