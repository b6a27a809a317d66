package verified_test

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/eval/verified"
	"proctor/internal/testenv"
	"proctor/models"
)

// parityCase is one line of the corpus's cases.jsonl joined with its line of
// official.jsonl.gz: an agent output and the official evaluator's verdict.
type parityCase struct {
	CaseID   string `json:"case_id"`
	Batch    string `json:"batch"`
	TaskID   int    `json:"task_id"`
	Family   string `json:"family"`
	Variant  string `json:"variant"`
	Official string `json:"official_status"`
	// Evaluators are the official evaluators' statuses, in the spec's order.
	Evaluators []struct {
		Name   string `json:"evaluator_name"`
		Status string `json:"status"`
	} `json:"official_evaluators"`
}

// parityAllowed is one entry of testdata/parity_allowlist.json: a case on
// which Proctor deliberately or knowingly differs from the official
// evaluator, with the reason (docs/evaluation.md lists the same).
type parityAllowed struct {
	CaseID  string `json:"case_id"`
	Proctor string `json:"proctor"`
	Reason  string `json:"reason"`
}

// TestParity_OfficialEvaluator grades every output of the parity corpus
// (../shared/data/webarena-verified/parity: 10,643 generated outputs over
// all 812 tasks, graded by the official webarena-verified 1.2.3 package)
// through the code path of `proctor eval webarena-verified`, and compares
// each verdict with the official one: where the official evaluator did not
// raise, the task's status and every evaluator's status must be the same;
// where it raised, Proctor must not call the output a success. Any other
// difference fails the test unless testdata/parity_allowlist.json lists the
// case with its reason; an allow-list entry that no longer differs fails too,
// so the list only shrinks. The corpus holds answers and network logs of
// every shape (empty, truncated, not JSON, no entries, wrong types): each
// verdict that is not a success must name its cause.
func TestParity_OfficialEvaluator(t *testing.T) {
	t.Parallel()
	data := testenv.SharedDataDir(t)
	parity := filepath.Join(data, "webarena-verified", "parity")
	corpus := extractTarGz(t, filepath.Join(parity, "corpus.tgz"))
	cases := readParityCases(t, filepath.Join(corpus, "devcorpus", "cases.jsonl"), filepath.Join(parity, "official.jsonl.gz"))
	require.Len(t, cases, 10643, "the corpus has 10,643 outputs")

	f, err := os.Open(filepath.Join(data, "webarena-verified", "webarena-verified.json"))
	require.NoError(t, err)
	tasks, err := verified.ReadDataset(f)
	f.Close()
	require.NoError(t, err)
	byID := make(map[int]verified.DatasetTask, len(tasks))
	for _, task := range tasks {
		byID[task.TaskID] = task
	}
	sites, err := verified.ReadSitesConfigFile(filepath.Join(parity, "config.json"))
	require.NoError(t, err)

	allowed := readParityAllowList(t)
	results := gradeParityCases(t, cases, byID, sites, filepath.Join(corpus, "devcorpus", "batches"))

	var (
		raisedTotal, raisedSuccess, comparable, agreeing int
		unexpected                                       []string
		byVariant                                        = map[string]int{}
		usedAllow                                        = map[string]bool{}
	)
	for i, c := range cases {
		got := results[i]
		require.NotEmpty(t, verdictMessage(got), "case %s: a %s verdict names its cause", c.CaseID, got.Status)
		why := parityDifference(c, got)
		if c.Official == models.OutcomeError {
			raisedTotal++
			if got.Status == models.OutcomeSuccess {
				raisedSuccess++
			}
		} else {
			comparable++
			if why == "" {
				agreeing++
			}
		}
		if why == "" {
			continue
		}
		if a, ok := allowed[c.CaseID]; ok && a.Proctor == got.Status {
			usedAllow[c.CaseID] = true
			continue
		}
		byVariant[c.Family+":"+c.Variant]++
		unexpected = append(unexpected, fmt.Sprintf("%s (batch %s): %s\n    proctor: %s", c.CaseID, c.Batch, why, parityExplain(got)))
	}
	t.Logf("parity with webarena-verified 1.2.3: %d of %d outputs the official evaluator graded agree (%.2f%%); %d differ, %d of them allow-listed with a reason",
		agreeing, comparable, 100*float64(agreeing)/float64(max(comparable, 1)), comparable-agreeing, len(usedAllow))
	t.Logf("outputs on which the official evaluator raised: %d, graded a success by Proctor: %d", raisedTotal, raisedSuccess)

	var stale []string
	for id := range allowed {
		if !usedAllow[id] {
			stale = append(stale, id)
		}
	}
	sort.Strings(stale)
	require.Empty(t, stale, "allow-listed cases that no longer differ as listed: remove them from testdata/parity_allowlist.json")
	if len(unexpected) > 0 {
		variants := make([]string, 0, len(byVariant))
		for v, n := range byVariant {
			variants = append(variants, fmt.Sprintf("%s %d", v, n))
		}
		sort.Strings(variants)
		shown := unexpected[:min(len(unexpected), 40)]
		t.Fatalf("%d outputs graded unlike the official evaluator, by variant:\n  %s\nfirst %d:\n  %s",
			len(unexpected), strings.Join(variants, "\n  "), len(shown), strings.Join(shown, "\n  "))
	}
}

// parityDifference says how Proctor's result differs from the official
// verdict, or "" when it agrees.
func parityDifference(c parityCase, got verified.TaskResult) string {
	if c.Official == models.OutcomeError {
		if got.Status == models.OutcomeSuccess {
			return "the official evaluator raised, Proctor passed"
		}
		return ""
	}
	if got.Status != c.Official {
		return fmt.Sprintf("official %s, proctor %s", c.Official, got.Status)
	}
	if len(got.EvaluatorsResults) != len(c.Evaluators) {
		return fmt.Sprintf("official ran %d evaluators, proctor %d", len(c.Evaluators), len(got.EvaluatorsResults))
	}
	for i, e := range c.Evaluators {
		g := got.EvaluatorsResults[i]
		if g.EvaluatorName != e.Name || g.Status != e.Status {
			return fmt.Sprintf("evaluator %d: official %s %s, proctor %s %s", i, e.Name, e.Status, g.EvaluatorName, g.Status)
		}
	}
	return ""
}

// verdictMessage is what a verdict says of its cause: an error's message, or
// the messages of a failure's failed assertions; "" for a success, which
// needs none.
func verdictMessage(r verified.TaskResult) string {
	if r.Status == models.OutcomeSuccess {
		return "success"
	}
	var msgs []string
	if r.ErrorMsg != nil {
		msgs = append(msgs, *r.ErrorMsg)
	}
	for _, e := range r.EvaluatorsResults {
		if e.ErrorMsg != nil {
			msgs = append(msgs, *e.ErrorMsg)
		}
		for _, a := range e.Assertions {
			if a.Status == models.OutcomeFailure {
				msgs = append(msgs, strings.Join(a.AssertionMsgs, " "))
			}
		}
	}
	return strings.TrimSpace(strings.Join(msgs, " "))
}

// parityExplain is Proctor's result in a line: status, then each evaluator's
// status with its error or failed assertions.
func parityExplain(r verified.TaskResult) string {
	parts := []string{r.Status}
	if r.ErrorMsg != nil {
		parts = append(parts, *r.ErrorMsg)
	}
	for _, e := range r.EvaluatorsResults {
		s := e.EvaluatorName + "=" + e.Status
		if e.ErrorMsg != nil {
			s += " (" + *e.ErrorMsg + ")"
		}
		for _, a := range e.Assertions {
			if a.Status == models.OutcomeFailure {
				s += " [" + a.AssertionName + ": " + strings.Join(a.AssertionMsgs, " ") + "]"
			}
		}
		parts = append(parts, s)
	}
	line := strings.Join(parts, "; ")
	if len(line) > 600 {
		line = line[:600] + "…"
	}
	return line
}

// gradeParityCases grades every case on all cores; results are in the cases'
// order.
func gradeParityCases(t *testing.T, cases []parityCase, byID map[int]verified.DatasetTask, sites verified.Sites, batches string) []verified.TaskResult {
	t.Helper()
	results := make([]verified.TaskResult, len(cases))
	errs := make([]error, len(cases))
	ev := verified.New()
	next := make(chan int)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := range next {
				c := cases[i]
				task, ok := byID[c.TaskID]
				if !ok {
					errs[i] = fmt.Errorf("case %s: task %d is not in the dataset", c.CaseID, c.TaskID)
					continue
				}
				dir := filepath.Join(batches, c.Batch, fmt.Sprint(c.TaskID))
				results[i], errs[i] = verified.GradeFolder(context.Background(), ev, task, dir, sites)
			}
		})
	}
	for i := range cases {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	return results
}

// readParityCases joins cases.jsonl with official.jsonl.gz by case id.
func readParityCases(t *testing.T, casesPath, officialPath string) []parityCase {
	t.Helper()
	official := map[string]parityCase{}
	f, err := os.Open(officialPath)
	require.NoError(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	for line := range jsonLines(t, zr) {
		var c parityCase
		require.NoError(t, json.Unmarshal(line, &c))
		official[c.CaseID] = c
	}
	cf, err := os.Open(casesPath)
	require.NoError(t, err)
	defer cf.Close()
	var cases []parityCase
	for line := range jsonLines(t, cf) {
		var c parityCase
		require.NoError(t, json.Unmarshal(line, &c))
		o, ok := official[c.CaseID]
		require.True(t, ok, "case %s has no official verdict", c.CaseID)
		require.Equal(t, c.Batch, o.Batch, "case %s", c.CaseID)
		c.Official, c.Evaluators = o.Official, o.Evaluators
		cases = append(cases, c)
	}
	require.Len(t, cases, len(official), "every official verdict has its case")
	return cases
}

// jsonLines yields each non-empty line of r.
func jsonLines(t *testing.T, r io.Reader) func(func([]byte) bool) {
	return func(yield func([]byte) bool) {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 0, 1<<16), 1<<24)
		for sc.Scan() {
			if len(strings.TrimSpace(sc.Text())) == 0 {
				continue
			}
			if !yield(sc.Bytes()) {
				return
			}
		}
		require.NoError(t, sc.Err())
	}
}

// readParityAllowList reads testdata/parity_allowlist.json; every entry
// needs a reason.
func readParityAllowList(t *testing.T) map[string]parityAllowed {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "parity_allowlist.json"))
	require.NoError(t, err)
	var list []parityAllowed
	require.NoError(t, json.Unmarshal(raw, &list))
	out := make(map[string]parityAllowed, len(list))
	for _, a := range list {
		require.NotEmpty(t, a.CaseID, "allow-list entry without a case_id")
		require.NotEmpty(t, strings.TrimSpace(a.Reason), "allow-list entry %s has no reason", a.CaseID)
		require.Contains(t, []string{models.OutcomeSuccess, models.OutcomeFailure, models.OutcomeError}, a.Proctor, "allow-list entry %s: proctor must be Proctor's status", a.CaseID)
		_, dup := out[a.CaseID]
		require.False(t, dup, "allow-list names %s twice", a.CaseID)
		out[a.CaseID] = a
	}
	return out
}

// extractTarGz unpacks a .tgz into a temporary folder, refusing entries that
// would land outside it.
func extractTarGz(t *testing.T, path string) string {
	t.Helper()
	dest := t.TempDir()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		name := filepath.Clean(h.Name)
		require.False(t, name == ".." || strings.HasPrefix(name, "../") || filepath.IsAbs(name), "corpus entry %q leaves the folder", h.Name)
		target := filepath.Join(dest, name)
		switch h.Typeflag {
		case tar.TypeDir:
			require.NoError(t, os.MkdirAll(target, 0o755))
		case tar.TypeReg:
			require.NoError(t, os.MkdirAll(filepath.Dir(target), 0o755))
			out, err := os.Create(target)
			require.NoError(t, err)
			_, err = io.Copy(out, tr)
			require.NoError(t, err)
			require.NoError(t, out.Close())
		}
	}
	return dest
}
