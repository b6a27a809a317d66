package models

// CandidateTasks is what the candidate form of a hidden-tests benchmark
// shows: the benchmark, its subsets ("full" first) and the tasks of the
// chosen subset in order, one form row each.
type CandidateTasks struct {
	Benchmark Benchmark
	Subset    string
	Subsets   []string
	Tasks     []Task // ExternalID and Intent only
}
