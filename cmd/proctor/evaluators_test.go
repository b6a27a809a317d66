package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/internal/evaltest"
)

// TestEvaluators_TestsUseMainsRegistry: the registry tests build
// (internal/evaltest) lists the evaluators main does, in the same order.
func TestEvaluators_TestsUseMainsRegistry(t *testing.T) {
	t.Parallel()
	kinds, err := evaluators()
	require.NoError(t, err)
	want := evaltest.Registry()
	require.Equal(t, want.IDs(), kinds.IDs())
	for _, id := range kinds.IDs() {
		k, err := kinds.Kind(id)
		require.NoError(t, err)
		w, err := want.Kind(id)
		require.NoError(t, err)
		require.Equal(t, w.String(), k.String())
		require.Equal(t, w.Grades, k.Grades, id)
	}
}
