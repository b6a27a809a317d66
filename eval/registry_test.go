package eval_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/eval"
	"proctor/models"
)

func TestRegistry(t *testing.T) {
	t.Parallel()
	official := eval.Kind{ID: "official", Version: "official@1", Defects: func(*models.Task) []models.TaskDefect {
		return []models.TaskDefect{{Kind: "flaw"}}
	}}
	lenient := eval.Kind{ID: "lenient", ReadingOf: "official", Lenient: true}
	sites := eval.Kind{ID: "sites", Grades: models.GradesCandidates, Check: func(where string, _ *models.Task, spec json.RawMessage) error {
		if len(spec) == 0 {
			return models.Errorf(models.EINVALID, "%s: no suite", where)
		}
		return nil
	}}

	t.Run("DuplicateRefused", func(t *testing.T) {
		_, err := eval.NewRegistry(official, eval.None(), official)
		require.Equal(t, models.EINVALID, models.ErrorCode(err))
		require.ErrorContains(t, err, `evaluator "official" is registered twice`)
	})
	t.Run("EmptyIDRefused", func(t *testing.T) {
		_, err := eval.NewRegistry(eval.Kind{Version: "1"})
		require.Equal(t, models.EINVALID, models.ErrorCode(err))
	})
	t.Run("ReadingOfUnknownRefused", func(t *testing.T) {
		_, err := eval.NewRegistry(lenient)
		require.ErrorContains(t, err, `evaluator "lenient" is a reading of "official", which is not registered`)
	})

	r, err := eval.NewRegistry(official, lenient, sites, eval.None())
	require.NoError(t, err)

	t.Run("UnknownNamesTheKnown", func(t *testing.T) {
		_, err := r.Kind("missing")
		require.Equal(t, models.EINVALID, models.ErrorCode(err))
		require.EqualError(t, err, `unknown evaluator "missing": known evaluators are official, lenient, sites, none`)
		err = r.Check("missing", "line 2", &models.Task{}, nil)
		require.Equal(t, models.EINVALID, models.ErrorCode(err))
	})
	t.Run("Defaults", func(t *testing.T) {
		k, err := r.Kind("official")
		require.NoError(t, err)
		require.Equal(t, models.GradesAgents, k.Grades)
		require.Equal(t, models.EvaluationCheck, k.Verdict)
		require.False(t, k.GradesCandidates())
	})
	t.Run("WhatTheRecordsDecide", func(t *testing.T) {
		require.Equal(t, []string{"official", "lenient", "sites", "none"}, r.IDs())
		require.Equal(t, []string{"official", "sites", "none"}, r.Named(), "a reading is an administrator's choice, never named by a file")
		require.Equal(t, []string{"official", "lenient"}, r.Readings("official"))
		require.Equal(t, []string{"official", "lenient"}, r.Readings("lenient"))
		require.Nil(t, r.Readings("sites"))
		require.Nil(t, r.Readings("missing"))
		require.True(t, r.Lenient("lenient"))
		require.False(t, r.Lenient("official"))
		require.True(t, r.GradesCandidates("sites"))
		require.False(t, r.GradesCandidates("official"))
		require.False(t, r.GradesCandidates("missing"))
		require.Len(t, r.Defects("official", &models.Task{}), 1)
		require.Empty(t, r.Defects("lenient", &models.Task{}))
		probes, err := r.Probes("official", &models.Task{})
		require.NoError(t, err)
		require.Empty(t, probes)
		require.NoError(t, r.Check("none", "line 2", &models.Task{}, nil))
		require.ErrorContains(t, r.Check("sites", "line 2", &models.Task{}, nil), "line 2: no suite")
		require.NoError(t, r.Check("sites", "line 2", &models.Task{}, json.RawMessage(`{}`)))
	})
}
