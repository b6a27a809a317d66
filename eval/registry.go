package eval

import (
	"encoding/json"
	"fmt"
	"strings"

	"proctor/models"
)

// Kind describes one evaluator to the rest of Proctor, once: the importer
// checks a benchmark's specs with it, the runner builds the evaluator and
// reads the page probes from it, and the pages ask it what to show. A Kind is
// made by its evaluator's package and listed in main's registry.
type Kind struct {
	// ID is what a benchmark names its evaluator by (a proctor file's
	// "evaluator") and what its verdicts are recorded under.
	ID string
	// Version is the evaluator's current version, recorded with its verdicts.
	Version string
	// Grades says what the evaluator grades: agents' runs
	// (models.GradesAgents, the default when empty) or candidate websites
	// (models.GradesCandidates, graded by hidden tests).
	Grades string
	// Verdict is the kind of verdict its evaluator records
	// (models.EvaluationCheck, the default when empty, EvaluationJudge or
	// EvaluationRubric). The runner adds the configured judges beside it
	// unless it already is that judge.
	Verdict string
	// ReadingOf names the evaluator this one is another reading of: an
	// administrator's choice on the benchmark's page, never named by a file.
	ReadingOf string
	// Lenient marks a reading more lenient than the official evaluator's; its
	// boards say so.
	Lenient bool
	// Check validates and completes one task's evaluation spec at import (it
	// may settle the task's type or keep its reference captures); where names
	// the task in messages. nil: the evaluator needs no spec. Errors are
	// EINVALID.
	Check func(where string, t *models.Task, spec json.RawMessage) error
	// New builds the evaluator of an attempt; nil (or a nil Evaluator) leaves
	// the attempt without this verdict, as a judge does when none is
	// configured.
	New func(Tools) Evaluator
	// Probes lists what the runner reads from the live page at the end of an
	// episode for this evaluator; nil reads nothing (probes' page loads would
	// land in the HAR other evaluators read).
	Probes func(t *models.Task) ([]PageProbe, error)
	// Defects lists the upstream defects of a task's spec that administrators
	// see on the task's page; nil finds none.
	Defects func(t *models.Task) []models.TaskDefect
}

// Tools is what an evaluator may be built with.
type Tools struct {
	// Judges are the LLM judges configured for the run; nil when none is.
	Judges Judges
}

// Judges are the LLM judges an evaluator may use.
type Judges interface {
	FuzzyMatcher
	Trajectory() Evaluator
	Rubric() Evaluator
}

// GradesCandidates reports whether the evaluator grades candidate websites
// rather than agents' runs.
func (k *Kind) GradesCandidates() bool { return k.Grades == models.GradesCandidates }

// Registry holds the evaluators this Proctor knows, by id. It is built once in
// main and passed to what needs it.
type Registry struct {
	kinds map[string]*Kind
	ids   []string // in the order given
}

// NewRegistry builds a registry of kinds; EINVALID when an id is empty or
// given twice, or a kind is a reading of an unknown evaluator.
func NewRegistry(kinds ...Kind) (*Registry, error) {
	r := &Registry{kinds: make(map[string]*Kind, len(kinds))}
	for _, k := range kinds {
		if k.ID == "" {
			return nil, models.Errorf(models.EINVALID, "an evaluator needs an id")
		}
		if _, dup := r.kinds[k.ID]; dup {
			return nil, models.Errorf(models.EINVALID, "evaluator %q is registered twice", k.ID)
		}
		if k.Grades == "" {
			k.Grades = models.GradesAgents
		}
		if k.Verdict == "" {
			k.Verdict = models.EvaluationCheck
		}
		r.kinds[k.ID] = &k
		r.ids = append(r.ids, k.ID)
	}
	for _, k := range r.kinds {
		if k.ReadingOf != "" && r.kinds[k.ReadingOf] == nil {
			return nil, models.Errorf(models.EINVALID, "evaluator %q is a reading of %q, which is not registered", k.ID, k.ReadingOf)
		}
	}
	return r, nil
}

// Kind returns the evaluator registered as id; EINVALID naming the known
// evaluators when there is none.
func (r *Registry) Kind(id string) (*Kind, error) {
	if k := r.kind(id); k != nil {
		return k, nil
	}
	if r == nil {
		return nil, models.Errorf(models.EINVALID, "unknown evaluator %q: no evaluator is registered", id)
	}
	return nil, models.Errorf(models.EINVALID, "unknown evaluator %q: known evaluators are %s", id, strings.Join(r.ids, ", "))
}

// IDs lists the registered evaluators in the order given.
func (r *Registry) IDs() []string { return append([]string(nil), r.ids...) }

// Named lists the evaluators a benchmark file may name: all but the readings
// an administrator chooses.
func (r *Registry) Named() []string {
	var out []string
	for _, id := range r.ids {
		if r.kinds[id].ReadingOf == "" {
			out = append(out, id)
		}
	}
	return out
}

// Readings lists the evaluators an administrator may choose between for a
// benchmark graded by id: the official evaluator first, then its readings;
// nil when it has none.
func (r *Registry) Readings(id string) []string {
	k := r.kind(id)
	if k == nil {
		return nil
	}
	official := k.ID
	if k.ReadingOf != "" {
		official = k.ReadingOf
	}
	out := []string{official}
	for _, other := range r.ids {
		if r.kinds[other].ReadingOf == official {
			out = append(out, other)
		}
	}
	if len(out) == 1 {
		return nil
	}
	return out
}

// Lenient reports whether id is a lenient reading; false for unknown ids.
func (r *Registry) Lenient(id string) bool {
	k := r.kind(id)
	return k != nil && k.Lenient
}

// GradesCandidates reports whether id grades candidate websites; false for
// unknown ids.
func (r *Registry) GradesCandidates(id string) bool {
	k := r.kind(id)
	return k != nil && k.GradesCandidates()
}

// Grading is what pages show of how a benchmark graded by id is graded; the
// zero Grading for an unknown id (or a nil registry).
func (r *Registry) Grading(id string) models.Grading {
	k := r.kind(id)
	if k == nil {
		return models.Grading{}
	}
	return models.Grading{Lenient: k.Lenient, Readings: len(r.Readings(id)) > 0,
		RubricJudged: k.Verdict == models.EvaluationRubric, Candidates: k.GradesCandidates()}
}

// kind is the record of id, nil when there is none (or no registry).
func (r *Registry) kind(id string) *Kind {
	if r == nil {
		return nil
	}
	return r.kinds[id]
}

// Defects lists the upstream defects of a task graded by evaluator id; none
// for an unknown id or an evaluator that finds none.
func (r *Registry) Defects(id string, t *models.Task) []models.TaskDefect {
	k := r.kind(id)
	if k == nil || k.Defects == nil {
		return nil
	}
	return k.Defects(t)
}

// Probes lists the page probes evaluator id needs of a task at the end of an
// episode; none for an unknown id or an evaluator that reads no page.
func (r *Registry) Probes(id string, t *models.Task) ([]PageProbe, error) {
	k := r.kind(id)
	if k == nil || k.Probes == nil {
		return nil, nil
	}
	return k.Probes(t)
}

// Check validates and completes a task's spec for evaluator id at import;
// EINVALID for an unknown evaluator or a spec it refuses.
func (r *Registry) Check(id, where string, t *models.Task, spec json.RawMessage) error {
	k, err := r.Kind(id)
	if err != nil {
		return err
	}
	if k.Check == nil {
		return nil
	}
	return k.Check(where, t, spec)
}

// None is the evaluator of a benchmark whose tasks are not graded: it needs no
// spec and builds no evaluator.
func None() Kind { return Kind{ID: models.EvaluatorNone, Version: models.EvaluatorNone} }

// String names the kind, for logs and test failures.
func (k *Kind) String() string { return fmt.Sprintf("%s (%s)", k.ID, k.Version) }
