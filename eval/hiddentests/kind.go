// Package hiddentests describes the hidden-tests evaluator to the registry: a
// benchmark whose tasks are suites of tests run against candidate websites
// (docs/hidden-tests.md). The tests run in the runner's hidden-tests jobs,
// not in the evaluation of an agent's episode.
package hiddentests

import (
	"proctor/eval"
	"proctor/importer"
	"proctor/models"
)

// Version is how a hidden-tests attempt is graded (storage records the
// verdicts).
const Version = "hidden-tests@2"

// Kind is the hidden-tests evaluator's registry record: it grades candidate
// websites, and each task's eval holds its suite and reference captures.
func Kind() eval.Kind {
	return eval.Kind{
		ID: models.EvaluatorHiddenTests, Version: Version, Grades: models.GradesCandidates,
		Check: importer.CheckHiddenTestsSpec,
	}
}
