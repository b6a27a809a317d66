package storage

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestScrubServerPaths(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"open /tmp/x.har: permission denied":            "open [server path]: permission denied",
		"read ./data/secret.key failed.":                "read [server path] failed.",
		"stat ../up/there: gone":                        "stat [server path]: gone",
		`write "runs/1/attempts/2/step.png": disk full`: `write "[server path]": disk full`,
		"GET http://127.0.0.1:7770/a/b/c answered 500":  "GET http://127.0.0.1:7770/a/b/c answered 500",
		"the agent said 3/4 and/or yes":                 "the agent said 3/4 and/or yes",
		"start URL / is refused":                        "start URL / is refused",
	} {
		require.Equal(t, want, scrubServerPaths(in), in)
	}
}
