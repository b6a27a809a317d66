package stats

import "proctor/models"

// Report is a run's metrics on one subset with their breakdowns
// (models.MetricsReport, which pages show).
type Report = models.MetricsReport

// NewReport summarizes attempts and breaks them down by every dimension.
func NewReport(subset string, restricted bool, attempts []Attempt) Report {
	r := Report{Subset: subset, Restricted: restricted, Metrics: Summarize(attempts), Breakdowns: map[Dimension][]Group{}}
	for _, d := range models.Dimensions() {
		r.Breakdowns[d] = Breakdown(attempts, d)
	}
	return r
}
