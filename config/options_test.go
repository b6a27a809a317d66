package config

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOptions: every setting is declared once and whole, so that Load, Validate,
// Flags and the documentation all have what they need of it.
func TestOptions(t *testing.T) {
	t.Parallel()
	seen := make(map[string]bool)
	flags := make(map[string]bool)
	for _, o := range options() {
		require.True(t, strings.HasPrefix(o.name, "PROCTOR_"), o.name)
		require.False(t, seen[o.name], "%s is declared twice", o.name)
		seen[o.name] = true
		if o.flag != "" {
			require.False(t, flags[o.flag], "flag --%s is declared twice", o.flag)
			flags[o.flag] = true
		}
		require.NotEmpty(t, o.doc, "%s has no description", o.name)
		require.NotContains(t, o.doc, "\n", "%s: the description is one line", o.name)
		require.NotEmpty(t, o.expect, "%s says not what it accepts", o.name)
		require.NotNil(t, o.parse, "%s has no parser", o.name)
		require.False(t, o.def != "" && o.defDoc != "", "%s has two defaults", o.name)
		hidden := o.redact != nil && o.redact("x") == ""
		require.False(t, o.check != nil && o.show == nil && !hidden, "%s: Validate could not write its value", o.name)
	}
}
