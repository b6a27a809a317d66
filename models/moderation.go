package models

import (
	"strings"
	"time"
	"unicode/utf8"
)

// Leaderboard event kinds: what changed about a published run on its
// benchmark's leaderboards.
const (
	EventAdded      = "added"      // the team published the run
	EventWithdrawn  = "withdrawn"  // the team withdrew it
	EventHidden     = "hidden"     // administrators hid it, with a public reason
	EventUnhidden   = "unhidden"   // administrators showed it again
	EventVerified   = "verified"   // administrators verified it
	EventReproduced = "reproduced" // administrators reproduced an uploaded run
	EventRescored   = "rescored"   // its attempts were graded again
)

// Who made a leaderboard change, as the public change log names them: the
// run's team, the administrators or Proctor itself. Users are not named.
const (
	ActorRoleTeam   = "team"
	ActorRoleAdmin  = "admin"
	ActorRoleSystem = "system"
)

// MaxHideReasonLength caps the public reason given for hiding a run, in characters.
const MaxHideReasonLength = 500

// LeaderboardEvent is one entry of a benchmark's public leaderboard change log.
type LeaderboardEvent struct {
	ID          int64
	BenchmarkID int64
	SubsetName  string // the run's subset; a full run's changes show on every subset's log
	RunID       int64
	Kind        string
	Reason      string // the public reason of a hiding; empty otherwise
	ActorID     *int64
	ActorRole   string
	RescoreID   string // the re-scoring request of a "rescored" event
	CreatedAt   time.Time
	RescoreChange
}

// RescoreChange is what a re-scoring changed about a run: its successes
// before and after, its task count, how many attempts' outcomes changed and
// the evaluators that graded them. Zero on other events.
type RescoreChange struct {
	SuccessesBefore *int
	SuccessesAfter  *int
	Tasks           *int
	ChangedAttempts int
	Evaluators      string // e.g. "webarena-verified@2"
}

// Known reports whether the change holds the run's numbers (events logged
// before Proctor kept them do not).
func (c RescoreChange) Known() bool {
	return c.SuccessesBefore != nil && c.SuccessesAfter != nil && c.Tasks != nil
}

// SuccessDelta is the change in successes (after minus before).
func (c RescoreChange) SuccessDelta() int {
	if !c.Known() {
		return 0
	}
	return *c.SuccessesAfter - *c.SuccessesBefore
}

// RateBefore and RateAfter are the success rates over the run's tasks.
func (c RescoreChange) RateBefore() float64 { return rateOf(c.SuccessesBefore, c.Tasks) }

// RateAfter is the success rate over the run's tasks after the re-scoring.
func (c RescoreChange) RateAfter() float64 { return rateOf(c.SuccessesAfter, c.Tasks) }

func rateOf(n, tasks *int) float64 {
	if n == nil || tasks == nil || *tasks == 0 {
		return 0
	}
	return float64(*n) / float64(*tasks)
}

// LeaderboardChange is a change log entry as the public log shows it: with the
// run's agent and team, and whether the run is public now (its page link works).
type LeaderboardChange struct {
	ID           int64
	RunID        int64
	SubsetName   string
	Kind         string
	Reason       string
	ActorRole    string
	CreatedAt    time.Time
	AgentName    string
	TeamName     string
	TeamSlug     string
	RunPublished bool
	RescoreChange
}

// ChangeFilter selects one page (from 1) of a leaderboard's change log; Subset
// "" is every board of the benchmark.
type ChangeFilter struct {
	Subset  string
	Page    int
	PerPage int
}

// LeaderboardChanges is one page of a benchmark's change log, newest first.
type LeaderboardChanges struct {
	BenchmarkSlug string
	BenchmarkName string
	Subset        string   // "" for every board
	Subsets       []string // the boards one can choose: full and every named subset
	Changes       []LeaderboardChange
	Page          int
	PerPage       int
	Total         int
}

// HasMore reports whether a later page exists.
func (c LeaderboardChanges) HasMore() bool { return c.Page*c.PerPage < c.Total }

// RunModeration is a run's publication state and what the caller may change
// about it.
type RunModeration struct {
	RunID        int64
	Status       string
	Origin       string
	Published    bool
	Verified     bool
	HiddenAt     *time.Time
	HiddenReason string
	// CanPublish is true for the team's members and administrators.
	CanPublish bool
	// CanModerate is true for administrators.
	CanModerate bool
}

// Hidden reports whether administrators hid the run from the leaderboards.
func (m RunModeration) Hidden() bool { return m.HiddenAt != nil }

// OnLeaderboard reports whether the run counts on its benchmark's leaderboards:
// completed, published and not hidden.
func (m RunModeration) OnLeaderboard() bool {
	return m.Status == RunCompleted && m.Published && !m.Hidden()
}

// CheckHideReason trims a hiding's public reason and checks it: required, at
// most MaxHideReasonLength characters. EINVALID on the field "reason" otherwise.
func CheckHideReason(reason string) (string, error) {
	reason = strings.TrimSpace(reason)
	switch {
	case reason == "":
		return "", FieldError("reason", "a hidden run shows its reason publicly: give one")
	case utf8.RuneCountInString(reason) > MaxHideReasonLength:
		return "", FieldError("reason", "the reason must be at most %d characters", MaxHideReasonLength)
	case !utf8.ValidString(reason):
		return "", FieldError("reason", "the reason must be UTF-8 text")
	}
	return reason, nil
}

// ModerationTarget is a run as a moderation action finds it, locked in the
// action's transaction: the run (its Origin as pages show it), whether
// administrators hid it and why, and whether the caller is a member of its
// team.
type ModerationTarget struct {
	Run          *Run
	HiddenAt     *time.Time
	HiddenReason string
	Member       bool
}

// Hidden reports whether administrators hid the run.
func (t ModerationTarget) Hidden() bool { return t.HiddenAt != nil }

// RunChange is what a moderation action does to a run: the state it sets
// (nil leaves it), the leaderboard event it logs when the run is or was
// public ("" for none) with its public reason and who acted (an actor
// role), and the audit action.
type RunChange struct {
	Published *bool
	Verified  *bool
	// Hide hides the run with HideReason; Unhide shows it again.
	Hide       bool
	HideReason string
	Unhide     bool
	// Origin is the run's new origin; "" leaves it.
	Origin    string
	Event     string
	ActorRole string
	Audit     string
}
