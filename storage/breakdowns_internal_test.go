package storage

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/stats"
)

// TestJSONField compares the member extraction with encoding/json on
// objects whose strings hold brackets, quotes and escapes.
func TestJSONField(t *testing.T) {
	t.Parallel()
	doc := `{"a":"}{][\"\\","b" : [1, {"c": "]"}, "x\"y"] ,"n":-1.5e3,"t":true, "empty":{}, "z":{"k":[[]]}}`
	var want map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(doc), &want))
	for key, raw := range want {
		got, err := jsonField([]byte(doc), key)
		require.NoError(t, err, key)
		require.JSONEq(t, string(raw), string(got), key)
	}
	got, err := jsonField([]byte(doc), "missing")
	require.NoError(t, err)
	require.Nil(t, got)
	got, err = jsonField([]byte(" { } "), "a")
	require.NoError(t, err)
	require.Nil(t, got)
	got, err = jsonField([]byte(" null"), "a")
	require.NoError(t, err, "null has no members")
	require.Nil(t, got)

	for _, bad := range []string{``, `[]`, `{"a"}`, `{"a":}`, `{"a":"open`, `{"a":[1,2}`, `{"a":1 "b":2}`, `{a:1}`} {
		_, err := jsonField([]byte(bad), "b")
		require.Error(t, err, bad)
	}
}

// TestDecodeStoredReport reads back what the metrics job stores.
func TestDecodeStoredReport(t *testing.T) {
	t.Parallel()
	attempts := []stats.Attempt{
		{TaskID: 1, Outcome: "success", Site: `shop "north"`, Difficulty: "easy", IntentTemplate: "Find {{x}} ]"},
		{TaskID: 2, Outcome: "failure", Site: "forum", Difficulty: "hard", Attributes: []string{"multihop"}},
		{TaskID: 3, Outcome: "error", Site: "forum", Difficulty: "hard"},
	}
	report := stats.NewReport("full", false, attempts)
	raw, err := json.Marshal(report)
	require.NoError(t, err)
	rep, err := decodeStoredReport(raw, "site")
	require.NoError(t, err)
	require.Equal(t, 3, rep.metrics.Graded)
	require.Equal(t, 1, rep.metrics.Successes)
	require.Equal(t, report.Metrics.SuccessCI, rep.metrics.SuccessCI)
	require.Len(t, rep.groups, 2)
	require.Equal(t, "forum", rep.groups[0].Key)
	require.Equal(t, 2, rep.groups[0].Metrics.Graded)
	require.Equal(t, `shop "north"`, rep.groups[1].Key)
	require.Len(t, rep.difficulty, 2)
	require.Equal(t, "easy", rep.difficulty[0].Key)

	rep, err = decodeStoredReport(raw, "attribute")
	require.NoError(t, err)
	require.Equal(t, []string{"multihop", stats.Unlabeled}, []string{rep.groups[0].Key, rep.groups[1].Key})

	_, err = decodeStoredReport([]byte(`{"metrics": [}`), "site")
	require.Error(t, err)
	rep, err = decodeStoredReport([]byte(`{"metrics": {"graded": 2}}`), "site")
	require.NoError(t, err, "a report without breakdowns has no groups")
	require.Empty(t, rep.groups)
	raw, err = json.Marshal(stats.Report{Subset: "full", Metrics: stats.Metrics{Graded: 4, Successes: 1}})
	require.NoError(t, err)
	require.Contains(t, string(raw), `"breakdowns":null`)
	rep, err = decodeStoredReport(raw, "site")
	require.NoError(t, err, "nor one whose breakdowns are null")
	require.Empty(t, rep.groups)
	require.Equal(t, 4, rep.metrics.Graded)
}
