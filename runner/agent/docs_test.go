package agent_test

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/runner/agent"
)

// TestProtocolDocExamples keeps docs/agent-protocol.md honest: every JSON
// example in it must decode strictly as what it shows.
func TestProtocolDocExamples(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/agent-protocol.md")
	require.NoError(t, err)
	blocks := regexp.MustCompile("(?s)```json\n(.*?)```").FindAllStringSubmatch(string(doc), -1)
	require.NotEmpty(t, blocks)
	if http := regexp.MustCompile("(?s)```http\n.*?\n\n(.*?)```").FindStringSubmatch(string(doc)); http != nil {
		blocks = append(blocks, http)
	}

	strict := func(t *testing.T, raw string, dst any) {
		t.Helper()
		dec := json.NewDecoder(strings.NewReader(raw))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(dst), raw)
	}
	var requests, responses, actions, scripts int
	for _, b := range blocks {
		text := b[1]
		var probe map[string]json.RawMessage
		if json.Unmarshal([]byte(text), &probe) != nil {
			// One action per line.
			for line := range strings.SplitSeq(strings.TrimSpace(text), "\n") {
				var a models.Action
				strict(t, line, &a)
				require.NoError(t, a.Validate(), line)
				actions++
			}
			continue
		}
		switch {
		case probe["protocol"] != nil:
			var req models.StepRequest
			strict(t, text, &req)
			require.Equal(t, models.AgentProtocol, req.Protocol)
			requests++
		case probe["action"] != nil:
			_, err := agent.DecodeStepResponse([]byte(text))
			require.NoError(t, err, text)
			responses++
		case probe["actions"] != nil:
			require.NoError(t, agent.CheckSettings(models.AgentReplay, json.RawMessage(text)))
			scripts++
		case probe["type"] != nil:
			var a models.Action
			strict(t, text, &a)
			require.NoError(t, a.Validate(), text)
			actions++
		}
	}
	require.GreaterOrEqual(t, requests, 4, "the request example and the three steps of the exchange")
	require.GreaterOrEqual(t, responses, 4, "the response example and the three answers of the exchange")
	require.GreaterOrEqual(t, actions, 14, "every action type has an example")
	require.Equal(t, 1, scripts)
	require.True(t, bytes.Contains(doc, []byte("PROCTOR_AGENT_ALLOW_HOSTS")))
	for _, typ := range models.ActionTypes() {
		require.Contains(t, string(doc), `{"type": "`+typ+`"`, "an example of %s", typ)
	}
}
