package bundle_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"proctor/bundle"
	"proctor/bundle/bundletest"
	"proctor/models"
)

// randomText is n random letters: it barely compresses, so the archive's
// ratio stays far from a bomb's.
func randomText(n int, seed uint64) string {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + rng.IntN(26))
	}
	return string(b)
}

func jsonString(t testing.TB, s string) string {
	t.Helper()
	b, err := json.Marshal(s)
	require.NoError(t, err)
	return string(b)
}

// requireCut checks a text field cut to 64 KiB, ellipsis included.
func requireCut(t *testing.T, s string) {
	t.Helper()
	require.LessOrEqual(t, len(s), 64<<10)
	require.Greater(t, len(s), 63<<10)
	require.True(t, strings.HasSuffix(s, "…"))
	require.True(t, utf8.ValidString(s))
}

// TestInspect_TextCaps: text fields over 64 KiB are kept cut, with a
// warning naming their files; an action or answer over 256 KiB of JSON makes
// its file invalid, since neither can be cut without changing it.
func TestInspect_TextCaps(t *testing.T) {
	t.Parallel()
	long := randomText(100<<10, 1) + "é" // cut at a character boundary
	huge := randomText(300<<10, 2)
	cases := []struct {
		name    string
		entries []bundletest.Entry
		invalid string // the problem of the one invalid file, or "" when none is invalid
		cut     string // the file the warning names, when text is cut
		check   func(t *testing.T, b *bundle.Bundle)
	}{
		{"Proctor thought, URL, title and error", bundletest.ProctorEntries(bundletest.ProctorManifest("b", ""),
			bundletest.ProctorTask{ID: "1", StepsJSONL: fmt.Sprintf(`{"action": "x", "thought": %[1]s, "url": %[1]s, "title": %[1]s, "error": %[1]s}`, jsonString(t, long))}),
			"", "tasks/1/steps.jsonl", func(t *testing.T, b *bundle.Bundle) {
				st := taskByID(t, b, "1").Steps[0]
				for _, s := range []string{st.Thought, st.URL, st.Title, st.Error} {
					requireCut(t, s)
				}
				require.Equal(t, long[:len(st.Thought)-len("…")]+"…", st.Thought)
			}},
		{"Proctor action", bundletest.ProctorEntries(bundletest.ProctorManifest("b", ""),
			bundletest.ProctorTask{ID: "1", StepsJSONL: `{"action": "a"}` + "\n" + `{"action": ` + jsonString(t, huge) + `}`}),
			"line 2: the action is", "", func(t *testing.T, b *bundle.Bundle) {
				require.Empty(t, taskByID(t, b, "1").Steps)
			}},
		{"Proctor answer", bundletest.ProctorEntries(bundletest.ProctorManifest("b", ""),
			bundletest.ProctorTask{ID: "1", Answer: `{"text": ` + jsonString(t, huge) + `}`}),
			"the answer is", "", func(t *testing.T, b *bundle.Bundle) {
				require.Nil(t, taskByID(t, b, "1").Final)
			}},
		{"WebArena-Verified agent response", bundletest.WebArenaVerifiedEntries(
			bundletest.WAVTask{ID: "1", Response: `{"task_type": "RETRIEVE", "status": "SUCCESS", "retrieved_data": [` + jsonString(t, huge) + `]}`}),
			"the answer is", "", nil},
		{"Online-Mind2Web thoughts", bundletest.OnlineMind2WebEntries(bundletest.OM2WTask{ID: "t1",
			Result: `{"action_history": ["a"], "thoughts": [` + jsonString(t, long) + `], "final_result_response": "ok"}`}),
			"", "t1/result.json", func(t *testing.T, b *bundle.Bundle) {
				requireCut(t, taskByID(t, b, "t1").Steps[0].Thought)
			}},
		{"Online-Mind2Web action", bundletest.OnlineMind2WebEntries(bundletest.OM2WTask{ID: "t1",
			Result: `{"action_history": ["a", ` + jsonString(t, huge) + `]}`}),
			"action_history[1] is", "", nil},
		{"Online-Mind2Web final response", bundletest.OnlineMind2WebEntries(bundletest.OM2WTask{ID: "t1",
			Result: `{"action_history": ["a"], "final_result_response": ` + jsonString(t, huge) + `}`}),
			"final_result_response is", "", nil},
		{"AgentLab think and error message", bundletest.AgentLabEntries(bundletest.AgentLabTask{TaskName: "webarena.1",
			Summary: `{"err_msg": ` + jsonString(t, long) + `}`,
			Extra:   []bundletest.Entry{{Name: "steps_info.json", Body: []byte(`{"step": 0, "action": "click('1')", "agent_info": {"think": ` + jsonString(t, long) + `}}`)}}}),
			"", bundletest.AgentLabFolder("webarena.1", 0) + "/steps_info.json", func(t *testing.T, b *bundle.Bundle) {
				task := taskByID(t, b, "1")
				requireCut(t, task.ErrorMessage)
				requireCut(t, task.Steps[0].Thought)
				require.Contains(t, strings.Join(b.Report.Warnings, "\n"), "2 files have text")
			}},
		{"AgentLab answer", bundletest.AgentLabEntries(bundletest.AgentLabTask{TaskName: "webarena.1",
			Extra: []bundletest.Entry{{Name: "steps_info.json", Body: []byte(`{"step": 0, "action": ` + jsonString(t, `send_msg_to_user("`+huge+`")`) + `}`)}}}),
			"step 0: the action is", "", func(t *testing.T, b *bundle.Bundle) {
				require.Nil(t, taskByID(t, b, "1").Final)
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b, err := inspect(t, bundletest.Write(t, filepath.Join(t.TempDir(), "b.zip"), bundletest.Zip, c.entries), bundle.DefaultLimits())
			require.NoError(t, err)
			warnings := strings.Join(b.Report.Warnings, "\n")
			if c.invalid == "" {
				require.Empty(t, b.Report.InvalidFiles)
			} else {
				require.Len(t, b.Report.InvalidFiles, 1)
				require.Contains(t, b.Report.InvalidFiles[0].Problem, c.invalid)
				require.Contains(t, b.Report.InvalidFiles[0].Problem, "over the limit of 256 KiB")
			}
			if c.cut == "" {
				require.NotContains(t, warnings, "longer than 64 KiB")
			} else {
				require.Contains(t, warnings, "text (a thought, URL, title or error) longer than 64 KiB, kept cut to that length: ")
				require.Contains(t, warnings, c.cut)
			}
			if c.check != nil {
				c.check(t, b)
			}
		})
	}
}

// TestInspect_MetadataLimit: a bundle whose names or steps add up past
// MaxMetadataBytes is refused whole, however small each part.
func TestInspect_MetadataLimit(t *testing.T) {
	t.Parallel()
	require.Equal(t, int64(256<<20), bundle.DefaultLimits().MaxMetadataBytes)
	var steps strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&steps, `{"action": "a", "thought": %q}`+"\n", randomText(400, uint64(i)))
	}
	var names []bundletest.Entry
	for i := range 3000 {
		names = append(names, bundletest.Entry{Name: fmt.Sprintf("1/%04d-%s.txt", i, randomText(400, uint64(i)))})
	}
	cases := map[string][]bundletest.Entry{
		"steps":      bundletest.ProctorEntries(bundletest.ProctorManifest("b", ""), bundletest.ProctorTask{ID: "1", StepsJSONL: steps.String()}),
		"file names": append(bundletest.WebArenaVerifiedEntries(bundletest.WAVTask{ID: "1"}), names...),
	}
	for name, entries := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := bundletest.Write(t, filepath.Join(t.TempDir(), "b.tar.gz"), bundletest.TarGz, entries)
			lim := bundle.DefaultLimits()
			lim.MaxMetadataBytes = 1 << 20
			_, err := inspect(t, path, lim)
			var refused *bundle.RefusedError
			require.True(t, errors.As(err, &refused), "%v", err)
			require.Contains(t, refused.Error(), "the bundle's metadata (file names, steps, thoughts, actions, answers and problems) takes more than 1 MiB, over the limit")

			lim.MaxMetadataBytes = 16 << 20
			_, err = inspect(t, path, lim)
			require.NoError(t, err)
		})
	}
}

// TestCheck_ReportCaps: the report's lists hold their first 1000 entries,
// ids and paths cut to 256 bytes, with their full lengths in Counts; the
// warnings that sample them stay short.
func TestCheck_ReportCaps(t *testing.T) {
	t.Parallel()
	var tasks []bundletest.WAVTask
	for i := range 1200 {
		tasks = append(tasks, bundletest.WAVTask{ID: fmt.Sprintf("%04d-%s", i, strings.Repeat("x", 300)), Missing: true})
	}
	for i := range 1100 {
		tasks = append(tasks, bundletest.WAVTask{ID: fmt.Sprint(i), Response: "nope", NoHAR: true})
	}
	b, err := inspect(t, bundletest.WebArenaVerified(t, filepath.Join(t.TempDir(), "b.tar.gz"), tasks...), bundle.DefaultLimits())
	require.NoError(t, err)
	require.Len(t, b.Report.InvalidFiles, 1000, "Inspect's report is capped too")
	require.Equal(t, 1100, b.Report.Counts.InvalidFiles)

	catalog := bundle.Catalog{Benchmark: "webarena-verified", TaskIDs: catalogIDs(3000), Subset: "all", SubsetTaskIDs: catalogIDs(2500)}
	rep := b.Check(catalog, bundle.Declared{})
	require.Equal(t, models.SubmissionReportCounts{TasksFound: 1100, TasksMissing: 1400, TasksUnknown: 1200, InvalidFiles: 1100}, rep.Counts)
	require.Equal(t, rep.Counts, rep.Totals())
	require.Len(t, rep.TasksFound, 1000)
	require.Len(t, rep.TasksMissing, 1000)
	require.Len(t, rep.TasksUnknown, 1000)
	require.Len(t, rep.InvalidFiles, 1000)
	require.Equal(t, "0000-"+strings.Repeat("x", 256-len("0000-")-len("…"))+"…", rep.TasksUnknown[0])
	for _, id := range rep.TasksUnknown {
		require.LessOrEqual(t, len(id), 256)
	}
	require.Equal(t, "1100", rep.TasksMissing[0], "the first missing tasks, in order")
	require.Equal(t, 2500, rep.Coverage.SubsetTasks)
	require.Equal(t, 1100, rep.Coverage.Covered, "coverage counts every task, not the listed ones")
	for _, w := range rep.Warnings {
		require.Less(t, len(w), 4<<10, w)
	}
	require.Contains(t, strings.Join(rep.Warnings, "\n"), "1200 tasks are not tasks of webarena-verified and will be ignored: 0000-xxx")
	require.Contains(t, strings.Join(rep.Warnings, "\n"), " and 1190 more")
	raw, err := json.Marshal(rep)
	require.NoError(t, err)
	require.Less(t, len(raw), 1<<20, "the report stays small whatever the bundle names")
	require.Equal(t, rep, b.Check(catalog, bundle.Declared{}), "checking again counts every task again")

	old := models.SubmissionReport{TasksFound: []string{"1", "2"}, InvalidFiles: []models.FileProblem{{Path: "x"}}}
	require.Equal(t, models.SubmissionReportCounts{TasksFound: 2, InvalidFiles: 1}, old.Totals(), "a report stored before counts")
}

// TestInspect_AgentLabAgentName: the agent an AgentLab folder names becomes
// the report's manifest only within the manifest's caps.
func TestInspect_AgentLabAgentName(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{strings.Repeat("A", 200): true, strings.Repeat("A", 201): false} {
		b := mustInspect(t, bundletest.AgentLab(t, filepath.Join(t.TempDir(), "b.zip"),
			bundletest.AgentLabTask{Folder: name + "_on_webarena.1_0", Steps: 1}))
		require.Equal(t, []string{"1"}, taskIDs(b))
		if want {
			require.Equal(t, &models.BundleManifest{Agent: name, AgentFramework: "AgentLab"}, b.Manifest)
		} else {
			require.Nil(t, b.Manifest)
		}
	}
}

// TestInspect_RefusalNamesAreShort: a refusal names the entry at fault by at
// most 256 bytes of its name, however long the name.
func TestInspect_RefusalNamesAreShort(t *testing.T) {
	t.Parallel()
	entries := append(bundletest.WebArenaVerifiedEntries(bundletest.WAVTask{ID: "1"}),
		bundletest.Entry{Name: "1/" + strings.Repeat("n", 5000), Type: bundletest.Symlink, Link: "../../etc/passwd"})
	_, err := inspect(t, bundletest.Write(t, filepath.Join(t.TempDir(), "b.tar.gz"), bundletest.TarGz, entries), bundle.DefaultLimits())
	var refused *bundle.RefusedError
	require.True(t, errors.As(err, &refused), "%v", err)
	require.Equal(t, "symbolic link: links are refused", refused.Reason)
	require.Equal(t, "1/"+strings.Repeat("n", 256-len("1/")-len("…"))+"…", refused.Path)
}
