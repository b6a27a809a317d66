package web

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMessage_LinksSiteAddresses(t *testing.T) {
	for msg, want := range map[string]string{
		"shop is a hidden-tests benchmark: submit the candidate websites (/benchmarks/shop/candidates/new) rather than trajectories": `shop is a hidden-tests benchmark: submit the candidate websites (<a href="/benchmarks/shop/candidates/new">/benchmarks/shop/candidates/new</a>) rather than trajectories`,
		"Register an agent first: /teams/lab/agents/new.": `Register an agent first: <a href="/teams/lab/agents/new">/teams/lab/agents/new</a>.`,
		"max steps must be between 1 and 200":             "max steps must be between 1 and 200",
		"a ratio 1/2 or a path a/b is no address":         "a ratio 1/2 or a path a/b is no address",
		"<script>/x</script>":                             "&lt;script&gt;/x&lt;/script&gt;",
		"":                                                "",
	} {
		var buf bytes.Buffer
		require.NoError(t, Message(msg).Render(context.Background(), &buf))
		require.Equal(t, want, buf.String(), msg)
	}
}
