package har_test

import (
	"bytes"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/har"
	"proctor/models"
)

// harFixtureStart is when the fixture HAR's episode began; its steps are
// timelineFixtureSteps.
func harFixtureStart() time.Time { return time.Date(2025, 5, 1, 8, 0, 0, 0, time.UTC) }

// timelineFixtureSteps are the steps of the episode that recorded
// testdata/timeline.har: each observed, asked the agent and acted, and was
// saved at the end; the last one answered.
func timelineFixtureSteps() []models.Step {
	at := func(ms int) time.Time { return harFixtureStart().Add(time.Duration(ms) * time.Millisecond) }
	return []models.Step{
		{Index: 0, ObserveMS: 500, AgentMS: 1000, ActMS: 1000, CreatedAt: at(3000)}, // 0.5 s – 3.0 s
		{Index: 1, ObserveMS: 500, AgentMS: 1000, ActMS: 1000, CreatedAt: at(6000)}, // 3.5 s – 6.0 s
		{Index: 2, ObserveMS: 500, AgentMS: 1000, ActMS: 0, CreatedAt: at(8000)},    // 6.5 s – 8.0 s
	}
}

func readHARFixture(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/timeline.har")
	require.NoError(t, err)
	return b
}

func requestLines(reqs []models.NetworkRequest) []string {
	out := []string{}
	for _, r := range reqs {
		out = append(out, r.Method+" "+strings.TrimPrefix(r.URL, "http://shop.test")+" "+strconv.Itoa(r.Status))
	}
	return out
}

func TestRequests(t *testing.T) {
	t.Parallel()
	reqs, err := har.Requests(bytes.NewReader(readHARFixture(t)))
	require.NoError(t, err)
	require.Equal(t, []string{
		"GET / 200", "POST /cart/add 302", "GET /cart 200", "GET /search?q=usb-c 200", "GET /static/app.css 200",
		"GET /aborted 0", "GET /api/price 500", "GET /final 200", "GET /admin/probe 200",
	}, requestLines(reqs), "file order; the entry without a start time is left out")
	require.Equal(t, harFixtureStart().Add(2600*time.Millisecond), reqs[1].Started.UTC(), "offsets are honoured")
	require.Equal(t, "text/html; charset=utf-8", reqs[0].MIMEType)
	require.Equal(t, 42.5, reqs[0].DurationMS)
	require.Zero(t, reqs[5].DurationMS, "an aborted request's -1 is no duration")

	t.Run("Errors", func(t *testing.T) {
		for name, tc := range map[string]struct{ doc, want string }{
			"empty":       {"", "the HAR is empty"},
			"not JSON":    {"<html>", "not valid JSON"},
			"an array":    {"[]", "not a HAR"},
			"no log":      {`{"version": 1}`, `has no "log"`},
			"truncated":   {`{"log": {"entries": [{"startedDateTime": "2025-05-01T08:00:00Z"`, "truncated"},
			"bad entries": {`{"log": {"entries": {"a": 1}}}`, "not a HAR"},
			"bad entry":   {`{"log": {"entries": [{"startedDateTime": 5}]}}`, "not a HAR: entry 0 has a number where the HAR format has a string (startedDateTime)"},
		} {
			_, err := har.Requests(strings.NewReader(tc.doc))
			require.ErrorContains(t, err, tc.want, name)
			require.NotZero(t, har.KindOf(err), name)
		}
		reqs, err := har.Requests(strings.NewReader(`{"log": {"version": "1.2"}}`))
		require.NoError(t, err)
		require.Empty(t, reqs, "a log without entries has no requests")
	})
}

// TestAssignRequests places the fixture HAR's requests on the steps they
// started in: the start page on the first step, each boundary on the later
// step, the last step up to when it was saved, and nothing after it.
func TestAssignRequests(t *testing.T) {
	t.Parallel()
	reqs, err := har.Requests(bytes.NewReader(readHARFixture(t)))
	require.NoError(t, err)
	got := models.AssignRequests(timelineFixtureSteps(), reqs)
	require.Len(t, got, 3)
	require.Equal(t, []string{"GET / 200", "POST /cart/add 302", "GET /cart 200"}, requestLines(got[0]))
	require.Equal(t, []string{"GET /static/app.css 200", "GET /search?q=usb-c 200", "GET /aborted 0"}, requestLines(got[1]), "in start order")
	require.Equal(t, []string{"GET /api/price 500", "GET /final 200"}, requestLines(got[2]))
}

func TestFilter(t *testing.T) {
	t.Parallel()
	cutoff := harFixtureStart().Add(8 * time.Second)
	var out bytes.Buffer
	dropped, err := har.Filter(&out, bytes.NewReader(readHARFixture(t)), func(t time.Time) bool { return !t.After(cutoff) })
	require.NoError(t, err)
	require.Equal(t, 2, dropped, "the request after the cutoff and the undated one")
	require.True(t, json.Valid(out.Bytes()), out.String())
	var doc struct {
		Log struct {
			Version string           `json:"version"`
			Creator map[string]any   `json:"creator"`
			Browser map[string]any   `json:"browser"`
			Pages   []map[string]any `json:"pages"`
			Entries []map[string]any `json:"entries"`
		} `json:"log"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc))
	require.Equal(t, "1.2", doc.Log.Version)
	require.Equal(t, "Playwright", doc.Log.Creator["name"])
	require.Equal(t, "chromium", doc.Log.Browser["name"])
	require.Len(t, doc.Log.Pages, 1)
	require.Len(t, doc.Log.Entries, 8)
	require.NotContains(t, out.String(), "/admin/probe")
	require.Contains(t, out.String(), `"text": "<!doctype html><title>Shop</title>`, "entries are copied as written")
	require.Contains(t, out.String(), `"creator": {"name": "Playwright", "version": "1.52.0"},`, "so is the rest of the log")
	reqs, err := har.Requests(&out)
	require.NoError(t, err)
	require.Len(t, reqs, 8)

	t.Run("KeepNone", func(t *testing.T) {
		var out bytes.Buffer
		dropped, err := har.Filter(&out, bytes.NewReader(readHARFixture(t)), func(time.Time) bool { return false })
		require.NoError(t, err)
		require.Equal(t, 10, dropped)
		require.Contains(t, out.String(), `"entries": []`)
		require.True(t, json.Valid(out.Bytes()))
	})
	t.Run("KeepAll", func(t *testing.T) {
		var out bytes.Buffer
		in := readHARFixture(t)
		dropped, err := har.Filter(&out, bytes.NewReader(in), func(time.Time) bool { return true })
		require.NoError(t, err)
		require.Equal(t, 1, dropped, "only the undated entry")
		require.True(t, json.Valid(out.Bytes()))
		require.Less(t, out.Len(), len(in))
	})
	t.Run("NotAHAR", func(t *testing.T) {
		_, err := har.Filter(&bytes.Buffer{}, strings.NewReader(`{"entries": []}`), func(time.Time) bool { return true })
		require.ErrorContains(t, err, `has no "log"`)
	})
}
