package api

import "time"

// Moderation is a run's publication state: the answer of every moderation
// action (POST /api/v1/runs/{id}/publish, withdraw, verify, hide, …).
type Moderation struct {
	ID            int64      `json:"id"`
	Status        string     `json:"status"`
	Origin        string     `json:"origin"`
	Published     bool       `json:"published"`
	Verified      bool       `json:"verified"`
	Hidden        bool       `json:"hidden"`
	HiddenAt      *time.Time `json:"hidden_at"`
	HiddenReason  string     `json:"hidden_reason"`
	OnLeaderboard bool       `json:"on_leaderboard"`
	URL           string     `json:"url"`
	APIURL        string     `json:"api_url"`
}

// HideInput is the body of POST /api/v1/runs/{id}/hide.
type HideInput struct {
	Reason string `json:"reason"`
}

// Leaderboard is a board (GET /api/v1/benchmarks/{slug}/leaderboard and the
// .json export): its query and rows. What a row holds is the board's
// columns' to say, so the row type is a parameter.
type Leaderboard[Entry any] struct {
	Benchmark      string `json:"benchmark"`
	Name           string `json:"name"`
	Version        int    `json:"version"`
	CurrentVersion int    `json:"current_version"`
	Subset         string `json:"subset"`
	SubsetTasks    int    `json:"subset_tasks"`
	// Evaluator is the benchmark's evaluator kind; "webarena-verified-lenient"
	// marks scores that are not official WebArena-Verified scores.
	Evaluator string `json:"evaluator"`
	Sort      string `json:"sort"`
	Dir       string `json:"dir"`
	// Filters are the query's filters as URL parameters (best, origin,
	// open_source, model, model_match, from, to, version).
	Filters       map[string]string `json:"filters"`
	PublishedRuns int               `json:"published_runs"`
	URL           string            `json:"url"`
	Entries       []Entry           `json:"entries"`
}

// Change is one line of a leaderboard's change log
// (GET /api/v1/benchmarks/{slug}/leaderboard/changes).
type Change struct {
	ID        int64     `json:"id"`
	RunID     int64     `json:"run_id"`
	Subset    string    `json:"subset"`
	Kind      string    `json:"kind"`
	Reason    string    `json:"reason,omitempty"`
	Actor     string    `json:"actor"`
	Agent     string    `json:"agent"`
	Team      string    `json:"team"`
	TeamName  string    `json:"team_name"`
	CreatedAt time.Time `json:"created_at"`
	// RunURL is the run's page while it is public; "" once withdrawn.
	RunURL string `json:"run_url,omitempty"`
	// Rescore is what a "rescored" change did to the run; absent on other
	// kinds and on re-scorings logged before Proctor kept the numbers.
	Rescore *RescoreChange `json:"rescore,omitempty"`
}

// RescoreChange is what a re-scoring changed about a run.
type RescoreChange struct {
	SuccessesBefore int    `json:"successes_before"`
	SuccessesAfter  int    `json:"successes_after"`
	Tasks           int    `json:"tasks"`
	ChangedAttempts int    `json:"changed_attempts"`
	Evaluators      string `json:"evaluators"`
}
