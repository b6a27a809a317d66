package models

// Dataset is a parsed benchmark ready to be stored: what a format parser
// (package importer) hands to the benchmark service, which checks it and has
// storage write it as a new version.
type Dataset struct {
	Format    string // one of ImportFormats()
	Evaluator string // the id of a registered evaluator (eval.Registry)
	// Grades is what the evaluator grades (GradesAgents or
	// GradesCandidates), as its registry record says.
	Grades string
	// PassThreshold is a hidden-tests benchmark's pass threshold from the
	// proctor header line (pass_threshold, in (0, 1]): the pass rate a task
	// needs to succeed. Nil for DefaultPassThreshold, which a stated 1 also
	// gives, so that stating the default makes no new version.
	PassThreshold *float64
	Name          string // from the proctor header line, else empty
	Description   string // from the proctor header line, else empty
	// Tasks are in file order with Position 0..n-1 and RubricItems filled; IDs are
	// zero. Empty JSON fields (Metadata, EvalSpec, ReferenceAnswers,
	// ReferenceActions) mean "none"; the others hold canonical JSON.
	Tasks    []Task
	Subsets  []DatasetSubset // named subsets sorted by name; "full" is implicit and never listed
	Sites    []DatasetSite   // every site the tasks use, sorted by name
	Checksum string          // SHA-256 hex of the canonical encoding of what was imported
}

// EffectivePassThreshold is the dataset's pass threshold, DefaultPassThreshold
// when it states none.
func (d *Dataset) EffectivePassThreshold() float64 {
	if d.PassThreshold == nil {
		return DefaultPassThreshold
	}
	return *d.PassThreshold
}

// DatasetSubset is a named set of tasks of a Dataset.
type DatasetSubset struct {
	Name        string   // a slug, never "full"
	Description string   // may be empty
	Checksum    string   // SHA-256 hex of the sorted task ids as compact JSON
	ExternalIDs []string // in dataset order
}

// DatasetSite is a site the tasks use and the placeholder standing for its URL.
type DatasetSite struct {
	Name        string // e.g. shopping_admin
	Placeholder string // e.g. __SHOPPING_ADMIN__
}
