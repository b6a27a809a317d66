// Package evaltest gives tests the evaluator registry main builds
// (cmd/proctor/evaluators.go, which a test there keeps alike), plus any fake
// evaluators a test adds.
package evaltest

import (
	"proctor/eval"
	"proctor/eval/hiddentests"
	"proctor/eval/judge"
	"proctor/eval/verified"
	"proctor/eval/webarena"
)

// Registry returns the standard evaluators and extra; it panics on a
// duplicate id, which is a mistake in the test.
func Registry(extra ...eval.Kind) *eval.Registry {
	kinds := append([]eval.Kind{
		verified.Kind(),
		verified.LenientKind(),
		webarena.Kind(),
		judge.RubricKind(),
		judge.TrajectoryKind(),
		hiddentests.Kind(),
		eval.None(),
	}, extra...)
	r, err := eval.NewRegistry(kinds...)
	if err != nil {
		panic(err)
	}
	return r
}
