package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/importer"
	"proctor/internal/evaltest"
	"proctor/models"
	"proctor/service/servicetest"
	"proctor/storage"
)

// rebuildsBenchmark is a two-task benchmark with a one-task subset. The
// importer does not take the hidden-tests evaluator yet, so the test imports
// it as "none" and marks it hidden-tests afterwards.
const rebuildsBenchmark = `{"proctor_benchmark": 1, "name": "Rebuilds", "evaluator": "none", "subsets": {"one": {"task_ids": ["r1"]}}}
{"id": "r1", "intent": "Rebuild the shop.", "start_urls": ["__SHOP__/"], "sites": ["shop"]}
{"id": "r2", "intent": "Rebuild the forum.", "start_urls": ["__FORUM__/"], "sites": ["forum"]}
`

// withRebuilds adds the hidden-tests benchmark "rebuilds" to a database.
func withRebuilds(t *testing.T, db *storage.DB) {
	t.Helper()
	ds, err := importer.Parse(evaltest.Registry(), models.FormatProctor, strings.NewReader(rebuildsBenchmark), nil)
	require.NoError(t, err)
	_, err = db.ImportBenchmark(models.WithActor(context.Background(), models.SystemActor()), "rebuilds", ds, "rebuilds.jsonl", 0)
	require.NoError(t, err)
	require.NoError(t, db.Gorm().Model(&models.Benchmark{}).Where("slug = ?", "rebuilds").Updates(map[string]any{"evaluator": models.EvaluatorHiddenTests, "grades": models.GradesCandidates}).Error)
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

func TestRemote_CandidatesSubmit(t *testing.T) {
	t.Parallel()
	b := setupRemote(t, nil)
	withRebuilds(t, b.app.DB)
	full := writeFile(t, "candidates.json", `{"team":"lab","agent":"uploader","benchmark":"rebuilds","notes":"from the file","candidates":[
		{"task_id":"r1","base_url":"http://93.184.216.34/shop","restart_url":"http://93.184.216.34/restart","cost_usd":2.5,"tokens_in":100,"tokens_out":10,"turns":7},
		{"task_id":"r2","base_url":"http://93.184.216.34/forum"}]}`)

	code, stdout, stderr := b.cli(t, "candidates", "submit", "--file", full, "--json")
	require.Equal(t, exitOK, code, stderr)
	var created struct {
		ID         int64  `json:"id"`
		Origin     string `json:"origin"`
		TasksTotal int    `json:"tasks_total"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &created))
	require.Equal(t, models.OriginCandidates, created.Origin, "candidate websites, tested by Proctor: not an upload of results")
	require.Equal(t, 2, created.TasksTotal)
	var run models.Run
	require.NoError(t, b.app.DB.Gorm().First(&run, created.ID).Error)
	require.Equal(t, "from the file", run.Notes)
	require.InDelta(t, 2.5, run.Cost, 1e-9)
	require.Equal(t, 7, run.StepsSum)
	list, err := servicetest.Candidates(b.app.DB, nil).HiddenCandidates(b.member, created.ID)
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, "http://93.184.216.34/restart", list[0].RestartURL)

	// An array of candidates with the rest from flags, the subset overridden.
	one := writeFile(t, "one.json", `[{"task_id":"r1","base_url":"https://93.184.216.34/"}]`)
	code, stdout, stderr = b.cli(t, "candidates", "submit", "--file", one, "--agent", "lab/uploader", "--benchmark", "rebuilds", "--subset", "one", "--notes", "flags")
	require.Equal(t, exitOK, code, stderr)
	require.Regexp(t, `^submitted run \d+ \(1 candidate\)\n`+b.server+`/runs/\d+\n$`, stdout)

	t.Run("WaitTimesOut", func(t *testing.T) {
		code, stdout, stderr := b.cli(t, "candidates", "submit", "--file", one, "--agent", "lab/uploader", "--benchmark", "rebuilds", "--subset", "one",
			"--wait", "--timeout", "300ms", "--interval", "100ms")
		require.Equal(t, exitTimedOut, code, stderr)
		require.Contains(t, stderr, "submitted run ")
		require.Contains(t, stdout, b.server+"/runs/")
	})

	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"NoFile", []string{}, exitUsage, "--file is required"},
		{"MissingFile", []string{"--file", filepath.Join(t.TempDir(), "nope.json")}, exitUsage, "--file: "},
		{"NotJSON", []string{"--file", writeFile(t, "bad.json", `{"team":`)}, exitUsage, "not valid JSON"},
		{"UnknownField", []string{"--file", writeFile(t, "typo.json", `[{"task_id":"r1","base_uri":"http://93.184.216.34/"}]`), "--agent", "lab/uploader", "--benchmark", "rebuilds"}, exitUsage, "base_uri"},
		{"NoTeam", []string{"--file", one, "--agent", "uploader", "--benchmark", "rebuilds"}, exitUsage, "no team"},
		{"NoBenchmark", []string{"--file", one, "--agent", "lab/uploader"}, exitUsage, "no benchmark"},
		{"TwoTeams", []string{"--file", one, "--team", "lab", "--agent", "other/uploader", "--benchmark", "rebuilds"}, exitUsage, `names team "other"`},
		{"MissingTask", []string{"--file", one, "--agent", "lab/uploader", "--benchmark", "rebuilds"}, exitUsage, "candidates: every task of subset \"full\" needs a candidate; missing: r2"},
		{"PrivateAddress", []string{"--file", writeFile(t, "private.json", `[{"task_id":"r1","base_url":"http://10.0.0.1/"}]`), "--agent", "lab/uploader", "--benchmark", "rebuilds", "--subset", "one"}, exitUsage, "candidates[0].base_url: "},
		{"NotHiddenTests", []string{"--file", one, "--agent", "lab/uploader", "--benchmark", "sandbox"}, exitUsage, "benchmark: "},
		{"UnknownTeam", []string{"--file", one, "--agent", "nobody/uploader", "--benchmark", "rebuilds"}, exitUsage, `team: there is no team "nobody"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := b.cli(t, append([]string{"candidates", "submit"}, tc.args...)...)
			requireOneLineError(t, tc.code, tc.want, code, stdout, stderr)
		})
	}
	t.Run("BadToken", func(t *testing.T) {
		code, stdout, stderr := testEnv{"PROCTOR_SERVER": b.server, "PROCTOR_TOKEN": "prt_not-a-token"}.run(t, "", "candidates", "submit", "--file", full)
		requireOneLineError(t, exitAuth, "proctor candidates: ", code, stdout, stderr)
	})
}
