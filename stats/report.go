package stats

// Report is a run's metrics on one subset with their breakdowns: the run's own
// subset, or for a run over every task ("full") a named subset, restricted to
// that subset's tasks.
type Report struct {
	Subset     string                `json:"subset"`
	Restricted bool                  `json:"restricted"` // a full run's numbers on a named subset
	Metrics    Metrics               `json:"metrics"`
	Breakdowns map[Dimension][]Group `json:"breakdowns"`
}

// NewReport summarizes attempts and breaks them down by every dimension.
func NewReport(subset string, restricted bool, attempts []Attempt) Report {
	r := Report{Subset: subset, Restricted: restricted, Metrics: Summarize(attempts), Breakdowns: map[Dimension][]Group{}}
	for _, d := range Dimensions() {
		r.Breakdowns[d] = Breakdown(attempts, d)
	}
	return r
}
