package verified

import (
	"proctor/eval"
	"proctor/importer"
	"proctor/models"
)

// Kind is the official WebArena-Verified evaluator's registry record.
func Kind() eval.Kind {
	return eval.Kind{
		ID: models.EvaluatorWebArenaVerified, Version: Version,
		Check:   importer.CheckVerifiedSpec,
		New:     func(eval.Tools) eval.Evaluator { return New() },
		Defects: SpecDefects,
	}
}

// LenientKind is the lenient reading's registry record: an administrator's
// choice for a WebArena-Verified benchmark, whose boards say its scores are
// read leniently.
func LenientKind() eval.Kind {
	return eval.Kind{
		ID: models.EvaluatorWebArenaVerifiedLenient, Version: LenientVersion,
		ReadingOf: models.EvaluatorWebArenaVerified, Lenient: true,
		Check:   importer.CheckVerifiedSpec,
		New:     func(eval.Tools) eval.Evaluator { return NewLenient() },
		Defects: lenientDefects,
	}
}
