package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestRun_WritesTheReport(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "bench.log")
	out := filepath.Join(dir, "bench.json")
	medians := filepath.Join(dir, "medians.txt")
	lines := "BenchmarkLeaderboardPage-2\t50\t6000000 ns/op\t1.4 x-static\n" +
		"BenchmarkLeaderboardPage-2\t50\t6000000 ns/op\t1.6 x-static\n" +
		"BenchmarkLeaderboardPage-2\t50\t6000000 ns/op\t1.45 x-static\n"
	if err := os.WriteFile(log, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	if err := run([]string{"-o", out, "-medians", medians, "-load-before", "0.1 0.2 0.3", log}, nil, &stdout); err != nil {
		t.Fatal(err)
	}
	var rep report
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.LoadBefore != "0.1 0.2 0.3" || len(rep.Goals) != len(goals()) {
		t.Fatalf("report = %+v", rep)
	}
	for _, g := range rep.Goals {
		switch g.Benchmark {
		case "BenchmarkLeaderboardPage":
			if !g.Measured || g.Value != 1.45 || !g.Met {
				t.Errorf("leaderboard goal = %+v, want the median 1.45, met", g)
			}
		default:
			if g.Measured || g.Met {
				t.Errorf("%s: measured without a figure: %+v", g.What, g)
			}
		}
	}
	if !regexp.MustCompile(`leaderboard page / static file of the same size +1\.45 +≤ 1\.5 +yes`).MatchString(stdout.String()) {
		t.Errorf("goal table:\n%s", stdout.String())
	}
	m, err := os.ReadFile(medians)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(m), "BenchmarkLeaderboardPage\t1\t6e+06 ns/op\t1.45 x-static") {
		t.Errorf("medians = %q", m)
	}
}
