package service

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"proctor/bundle"
	"proctor/models"
	"proctor/storage"
	"proctor/storage/artifact"
)

// SubmissionStore is what the submission service needs from storage.
type SubmissionStore interface {
	TeamBySlug(ctx context.Context, slug string) (*models.Team, error)
	TeamByID(ctx context.Context, id int64) (*models.Team, error)
	Membership(ctx context.Context, teamID, userID int64) (*models.Membership, error)
	TeamAgent(ctx context.Context, teamID int64, slug string) (*models.Agent, error)
	AgentsBySlug(ctx context.Context, slug string, member int64) ([]models.Agent, error)
	Benchmark(ctx context.Context, slug string, scope models.BenchmarkScope) (*models.Benchmark, error)
	SubsetTaskIDs(ctx context.Context, versionID int64, subset string) ([]int64, error)
	InsertSubmission(ctx context.Context, sub *models.Submission, ins storage.SubmissionInsert) (*models.Submission, bool, error)
	SubmissionByID(ctx context.Context, id, member int64) (*models.SubmissionView, error)
	ListSubmissions(ctx context.Context, f models.SubmissionFilter, teamID, member int64) ([]models.SubmissionView, int, error)
	SubmissionFormChoices(ctx context.Context, member int64, unpublished bool) (*models.SubmissionFormOptions, error)
	SubmissionEvents(ctx context.Context, id int64) ([]models.SubmissionEvent, error)
	SetSubmissionUpload(ctx context.Context, id int64, multipartID string) error
	RecordSubmissionPart(ctx context.Context, id int64, p models.SubmissionPart) error
	CompleteSubmissionUpload(ctx context.Context, id, size int64, enqueue func(ctx context.Context, tx *sql.Tx, id int64) error) error
	RequestSubmissionIngest(ctx context.Context, id int64, admit func(s, duplicate *models.Submission) error,
		enqueue func(ctx context.Context, tx *sql.Tx, id int64) error) error
	DiscardSubmission(ctx context.Context, id int64) (*models.Submission, error)
	RefuseSubmission(ctx context.Context, id int64, reason string) error
}

// SubmissionJobs enqueues the submission portal's jobs inside the
// transaction that changes the submission (the runner's queue).
type SubmissionJobs interface {
	// ValidateSubmission enqueues the validation of an assembled bundle.
	ValidateSubmission(ctx context.Context, tx *sql.Tx, id int64) error
	// IngestSubmission enqueues the ingest of a validated bundle.
	IngestSubmission(ctx context.Context, tx *sql.Tx, id int64) error
}

// SubmissionOptions are the submission service's settings.
type SubmissionOptions struct {
	// DailyQuota caps the submissions a team may start in 24 hours; 0 =
	// unlimited; administrators are exempt.
	DailyQuota int
	// PartBytes is the size of every part of an upload but the last
	// (default 16 MiB; S3 takes no part under 5 MiB but the last).
	PartBytes int64
	// Limits cap what a bundle may hold; MaxBundleBytes is also the largest
	// upload accepted. The zero value is bundle.DefaultLimits().
	Limits bundle.Limits
	// Logger logs what a request cannot report (a failed clean-up).
	Logger *slog.Logger
}

// Submissions is the submission portal's service: teams upload the
// trajectories their agents ran elsewhere as a bundle, in parts or streamed
// whole, into the artifact store; the queue's jobs validate the bundle and
// ingest it as a run. Only the members of a submission's team and
// administrators see it or act on it (ENOTFOUND for everyone else). A
// submission shows no run results: its run is a link, which the run
// service answers under the blind-study rule.
type Submissions struct {
	store SubmissionStore
	files artifact.Store
	jobs  SubmissionJobs
	opts  SubmissionOptions
}

// NewSubmissions returns the submission service over store and files,
// enqueuing through jobs. Without jobs or files (a process without a queue)
// it lists submissions but answers EUNAVAILABLE to everything else.
func NewSubmissions(store SubmissionStore, files artifact.Store, jobs SubmissionJobs, opts SubmissionOptions) *Submissions {
	if opts.PartBytes <= 0 {
		opts.PartBytes = 16 << 20
	}
	if opts.Limits == (bundle.Limits{}) {
		opts.Limits = bundle.DefaultLimits()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Submissions{store: store, files: files, jobs: jobs, opts: opts}
}

// Available reports whether this process receives submissions (it has a
// job queue and an artifact store); the upload form is offered only then.
func (s *Submissions) Available() bool { return s.jobs != nil && s.files != nil }

// available is EUNAVAILABLE in a process that cannot receive submissions.
func (s *Submissions) available() error {
	if !s.Available() {
		return models.Errorf(models.EUNAVAILABLE, "Submissions cannot be received on this server right now: it has no job queue. Try again later or ask an administrator.")
	}
	return nil
}

// SubmissionLimits are the limits every bundle is held to (the upload form
// shows them).
func (s *Submissions) SubmissionLimits() bundle.Limits { return s.opts.Limits }

// memberScope is the user whose teams' submissions the caller may see, or
// 0 when they may see every team's (administrators and the system).
func memberScope(a models.Actor) int64 {
	if a.Privileged() {
		return 0
	}
	return a.UserID
}

// bundleExtensions are the file names a bundle may have.
var bundleExtensions = []string{".zip", ".tar.gz", ".tgz"}

// checkBundleFilename keeps a clean base name ending in a bundle extension.
func checkBundleFilename(name string) (string, error) {
	name = path.Base(strings.ReplaceAll(strings.TrimSpace(name), `\`, "/"))
	switch {
	case name == "" || name == "." || name == "/":
		return "", models.FieldError("filename", "the bundle's file name is missing")
	case !utf8.ValidString(name):
		return "", models.FieldError("filename", "the file name is not valid UTF-8")
	case len(name) > 255:
		return "", models.FieldError("filename", "the file name is longer than 255 bytes")
	case strings.IndexFunc(name, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0:
		return "", models.FieldError("filename", "the file name holds control characters")
	}
	lower := strings.ToLower(name)
	for _, ext := range bundleExtensions {
		if strings.HasSuffix(lower, ext) && len(lower) > len(ext) {
			return name, nil
		}
	}
	return "", models.FieldError("filename", "%q is not a bundle: the file name must end in .zip, .tar.gz or .tgz", name)
}

// checkSHA256 accepts "" or 64 hexadecimal digits.
func checkSHA256(sum string) error {
	if sum == "" {
		return nil
	}
	if b, err := hex.DecodeString(sum); err != nil || len(b) != 32 {
		shown := sum
		if len(shown) > 80 {
			shown = shown[:80]
		}
		return models.FieldError("sha256", "the SHA-256 must be 64 hexadecimal digits, not %q", shown)
	}
	return nil
}

// maxSubmissionParts is the most parts an upload may have (S3's limit).
const maxSubmissionParts = 10_000

// partSizeFor is the part size of a bundle of size bytes: the configured one,
// or larger when the bundle would otherwise need more parts than S3 allows.
func partSizeFor(size, configured int64) int64 {
	if size <= 0 {
		return configured
	}
	need := (size + maxSubmissionParts - 1) / maxSubmissionParts
	return max(configured, need)
}

// newSubmission checks a request and writes the submission for the
// context's actor: the agent (any kind) is "team/agent" or found among the
// caller's teams, who must be a member of its team (or an admin); the
// benchmark and subset must exist and have tasks; the bundle must fit the
// size limit and be named .zip, .tar.gz or .tgz; a declared SHA-256 must be
// 64 hexadecimal digits; the team must be under its daily quota. An
// unfinished upload (status uploading) of the same bundle — team, agent,
// benchmark, subset, SHA-256, size (and file name when no SHA-256 is
// declared) — is returned with resumed = true instead of a new one, unless
// the bundle is streamed. EINVALID (with the field), ETOOLARGE, ENOTFOUND,
// EUNAUTHORIZED, EFORBIDDEN, ERATELIMIT, or ECONFLICT when the team already
// submitted the same bundle and it was ingested.
func (s *Submissions) newSubmission(ctx context.Context, req models.SubmissionRequest, streamed bool) (*models.Submission, bool, error) {
	actor, err := models.RequireUser(ctx)
	if err != nil {
		return nil, false, err
	}
	req.Normalize()
	if req.Agent == "" {
		return nil, false, models.FieldError("agent", "choose the agent whose results these are")
	}
	if req.Benchmark == "" {
		return nil, false, models.FieldError("benchmark", "choose the benchmark the bundle answers")
	}
	filename, err := checkBundleFilename(req.Filename)
	if err != nil {
		return nil, false, err
	}
	if err := checkSHA256(req.SHA256); err != nil {
		return nil, false, err
	}
	maxBytes := s.opts.Limits.MaxBundleBytes
	switch {
	case req.Size < 0 || (req.Size == 0 && !streamed):
		return nil, false, models.FieldError("size", "the bundle's size must be a positive number of bytes")
	case maxBytes > 0 && req.Size > maxBytes:
		size, limit := models.FormatSizeOverLimit(req.Size, maxBytes)
		return nil, false, &models.Error{Code: models.ETOOLARGE, Field: "size",
			Message: fmt.Sprintf("The bundle is %s; the largest this server accepts is %s.", size, limit)}
	}
	agent, team, err := s.submissionAgent(ctx, actor, req.Team, req.Agent)
	if err != nil {
		return nil, false, err
	}
	bench, err := s.store.Benchmark(ctx, req.Benchmark, scopeOf(ctx))
	if err != nil {
		if models.ErrorCode(err) == models.ENOTFOUND {
			return nil, false, models.FieldError("benchmark", "there is no benchmark %q", req.Benchmark)
		}
		return nil, false, err
	}
	if bench.CurrentVersionID == nil {
		return nil, false, models.FieldError("benchmark", "benchmark %s has no imported tasks", bench.Slug)
	}
	if bench.GradesCandidates() {
		return nil, false, models.FieldError("benchmark", "%s is a hidden-tests benchmark: submit the candidate websites (/benchmarks/%s/candidates/new) rather than trajectories", bench.Slug, bench.Slug)
	}
	versionID := *bench.CurrentVersionID
	taskIDs, err := s.store.SubsetTaskIDs(ctx, versionID, req.Subset)
	if err != nil {
		return nil, false, err
	}
	if len(taskIDs) == 0 {
		return nil, false, models.FieldError("subset", "subset %q of %s holds no tasks", req.Subset, bench.Slug)
	}
	sub := &models.Submission{
		TeamID: team.ID, AgentID: agent.ID, BenchmarkID: bench.ID, VersionID: versionID, SubsetName: req.Subset,
		Status: models.SubmissionUploading, Filename: filename, Size: req.Size, SHA256: req.SHA256,
		PartSize: partSizeFor(req.Size, s.opts.PartBytes),
	}
	if streamed {
		sub.PartSize = req.Size
	}
	if actor.UserID != 0 {
		sub.CreatedBy = &actor.UserID
	}
	declared := "no SHA-256 declared"
	if req.SHA256 != "" {
		declared = "sha256 " + req.SHA256
	}
	return s.store.InsertSubmission(ctx, sub, storage.SubmissionInsert{
		Resume:    !streamed,
		Details:   fmt.Sprintf("%s for %s/%s on %s (%s): %s, %s", filename, team.Slug, agent.Slug, bench.Slug, req.Subset, models.FormatBytes(req.Size), declared),
		Duplicate: DuplicateBundleError,
		WithinQuota: func(recent int64) error {
			return checkSubmissionQuota(actor, team, recent, s.opts.DailyQuota)
		},
	})
}

// checkSubmissionQuota is ERATELIMIT when the team has started dailyQuota
// submissions in the last 24 hours (0 = unlimited; admins and the system are
// exempt). Discarded and refused ones count too: each took an upload.
func checkSubmissionQuota(actor models.Actor, team *models.Team, recent int64, dailyQuota int) error {
	if dailyQuota <= 0 || actor.Privileged() {
		return nil
	}
	if recent >= int64(dailyQuota) {
		return models.Errorf(models.ERATELIMIT, "Team %s has started %d submissions in the last 24 hours, its daily quota; try again later or ask an administrator.", team.Slug, recent)
	}
	return nil
}

// DuplicateBundleError is ECONFLICT naming the run an earlier submission of
// the same bundle became (or is becoming).
func DuplicateBundleError(prev *models.Submission) error {
	if prev.RunID == nil {
		return models.Errorf(models.ECONFLICT, "This bundle is already being ingested as submission %d.", prev.ID)
	}
	at := prev.CreatedAt
	if prev.IngestedAt != nil {
		at = *prev.IngestedAt
	}
	return models.Errorf(models.ECONFLICT, "This bundle was already submitted as run %d on %s.", *prev.RunID, at.UTC().Format("2 January 2006"))
}

// submissionAgent finds the agent a submission is for: in the named team, or
// among the caller's teams (among every team for administrators who belong
// to none that has it). The caller must act for the agent's team.
func (s *Submissions) submissionAgent(ctx context.Context, actor models.Actor, teamSlug, agentSlug string) (*models.Agent, *models.Team, error) {
	if teamSlug != "" {
		team, err := s.store.TeamBySlug(ctx, teamSlug)
		if err != nil {
			if models.ErrorCode(err) == models.ENOTFOUND {
				return nil, nil, models.FieldError("agent", "there is no team %q", teamSlug)
			}
			return nil, nil, err
		}
		if _, err := requireRole(ctx, s.store, team.ID, false); err != nil {
			return nil, nil, err
		}
		agent, err := s.store.TeamAgent(ctx, team.ID, agentSlug)
		if models.ErrorCode(err) == models.ENOTFOUND {
			return nil, nil, models.FieldError("agent", "team %s has no agent %q", team.Slug, agentSlug)
		} else if err != nil {
			return nil, nil, err
		}
		return agent, team, nil
	}
	agents, err := s.store.AgentsBySlug(ctx, agentSlug, actor.UserID)
	if err != nil {
		return nil, nil, err
	}
	if len(agents) == 0 && actor.Privileged() && actor.UserID != 0 {
		if agents, err = s.store.AgentsBySlug(ctx, agentSlug, 0); err != nil {
			return nil, nil, err
		}
	}
	switch {
	case len(agents) == 0:
		return nil, nil, models.FieldError("agent", "none of your teams has an agent %q: write it as team/agent", agentSlug)
	case len(agents) > 1:
		return nil, nil, models.FieldError("agent", "several teams have an agent %q: write it as team/agent", agentSlug)
	}
	team, err := s.store.TeamByID(ctx, agents[0].TeamID)
	if err != nil {
		return nil, nil, err
	}
	return &agents[0], team, nil
}

// view is a submission the caller may see: EUNAUTHORIZED when nobody is
// signed in, ENOTFOUND unless they are a member of its team or an admin.
func (s *Submissions) view(ctx context.Context, id int64) (*models.SubmissionView, error) {
	a, err := models.RequireUser(ctx)
	if err != nil {
		return nil, err
	}
	return s.store.SubmissionByID(ctx, id, memberScope(a))
}

// submissionStatuses lists every status, for filters.
var submissionStatuses = []string{models.SubmissionUploading, models.SubmissionUploaded, models.SubmissionValidating, models.SubmissionValidated,
	models.SubmissionRefused, models.SubmissionIngesting, models.SubmissionIngested, models.SubmissionFailed, models.SubmissionDiscarded}

// ListSubmissions lists submissions, newest first: a team's for its members,
// every one for administrators; without a team, a member sees all of their
// teams'. Items leave out the validation report (Submission has it). Page
// defaults to 1 and PerPage to 20 (at most 100). EUNAUTHORIZED when nobody
// is signed in, ENOTFOUND for an unknown team, EFORBIDDEN for a team the
// caller is not in, EINVALID on "status" for an unknown status.
func (s *Submissions) ListSubmissions(ctx context.Context, f models.SubmissionFilter) ([]models.SubmissionView, int, error) {
	a, err := models.RequireUser(ctx)
	if err != nil {
		return nil, 0, err
	}
	if f.Status != "" && !slices.Contains(submissionStatuses, f.Status) {
		return nil, 0, models.FieldError("status", "status must be one of %s, not %q", strings.Join(submissionStatuses, ", "), f.Status)
	}
	if f.Page < 1 {
		f.Page = 1
	}
	if f.PerPage < 1 {
		f.PerPage = 20
	}
	f.PerPage = min(f.PerPage, 100)
	var teamID int64
	if f.TeamSlug != "" {
		team, err := s.store.TeamBySlug(ctx, f.TeamSlug)
		if err != nil {
			return nil, 0, err
		}
		if _, err := requireRole(ctx, s.store, team.ID, false); err != nil {
			return nil, 0, err
		}
		teamID = team.ID
	}
	return s.store.ListSubmissions(ctx, f, teamID, memberScope(a))
}

// SubmissionFormOptions lists what the upload form offers: the agents (of
// any kind) of the caller's teams — every team's for administrators — by
// team and name, and the benchmarks with imported tasks the caller may see,
// each with its subsets, "full" first. EUNAUTHORIZED when nobody is signed in.
func (s *Submissions) SubmissionFormOptions(ctx context.Context) (*models.SubmissionFormOptions, error) {
	a, err := models.RequireUser(ctx)
	if err != nil {
		return nil, err
	}
	return s.store.SubmissionFormChoices(ctx, memberScope(a), a.Privileged())
}

// partEvent is the audit action of one received part.
const partEvent = "submission.part"

// SubmissionEvents is a submission's audit trail, oldest first: every
// upload, validation, refusal, ingest and discard with who did it and when.
// Visible to whoever may see the submission (ENOTFOUND otherwise); the
// client address only to administrators. Consecutive parts sent by the same
// person read as one line.
func (s *Submissions) SubmissionEvents(ctx context.Context, id int64) ([]models.SubmissionEvent, error) {
	if _, err := s.view(ctx, id); err != nil {
		return nil, err
	}
	rows, err := s.store.SubmissionEvents(ctx, id)
	if err != nil {
		return nil, err
	}
	admin := models.ActorFrom(ctx).IsAdmin
	events := make([]models.SubmissionEvent, 0, len(rows))
	parts := 0 // parts in the run of part events ending the list
	for _, ev := range rows {
		if !admin {
			ev.IP = ""
		}
		// A multi-gigabyte upload sends hundreds of parts.
		if last := len(events) - 1; ev.Action == partEvent && parts > 0 && events[last].UserName == ev.UserName && events[last].IP == ev.IP {
			parts++
			ev.Details = fmt.Sprintf("%d parts, the last %s", parts, ev.Details)
			events[last] = ev
			continue
		}
		parts = 0
		if ev.Action == partEvent {
			parts = 1
		}
		events = append(events, ev)
	}
	return events, nil
}

// IngestSubmission queues the ingest of a validated submission whose report
// blocks nothing. Members of the team and admins only (ENOTFOUND for
// others); ECONFLICT when it is not validated, its report blocks it or the
// team already ingested the same bundle.
func (s *Submissions) IngestSubmission(ctx context.Context, id int64) (*models.SubmissionView, error) {
	if err := s.available(); err != nil {
		return nil, err
	}
	if _, err := s.view(ctx, id); err != nil {
		return nil, err
	}
	admit := func(sub, duplicate *models.Submission) error {
		if sub.Status != models.SubmissionValidated {
			return nil // the change of status says why
		}
		var rep models.SubmissionReport
		if err := json.Unmarshal([]byte(sub.Report), &rep); err != nil {
			return fmt.Errorf("submission %d: report: %w", id, err)
		}
		if len(rep.Blocking) > 0 {
			return models.Errorf(models.ECONFLICT, "Submission %d cannot be ingested: %s", id, strings.Join(rep.Blocking, " "))
		}
		if duplicate != nil {
			return DuplicateBundleError(duplicate)
		}
		return nil
	}
	if err := s.store.RequestSubmissionIngest(ctx, id, admit, s.jobs.IngestSubmission); err != nil {
		return nil, err
	}
	return s.view(ctx, id)
}

// DiscardSubmission discards an unfinished submission (uploading, uploaded or
// validated) and deletes every byte it stored. Members of the team and admins
// only (ENOTFOUND for others); ECONFLICT while a job works on it or once it
// is final.
func (s *Submissions) DiscardSubmission(ctx context.Context, id int64) error {
	if err := s.available(); err != nil {
		return err
	}
	if _, err := s.view(ctx, id); err != nil {
		return err
	}
	sub, err := s.store.DiscardSubmission(ctx, id)
	if err != nil {
		return err
	}
	if err := DeleteSubmissionBytes(ctx, s.files, sub); err != nil {
		return storeUnavailable("delete the bundle", err)
	}
	return nil
}

// DeleteSubmissionBytes removes an unfinished upload's parts and every
// artifact under the submission's prefix.
func DeleteSubmissionBytes(ctx context.Context, files artifact.Store, s *models.Submission) error {
	var errs []error
	if s.MultipartID != "" {
		if err := files.AbortMultipart(ctx, s.StorageKey, s.MultipartID); err != nil {
			errs = append(errs, err)
		}
	}
	if err := artifact.DeletePrefix(ctx, files, models.SubmissionPrefix(s.ID)); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("delete submission %d: %w", s.ID, errors.Join(errs...))
	}
	return nil
}

// storeUnavailable is EUNAVAILABLE for a failure of the artifact store.
func storeUnavailable(what string, err error) error {
	return &models.Error{Code: models.EUNAVAILABLE, Message: fmt.Sprintf("The artifact store could not %s; try again shortly.", what), Err: err}
}

// systemContext is ctx acting as the service itself, for the writes a
// caller's request makes on their behalf (starting an upload, refusing an
// oversized bundle).
func systemContext(ctx context.Context) context.Context {
	return models.WithActor(ctx, models.SystemActor())
}

// partURLTTL is how long a presigned part upload stays valid.
const partURLTTL = time.Hour
