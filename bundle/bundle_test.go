package bundle_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/bundle"
	"proctor/bundle/bundletest"
	"proctor/internal/testenv"
	"proctor/models"
)

var kinds = []bundletest.Kind{bundletest.Zip, bundletest.TarGz} //nolint:gochecknoglobals // test table

// inspect inspects the archive at path.
func inspect(t testing.TB, path string, lim bundle.Limits) (*bundle.Bundle, error) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	st, err := f.Stat()
	require.NoError(t, err)
	return bundle.Inspect(context.Background(), f, st.Size(), lim, nil)
}

// inspectStoring inspects an archive with InspectStoring, keeping what it
// stores in memory by archive path.
func inspectStoring(t testing.TB, path string, lim bundle.Limits) (*bundle.Bundle, map[string][]byte, error) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	st, err := f.Stat()
	require.NoError(t, err)
	stored := map[string][]byte{}
	b, err := bundle.InspectStoring(context.Background(), f, st.Size(), lim, func(p, _ string, size int64, content io.Reader) error {
		body, err := io.ReadAll(io.LimitReader(content, size))
		stored[p] = body
		return err
	}, nil)
	return b, stored, err
}

// mustInspect inspects an archive that must be accepted.
func mustInspect(t testing.TB, path string) *bundle.Bundle {
	t.Helper()
	b, err := inspect(t, path, bundletest.Limits())
	require.NoError(t, err)
	return b
}

func taskByID(t testing.TB, b *bundle.Bundle, id string) *bundle.Task {
	t.Helper()
	for _, task := range b.Tasks {
		if task.ID == id {
			return task
		}
	}
	t.Fatalf("task %s is not in the bundle", id)
	return nil
}

func taskIDs(b *bundle.Bundle) []string {
	ids := []string{}
	for _, t := range b.Tasks {
		ids = append(ids, t.ID)
	}
	return ids
}

func action(t testing.TB, raw json.RawMessage) models.Action {
	t.Helper()
	var a models.Action
	require.NoError(t, json.Unmarshal(raw, &a), string(raw))
	return a
}

func TestInspect_Formats(t *testing.T) {
	t.Parallel()
	type expect struct {
		format      string
		tasks       []string
		steps       int
		screenshots int
		hars        int
		check       func(t *testing.T, b *bundle.Bundle)
	}
	cases := []struct {
		name    string
		entries []bundletest.Entry
		want    expect
	}{
		{"webarena-verified", bundletest.WebArenaVerifiedEntries(
			bundletest.WAVTask{ID: "107"}, bundletest.WAVTask{ID: "108", Missing: true}, bundletest.WAVTask{ID: "12", NoHAR: true}),
			expect{models.BundleWebArenaVerified, []string{"12", "107", "108"}, 0, 0, 1, func(t *testing.T, b *bundle.Bundle) {
				t107 := taskByID(t, b, "107")
				require.Equal(t, "107/network.har", t107.HAR)
				require.False(t, t107.TokensStated || t107.CostStated, "a results-only bundle states no usage: unknown, not zero")
				final := action(t, t107.Final)
				require.Equal(t, models.ActAnswer, final.Type)
				require.JSONEq(t, bundletest.DefaultAgentResponse, string(final.Response))
				require.NoError(t, final.Validate())
				require.True(t, taskByID(t, b, "108").NotAttempted)
				require.Nil(t, taskByID(t, b, "108").Final)
				require.Empty(t, taskByID(t, b, "12").HAR)
				require.Nil(t, b.Manifest)
			}}},
		{"proctor", bundletest.ProctorEntries(bundletest.ProctorManifest("webarena-verified", "hard"),
			bundletest.ProctorTask{ID: "3", Steps: 3, HAR: true},
			bundletest.ProctorTask{ID: "4", Steps: 1, Answer: `{"type": "stop", "reason": "the page is gone"}`},
			bundletest.ProctorTask{ID: "5", Missing: true},
			bundletest.ProctorTask{ID: "6", StepsJSONL: `{"action": "typed the address", "screenshot": "shot.jpg"}` + "\n",
				Answer: `{"task_type": "RETRIEVE", "status": "SUCCESS", "retrieved_data": [1]}`,
				Extra:  []bundletest.Entry{{Name: "shot.jpg", Body: bundletest.JPEG(32, 20)}}},
			bundletest.ProctorTask{ID: "7", StepsJSONL: `{"action": {"type": "goto", "url": "http://x.test"}, "screenshot": "a.png"}`,
				Answer: `{"text": "forty-two"}`, Extra: []bundletest.Entry{{Name: "screenshots/a.png", Body: bundletest.PNG(10, 10)}}}),
			expect{models.BundleProctor, []string{"3", "4", "5", "6", "7"}, 6, 6, 1, func(t *testing.T, b *bundle.Bundle) {
				require.NotNil(t, b.Manifest)
				require.Equal(t, "webarena-verified", b.Manifest.Benchmark)
				require.Equal(t, 2.5, *b.Manifest.Budgets.MaxCost)
				t3 := taskByID(t, b, "3")
				require.Len(t, t3.Steps, 3)
				require.Equal(t, "tasks/3/screenshots/0002.png", t3.Steps[2].Screenshot)
				require.Equal(t, 2, t3.Steps[2].Index)
				require.Equal(t, "http://shopping.test/page/1", t3.Steps[1].URL)
				require.Equal(t, "Page 1", t3.Steps[1].Title)
				require.Equal(t, int64(300), t3.TokensIn)
				require.Equal(t, int64(30), t3.TokensOut)
				require.InDelta(t, 0.003, t3.Cost, 1e-9)
				require.True(t, t3.TokensStated && t3.CostStated)
				require.Equal(t, int64(4500), t3.DurationMS)
				require.Equal(t, "2025-10-19T14:40:00Z", t3.StartedAt.Format("2006-01-02T15:04:05Z07:00"))
				require.Equal(t, models.ActClick, action(t, t3.Steps[0].Action).Type)
				require.Equal(t, "tasks/3/network.har", t3.HAR)
				require.Equal(t, "done", action(t, t3.Final).Text)
				require.Equal(t, "the page is gone", action(t, taskByID(t, b, "4").Final).Reason)
				require.True(t, taskByID(t, b, "5").NotAttempted)
				t6 := taskByID(t, b, "6")
				require.Equal(t, models.Action{Type: models.ActRecorded, Text: "typed the address"}, action(t, t6.Steps[0].Action))
				require.False(t, t6.TokensStated || t6.CostStated, "steps without tokens or cost leave them unknown")
				require.Equal(t, "tasks/6/shot.jpg", t6.Steps[0].Screenshot)
				require.JSONEq(t, `{"task_type": "RETRIEVE", "status": "SUCCESS", "retrieved_data": [1]}`, string(action(t, t6.Final).Response))
				t7 := taskByID(t, b, "7")
				require.Equal(t, "tasks/7/screenshots/a.png", t7.Steps[0].Screenshot, "a bare name is found in screenshots/")
				require.Equal(t, "forty-two", action(t, t7.Final).Text)
			}}},
		{"online-mind2web", bundletest.OnlineMind2WebEntries(
			bundletest.OM2WTask{ID: "fb7b4f78", Steps: 12, Final: "The page is open"},
			bundletest.OM2WTask{ID: "empty", Result: `{"task_id": "empty", "task": "t", "final_result_response": "", "action_history": [], "thoughts": []}`}),
			expect{models.BundleOnlineMind2Web, []string{"empty", "fb7b4f78"}, 12, 12, 0, func(t *testing.T, b *bundle.Bundle) {
				task := taskByID(t, b, "fb7b4f78")
				require.Equal(t, "fb7b4f78/trajectory/2_full_screenshot.png", task.Steps[2].Screenshot, "numeric order, not text order")
				require.Equal(t, "fb7b4f78/trajectory/10_full_screenshot.png", task.Steps[10].Screenshot)
				require.Equal(t, `<a href="/page/10"> -> CLICK`, action(t, task.Steps[10].Action).Text)
				require.Equal(t, "Open page 10.", task.Steps[10].Thought)
				require.Equal(t, models.Action{Type: models.ActAnswer, Text: "The page is open"}, action(t, task.Final))
				require.True(t, taskByID(t, b, "empty").NotAttempted)
				require.False(t, task.TokensStated || task.CostStated, "Online-Mind2Web results carry no usage")
			}}},
		{"agentlab", bundletest.AgentLabEntries(
			bundletest.AgentLabTask{TaskName: "webarena.310", Seed: 42, Steps: 2, StepsInfo: true, Pickles: true},
			bundletest.AgentLabTask{TaskName: "webarena.311", Steps: 1, ErrMsg: "Exception uncaught by agent"},
			bundletest.AgentLabTask{Folder: "exp-a", Summary: `{"n_steps": 0, "cum_reward": 0, "task_name": "webarena.9"}`},
			bundletest.AgentLabTask{Folder: "exp-b", Summary: `{"n_steps": 0, "task_id": 77}`}),
			expect{models.BundleAgentLab, []string{"9", "77", "310", "311"}, 3 + 2 + 1 + 1, 7, 0, func(t *testing.T, b *bundle.Bundle) {
				task := taskByID(t, b, "310")
				require.Len(t, task.Steps, 3)
				require.Equal(t, "click('10')", action(t, task.Steps[0].Action).Text)
				require.Equal(t, "Step 0.", task.Steps[0].Thought)
				require.Equal(t, int64(1000), task.Steps[0].TokensIn)
				require.Equal(t, bundletest.AgentLabFolder("webarena.310", 42)+"/screenshot_step_2.png", task.Steps[2].Screenshot)
				require.Equal(t, models.Action{Type: models.ActAnswer, Text: "done"}, action(t, task.Final))
				require.Equal(t, int64(2000), task.TokensIn)
				require.Equal(t, int64(200), task.TokensOut)
				require.InDelta(t, 0.02, task.Cost, 1e-9)
				require.True(t, task.TokensStated && task.CostStated)
				require.False(t, taskByID(t, b, "9").TokensStated || taskByID(t, b, "9").CostStated, "a summary without stats")
				require.Equal(t, int64(5000), task.DurationMS)
				require.Equal(t, "Exception uncaught by agent", taskByID(t, b, "311").ErrorMessage)
				require.Nil(t, taskByID(t, b, "311").Final)
				require.Equal(t, "AgentLab", b.Manifest.AgentFramework)
				require.Equal(t, "GenericAgent-gpt-4o", b.Manifest.Agent)
			}}},
	}
	for _, c := range cases {
		for _, kind := range kinds {
			for _, wrapped := range []bool{false, true} {
				name := fmt.Sprintf("%s/%s/wrapped=%v", c.name, kind, wrapped)
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					entries := c.entries
					prefix := ""
					if wrapped {
						entries, prefix = bundletest.Wrap("results", entries), "results/"
					}
					path := bundletest.Write(t, filepath.Join(t.TempDir(), "bundle."+string(kind)), kind, entries)
					b := mustInspect(t, path)
					if wrapped {
						b = unwrap(t, b, prefix)
					}
					require.Equal(t, c.want.format, b.Format)
					require.Equal(t, c.want.format, b.Report.Format)
					require.Equal(t, models.BundleFormatName(c.want.format), b.Report.FormatName)
					require.Equal(t, c.want.tasks, taskIDs(b))
					require.Empty(t, b.Report.InvalidFiles)
					require.Equal(t, c.want.steps, b.Report.Steps)
					require.Equal(t, c.want.screenshots, b.Report.Screenshots)
					require.Equal(t, c.want.hars, b.Report.HARs)
					require.Len(t, b.Files(), c.want.screenshots+c.want.hars)
					require.Positive(t, b.Report.Files)
					require.Positive(t, b.Report.Bytes)
					c.want.check(t, b)
				})
			}
		}
	}
}

// unwrap checks that every archive path of a wrapped bundle starts with
// prefix, then strips it so the expectations of the unwrapped bundle apply.
func unwrap(t *testing.T, b *bundle.Bundle, prefix string) *bundle.Bundle {
	t.Helper()
	strip := func(p string) string {
		if p == "" {
			return ""
		}
		require.True(t, strings.HasPrefix(p, prefix), p)
		return strings.TrimPrefix(p, prefix)
	}
	for _, task := range b.Tasks {
		task.HAR = strip(task.HAR)
		for i := range task.Steps {
			task.Steps[i].Screenshot = strip(task.Steps[i].Screenshot)
		}
	}
	for _, f := range b.Files() {
		strip(f.Path)
	}
	return b
}

func TestInspect_Hostile(t *testing.T) {
	t.Parallel()
	for _, c := range bundletest.Hostile() {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			path := c.Build(t, t.TempDir())
			b, err := inspect(t, path, bundletest.Limits())
			require.Nil(t, b)
			var refused *bundle.RefusedError
			require.ErrorAs(t, err, &refused)
			require.Contains(t, err.Error(), c.Message)
			require.True(t, strings.ToValidUTF8(err.Error(), "") == err.Error(), "the message is valid UTF-8")
			// Storing as it reads refuses it the same way, however far it got.
			b, _, err = inspectStoring(t, path, bundletest.Limits())
			require.Nil(t, b)
			require.ErrorAs(t, err, &refused)
			require.Contains(t, err.Error(), c.Message)
		})
	}
}

// TestInspect_HostileDefaultLimits checks the hostile archives that do not
// depend on small limits against the server's defaults.
func TestInspect_HostileDefaultLimits(t *testing.T) {
	t.Parallel()
	for _, c := range bundletest.Hostile() {
		if strings.Contains(c.Name, "limit") || strings.Contains(c.Name, "too many") || strings.Contains(c.Name, "bomb") {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			_, err := inspect(t, c.Build(t, t.TempDir()), bundle.DefaultLimits())
			var refused *bundle.RefusedError
			require.ErrorAs(t, err, &refused)
			require.Contains(t, err.Error(), c.Message)
		})
	}
	t.Run("zip bomb with lying headers", func(t *testing.T) {
		t.Parallel()
		path := bundletest.Write(t, filepath.Join(t.TempDir(), "bomb.zip"), bundletest.Zip, append(bundletest.WebArenaVerifiedEntries(bundletest.WAVTask{ID: "1"}),
			bundletest.Entry{Name: "1/bomb.json", Open: bundletest.Zeros(64 << 20), DeclaredSize: 100}))
		_, err := inspect(t, path, bundle.DefaultLimits())
		require.ErrorContains(t, err, "header declares")
	})
	t.Run("ratio bomb", func(t *testing.T) {
		t.Parallel()
		for _, kind := range kinds {
			path := bundletest.Write(t, filepath.Join(t.TempDir(), "bomb."+string(kind)), kind, append(bundletest.WebArenaVerifiedEntries(bundletest.WAVTask{ID: "1"}),
				bundletest.Entry{Name: "1/zeros.bin", Open: bundletest.Zeros(64 << 20)}))
			_, err := inspect(t, path, bundle.DefaultLimits())
			require.ErrorContains(t, err, "compression ratio", kind)
		}
	})
}

func TestInspect_NearMisses(t *testing.T) {
	t.Parallel()
	lim := bundletest.Limits()
	valid := bundletest.WebArenaVerifiedEntries(bundletest.WAVTask{ID: "107"})
	with := func(extra ...bundletest.Entry) []bundletest.Entry {
		return append(append([]bundletest.Entry{}, valid...), extra...)
	}
	filler := func(n int) []bundletest.Entry {
		var out []bundletest.Entry
		for i := range n {
			out = append(out, bundletest.Entry{Name: fmt.Sprintf("107/extra/%03d.txt", i), Body: []byte("x")})
		}
		return out
	}
	cases := []struct {
		name    string
		entries []bundletest.Entry
	}{
		{"dot-slash prefixes", []bundletest.Entry{{Name: "./", Type: bundletest.Dir}, {Name: "./107/", Type: bundletest.Dir},
			{Name: "./107/agent_response.json", Body: []byte(bundletest.DefaultAgentResponse)}}},
		{"macOS litter", with(bundletest.Entry{Name: "__MACOSX/107/._agent_response.json", Body: []byte("\x00\x05\x16\x07junk")},
			bundletest.Entry{Name: ".DS_Store", Body: []byte("\x00\x00\x00\x01Bud1")}, bundletest.Entry{Name: "107/._network.har", Body: []byte("junk")})},
		{"dots inside names", with(bundletest.Entry{Name: "107/notes..txt", Body: []byte("a..b")}, bundletest.Entry{Name: "107/...", Body: []byte("x")})},
		{"UTF-8 names", with(bundletest.Entry{Name: "107/café-日本.txt", Body: []byte("ok")})},
		{"a folder listed twice", with(bundletest.Entry{Name: "107/", Type: bundletest.Dir})},
		{"a file exactly at the per-file limit", with(bundletest.Entry{Name: "107/blob.bin", Open: bundletest.Random(lim.MaxFileBytes, 9)})},
		{"exactly as many entries as allowed", with(filler(lim.MaxFiles - len(valid))...)},
		{"compressible file under the ratio floor", with(bundletest.Entry{Name: "107/zeros.txt", Open: bundletest.Zeros(200 << 10)})},
		{"executable permission bits", with(bundletest.Entry{Name: "107/run.sh", Body: []byte("#!/bin/sh"), Mode: 0o755})},
		{"stored entries", append(with(), bundletest.Entry{Name: "107/stored.txt", Body: []byte("plain"), Store: true})},
		{"pickles beside the files", with(bundletest.Entry{Name: "107/step_0.pkl.gz", Body: []byte("\x1f\x8b")}, bundletest.Entry{Name: "107/exp_args.pkl", Body: []byte("\x80")})},
	}
	for _, c := range cases {
		for _, kind := range kinds {
			t.Run(c.name+"/"+string(kind), func(t *testing.T) {
				t.Parallel()
				b := mustInspect(t, bundletest.Write(t, filepath.Join(t.TempDir(), "b."+string(kind)), kind, c.entries))
				require.Equal(t, models.BundleWebArenaVerified, b.Format)
				require.Equal(t, []string{"107"}, taskIDs(b))
				require.Empty(t, b.Report.InvalidFiles)
			})
		}
	}
	t.Run("thousands of .missing markers", func(t *testing.T) {
		t.Parallel()
		// Almost only tar headers, which compress about 70:1: not a bomb.
		var tasks []bundletest.WAVTask
		for i := range 2000 {
			tasks = append(tasks, bundletest.WAVTask{ID: fmt.Sprint(i), Missing: true})
		}
		for _, kind := range kinds {
			b, err := inspect(t, bundletest.WebArenaVerified(t, filepath.Join(t.TempDir(), "b."+string(kind)), tasks...), bundle.DefaultLimits())
			require.NoError(t, err)
			require.Len(t, b.Tasks, 2000)
			require.True(t, b.Tasks[1999].NotAttempted)
		}
	})
	t.Run("a tar.gz named .zip", func(t *testing.T) {
		t.Parallel()
		b := mustInspect(t, bundletest.Write(t, filepath.Join(t.TempDir(), "disguised.zip"), bundletest.TarGz, valid))
		require.Equal(t, []string{"107"}, taskIDs(b))
	})
	t.Run("a zip named .tar.gz", func(t *testing.T) {
		t.Parallel()
		b := mustInspect(t, bundletest.Write(t, filepath.Join(t.TempDir(), "disguised.tar.gz"), bundletest.Zip, valid))
		require.Equal(t, []string{"107"}, taskIDs(b))
	})
	t.Run("the archive exactly at the bundle size limit", func(t *testing.T) {
		t.Parallel()
		path := bundletest.Write(t, filepath.Join(t.TempDir(), "b.zip"), bundletest.Zip, valid)
		st, err := os.Stat(path)
		require.NoError(t, err)
		lim := bundletest.Limits()
		lim.MaxBundleBytes = st.Size()
		_, err = inspect(t, path, lim)
		require.NoError(t, err)
		lim.MaxBundleBytes--
		_, err = inspect(t, path, lim)
		require.ErrorContains(t, err, "bundle size limit")
	})
	t.Run("files not in the layout are ignored with a warning", func(t *testing.T) {
		t.Parallel()
		b := mustInspect(t, bundletest.Write(t, filepath.Join(t.TempDir(), "b.zip"), bundletest.Zip,
			with(bundletest.Entry{Name: "107/eval_result.json", Body: []byte("{}")}, bundletest.Entry{Name: "README.md", Body: []byte("hi")})))
		require.Len(t, b.Report.Warnings, 1)
		require.Contains(t, b.Report.Warnings[0], "2 files are not part of the WebArena-Verified submission layout")
		require.Contains(t, b.Report.Warnings[0], "107/eval_result.json")
	})
}

func TestInspect_InvalidFiles(t *testing.T) {
	t.Parallel()
	lim := bundletest.Limits()
	big := func(n int64) []byte {
		pad := base64.StdEncoding.EncodeToString(readAll(t, bundletest.Random(n, 5))) // random: a padding of one letter would be a ratio bomb
		return []byte(`{"task_type": "RETRIEVE", "pad": "` + pad + `"}`)
	}
	bigJPEG := bundletest.JPEG(2100, 2000) // 4.2 megapixels, over the test limit of 4
	truncPNG := bundletest.PNG(64, 40)
	truncPNG = truncPNG[:len(truncPNG)-20]
	truncJPEG := bundletest.JPEG(64, 40)
	truncJPEG = truncJPEG[:len(truncJPEG)-30]
	flippedPNG := bundletest.PNG(64, 40)
	flippedPNG[len(flippedPNG)/2] ^= 0x10
	lyingPNG := append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 64)...) // a PNG signature over garbage
	wav := func(task bundletest.WAVTask) []bundletest.Entry {
		return bundletest.WebArenaVerifiedEntries(bundletest.WAVTask{ID: "1"}, task)
	}
	proctor := func(task bundletest.ProctorTask) []bundletest.Entry {
		return bundletest.ProctorEntries(bundletest.ProctorManifest("webarena-verified", "full"), bundletest.ProctorTask{ID: "1", Steps: 1}, task)
	}
	cases := []struct {
		name    string
		entries []bundletest.Entry
		path    string // the invalid file
		problem string
		check   func(t *testing.T, task *bundle.Task)
	}{
		{"agent response not JSON", wav(bundletest.WAVTask{ID: "2", Response: `{"task_type": RETRIEVE}`}),
			"2/agent_response.json", "invalid JSON at byte", func(t *testing.T, task *bundle.Task) {
				require.JSONEq(t, `{"type":"answer","text":"{\"task_type\": RETRIEVE}"}`, string(task.Final), "graded as the text it holds")
			}},
		{"agent response not an object", wav(bundletest.WAVTask{ID: "2", Response: `["a"]`}), "2/agent_response.json", "must be an object", nil},
		{"agent response of another shape", wav(bundletest.WAVTask{ID: "2", Response: `{"answer": "a"}`}), "2/agent_response.json", "not a WebArena-Verified agent response", nil},
		{"agent response not UTF-8", wav(bundletest.WAVTask{ID: "2", Response: "{\"task_type\": \"caf\xe9\"}"}), "2/agent_response.json", "not valid UTF-8 (byte 18)", nil},
		{"agent response over the JSON limit", wav(bundletest.WAVTask{ID: "2", Response: string(big(lim.MaxJSONBytes))}), "2/agent_response.json", "over the JSON limit of 256 KiB", nil},
		{"HAR not JSON", wav(bundletest.WAVTask{ID: "2", HAR: []byte(`{"log": {"entries": [}}`)}), "2/network.har", "not valid JSON",
			func(t *testing.T, task *bundle.Task) {
				require.Empty(t, task.HAR)
				require.NotNil(t, task.Final, "the answer stands without the HAR")
			}},
		{"HAR without entries", wav(bundletest.WAVTask{ID: "2", HAR: []byte(`{"log": {"version": "1.2"}}`)}), "2/network.har", `"log" has no "entries" array`, nil},
		{"HAR without log", wav(bundletest.WAVTask{ID: "2", HAR: []byte(`{"entries": []}`)}), "2/network.har", `no "log" object`, nil},
		{"HAR that is an array", wav(bundletest.WAVTask{ID: "2", HAR: []byte(`[{"log": {}}]`)}), "2/network.har", "the document is an array, not an object", nil},
		{"HAR not UTF-8", wav(bundletest.WAVTask{ID: "2", HAR: []byte("{\"log\": {\"entries\": [\"\xff\"]}}")}), "2/network.har", "invalid UTF-8", nil},
		{"HAR over its limit", wav(bundletest.WAVTask{ID: "2", HAR: readAll(t, bundletest.LargeHAR(lim.MaxHARBytes))}), "2/network.har", "over the limit of 512 KiB", nil},
		{"HAR truncated", wav(bundletest.WAVTask{ID: "2", HAR: bundletest.HAR(2)[:100]}), "2/network.har", "ends", nil},
		{"answer missing beside a HAR", []bundletest.Entry{{Name: "2/network.har", Body: bundletest.HAR(1)}}, "2/agent_response.json", "no answer", nil},
		{".missing beside an answer", wav(bundletest.WAVTask{ID: "2", Extra: []bundletest.Entry{{Name: ".missing"}}}), "2/.missing", "not attempted",
			func(t *testing.T, task *bundle.Task) { require.True(t, task.NotAttempted) }},
		{"screenshot that is not an image", proctor(bundletest.ProctorTask{ID: "2", StepsJSONL: `{"action": "x", "screenshot": "screenshots/a.png"}`,
			Extra: []bundletest.Entry{{Name: "screenshots/a.png", Body: []byte("<html>not a png</html>")}}}), "tasks/2/screenshots/a.png", "not a PNG or JPEG image",
			func(t *testing.T, task *bundle.Task) {
				require.Len(t, task.Steps, 1)
				require.Empty(t, task.Steps[0].Screenshot, "the step stays, without its screenshot")
			}},
		{"screenshot over the pixel limit", proctor(bundletest.ProctorTask{ID: "2", StepsJSONL: `{"action": "x", "screenshot": "big.jpg"}`,
			Extra: []bundletest.Entry{{Name: "big.jpg", Body: bigJPEG}}}), "tasks/2/big.jpg", "2100×2000 pixels, over the limit of 4000000 pixels", nil},
		{"truncated screenshot", proctor(bundletest.ProctorTask{ID: "2", StepsJSONL: `{"action": "x", "screenshot": "a.png"}`,
			Extra: []bundletest.Entry{{Name: "a.png", Body: truncPNG}}}), "tasks/2/a.png", "invalid image/png image", nil},
		{"truncated JPEG screenshot", proctor(bundletest.ProctorTask{ID: "2", StepsJSONL: `{"action": "x", "screenshot": "a.jpg"}`,
			Extra: []bundletest.Entry{{Name: "a.jpg", Body: truncJPEG}}}), "tasks/2/a.jpg", "not a valid screenshot: invalid image/jpeg image: it does not end with the end-of-image marker (is it truncated?)", nil},
		{"screenshot with a damaged chunk", proctor(bundletest.ProctorTask{ID: "2", StepsJSONL: `{"action": "x", "screenshot": "a.png"}`,
			Extra: []bundletest.Entry{{Name: "a.png", Body: flippedPNG}}}), "tasks/2/a.png", "fails its checksum", nil},
		{"screenshot with a signature over garbage", proctor(bundletest.ProctorTask{ID: "2", StepsJSONL: `{"action": "x", "screenshot": "a.png"}`,
			Extra: []bundletest.Entry{{Name: "a.png", Body: lyingPNG}}}), "tasks/2/a.png", "not a valid screenshot: invalid image/png header", nil},
		{"screenshot a step names that is absent", proctor(bundletest.ProctorTask{ID: "2", StepsJSONL: "{\"action\": \"x\"}\n{\"action\": \"y\", \"screenshot\": \"screenshots/9.png\"}\n"}),
			"tasks/2/steps.jsonl", "line 2: screenshot screenshots/9.png is not in the bundle",
			func(t *testing.T, task *bundle.Task) { require.Len(t, task.Steps, 2) }},
		{"screenshot outside the task folder", proctor(bundletest.ProctorTask{ID: "2", StepsJSONL: `{"action": "x", "screenshot": "../1/screenshots/0000.png"}`}),
			"tasks/2/steps.jsonl", "line 1: screenshot \"../1/screenshots/0000.png\" must be a file name relative to the task's folder", nil},
		{"steps line not JSON", proctor(bundletest.ProctorTask{ID: "2", StepsJSONL: "{\"action\": \"x\"}\n\n{\"action\": \n"}), "tasks/2/steps.jsonl", "line 3: invalid JSON",
			func(t *testing.T, task *bundle.Task) { require.Empty(t, task.Steps) }},
		{"steps unknown field", proctor(bundletest.ProctorTask{ID: "2", StepsJSONL: `{"action": "x", "thougth": "typo"}`}), "tasks/2/steps.jsonl", `line 1: unknown field "thougth"`, nil},
		{"steps wrong type", proctor(bundletest.ProctorTask{ID: "2", StepsJSONL: `{"action": "x", "tokens_in": "many"}`}), "tasks/2/steps.jsonl", "line 1: tokens_in must be a number", nil},
		{"steps without action", proctor(bundletest.ProctorTask{ID: "2", StepsJSONL: `{"thought": "hm"}`}), "tasks/2/steps.jsonl", "line 1: action is required", nil},
		{"steps invalid action", proctor(bundletest.ProctorTask{ID: "2", StepsJSONL: `{"action": {"type": "click"}}`}), "tasks/2/steps.jsonl", "line 1: action.target", nil},
		{"steps unknown action", proctor(bundletest.ProctorTask{ID: "2", StepsJSONL: `{"action": {"type": "teleport"}}`}), "tasks/2/steps.jsonl", `line 1: action.type: "teleport" is not one of`, nil},
		{"steps negative tokens", proctor(bundletest.ProctorTask{ID: "2", StepsJSONL: `{"action": "x", "tokens_in": -1}`}), "tasks/2/steps.jsonl", "cannot be negative", nil},
		{"steps bad time", proctor(bundletest.ProctorTask{ID: "2", StepsJSONL: `{"action": "x", "started_at": "yesterday"}`}), "tasks/2/steps.jsonl", "line 1:", nil},
		{"steps not UTF-8", proctor(bundletest.ProctorTask{ID: "2", StepsJSONL: "{\"action\": \"\xc3\x28\"}"}), "tasks/2/steps.jsonl", "not valid UTF-8", nil},
		{"answer not final", proctor(bundletest.ProctorTask{ID: "2", Answer: `{"type": "click", "target": {"element_id": "1"}}`}), "tasks/2/answer.json", `must be "answer" or "stop"`, nil},
		{"answer of no known shape", proctor(bundletest.ProctorTask{ID: "2", Answer: `{"reply": "x"}`}), "tasks/2/answer.json", "expected a final action", nil},
		{"answer with empty text", proctor(bundletest.ProctorTask{ID: "2", Answer: `{"text": ""}`}), "tasks/2/answer.json", "text is empty", nil},
		{"Online-Mind2Web task_id differs from its folder", bundletest.OnlineMind2WebEntries(bundletest.OM2WTask{ID: "abc", Result: `{"task_id": "xyz", "task": "t", "final_result_response": "ok", "action_history": ["a"], "thoughts": ["b"]}`}),
			"abc/result.json", `task_id "xyz" differs from its folder "abc"`, func(t *testing.T, task *bundle.Task) { require.Len(t, task.Steps, 1) }},
		{"Online-Mind2Web screenshot not an image", bundletest.OnlineMind2WebEntries(bundletest.OM2WTask{ID: "abc", Steps: 1,
			Extra: []bundletest.Entry{{Name: "trajectory/1_full_screenshot.png", Body: []byte("GIF89a")}}}),
			"abc/trajectory/1_full_screenshot.png", "not a PNG or JPEG", func(t *testing.T, task *bundle.Task) {
				require.Len(t, task.Steps, 2)
				require.Empty(t, task.Steps[1].Screenshot)
			}},
		{"AgentLab summary not JSON", bundletest.AgentLabEntries(bundletest.AgentLabTask{TaskName: "webarena.5", Summary: "{NaN}"}),
			bundletest.AgentLabFolder("webarena.5", 0) + "/summary_info.json", "invalid JSON", nil},
		{"AgentLab negative tokens", bundletest.AgentLabEntries(bundletest.AgentLabTask{TaskName: "webarena.5", Summary: `{"stats.cum_input_tokens": -3}`}),
			bundletest.AgentLabFolder("webarena.5", 0) + "/summary_info.json", "stats.cum_input_tokens must be non-negative", nil},
		{"AgentLab folder without a task", bundletest.AgentLabEntries(bundletest.AgentLabTask{Folder: "exp", Summary: `{"n_steps": 1}`}),
			"exp/summary_info.json", "cannot tell the task", nil},
	}
	for _, c := range cases {
		for _, kind := range kinds {
			t.Run(c.name+"/"+string(kind), func(t *testing.T) {
				t.Parallel()
				path := bundletest.Write(t, filepath.Join(t.TempDir(), "b."+string(kind)), kind, c.entries)
				b := mustInspect(t, path)
				require.Len(t, b.Report.InvalidFiles, 1, "%+v", b.Report.InvalidFiles)
				// Storing while inspecting finds the same, and stores every kept file.
				withStore, stored, err := inspectStoring(t, path, bundletest.Limits())
				require.NoError(t, err)
				require.Equal(t, b.Report, withStore.Report)
				for _, f := range withStore.Files() {
					require.Len(t, stored[f.Path], int(f.Size), f.Path)
				}
				got := b.Report.InvalidFiles[0]
				require.Equal(t, c.path, got.Path)
				require.Contains(t, got.Problem, c.problem)
				if got.TaskID == "" {
					return
				}
				task := taskByID(t, b, got.TaskID)
				require.Equal(t, []models.FileProblem{got}, task.Problems)
				for _, f := range b.Files() {
					require.NotEqual(t, c.path, f.Path, "an invalid file is never extracted")
				}
				if c.check != nil {
					c.check(t, task)
				}
			})
		}
	}
}

func TestInspect_ProctorManifest(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, manifest, problem string
	}{
		{"unknown field", `{"format": "proctor-trajectory/1", "benchmrk": "x"}`, `unknown field "benchmrk"`},
		{"no format", `{"benchmark": "x"}`, `format is required: "proctor-trajectory/1"`},
		{"future version", `{"format": "proctor-trajectory/2"}`, `format "proctor-trajectory/2" is not supported`},
		{"bad date", `{"format": "proctor-trajectory/1", "date": "19/10/2025"}`, "must be RFC 3339 or YYYY-MM-DD"},
		{"negative budget", `{"format": "proctor-trajectory/1", "budgets": {"max_steps": -1}}`, "budgets cannot be negative"},
		{"not JSON", `format: proctor`, "invalid JSON"},
		{"long model", `{"format": "proctor-trajectory/1", "model": "` + strings.Repeat("m", 201) + `"}`, "model is 201 characters long, over the limit of 200"},
		{"long agent", `{"format": "proctor-trajectory/1", "agent": "` + strings.Repeat("é", 201) + `"}`, "agent is 201 characters long, over the limit of 200"},
		{"long framework", `{"format": "proctor-trajectory/1", "agent_framework": "` + strings.Repeat("f", 201) + `"}`, "agent_framework is 201 characters long"},
		{"long benchmark", `{"format": "proctor-trajectory/1", "benchmark": "` + strings.Repeat("b", 101) + `"}`, "benchmark is 101 characters long, over the limit of 100"},
		{"long subset", `{"format": "proctor-trajectory/1", "subset": "` + strings.Repeat("s", 101) + `"}`, "subset is 101 characters long, over the limit of 100"},
		{"long notes", `{"format": "proctor-trajectory/1", "notes": "` + strings.Repeat("n", 2001) + `"}`, "notes is 2001 characters long, over the limit of 2000"},
		{"long date", `{"format": "proctor-trajectory/1", "date": "` + strings.Repeat("9", 65) + `"}`, "date is 65 characters long, over the limit of 64"},
		{"model on two lines", `{"format": "proctor-trajectory/1", "model": "gpt\nbest on the board"}`, "model holds a control character (such as a line break): it must be one line"},
		{"control character in notes", `{"format": "proctor-trajectory/1", "notes": "a\u0007b"}`, "notes holds a control character other than a line break or tab"},
		{"a manifest of megabytes", `{"format": "proctor-trajectory/1", "model": "` + strings.Repeat("m", 200<<10) + `"}`, "the file is over the limit of 64 KiB for a manifest"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			entries := bundletest.ProctorEntries(bundletest.ProctorManifest("b", ""), bundletest.ProctorTask{ID: "1", Steps: 1})
			entries[0].Body = []byte(c.manifest)
			b := mustInspect(t, bundletest.Write(t, filepath.Join(t.TempDir(), "b.zip"), bundletest.Zip, entries))
			require.Nil(t, b.Manifest)
			require.Len(t, b.Report.InvalidFiles, 1)
			require.Equal(t, "manifest.json", b.Report.InvalidFiles[0].Path)
			require.Contains(t, b.Report.InvalidFiles[0].Problem, c.problem)
			rep := b.Check(bundle.Catalog{Benchmark: "b", TaskIDs: []string{"1"}}, bundle.Declared{Benchmark: "b"})
			require.Len(t, rep.Blocking, 1)
			require.Contains(t, rep.Blocking[0], "manifest.json is unusable: ")
			require.Contains(t, rep.Blocking[0], c.problem)
		})
	}
	t.Run("fields at their limits", func(t *testing.T) {
		t.Parallel()
		m := bundletest.ProctorManifest("b", "")
		m.Agent, m.Model, m.AgentFramework = strings.Repeat("é", 200), strings.Repeat("m", 200), strings.Repeat("f", 200)
		m.Subset, m.Notes = strings.Repeat("s", 100), strings.Repeat("line\n", 400)
		b := mustInspect(t, bundletest.Proctor(t, filepath.Join(t.TempDir(), "b.zip"), m, bundletest.ProctorTask{ID: "1"}))
		require.Empty(t, b.Report.InvalidFiles)
		require.Equal(t, m.Model, b.Manifest.Model)
	})
	t.Run("dates", func(t *testing.T) {
		t.Parallel()
		for _, date := range []string{"2025-10-19", "2025-10-19T14:40:00Z", "2025-10-19T14:40:00+02:00", ""} {
			m := bundletest.ProctorManifest("b", "")
			m.Date = date
			b := mustInspect(t, bundletest.Proctor(t, filepath.Join(t.TempDir(), "b.zip"), m, bundletest.ProctorTask{ID: "1"}))
			require.Empty(t, b.Report.InvalidFiles, date)
		}
	})
}

func TestInspect_Duplicates(t *testing.T) {
	t.Parallel()
	for _, kind := range kinds {
		entries := bundletest.AgentLabEntries(
			bundletest.AgentLabTask{TaskName: "webarena.310", Seed: 1, Steps: 1},
			bundletest.AgentLabTask{TaskName: "webarena.310", Seed: 2, Steps: 2},
			bundletest.AgentLabTask{TaskName: "webarena.311", Seed: 1, Steps: 1})
		b := mustInspect(t, bundletest.Write(t, filepath.Join(t.TempDir(), "b."+string(kind)), kind, entries))
		require.Equal(t, []string{"310", "311"}, taskIDs(b))
		require.Equal(t, []string{"310"}, b.Report.TasksDuplicated)
		require.Len(t, taskByID(t, b, "310").Steps, 2, "the first folder wins")
		require.Len(t, b.Report.InvalidFiles, 1)
		require.Contains(t, b.Report.InvalidFiles[0].Problem, "task 310 is already in "+bundletest.AgentLabFolder("webarena.310", 1))
		for _, f := range b.Files() {
			require.NotContains(t, f.Path, bundletest.AgentLabFolder("webarena.310", 2), "nothing of the duplicate is extracted")
		}
		rep := b.Check(bundle.Catalog{Benchmark: "webarena-verified", TaskIDs: []string{"310", "311"}}, bundle.Declared{})
		require.Contains(t, strings.Join(rep.Warnings, "\n"), "1 task appears more than once")
	}
}

func TestInspect_SharedData(t *testing.T) {
	t.Parallel()
	data := bundletest.FromDir(t, filepath.Join(sharedData(t), "webarena-verified", "demo-outputs"), "")
	for _, kind := range kinds {
		for _, wrap := range []string{"", "demo"} {
			t.Run(fmt.Sprintf("webarena-verified demo outputs/%s/%q", kind, wrap), func(t *testing.T) {
				t.Parallel()
				entries := data
				if wrap != "" {
					entries = bundletest.Wrap(wrap, entries)
				}
				path := bundletest.Write(t, filepath.Join(t.TempDir(), "demo."+string(kind)), kind, entries)
				b, err := inspect(t, path, bundle.DefaultLimits()) // 108's HAR is over the small test limits
				require.NoError(t, err)
				require.Equal(t, models.BundleWebArenaVerified, b.Format)
				require.Equal(t, []string{"107", "108"}, taskIDs(b))
				require.Empty(t, b.Report.InvalidFiles)
				t107, t108 := taskByID(t, b, "107"), taskByID(t, b, "108")
				require.Empty(t, t107.HAR, "107 has no network.har")
				require.Equal(t, "NAVIGATE", responseField(t, t107.Final, "task_type"))
				require.Equal(t, "RETRIEVE", responseField(t, t108.Final, "task_type"))
				require.Equal(t, filepath.ToSlash(filepath.Join(wrap, "108", "network.har")), t108.HAR)
				require.Equal(t, 1, b.Report.HARs)
				require.Contains(t, strings.Join(b.Report.Warnings, "\n"), "eval_result.json", "the reference evaluator's outputs are not read")

				rep := b.Check(bundle.Catalog{Benchmark: "webarena-verified", TaskIDs: catalogIDs(812), SubsetTaskIDs: []string{"107", "108", "109"}, Subset: "demo"},
					bundle.Declared{Benchmark: "webarena-verified", Subset: "demo"})
				require.Empty(t, rep.Blocking)
				require.Equal(t, []string{"107", "108"}, rep.TasksFound)
				require.Equal(t, []string{"109"}, rep.TasksMissing)
				require.Contains(t, strings.Join(rep.Warnings, "\n"), "1 task has no network.har")

				var hars []bundle.File
				require.NoError(t, extractAll(t, b, filepath.Join(t.TempDir(), "x"), kind, entries, nil, func(f bundle.File, content []byte) {
					hars = append(hars, f)
					require.True(t, json.Valid(content))
				}))
				require.Len(t, hars, 1)
				require.Equal(t, bundle.KindHAR, hars[0].Kind)
				require.Equal(t, "108", hars[0].TaskID)
			})
		}
	}
	t.Run("online-mind2web example", func(t *testing.T) {
		t.Parallel()
		result, err := os.ReadFile(filepath.Join(sharedData(t), "online-mind2web", "example-result.json"))
		require.NoError(t, err)
		var doc struct {
			TaskID  string   `json:"task_id"`
			Actions []string `json:"action_history"`
			Final   string   `json:"final_result_response"`
		}
		require.NoError(t, json.Unmarshal(result, &doc))
		entries := []bundletest.Entry{{Name: doc.TaskID + "/result.json", Body: result}}
		for i := range doc.Actions {
			entries = append(entries, bundletest.Entry{Name: fmt.Sprintf("%s/trajectory/%d_full_screenshot.png", doc.TaskID, i), Body: bundletest.PNG(40, 30)})
		}
		for _, kind := range kinds {
			b := mustInspect(t, bundletest.Write(t, filepath.Join(t.TempDir(), "om."+string(kind)), kind, entries))
			require.Equal(t, models.BundleOnlineMind2Web, b.Format)
			task := taskByID(t, b, doc.TaskID)
			require.Empty(t, b.Report.InvalidFiles)
			require.Len(t, task.Steps, len(doc.Actions))
			require.Equal(t, doc.Actions[3], action(t, task.Steps[3].Action).Text)
			require.Equal(t, "Click on 'Database Guidelines' to find information about submission of releases.", task.Steps[3].Thought)
			require.Equal(t, doc.Final, action(t, task.Final).Text)
			require.False(t, task.TokensStated || task.CostStated, "the published result states no tokens or cost: unknown, not zero")
		}
	})
}

func sharedData(t *testing.T) string {
	t.Helper()
	return testenv.SharedDataDir(t)
}

func responseField(t *testing.T, final json.RawMessage, key string) string {
	t.Helper()
	var resp map[string]any
	require.NoError(t, json.Unmarshal(action(t, final).Response, &resp))
	s, _ := resp[key].(string)
	return s
}

func catalogIDs(n int) []string {
	ids := make([]string, 0, n)
	for i := range n {
		ids = append(ids, fmt.Sprint(i))
	}
	return ids
}

// extractAll writes entries to path when entries is not nil, then extracts
// b from path, handing every file's content to fn.
func extractAll(t testing.TB, b *bundle.Bundle, path string, kind bundletest.Kind, entries []bundletest.Entry, keep func(string) bool, fn func(bundle.File, []byte)) error {
	t.Helper()
	if entries != nil {
		bundletest.Write(t, path, kind, entries)
	}
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	st, err := f.Stat()
	require.NoError(t, err)
	return b.Extract(context.Background(), f, st.Size(), keep, func(file bundle.File, content io.Reader) error {
		body, err := io.ReadAll(content)
		if err != nil {
			return err
		}
		require.Equal(t, file.Size, int64(len(body)))
		fn(file, body)
		return nil
	})
}

func readAll(t testing.TB, open func() io.Reader) []byte {
	t.Helper()
	b, err := io.ReadAll(open())
	require.NoError(t, err)
	return b
}

func TestCheck(t *testing.T) {
	t.Parallel()
	path := bundletest.WebArenaVerified(t, filepath.Join(t.TempDir(), "b.zip"),
		bundletest.WAVTask{ID: "1"}, bundletest.WAVTask{ID: "2", Missing: true}, bundletest.WAVTask{ID: "3"},
		bundletest.WAVTask{ID: "900"}, bundletest.WAVTask{ID: "abc", NoHAR: true})
	b := mustInspect(t, path)
	catalog := bundle.Catalog{Benchmark: "webarena-verified", TaskIDs: catalogIDs(10), Subset: "hard", SubsetTaskIDs: []string{"1", "2", "4", "5"}}
	rep := b.Check(catalog, bundle.Declared{Benchmark: "webarena-verified", Subset: "hard"})
	require.Equal(t, []string{"1"}, rep.TasksFound)
	require.Equal(t, []string{"2"}, rep.TasksNotAttempted)
	require.Equal(t, []string{"4", "5"}, rep.TasksMissing)
	require.Equal(t, []string{"900", "abc"}, rep.TasksUnknown)
	require.Equal(t, []string{"3"}, rep.TasksOutside)
	require.Equal(t, models.BundleCoverage{Benchmark: "webarena-verified", BenchmarkTasks: 10, Subset: "hard", SubsetTasks: 4, Covered: 2, Fraction: 0.5}, rep.Coverage)
	require.Empty(t, rep.Blocking)
	warnings := strings.Join(rep.Warnings, "\n")
	require.Contains(t, warnings, "2 tasks are not tasks of webarena-verified and will be ignored: 900, abc")
	require.Contains(t, warnings, "1 task is outside the subset hard and will be ignored: 3")
	require.Contains(t, warnings, "the bundle covers 2 of the 4 tasks of the subset hard (50.0%): the 2 absent tasks will count as failures")
	require.NotContains(t, warnings, "low coverage")
	require.Equal(t, rep, b.Report, "Check completes the bundle's report")

	t.Run("checking again starts afresh", func(t *testing.T) {
		again := b.Check(catalog, bundle.Declared{Benchmark: "webarena-verified", Subset: "hard"})
		require.Equal(t, rep, again)
	})
	t.Run("full set", func(t *testing.T) {
		rep := b.Check(bundle.Catalog{Benchmark: "webarena-verified", TaskIDs: catalogIDs(10)}, bundle.Declared{Benchmark: "webarena-verified"})
		require.Equal(t, "full", rep.Coverage.Subset)
		require.Equal(t, []string{"1", "3"}, rep.TasksFound)
		require.Empty(t, rep.TasksOutside)
		require.Len(t, rep.TasksMissing, 7)
		require.Contains(t, strings.Join(rep.Warnings, "\n"), "low coverage: the bundle covers 3 of the 10 tasks")
	})
	t.Run("another benchmark", func(t *testing.T) {
		rep := b.Check(bundle.Catalog{Benchmark: "odysseys", TaskIDs: []string{"a1b2", "c3d4"}}, bundle.Declared{Benchmark: "odysseys"})
		require.Equal(t, []string{"none of the bundle's 5 tasks is a task of odysseys: is it for another benchmark?"}, rep.Blocking)
		require.Len(t, rep.TasksUnknown, 5)
	})
	t.Run("no task", func(t *testing.T) {
		b := mustInspect(t, bundletest.Proctor(t, filepath.Join(t.TempDir(), "b.zip"), bundletest.ProctorManifest("webarena-verified", "")))
		rep := b.Check(catalog, bundle.Declared{Benchmark: "webarena-verified", Subset: "hard"})
		require.Equal(t, []string{"the bundle holds no task"}, rep.Blocking)
	})
	t.Run("manifest for another benchmark and subset", func(t *testing.T) {
		m := bundletest.ProctorManifest("odysseys", "hard")
		b := mustInspect(t, bundletest.Proctor(t, filepath.Join(t.TempDir(), "b.zip"), m, bundletest.ProctorTask{ID: "1", Steps: 1}))
		rep := b.Check(catalog, bundle.Declared{Benchmark: "webarena-verified", Subset: "full", Agent: "acme/navigator"})
		require.Equal(t, []string{
			`manifest.json says benchmark "odysseys", but the submission is for "webarena-verified"`,
			`manifest.json says subset "hard", but the submission is for "full"`,
		}, rep.Blocking)
		rep = b.Check(catalog, bundle.Declared{Benchmark: "odysseys", Subset: "hard", Agent: "other"})
		require.Empty(t, rep.Blocking)
		require.Contains(t, strings.Join(rep.Warnings, "\n"), `manifest.json names agent "acme/navigator", but the submission is for "other"`)
		rep = b.Check(catalog, bundle.Declared{Benchmark: "odysseys", Subset: "hard", Agent: "navigator"})
		require.NotContains(t, strings.Join(rep.Warnings, "\n"), "names agent")
	})
	t.Run("invalid files are summarised", func(t *testing.T) {
		b := mustInspect(t, bundletest.WebArenaVerified(t, filepath.Join(t.TempDir(), "b.zip"), bundletest.WAVTask{ID: "1", Response: "nope"}))
		rep := b.Check(catalog, bundle.Declared{})
		require.Contains(t, strings.Join(rep.Warnings, "\n"), "1 file is invalid")
	})
	t.Run("report lists are never null", func(t *testing.T) {
		b := mustInspect(t, bundletest.WebArenaVerified(t, filepath.Join(t.TempDir(), "b.zip"), bundletest.WAVTask{ID: "1"}))
		raw, err := json.Marshal(b.Check(bundle.Catalog{Benchmark: "x", TaskIDs: []string{"1"}}, bundle.Declared{}))
		require.NoError(t, err)
		require.NotContains(t, string(raw), "null")
	})
}

func TestExtract(t *testing.T) {
	t.Parallel()
	entries := append(bundletest.ProctorEntries(bundletest.ProctorManifest("b", ""),
		bundletest.ProctorTask{ID: "1", Steps: 2, HAR: true}, bundletest.ProctorTask{ID: "2", Steps: 1},
		bundletest.ProctorTask{ID: "3", StepsJSONL: `{"action": "x", "screenshot": "bad.png"}`, Extra: []bundletest.Entry{
			{Name: "bad.png", Body: []byte("nope")}, {Name: "screenshots/unused.png", Body: bundletest.PNG(5, 5)}}}),
		bundletest.Entry{Name: "tasks/1/big.bin", Open: bundletest.Random(512<<10, 1)})
	for _, kind := range kinds {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			path := bundletest.Write(t, filepath.Join(t.TempDir(), "b."+string(kind)), kind, entries)
			b := mustInspect(t, path)
			want := map[string][]byte{}
			for _, e := range entries {
				want[e.Name] = e.Body
			}
			var got []bundle.File
			require.NoError(t, extractAll(t, b, path, kind, nil, nil, func(f bundle.File, content []byte) {
				got = append(got, f)
				require.Equal(t, want[f.Path], content, f.Path)
			}))
			require.ElementsMatch(t, []bundle.File{
				{Path: "tasks/1/screenshots/0000.png", TaskID: "1", Kind: bundle.KindScreenshot, Size: int64(len(want["tasks/1/screenshots/0000.png"])), ContentType: "image/png"},
				{Path: "tasks/1/screenshots/0001.png", TaskID: "1", Kind: bundle.KindScreenshot, Size: int64(len(want["tasks/1/screenshots/0001.png"])), ContentType: "image/png"},
				{Path: "tasks/1/network.har", TaskID: "1", Kind: bundle.KindHAR, Size: int64(len(want["tasks/1/network.har"])), ContentType: "application/json"},
				{Path: "tasks/2/screenshots/0000.png", TaskID: "2", Kind: bundle.KindScreenshot, Size: int64(len(want["tasks/2/screenshots/0000.png"])), ContentType: "image/png"},
			}, got)
			require.ElementsMatch(t, got, b.Files())

			got = nil
			require.NoError(t, extractAll(t, b, path, kind, nil, func(id string) bool { return id == "2" }, func(f bundle.File, _ []byte) { got = append(got, f) }))
			require.Len(t, got, 1)
			require.Equal(t, "2", got[0].TaskID)

			f, err := os.Open(path)
			require.NoError(t, err)
			defer f.Close()
			st, _ := f.Stat()
			boom := errors.New("store is down")
			err = b.Extract(context.Background(), f, st.Size(), nil, func(bundle.File, io.Reader) error { return boom })
			require.ErrorIs(t, err, boom)
			require.ErrorContains(t, err, "extract tasks/1/")

			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			err = b.Extract(ctx, f, st.Size(), nil, func(bundle.File, io.Reader) error { return nil })
			require.ErrorIs(t, err, context.Canceled)

			// A reader that skips what it is given still leaves the walk consistent.
			n := 0
			require.NoError(t, b.Extract(context.Background(), f, st.Size(), nil, func(bundle.File, io.Reader) error { n++; return nil }))
			require.Equal(t, 4, n)
		})
	}
	t.Run("an archive changed since inspection", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		first := bundletest.Proctor(t, filepath.Join(dir, "a.zip"), bundletest.ProctorManifest("b", ""), bundletest.ProctorTask{ID: "1", Steps: 1})
		b := mustInspect(t, first)
		changed := append(bundletest.ProctorEntries(bundletest.ProctorManifest("b", ""), bundletest.ProctorTask{ID: "1", Steps: 0}),
			bundletest.Entry{Name: "tasks/1/screenshots/0000.png", Body: bundletest.PNG(300, 200)})
		err := extractAll(t, b, filepath.Join(dir, "b.zip"), bundletest.Zip, changed, nil, func(bundle.File, []byte) {})
		require.ErrorContains(t, err, "the archive changed since it was inspected")
	})
}

func TestInspect_ProgressAndErrors(t *testing.T) {
	t.Parallel()
	for _, kind := range kinds {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			entries := bundletest.WebArenaVerifiedEntries(bundletest.WAVTask{ID: "1", HAR: readAll(t, bundletest.LargeHAR(3<<20))})
			path := bundletest.Write(t, filepath.Join(t.TempDir(), "b."+string(kind)), kind, entries)
			body, err := os.ReadFile(path)
			require.NoError(t, err)
			size := int64(len(body))

			var calls [][2]int64
			_, err = bundle.Inspect(context.Background(), bytes.NewReader(body), size, bundle.DefaultLimits(), func(done, total int64) {
				calls = append(calls, [2]int64{done, total})
			})
			require.NoError(t, err)
			require.GreaterOrEqual(t, len(calls), 2, "progress is told while reading, not only at the end")
			require.Equal(t, [2]int64{size, size}, calls[len(calls)-1])
			for i := 1; i < len(calls); i++ {
				require.GreaterOrEqual(t, calls[i][0], calls[i-1][0])
				require.LessOrEqual(t, calls[i][0], size)
			}

			broken := errors.New("connection reset by the store")
			_, err = bundle.Inspect(context.Background(), &failingReader{r: bytes.NewReader(body), after: size / 2, err: broken}, size, bundle.DefaultLimits(), nil)
			require.ErrorIs(t, err, broken)
			var refused *bundle.RefusedError
			require.False(t, errors.As(err, &refused), "a storage failure is not the bundle's fault: %v", err)

			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_, err = bundle.Inspect(ctx, bytes.NewReader(body), size, bundle.DefaultLimits(), nil)
			require.ErrorIs(t, err, context.Canceled)
		})
	}
}

// failingReader fails every read past an offset.
type failingReader struct {
	r     io.ReaderAt
	after int64
	err   error
}

func (f *failingReader) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > f.after {
		return 0, f.err
	}
	return f.r.ReadAt(p, off)
}

// TestInspect_Mutations flips bytes of valid bundles: every result is a
// bundle or a *RefusedError, never a panic or another error.
func TestInspect_Mutations(t *testing.T) {
	t.Parallel()
	entries := append(bundletest.ProctorEntries(bundletest.ProctorManifest("b", ""), bundletest.ProctorTask{ID: "1", Steps: 2, HAR: true}),
		bundletest.WebArenaVerifiedEntries(bundletest.WAVTask{ID: "2"})...)
	for _, kind := range kinds {
		path := bundletest.Write(t, filepath.Join(t.TempDir(), "b."+string(kind)), kind, entries)
		body, err := os.ReadFile(path)
		require.NoError(t, err)
		seed := uint64(1)
		next := func() uint64 { seed = seed*6364136223846793005 + 1442695040888963407; return seed >> 33 }
		for i := range 300 {
			mutated := bytes.Clone(body)
			for range 1 + i%4 {
				mutated[next()%uint64(len(mutated))] ^= byte(1 + next()%255)
			}
			if i%10 == 0 {
				mutated = mutated[:next()%uint64(len(mutated))]
			}
			b, err := bundle.Inspect(context.Background(), bytes.NewReader(mutated), int64(len(mutated)), bundletest.Limits(), nil)
			if err != nil {
				var refused *bundle.RefusedError
				require.ErrorAs(t, err, &refused, "mutation %d of %s", i, kind)
				require.True(t, strings.ToValidUTF8(err.Error(), "") == err.Error())
				continue
			}
			raw, err := json.Marshal(b.Check(bundle.Catalog{Benchmark: "b", TaskIDs: []string{"1", "2"}}, bundle.Declared{}))
			require.NoError(t, err)
			require.True(t, json.Valid(raw))
			for _, p := range b.Report.InvalidFiles {
				require.True(t, strings.ToValidUTF8(p.Path+p.Problem, "") == p.Path+p.Problem, "problems are valid UTF-8")
			}
		}
	}
}

func FuzzInspect(f *testing.F) {
	dir := f.TempDir()
	for _, kind := range kinds {
		path := bundletest.Write(f, filepath.Join(dir, "b."+string(kind)), kind, append(
			bundletest.ProctorEntries(bundletest.ProctorManifest("b", ""), bundletest.ProctorTask{ID: "1", Steps: 1}),
			bundletest.Entry{Name: "tasks/1/network.har", Body: bundletest.HAR(1)}))
		body, err := os.ReadFile(path)
		require.NoError(f, err)
		f.Add(body)
	}
	f.Add([]byte("PK\x05\x06"))
	f.Add([]byte{0x1f, 0x8b})
	f.Fuzz(func(t *testing.T, body []byte) {
		_, err := bundle.Inspect(context.Background(), bytes.NewReader(body), int64(len(body)), bundletest.Limits(), nil)
		if err != nil {
			var refused *bundle.RefusedError
			require.ErrorAs(t, err, &refused)
		}
	})
}
