package judge

import (
	"proctor/eval"
	"proctor/importer"
	"proctor/models"
)

// RubricKind is the rubric judge's registry record: a benchmark graded by
// its tasks' rubric items, which every task must have. Without a configured
// judge its attempts stay not judged.
func RubricKind() eval.Kind {
	return eval.Kind{
		ID: models.EvaluatorRubric, Version: RubricVersion, Verdict: models.EvaluationRubric,
		Check: importer.CheckRubric(models.EvaluatorRubric),
		New: func(t eval.Tools) eval.Evaluator {
			if t.Judges == nil {
				return nil
			}
			return t.Judges.Rubric()
		},
	}
}

// TrajectoryKind is the trajectory judge's registry record: a benchmark
// graded by an LLM judge's reading of each trajectory. Without a configured
// judge its attempts stay not judged.
func TrajectoryKind() eval.Kind {
	return eval.Kind{
		ID: models.EvaluatorLLMJudge, Version: TrajectoryVersion, Verdict: models.EvaluationJudge,
		New: func(t eval.Tools) eval.Evaluator {
			if t.Judges == nil {
				return nil
			}
			return t.Judges.Trajectory()
		},
	}
}
