package service

import (
	"context"
	"database/sql"
	"time"

	"proctor/models"
)

// EpisodeStore is what the episode service needs from storage.
type EpisodeStore interface {
	VisibleRun(ctx context.Context, scope models.RunScope, runID int64) (*models.Run, error)
	Membership(ctx context.Context, teamID, userID int64) (*models.Membership, error)
	ClaimEpisode(ctx context.Context, runID int64, tokenHash string, ttl time.Duration, share models.Claimant,
		offer func(ctx context.Context, tx *sql.Tx, run *models.Run, attemptIDs []int64) error) (*models.ClaimedEpisode, error)
	EpisodeLeaseByToken(ctx context.Context, tokenHash string) (*models.EpisodeLease, error)
	RenewEpisodeLease(ctx context.Context, id int64, until time.Time) (bool, error)
}

// EpisodeOptions are the episode service's settings.
type EpisodeOptions struct {
	// LeaseTTL is how long a claim lasts unrenewed (default 60 s).
	LeaseTTL time.Duration
	// ClaimPoll is how often a waiting claim looks for an episode (default 500 ms).
	ClaimPoll time.Duration
	// Share is how each team's fair share of the workers is counted (the
	// workers' lease TTL and PROCTOR_TEAM_EPISODES), as for the episodes
	// Proctor starts itself.
	Share models.Claimant
	Now   func() time.Time
}

// DefaultEpisodeLeaseTTL is how long an episode lease lasts unrenewed.
const DefaultEpisodeLeaseTTL = time.Minute

// MaxClaimWait bounds a claim's long poll.
const MaxClaimWait = time.Minute

// Episodes hands the episodes of connecting agents' runs to the agents and
// opens them to the episode token's holder.
type Episodes struct {
	store EpisodeStore
	jobs  RunJobs
	opts  EpisodeOptions
}

// NewEpisodes returns the episode service; jobs queues the episodes claimed
// (nil in a process without a queue: claims are EUNAVAILABLE).
func NewEpisodes(store EpisodeStore, jobs RunJobs, opts EpisodeOptions) *Episodes {
	if opts.LeaseTTL <= 0 {
		opts.LeaseTTL = DefaultEpisodeLeaseTTL
	}
	if opts.ClaimPoll <= 0 {
		opts.ClaimPoll = 500 * time.Millisecond
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Episodes{store: store, jobs: jobs, opts: opts}
}

// LeaseTTL is how long a lease lasts unrenewed.
func (s *Episodes) LeaseTTL() time.Duration { return s.opts.LeaseTTL }

// Claim hands the caller one of run runID's waiting episodes, waiting up to
// wait for one to free up; nil when none did. Members of the run's team
// only (administrators too must belong to it: a claim runs the team's
// agent): ENOTFOUND when the caller may not see the run, EFORBIDDEN when
// they may not act for its team; ECONFLICT when the run is over or its
// agent does not connect. The token returned opens the episode only.
func (s *Episodes) Claim(ctx context.Context, runID int64, wait time.Duration) (*models.ClaimedEpisode, string, error) {
	if s.jobs == nil {
		return nil, "", noQueue()
	}
	actor, err := models.RequireUser(ctx)
	if err != nil {
		return nil, "", err
	}
	run, err := s.store.VisibleRun(ctx, runScope(ctx), runID)
	if err != nil {
		return nil, "", err
	}
	m, err := s.store.Membership(ctx, run.TeamID, actor.UserID)
	if err := roleRefusal(m, err, false); err != nil {
		return nil, "", models.Errorf(models.EFORBIDDEN, "Only members of the run's team may claim its episodes: they run the team's agent.")
	}
	wait = min(max(wait, 0), MaxClaimWait)
	deadline := s.opts.Now().Add(wait)
	for {
		token, hash := models.NewToken(models.EpisodeTokenPrefix)
		claimed, err := s.store.ClaimEpisode(ctx, runID, hash, s.opts.LeaseTTL, s.opts.Share, s.jobs.RunEpisodes)
		if err != nil || claimed != nil {
			return claimed, token, err
		}
		if !s.opts.Now().Before(deadline) {
			return nil, "", nil
		}
		t := time.NewTimer(min(s.opts.ClaimPoll, deadline.Sub(s.opts.Now())))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, "", ctx.Err()
		case <-t.C:
		}
	}
}

// Open checks that token opens episode episodeID of run runID, renews its
// lease and returns it. EUNAUTHORIZED for a token that opens nothing,
// EFORBIDDEN for a token of another episode, EGONE for an episode that is
// over or whose lease lapsed.
func (s *Episodes) Open(ctx context.Context, runID, episodeID int64, token string) (*models.EpisodeLease, error) {
	if token == "" {
		return nil, models.Errorf(models.EUNAUTHORIZED, "This endpoint needs the episode token the claim returned, as \"Authorization: Bearer %s…\".", models.EpisodeTokenPrefix)
	}
	lease, err := s.store.EpisodeLeaseByToken(ctx, models.HashToken(token))
	if models.ErrorCode(err) == models.ENOTFOUND {
		return nil, models.Errorf(models.EUNAUTHORIZED, "The episode token is not valid. Claim an episode (POST /api/v1/runs/{id}/episodes/claim) for a new one.")
	}
	if err != nil {
		return nil, err
	}
	if lease.RunID != runID || lease.AttemptID != episodeID {
		return nil, models.Errorf(models.EFORBIDDEN, "This episode token opens episode %d of run %d only.", lease.AttemptID, lease.RunID)
	}
	now := s.opts.Now()
	switch {
	case lease.Status == models.LeaseEnded:
		return nil, models.Errorf(models.EGONE, "Episode %d is over: %s", lease.AttemptID, lease.EndedReason)
	case !lease.Live(now):
		return nil, models.Errorf(models.EGONE, "The lease on episode %d lapsed: it was not renewed within %s. Claim again.", lease.AttemptID, s.opts.LeaseTTL)
	}
	until := now.Add(s.opts.LeaseTTL)
	live, err := s.store.RenewEpisodeLease(ctx, lease.ID, until)
	if err != nil {
		return nil, err
	}
	if !live {
		return nil, models.Errorf(models.EGONE, "Episode %d is over.", lease.AttemptID)
	}
	lease.ExpiresAt = until
	return lease, nil
}
