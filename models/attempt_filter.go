package models

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Filter values of a run's attempts table beyond the outcomes and error classes
// themselves.
const (
	// OutcomeNone selects attempts without an outcome: not finished yet, or
	// finished but not judged.
	OutcomeNone = "none"
	// ErrorClassEvaluation selects attempts whose evaluation itself failed
	// (outcome error without an episode error class).
	ErrorClassEvaluation = "evaluation"
)

// AttemptOutcomeFilters are the values of the attempts table's outcome filter.
func AttemptOutcomeFilters() []string {
	return []string{OutcomeSuccess, OutcomeFailure, OutcomeError, OutcomeNone}
}

// AttemptErrorClassFilters are the values of the attempts table's error-class filter.
func AttemptErrorClassFilters() []string {
	return []string{ErrorClassAgent, ErrorClassEnvironment, ErrorClassPlatform, ErrorClassBudget,
		ErrorClassTimeout, ErrorClassCanceled, ErrorClassEvaluation}
}

// AttemptFilter selects one page (from 1) of a run's attempts. Empty fields
// match everything. Site matches the attempts whose task touches the site
// (MultiSite: the tasks spanning several sites).
type AttemptFilter struct {
	Outcome    string
	ErrorClass string
	Site       string
	Difficulty string
	Page       int
	PerPage    int
}

// Active reports whether any filter other than the page is set.
func (f AttemptFilter) Active() bool {
	return f.Outcome != "" || f.ErrorClass != "" || f.Site != "" || f.Difficulty != ""
}

// Validate checks the outcome and error class (EINVALID naming the parameter);
// the site and difficulty depend on the benchmark and are checked by storage.
func (f AttemptFilter) Validate() error {
	if f.Outcome != "" && !slices.Contains(AttemptOutcomeFilters(), f.Outcome) {
		return FieldError("outcome", "outcome must be one of %s, not %q", strings.Join(AttemptOutcomeFilters(), ", "), f.Outcome)
	}
	if f.ErrorClass != "" && !slices.Contains(AttemptErrorClassFilters(), f.ErrorClass) {
		return FieldError("error_class", "error_class must be one of %s, not %q", strings.Join(AttemptErrorClassFilters(), ", "), f.ErrorClass)
	}
	if f.Page < 1 || f.PerPage < 1 {
		return Errorf(EINVALID, "page and per_page must be positive")
	}
	return nil
}

// Query encodes the filter as the run page's query string ("" when it has
// nothing), at the given page and keeping a per_page other than defaultPerPage.
func (f AttemptFilter) Query(page, defaultPerPage int) string {
	q := url.Values{}
	for k, v := range map[string]string{"outcome": f.Outcome, "error_class": f.ErrorClass, "site": f.Site, "difficulty": f.Difficulty} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if f.PerPage != 0 && f.PerPage != defaultPerPage {
		q.Set("per_page", strconv.Itoa(f.PerPage))
	}
	if page > 1 {
		q.Set("page", strconv.Itoa(page))
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

// AttemptFacets are the sites and difficulties a run's attempts can be
// filtered by: those of its benchmark version's tasks, sorted.
type AttemptFacets struct {
	Sites        []string
	Difficulties []string
}

// RunOverview is what a run's page shows: the run with its progress and one
// filtered page of its attempts, the filter's choices, and its publication
// state. AttemptsWithheld is set for visitors outside the run's team when
// administrators hid the run: they see its summary and the public reason, not
// its attempts.
type RunOverview struct {
	Page             RunPage
	Filter           AttemptFilter
	Facets           AttemptFacets
	Moderation       RunModeration
	AttemptsWithheld bool
	// AttemptsBlind says they are withheld because the viewer annotates some
	// of them in an open blind study (storage.BlindRunMessage).
	AttemptsBlind bool
}

// RunResult is one attempt of a run as its results export holds it.
// EvaluationDetails are the primary evaluation's details as the caller may see
// them (the public view for anyone but administrators).
type RunResult struct {
	AttemptID         int64
	TaskExternalID    string
	TaskSites         JSONStrings
	TaskRevision      int
	Status            string
	Outcome           string
	ErrorClass        string
	Score             *float64
	Steps             int
	TokensIn          int64
	TokensOut         int64
	Cost              float64
	DurationMS        int64
	FinishedAt        *time.Time
	EvaluationKind    string // "" when the attempt has no primary evaluation
	Evaluator         string
	EvaluatorVersion  string
	Verdict           string
	EvaluationScore   *float64
	EvaluationDetails string
	JudgeScore        *int // the current trajectory judge's 1–5 score
}

// WithholdBlind keeps a run's results and attempts from a viewer who
// annotates some of them in an open blind study: the page shows the run and
// says why the rest is hidden.
func (o *RunOverview) WithholdBlind() {
	o.Page.Progress.WithholdResults()
	if o.AttemptsWithheld {
		return // already withheld, for the reason the page gives
	}
	o.Page.Attempts, o.Page.AttemptsTotal = nil, 0
	o.AttemptsWithheld, o.AttemptsBlind = true, true
}
