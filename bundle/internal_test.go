package bundle

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCleanName(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, clean string
		dir         bool
		reason      string
	}{
		{"107/agent_response.json", "107/agent_response.json", false, ""},
		{"./107/", "107", true, ""},
		{"./", "", true, ""},
		{"a//b/./c", "a/b/c", false, ""},
		{"a/b..c/...", "a/b..c/...", false, ""},
		{"café/日本.png", "café/日本.png", false, ""},
		{"../x", "", false, `".."`},
		{"a/../../x", "", false, `".."`},
		{"a/..", "", false, `".."`},
		{"/etc/passwd", "", false, "absolute path"},
		{"C:/Windows/x", "", false, "absolute path (drive letter)"},
		{`a\..\x`, "", false, "backslash"},
		{"a\x00b", "", false, "control character"},
		{"a\nb", "", false, "control character"},
		{"caf\xe9", "", false, "not valid UTF-8"},
	}
	for _, c := range cases {
		clean, dir, reason := cleanName(c.name)
		if c.reason != "" {
			require.Contains(t, reason, c.reason, c.name)
			continue
		}
		require.Empty(t, reason, c.name)
		require.Equal(t, c.clean, clean, c.name)
		require.Equal(t, c.dir, dir, c.name)
	}
	require.Equal(t, "caf\uFFFD\uFFFD", printableName("caf\xe9\x01"))
}

func TestIgnoredName(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"__MACOSX/107/._a.json": true, "x/__MACOSX/a": true, "__MACOSX": true, ".DS_Store": true, "107/.DS_Store": true,
		"107/._network.har": true, "e/step_3.pkl.gz": true, "e/exp_args.pkl": true,
		"107/agent_response.json": false, "MACOSX/a": false, "107/.missing": false, "a.pkl.txt": false,
	} {
		require.Equal(t, want, ignoredName(name), name)
	}
}

func TestHumanBytes(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{
		0: "0 bytes", 900: "900 bytes", 1024: "1 KiB", 1536: "1.5 KiB", 512 << 20: "512 MiB", 8 << 30: "8 GiB",
		1<<20 + 1: "1048577 bytes", 3 << 40: "3 TiB",
	} {
		require.Equal(t, want, humanBytes(n), n)
	}
}

func TestCompareIDs(t *testing.T) {
	t.Parallel()
	ids := []string{"abc", "10", "9", "108", "a1", "0"}
	sortIDs(ids)
	require.Equal(t, []string{"0", "9", "10", "108", "a1", "abc"}, ids)
	require.Equal(t, -1, compareNumbered("t/2_full_screenshot.png", "t/10_full_screenshot.png"))
	require.Equal(t, -1, compareNumbered("t/10.png", "t/final.png"))
	require.Equal(t, 1, compareNumbered("t/b.png", "t/a.png"))
}

func sortIDs(ids []string) {
	for i := range ids {
		for j := i + 1; j < len(ids); j++ {
			if compareIDs(ids[j], ids[i]) < 0 {
				ids[i], ids[j] = ids[j], ids[i]
			}
		}
	}
}

func TestAgentLabNames(t *testing.T) {
	t.Parallel()
	re := agentLabFolder()
	for folder, want := range map[string][2]string{
		"2024-10-01_12-30-00_GenericAgent-gpt-4o_on_webarena.310_42":      {"GenericAgent-gpt-4o", "webarena.310"},
		"2024-10-01_12-30-00_GenericAgent-gpt-4o_on_webarena.310_42_1":    {"GenericAgent-gpt-4o", "webarena.310"},
		"GenericAgent_on_workarena.servicenow.order-ipad-pro_7":           {"GenericAgent", "workarena.servicenow.order-ipad-pro"},
		"MyAgent_on_webarena.12":                                          {"MyAgent", "webarena.12"},
		"2025-01-02_03-04-05_Agent_with_underscores_on_miniwob.click-a_3": {"Agent_with_underscores", "miniwob.click-a"},
	} {
		m := re.FindStringSubmatch(folder)
		require.NotNil(t, m, folder)
		require.Equal(t, want, [2]string{m[1], m[2]}, folder)
	}
	require.Nil(t, re.FindStringSubmatch("results-2024"))
	require.Equal(t, "310", agentLabTaskID("webarena.310"))
	require.Equal(t, "servicenow.order-ipad-pro", agentLabTaskID("workarena.servicenow.order-ipad-pro"))
	require.Equal(t, "310", agentLabTaskID("310"))

	for action, want := range map[string]string{
		`send_msg_to_user("The answer is 42")`:   `{"type":"answer","text":"The answer is 42"}`,
		`send_msg_to_user('it\'s "done"\nok')`:   `{"type":"answer","text":"it's \"done\"\nok"}`,
		` report_infeasible("no such order") `:   `{"type":"stop","reason":"no such order"}`,
		`click('12')`:                            ``,
		`send_msg_to_user("")`:                   ``,
		`send_msg_to_user(text)`:                 ``,
		`send_msg_to_user("a") ; click('1')`:     ``,
		`send_msg_to_user("<b>bold</b> & more")`: `{"type":"answer","text":"<b>bold</b> & more"}`,
	} {
		raw, ok := agentLabFinal(action)
		require.Equal(t, want != "", ok, action)
		if ok {
			require.JSONEq(t, want, string(raw), action)
		}
	}
}
