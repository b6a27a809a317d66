package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/internal/testenv"
	"proctor/models"
)

// benchCLI runs proctor verbs in-process against a scratch data folder.
type benchCLI struct {
	t   *testing.T
	env map[string]string
}

func newBenchCLI(t *testing.T) *benchCLI {
	t.Helper()
	dir := t.TempDir()
	return &benchCLI{t: t, env: map[string]string{
		"PROCTOR_DATA_DIR":     dir,
		"PROCTOR_DATABASE_URL": "sqlite:" + filepath.Join(dir, "proctor.db"),
		"PROCTOR_LOG_LEVEL":    "warn",
	}}
}

// run executes one verb and returns its exit code, stdout and stderr.
func (c *benchCLI) run(args ...string) (int, string, string) {
	c.t.Helper()
	var out, errb bytes.Buffer
	p := &Program{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return c.env[k] }}
	code := p.Run(context.Background(), args)
	return code, out.String(), errb.String()
}

// summary runs `benchmark show SLUG --json` and decodes it.
func (c *benchCLI) summary(slug string) models.BenchmarkSummary {
	c.t.Helper()
	code, out, errOut := c.run("benchmark", "show", slug, "--json")
	require.Equal(c.t, exitOK, code, errOut)
	var s models.BenchmarkSummary
	require.NoError(c.t, json.Unmarshal([]byte(out), &s), out)
	return s
}

// requireOneLineError checks a failed verb: the exit code and a single line on
// stderr that contains want.
func requireOneLineError(t *testing.T, wantCode int, want string, code int, stdout, stderr string) {
	t.Helper()
	require.Equal(t, wantCode, code, "stderr: %s", stderr)
	require.Empty(t, stdout)
	require.Equal(t, 1, strings.Count(stderr, "\n"), "one line expected, got:\n%s", stderr)
	require.Contains(t, stderr, want)
}

func TestImport_WebArenaVerified(t *testing.T) {
	t.Parallel()
	data := testenv.SharedDataDir(t)
	file := filepath.Join(data, "webarena-verified", "webarena-verified.json")
	hard := filepath.Join(data, "webarena-verified", "subsets", "webarena-verified-hard.json")
	cli := newBenchCLI(t)

	code, out, errOut := cli.run("import", "--format", "webarena-verified", "--name", "webarena-verified", file, "--subset", "hard="+hard)
	require.Equal(t, exitOK, code, errOut)
	require.Equal(t, "imported webarena-verified version 1: 812 tasks, 1 subset\n", out)

	s := cli.summary("webarena-verified")
	require.Equal(t, 812, s.Tasks)
	require.Equal(t, 1, s.Version)
	require.Equal(t, map[string]int{"shopping": 187, "shopping_admin": 182, "gitlab": 180, "map": 109, "reddit": 106, "multi-site": 48}, s.BySite)
	require.Equal(t, map[string]int{"mutate": 374, "retrieve": 325, "navigate": 113}, s.ByTaskType)
	require.Len(t, s.Subsets, 1)
	require.Equal(t, "hard", s.Subsets[0].Name)
	require.Equal(t, 258, s.Subsets[0].Tasks)
	require.Equal(t, map[string]int{"shopping_admin": 55, "gitlab": 57, "reddit": 42, "shopping": 56, "multi-site": 48}, s.Subsets[0].BySite)

	t.Run("IdenticalReimportUnchanged", func(t *testing.T) {
		// Flags after FILE work too.
		code, out, errOut := cli.run("import", file, "--subset", "hard="+hard, "--format=webarena-verified", "--name", "webarena-verified")
		require.Equal(t, exitOK, code, errOut)
		require.Equal(t, "webarena-verified unchanged (version 1, checksum "+s.Checksum[:12]+"…)\n", out)
	})
	t.Run("WithoutSubsetIsNewVersion", func(t *testing.T) {
		code, out, errOut := cli.run("import", "--format", "webarena-verified", "--name", "webarena-verified", file)
		require.Equal(t, exitOK, code, errOut)
		require.Equal(t, "imported webarena-verified version 2: 812 tasks, 0 subsets\n", out)
	})
	t.Run("List", func(t *testing.T) {
		code, out, errOut := cli.run("benchmark", "list")
		require.Equal(t, exitOK, code, errOut)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		require.Len(t, lines, 2)
		require.Equal(t, []string{"SLUG", "NAME", "VERSION", "TASKS", "SUBSETS"}, strings.Fields(lines[0]))
		require.Equal(t, []string{"webarena-verified", "webarena-verified", "2", "812", "0"}, strings.Fields(lines[1]))
	})
	t.Run("ShowText", func(t *testing.T) {
		code, out, errOut := cli.run("benchmark", "show", "webarena-verified")
		require.Equal(t, exitOK, code, errOut)
		require.Contains(t, out, "tasks         812")
		require.Contains(t, out, "by site:")
		require.Contains(t, out, "  shopping_admin  182\n")
	})
	t.Run("ShowUnknown", func(t *testing.T) {
		code, out, errOut := cli.run("benchmark", "show", "nope", "--json")
		requireOneLineError(t, exitNotFound, `benchmark "nope" not found`, code, out, errOut)
	})
}

func TestImport_TamperedSubsetWritesNothing(t *testing.T) {
	t.Parallel()
	data := testenv.SharedDataDir(t)
	raw, err := os.ReadFile(filepath.Join(data, "webarena-verified", "subsets", "webarena-verified-hard.json"))
	require.NoError(t, err)
	var sub map[string]any
	require.NoError(t, json.Unmarshal(raw, &sub))
	sub["checksum"] = strings.Repeat("0", 64)
	tampered, err := json.Marshal(sub)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "hard.json")
	require.NoError(t, os.WriteFile(path, tampered, 0o600))

	cli := newBenchCLI(t)
	code, out, errOut := cli.run("import", "--format", "webarena-verified", "--name", "webarena-verified",
		filepath.Join(data, "webarena-verified", "webarena-verified.json"), "--subset", "hard="+path)
	requireOneLineError(t, exitUsage, "checksum mismatch", code, out, errOut)
	require.Contains(t, errOut, `subset "hard"`)

	code, out, errOut = cli.run("benchmark", "list")
	require.Equal(t, exitOK, code, errOut)
	require.Equal(t, 1, strings.Count(out, "\n"), "only the header: nothing was imported\n%s", out)
}

func TestImport_WebArena(t *testing.T) {
	t.Parallel()
	data := testenv.SharedDataDir(t)
	cli := newBenchCLI(t)
	code, out, errOut := cli.run("import", "--format", "webarena", "--name", "webarena", filepath.Join(data, "webarena", "test.raw.json"))
	require.Equal(t, exitOK, code, errOut)
	require.Equal(t, "imported webarena version 1: 812 tasks, 0 subsets\n", out)
	s := cli.summary("webarena")
	require.Equal(t, 812, s.Tasks)
	require.Equal(t, "webarena", s.Format)
	require.Equal(t, map[string]int{"retrieve": 335, "mutate": 411, "navigate": 66}, s.ByTaskType)
}

func TestImport_Odysseys(t *testing.T) {
	t.Parallel()
	data := testenv.SharedDataDir(t)
	for _, name := range []string{"odysseys-sample.json", "odysseys-weighted-sample.json"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(data, "odysseys", name)
			raw, err := os.ReadFile(path)
			require.NoError(t, err)
			var tasks []struct {
				Rubrics map[string]json.RawMessage `json:"rubrics"`
			}
			require.NoError(t, json.Unmarshal(raw, &tasks))
			items := 0
			for _, task := range tasks {
				items += len(task.Rubrics)
			}

			cli := newBenchCLI(t)
			code, out, errOut := cli.run("import", "--format", "odysseys", "--name", "odysseys", path)
			require.Equal(t, exitOK, code, errOut)
			require.Equal(t, "imported odysseys version 1: 8 tasks, 0 subsets\n", out)
			s := cli.summary("odysseys")
			require.Equal(t, 8, s.Tasks)
			require.Positive(t, items)
			require.Equal(t, items, s.RubricItems)
			require.NotEmpty(t, s.ByDifficulty)
			require.NotEmpty(t, s.ByAttribute)
		})
	}
}

// cliFixture is a two-task proctor-format benchmark for the error cases.
const cliFixture = `{"proctor_benchmark": 1, "name": "Tiny"}
{"id": "a", "intent": "Find the price.", "start_urls": ["__SHOPPING__"], "rubric": [{"requirement": "States the price"}]}
{"id": "b", "intent": "Open the cart.", "start_urls": ["__SHOPPING__/cart"], "rubric": [{"requirement": "The cart is open"}]}
`

func TestImport_Errors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fixture := filepath.Join(dir, "tiny.jsonl")
	require.NoError(t, os.WriteFile(fixture, []byte(cliFixture), 0o600))
	bad := filepath.Join(dir, "bad.jsonl")
	require.NoError(t, os.WriteFile(bad, []byte(strings.Replace(cliFixture, `"intent": "Open the cart."`, `"intent": ""`, 1)), 0o600))
	cli := newBenchCLI(t)

	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"MissingFile", []string{"--format", "proctor", "--name", "tiny", filepath.Join(dir, "absent.json")}, exitUsage, "absent.json: no such file"},
		{"MissingSubsetFile", []string{"--format", "proctor", "--name", "tiny", fixture, "--subset", "s=" + filepath.Join(dir, "nope.json")}, exitUsage, "--subset s: "},
		{"UnknownFormat", []string{"--format", "csv", "--name", "tiny", fixture}, exitUsage, `unknown format "csv"`},
		{"MissingFormat", []string{"--name", "tiny", fixture}, exitUsage, "--format is required"},
		{"MissingName", []string{"--format", "proctor", fixture}, exitUsage, "--name is required"},
		{"BadName", []string{"--format", "proctor", "--name", "Tiny Bench", fixture}, exitUsage, "not a valid slug"},
		{"BadSubsetSyntax", []string{"--format", "proctor", "--name", "tiny", fixture, "--subset", "hard"}, exitUsage, "expected NAME=FILE"},
		{"EmptySubsetName", []string{"--format", "proctor", "--name", "tiny", "--subset", "=x.json", fixture}, exitUsage, "expected NAME=FILE"},
		{"UnknownFlag", []string{"--format", "proctor", "--nmae", "tiny", fixture}, exitUsage, "flag provided but not defined: -nmae"},
		{"NoFile", []string{"--format", "proctor", "--name", "tiny"}, exitUsage, "expected exactly one FILE argument, got 0"},
		{"TwoFiles", []string{"--format", "proctor", "--name", "tiny", fixture, fixture}, exitUsage, "expected exactly one FILE argument, got 2"},
		{"MalformedTask", []string{"--format", "proctor", "--name", "tiny", bad}, exitUsage, `line 3 (task b): field "intent"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := cli.run(append([]string{"import"}, tc.args...)...)
			requireOneLineError(t, tc.code, tc.want, code, out, errOut)
			require.True(t, strings.HasPrefix(errOut, "proctor import: "), errOut)
		})
	}

	t.Run("FormatChangeConflicts", func(t *testing.T) {
		code, out, errOut := cli.run("import", "--format", "proctor", "--name", "tiny", fixture)
		require.Equal(t, exitOK, code, errOut)
		require.Equal(t, "imported tiny version 1: 2 tasks, 0 subsets\n", out)
		data := testenv.SharedDataDir(t)
		code, out, errOut = cli.run("import", "--format", "odysseys", "--name", "tiny", filepath.Join(data, "odysseys", "odysseys-sample.json"))
		requireOneLineError(t, exitConflict, `benchmark "tiny" holds proctor data`, code, out, errOut)
	})
	t.Run("Help", func(t *testing.T) {
		code, out, errOut := cli.run("import", "-h")
		require.Equal(t, exitOK, code)
		require.Empty(t, out)
		require.Contains(t, errOut, "Usage: proctor import --format FORMAT")
		require.Contains(t, errOut, "-subset")
	})
	t.Run("BenchmarkUsage", func(t *testing.T) {
		code, out, errOut := cli.run("benchmark")
		requireOneLineError(t, exitUsage, "expected a subcommand", code, out, errOut)
		code, out, errOut = cli.run("benchmark", "frobnicate")
		requireOneLineError(t, exitUsage, `unknown subcommand "frobnicate"`, code, out, errOut)
		code, out, errOut = cli.run("benchmark", "show")
		requireOneLineError(t, exitUsage, "expected exactly one SLUG", code, out, errOut)
	})
}
