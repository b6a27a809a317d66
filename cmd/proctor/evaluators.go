package main

import (
	"proctor/eval"
	"proctor/eval/hiddentests"
	"proctor/eval/judge"
	"proctor/eval/verified"
	"proctor/eval/webarena"
)

// evaluators builds the registry of the evaluators this Proctor knows: one
// line per evaluator (docs/evaluation.md, "Adding an evaluator").
func evaluators() (*eval.Registry, error) {
	return eval.NewRegistry(
		verified.Kind(),
		verified.LenientKind(),
		webarena.Kind(),
		judge.RubricKind(),
		judge.TrajectoryKind(),
		hiddentests.Kind(),
		eval.None(),
	)
}
