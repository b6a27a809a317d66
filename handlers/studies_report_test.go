package handlers_test

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/service/servicetest"
)

// TestStudies_Report checks the report page before and after labels: the
// empty state, each label's figures with intervals and confusion matrices,
// the leaderboard with costs, the breakdowns (400 for an unknown facet) and
// the links to the disagreements.
func TestStudies_Report(t *testing.T) {
	t.Parallel()
	f := newStudyPagesFixture(t)
	st := f.study(t, studyOptions{state: models.StudyOpen})
	path := "/studies/" + strconv.FormatInt(st.ID, 10)
	c := f.owner
	c.t = t

	t.Run("NoLabels", func(t *testing.T) {
		c.t = t
		res := c.get(path + "/report")
		require.Equal(t, http.StatusOK, res.StatusCode)
		body := readBody(t, res)
		require.Contains(t, body, `data-testid="no-labels"`)
		require.Contains(t, body, "0 of 8 items labelled")
		disagreements := readBody(t, c.get(path+"/disagreements"))
		require.Contains(t, disagreements, `data-testid="no-labels"`)
	})

	f.labelAll(t, st.ID)

	t.Run("Figures", func(t *testing.T) {
		c.t = t
		res := c.get(path + "/report")
		require.Equal(t, http.StatusOK, res.StatusCode)
		body := readBody(t, res)
		require.NotContains(t, body, `data-testid="no-labels"`)
		require.Contains(t, body, "8 of 8 items labelled by 2 annotators;")
		require.Contains(t, body, `data-testid="label-report-success"`)
		require.Contains(t, body, `<caption>Agreement on Success: annotators with each other and each judge with the human majority</caption>`)
		for _, title := range []string{"Agreement", "Cohen&#39;s κ", "Krippendorff&#39;s α", "Precision", "Recall", "F1", "Accuracy", "NPV", "TNR"} {
			require.Contains(t, body, `<th scope="col" class="num">`+title+`</th>`, title)
		}
		require.Contains(t, body, "Annotators with each other")
		require.Contains(t, body, `check: webarena-verified`)
		require.Regexp(t, `class="muted study-ci">\[\d\.\d\d, \d\.\d\d\]</small>`, body, "95% intervals")
		require.Contains(t, body, `data-testid="confusion-matrix"`)
		require.Contains(t, body, `<th scope="col" class="num">Successful</th>`)
		require.Contains(t, body, `data-testid="judge-leaderboard"`)
		require.Contains(t, body, `data-testid="cost-per-judgment">$0.0000</td>`, "a deterministic check costs nothing")
		require.Contains(t, body, fmt.Sprintf(`href="%s/disagreements?judge=check%%3A+webarena-verified"`, path))
		require.Contains(t, body, `<option value="site">Site</option>`)
		require.NotContains(t, body, `data-testid="breakdown-table"`)
	})

	t.Run("Breakdowns", func(t *testing.T) {
		c.t = t
		body := readBody(t, c.get(path+"/report?by=agent"))
		require.Contains(t, body, `<option value="agent" selected>Agent</option>`)
		require.Contains(t, body, `data-testid="breakdown-table"`)
		require.Equal(t, 2, strings.Count(body, `data-testid="breakdown-row"`), "Walker and Rover")
		require.Contains(t, body, `<th scope="row">Rover</th><td class="num">4</td><td class="num">4</td>`)
		for _, by := range []string{"benchmark", "site", "difficulty"} {
			res := c.get(path + "/report?by=" + by)
			require.Equal(t, http.StatusOK, res.StatusCode, by)
			require.Contains(t, readBody(t, res), `data-testid="breakdown-table"`)
		}
		res := c.get(path + "/report?by=colour")
		require.Equal(t, http.StatusBadRequest, res.StatusCode)
		require.Contains(t, readBody(t, res), "by must be one of benchmark, agent, site, difficulty.")
	})

	t.Run("Disagreements", func(t *testing.T) {
		c.t = t
		res := c.get(path + "/disagreements")
		require.Equal(t, http.StatusOK, res.StatusCode)
		body := readBody(t, res)
		rows := strings.Count(body, `data-testid="disagreement-row"`)
		require.Equal(t, 1, rows, "the check disagrees with both annotators on one item")
		require.Contains(t, body, "outsider: ")
		require.Contains(t, body, "second: ")
		require.Regexp(t, fmt.Sprintf(`href="/studies/%d/items/\d+" data-testid="disagreement-item"`, st.ID), body)
		require.Contains(t, body, `<option value="success">Success</option>`)
		require.Contains(t, body, `<option value="check: webarena-verified">check: webarena-verified</option>`)

		filtered := readBody(t, c.get(path+"/disagreements?label=success&judge=check%3A+webarena-verified"))
		require.Equal(t, rows, strings.Count(filtered, `data-testid="disagreement-row"`))
		none := readBody(t, c.get(path+"/disagreements?label=looping"))
		require.Contains(t, none, `data-testid="no-disagreements"`)

		for _, q := range []string{"label=colour", "judge=nobody", "label=%3Cb%3E"} {
			res := c.get(path + "/disagreements?" + q)
			require.Equal(t, http.StatusBadRequest, res.StatusCode, q)
			body := readBody(t, res)
			require.NotContains(t, body, "<b>")
			require.Regexp(t, `(label must be one of|is not a judge of this study)`, body)
		}
	})
}

// TestStudies_Exports checks every export's content and headers, and that
// free text in CSV files cannot run as a spreadsheet formula.
func TestStudies_Exports(t *testing.T) {
	t.Parallel()
	f := newStudyPagesFixture(t)
	require.NoError(t, f.b.db.Gorm().Model(&models.User{}).Where("id = ?", f.annotator2.user.ID).Update("name", "=HYPERLINK(\"x\")").Error)
	st := f.study(t, studyOptions{state: models.StudyOpen})
	items := f.labelAll(t, st.ID)
	path := "/studies/" + strconv.FormatInt(st.ID, 10) + "/export/"
	c := f.owner
	get := func(t *testing.T, file string) (string, http.Header) {
		c.t = t
		res := c.get(path + file)
		require.Equal(t, http.StatusOK, res.StatusCode, file)
		require.Equal(t, fmt.Sprintf(`attachment; filename="study-%d-%s"`, st.ID, file), res.Header.Get("Content-Disposition"))
		return readBody(t, res), res.Header
	}

	t.Run("LabelsCSV", func(t *testing.T) {
		body, h := get(t, "labels.csv")
		require.Equal(t, "text/csv; charset=utf-8", h.Get("Content-Type"))
		rows, err := csv.NewReader(strings.NewReader(body)).ReadAll()
		require.NoError(t, err)
		require.Equal(t, []string{"annotator_name", "benchmark", "task_id", "model_name", "exp_name",
			"trajectory_success", "trajectory_side_effect", "trajectory_optimality", "trajectory_looping", "trajectory_score", "rubric_pass"}, rows[0])
		require.Len(t, rows, 1+2*len(items), "both annotators labelled every item")
		annotators := map[string]bool{}
		for _, r := range rows[1:] {
			annotators[r[0]] = true
			require.Equal(t, "mini", r[1])
		}
		require.True(t, annotators["outsider"])
		require.True(t, annotators[`'=HYPERLINK("x")`], "a formula-like name gets a quote in front: %v", annotators)
		first := items[0]
		require.Contains(t, body, fmt.Sprintf("outsider,mini,%s,%s,", first.TaskID, studyModel(first)))
	})

	t.Run("LabelsJSONL", func(t *testing.T) {
		body, h := get(t, "labels.jsonl")
		require.Equal(t, "application/jsonl; charset=utf-8", h.Get("Content-Type"))
		lines := strings.Split(strings.TrimSpace(body), "\n")
		require.Len(t, lines, 2*len(items))
		var first map[string]string
		require.NoError(t, json.Unmarshal([]byte(lines[0]), &first))
		require.Equal(t, "mini", first["benchmark"])
		require.Contains(t, []string{"Successful", "Unsuccessful", "Unsure"}, first["trajectory_success"])
		require.Contains(t, body, `"annotator_name":"=HYPERLINK(\"x\")"`, "JSON Lines keep names as they are")
	})

	t.Run("Verdicts", func(t *testing.T) {
		body, _ := get(t, "verdicts.csv")
		rows, err := csv.NewReader(strings.NewReader(body)).ReadAll()
		require.NoError(t, err)
		require.Equal(t, []string{"benchmark", "model_name", "task_id", "judge"}, rows[0][:4])
		require.Len(t, rows, 1+7, "the check judged every item but the one whose attempt ended in error")
		for _, r := range rows[1:] {
			require.Equal(t, "check: webarena-verified", r[3])
		}
		jsonl, _ := get(t, "verdicts.jsonl")
		require.Len(t, strings.Split(strings.TrimSpace(jsonl), "\n"), 7)
	})

	t.Run("Report", func(t *testing.T) {
		body, h := get(t, "report.json")
		require.Equal(t, "application/json; charset=utf-8", h.Get("Content-Type"))
		var r struct {
			Items       int                        `json:"items"`
			Labelled    int                        `json:"labelled"`
			Asked       []string                   `json:"asked"`
			Report      map[string]json.RawMessage `json:"report"`
			Breakdowns  map[string]json.RawMessage `json:"breakdowns"`
			Leaderboard []struct {
				Judge string `json:"judge"`
			} `json:"leaderboard"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &r))
		require.Equal(t, 8, r.Items)
		require.Equal(t, 8, r.Labelled)
		require.Equal(t, []string{"success"}, r.Asked)
		require.Contains(t, r.Report, "labels")
		require.Len(t, r.Breakdowns, 4, "every facet")
		require.Equal(t, "check: webarena-verified", r.Leaderboard[0].Judge)

		csvBody, _ := get(t, "report.csv")
		rows, err := csv.NewReader(strings.NewReader(csvBody)).ReadAll()
		require.NoError(t, err)
		require.Equal(t, []string{"label", "comparison", "judge"}, rows[0][:3])
		require.Contains(t, csvBody, "success,human_human,")
		require.Contains(t, csvBody, "success,judge,check: webarena-verified,")
	})
}

// TestStudies_Import imports human labels and judge verdicts through the
// overview's forms: a bad row refuses the file naming its line, skipping bad
// rows imports the others and lists them, rows for no item are reported, an
// exported file imports back, and an oversized file is refused with the limit.
func TestStudies_Import(t *testing.T) {
	t.Parallel()
	f := newStudyPagesFixture(t)
	st := f.study(t, studyOptions{state: models.StudyOpen})
	items := f.itemsOf(t, st.ID)
	path := "/studies/" + strconv.FormatInt(st.ID, 10)
	c := f.owner
	key := func(it models.StudyDataItem) string { return "mini," + it.TaskID + "," + studyModel(it) }
	labels := "annotator_name,benchmark,task_id,model_name,trajectory_success\n" +
		"zoe," + key(items[0]) + ",Successful\n" +
		"zoe," + key(items[1]) + ",Partially\n" +
		"zoe,mini,t9,Nobody,Unsuccessful\n"
	upload := func(t *testing.T, route string, fields map[string]string, name, content string) (int, string) {
		c.t = t
		res := postMultipart(c, path+route, fields, benchUpload{field: "file", name: name, content: content})
		return res.StatusCode, readBody(t, res)
	}

	t.Run("BadRow", func(t *testing.T) {
		status, body := upload(t, "/import/labels", nil, "annotations.csv", labels)
		require.Equal(t, http.StatusBadRequest, status)
		require.Contains(t, body, `data-testid="import-labels-error">annotations.csv line 3: trajectory_success: unknown value &#34;Partially&#34;`)
		require.Contains(t, body, `tick &#34;Skip bad rows&#34;`)
		require.Contains(t, body, `href="#import-labels"`)
		require.NotContains(t, body, `data-testid="import-result"`)
	})

	t.Run("SkipBadRows", func(t *testing.T) {
		status, body := upload(t, "/import/labels", map[string]string{"skip_bad_rows": "1"}, "annotations.csv", labels)
		require.Equal(t, http.StatusOK, status, body)
		require.Contains(t, body, `Human labels imported from annotations.csv`)
		require.Contains(t, body, `<span data-testid="import-imported">1 imported</span>`)
		require.Contains(t, body, `<span data-testid="import-unmatched">1 unmatched</span>`)
		require.Contains(t, body, `<span data-testid="import-skipped">1 skipped</span>`)
		require.Contains(t, body, "annotations.csv line 3: trajectory_success: unknown value")
		require.Regexp(t, `line 4: mini/Nobody/t9`, body)
	})

	t.Run("NothingMatches", func(t *testing.T) {
		status, body := upload(t, "/import/labels", nil, "other.csv", "annotator_name,benchmark,task_id,model_name,trajectory_success\nzoe,webarena,1,gpt,Successful\n")
		require.Equal(t, http.StatusBadRequest, status)
		require.Contains(t, body, `data-testid="import-labels-error"`)
	})

	t.Run("Verdicts", func(t *testing.T) {
		jsonl := fmt.Sprintf(`{"benchmark":"mini","model_name":%q,"task_id":%q,"judge":"claude","trajectory_success":"Successful"}`+"\n"+
			`{"benchmark":"mini","model_name":%q,"task_id":%q,"judge":"claude","trajectory_success":false}`+"\n",
			studyModel(items[0]), items[0].TaskID, studyModel(items[1]), items[1].TaskID)
		status, body := upload(t, "/import/verdicts", nil, "claude.jsonl", jsonl)
		require.Equal(t, http.StatusOK, status, body)
		require.Contains(t, body, `Judge verdicts imported from claude.jsonl`)
		require.Contains(t, body, `<span data-testid="import-imported">2 imported</span>`)
		status, body = upload(t, "/import/verdicts", map[string]string{"format": "csv"}, "claude.jsonl", jsonl)
		require.Equal(t, http.StatusBadRequest, status, "JSON Lines read as CSV")
		require.Contains(t, body, `data-testid="import-verdicts-error"`)

		list, err := servicetest.Studies(f.b.db, nil).StudyVerdicts(actorCtx(f.owner), st.ID)
		require.NoError(t, err)
		require.Len(t, list, 2)
		require.True(t, list[0].Imported)
	})

	t.Run("ExportImportsBack", func(t *testing.T) {
		f.labelAll(t, st.ID)
		c.t = t
		exported := readBody(t, c.get(path+"/export/labels.csv"))
		status, body := upload(t, "/import/labels", nil, "labels.csv", exported)
		require.Equal(t, http.StatusOK, status, body)
		require.Contains(t, body, `<span data-testid="import-unmatched">0 unmatched</span>`)
		require.Regexp(t, regexp.MustCompile(`data-testid="import-imported">\d+ imported</span>`), body)
	})

	t.Run("PublishedLayout", func(t *testing.T) {
		// AgentRewardBench's header and spellings, Unsure in every label
		// column, names with stray spaces.
		file := "annotator_name,benchmark,task_id,model_name,exp_name,trajectory_success,trajectory_side_effect,trajectory_optimality,trajectory_looping\n" +
			" ann-a," + key(items[2]) + ",exp,Successful,Unsure,Unsure,No\n" +
			"ann-b ," + key(items[2]) + ",exp,Unsure,No,2. Suboptimal,Unsure\n" +
			" ann-a ," + key(items[3]) + ",exp,Unsuccessful,Yes,1. Complete Failure,Unsure\n" +
			"ann-b," + key(items[3]) + ",exp,Unsure,Unsure,Unsure,No\n" +
			"ann-c," + key(items[2]) + ",exp,Successful,No,2. Suboptimal,No\n"
		status, body := upload(t, "/import/labels", nil, "annotations.csv", file)
		require.Equal(t, http.StatusOK, status, body)
		require.Contains(t, body, `<span data-testid="import-imported">5 imported</span>`)
		require.Contains(t, body, `<span data-testid="import-skipped">0 skipped</span>`)

		d, err := servicetest.Studies(f.b.db, nil).StudyData(actorCtx(f.owner), st.ID)
		require.NoError(t, err)
		imported := map[string]int{}
		for _, h := range d.Human {
			if strings.HasPrefix(strings.TrimSpace(h.Annotator), "ann-") {
				imported[h.Annotator]++
			}
		}
		require.Equal(t, map[string]int{"ann-a": 2, "ann-b": 2, "ann-c": 1}, imported, "names are trimmed")

		// Each label's annotators row says how many unsure answers it left
		// out: two each for side effect, optimality and looping, whose one
		// pair is ann-c's answer with the one other sure answer on items[2].
		c.t = t
		report := readBody(t, c.get(path+"/report"))
		for _, label := range []string{"side_effect", "optimality", "looping"} {
			_, section, ok := strings.Cut(report, `data-testid="label-report-`+label+`"`)
			require.True(t, ok, label)
			section, _, _ = strings.Cut(section, "</section>")
			require.Contains(t, section, "1 items, 1 pairs, 3 annotators; 2 unsure answers left out", label)
		}

		// Duplicates after trimming are still duplicates; unknown values
		// are still refused, naming the line and the column.
		status, body = upload(t, "/import/labels", nil, "annotations.csv", file+"ann-a,"+key(items[2])+",exp,Successful,No,Unsure,No\n")
		require.Equal(t, http.StatusBadRequest, status)
		require.Contains(t, body, `annotations.csv line 7: annotator &#34;ann-a&#34; already labelled`)
		status, body = upload(t, "/import/labels", nil, "annotations.csv", strings.Replace(file, "2. Suboptimal", "Maybe", 1))
		require.Equal(t, http.StatusBadRequest, status)
		require.Contains(t, body, `data-testid="import-labels-error">annotations.csv line 3: trajectory_optimality: unknown value &#34;Maybe&#34; (allowed: 1. Complete Failure, 2. Suboptimal, 3. Somewhat Optimal, 4. Completely Optimal, Unsure)`)
	})

	t.Run("ManyBadRowsListedInPart", func(t *testing.T) {
		good := fmt.Sprintf("zoe,mini,%s,%s,Successful\n", items[0].TaskID, studyModel(items[0]))
		file := "annotator_name,benchmark,task_id,model_name,trajectory_success\n" + good + strings.Repeat("zoe,mini,t1,Walker,Maybe\n", 150)
		status, body := upload(t, "/import/labels", map[string]string{"skip_bad_rows": "1"}, "many.csv", file)
		require.Equal(t, http.StatusOK, status, body)
		require.Contains(t, body, `<span data-testid="import-skipped">150 skipped</span>`)
		require.Contains(t, body, "… and 50 more bad rows")
		require.Equal(t, 100, strings.Count(body, "unknown value &#34;Maybe&#34;"), "100 bad rows listed")
	})

	t.Run("LargerThanOtherForms", func(t *testing.T) {
		// Over the 2 MB every other form is held to, under the import's own cap.
		rows := strings.Repeat(fmt.Sprintf("zoe,mini,%s,%s,Successful\n", items[0].TaskID, studyModel(items[0])), (3<<20)/30)
		status, body := upload(t, "/import/labels", nil, "big.csv", "annotator_name,benchmark,task_id,model_name,trajectory_success\n"+rows)
		require.Equal(t, http.StatusBadRequest, status, "read whole and refused for its duplicate rows, not for its size")
		require.NotContains(t, body, "too large")
		require.Contains(t, body, "line 3")
	})

	t.Run("TooLarge", func(t *testing.T) {
		big := "annotator_name,benchmark,task_id,model_name,trajectory_success\n" + strings.Repeat("zoe,mini,t1,Walker,Successful\n", (11<<20)/29)
		status, body := upload(t, "/import/labels", nil, "big.csv", big)
		require.Equal(t, http.StatusRequestEntityTooLarge, status)
		require.Contains(t, body, "The file is larger than 10 MiB")
	})

	t.Run("NoFile", func(t *testing.T) {
		c.t = t
		res := postMultipart(c, path+"/import/labels", map[string]string{"skip_bad_rows": "1"})
		require.Equal(t, http.StatusBadRequest, res.StatusCode)
		require.Contains(t, readBody(t, res), "Choose the file to import.")
	})
}
