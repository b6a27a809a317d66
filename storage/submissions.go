package storage

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"gorm.io/gorm"

	"proctor/models"
)

// A submission moves uploading → uploaded → validating → validated →
// ingesting → ingested; refused, failed and discarded are final. Every change
// of status is one guarded update (the row is locked and its status checked),
// so a redelivered job or a second click never moves it twice, and each is
// written to audit_events with the change: who submitted what and when.

// SubmissionRules are the server's limits on new submissions.
type SubmissionRules struct {
	MaxBytes   int64 // the largest bundle accepted
	PartSize   int64 // every part but the last has this size (raised when the bundle would need more than 10 000 parts)
	DailyQuota int   // submissions a team may start in 24 hours; 0 = unlimited, admins exempt
	// Streamed marks a bundle sent whole in one request (the upload form
	// without JavaScript): its size may be unknown (0) until it has arrived,
	// and it never resumes an earlier upload.
	Streamed bool
}

// maxSubmissionParts is the most parts an upload may have (S3's limit).
const maxSubmissionParts = 10_000

// SubmissionKey is the artifact key of a submission's assembled bundle.
func SubmissionKey(id int64) string { return SubmissionPrefix(id) + "bundle" }

// SubmissionPrefix is the artifact prefix holding every byte of a submission:
// its bundle and, once ingested, its tasks' screenshots and network logs.
func SubmissionPrefix(id int64) string { return "submissions/" + strconv.FormatInt(id, 10) + "/" }

// bundleExtensions are the file names a bundle may have.
func bundleExtensions() []string { return []string{".zip", ".tar.gz", ".tgz"} }

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
	for _, ext := range bundleExtensions() {
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
		return models.FieldError("sha256", "the SHA-256 must be 64 hexadecimal digits, not %q", truncate(sum, 80))
	}
	return nil
}

// partSizeFor is the part size of a bundle of size bytes: the configured one,
// or larger when the bundle would otherwise need more parts than S3 allows.
func partSizeFor(size, configured int64) int64 {
	if size <= 0 {
		return configured
	}
	need := (size + maxSubmissionParts - 1) / maxSubmissionParts
	return max(configured, need)
}

// submissionNotFound hides a submission from callers who may not see it.
func submissionNotFound(id int64) error {
	return models.Errorf(models.ENOTFOUND, "Submission %d not found.", id)
}

// CreateSubmission starts an upload for the context's actor: the agent (any
// kind) is "team/agent" or found among the caller's teams, who must be a
// member of its team (or an admin); the benchmark and subset must exist and
// have tasks; the bundle must fit the size limit and be named .zip, .tar.gz
// or .tgz; a declared SHA-256 must be 64 hexadecimal digits; the team must be
// under its daily quota. An unfinished upload (status uploading) of the same
// bundle — team, agent, benchmark, subset, SHA-256, size (and file name when
// no SHA-256 is declared) — is returned with resumed = true instead of a new
// one. EINVALID (with the field), ETOOLARGE, ENOTFOUND, EUNAUTHORIZED,
// EFORBIDDEN, ERATELIMIT, or ECONFLICT when the team already submitted the
// same bundle and it was ingested.
func (db *DB) CreateSubmission(ctx context.Context, req models.SubmissionRequest, rules SubmissionRules) (*models.Submission, bool, error) {
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
	switch {
	case req.Size < 0 || (req.Size == 0 && !rules.Streamed):
		return nil, false, models.FieldError("size", "the bundle's size must be a positive number of bytes")
	case rules.MaxBytes > 0 && req.Size > rules.MaxBytes:
		size, limit := models.FormatSizeOverLimit(req.Size, rules.MaxBytes)
		return nil, false, &models.Error{Code: models.ETOOLARGE, Field: "size",
			Message: fmt.Sprintf("The bundle is %s; the largest this server accepts is %s.", size, limit)}
	}
	q := db.q(ctx)
	agent, team, err := resolveSubmissionAgent(ctx, q, actor, req.Team, req.Agent)
	if err != nil {
		return nil, false, err
	}
	bench, err := visibleBenchmark(ctx, q, req.Benchmark)
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
	taskIDs, err := db.subsetTaskIDs(ctx, q, versionID, req.Subset)
	if err != nil {
		return nil, false, err
	}
	if len(taskIDs) == 0 {
		return nil, false, models.FieldError("subset", "subset %q of %s holds no tasks", req.Subset, bench.Slug)
	}
	now := db.now()
	sub := &models.Submission{
		TeamID: team.ID, AgentID: agent.ID, BenchmarkID: bench.ID, VersionID: versionID, SubsetName: req.Subset,
		Status: models.SubmissionUploading, Filename: filename, Size: req.Size, SHA256: req.SHA256,
		PartSize: partSizeFor(req.Size, rules.PartSize), CreatedAt: now, UpdatedAt: now,
	}
	if rules.Streamed {
		sub.PartSize = req.Size
	}
	if actor.UserID != 0 {
		sub.CreatedBy = &actor.UserID
	}
	resumed := false
	err = db.tx(ctx, func(tx *gorm.DB) error {
		// Creations for one team take turns on its row: under PostgreSQL's
		// read committed, two at once would each count the team's
		// submissions without the other's and both pass the quota (or both
		// find no upload to resume). SQLite's single writer serializes them
		// already.
		if err := lockRow(tx, db.dialect).Select("id").First(&models.Team{}, team.ID).Error; err != nil {
			return wrap(err, "team")
		}
		if req.SHA256 != "" {
			if err := duplicateBundle(tx, team.ID, bench.ID, req.SHA256, 0); err != nil {
				return err
			}
		}
		if !rules.Streamed {
			prev, err := resumableSubmission(tx, sub)
			if err != nil {
				return err
			}
			if prev != nil {
				sub, resumed = prev, true
				return nil
			}
		}
		if err := checkSubmissionQuota(tx, actor, team, now, rules.DailyQuota); err != nil {
			return err
		}
		if err := tx.Create(sub).Error; err != nil {
			return wrap(err, "submission")
		}
		sub.StorageKey = SubmissionKey(sub.ID)
		if err := tx.Model(sub).Update("storage_key", sub.StorageKey).Error; err != nil {
			return wrap(err, "submission")
		}
		details := fmt.Sprintf("%s for %s/%s on %s (%s): %s, %s", filename, team.Slug, agent.Slug, bench.Slug, req.Subset,
			models.FormatBytes(req.Size), orNone(req.SHA256, "no SHA-256 declared"))
		return db.auditTx(ctx, tx, "submission.create", submissionSubject(sub.ID), details, &team.ID)
	})
	if err != nil {
		return nil, false, err
	}
	return sub, resumed, nil
}

func orNone(s, none string) string {
	if s == "" {
		return none
	}
	return "sha256 " + s
}

func submissionSubject(id int64) string { return "submission " + strconv.FormatInt(id, 10) }

// resolveSubmissionAgent finds the agent a submission is for: in the named
// team, or among the caller's teams (among every team for administrators who
// belong to none that has it). The caller must act for the agent's team.
func resolveSubmissionAgent(ctx context.Context, q *gorm.DB, actor models.Actor, teamSlug, agentSlug string) (*models.Agent, *models.Team, error) {
	if teamSlug != "" {
		team, err := teamBySlug(q, teamSlug, false)
		if err != nil {
			if models.ErrorCode(err) == models.ENOTFOUND {
				return nil, nil, models.FieldError("agent", "there is no team %q", teamSlug)
			}
			return nil, nil, err
		}
		if _, err := requireTeamRole(ctx, q, team.ID, false); err != nil {
			return nil, nil, err
		}
		var agents []models.Agent
		if err := q.Select(agentColumns).Where("team_id = ? AND slug = ?", team.ID, agentSlug).Limit(1).Find(&agents).Error; err != nil {
			return nil, nil, wrap(err, "agent")
		}
		if len(agents) == 0 {
			return nil, nil, models.FieldError("agent", "team %s has no agent %q", team.Slug, agentSlug)
		}
		return &agents[0], team, nil
	}
	var agents []models.Agent
	mine := q.Select(agentColumns).Where("slug = ?", agentSlug)
	if actor.UserID != 0 {
		mine = mine.Where("team_id IN (SELECT team_id FROM memberships WHERE user_id = ?)", actor.UserID)
	}
	if err := mine.Order("id").Find(&agents).Error; err != nil {
		return nil, nil, wrap(err, "agents")
	}
	if len(agents) == 0 && actor.Privileged() && actor.UserID != 0 {
		if err := q.Select(agentColumns).Where("slug = ?", agentSlug).Order("id").Find(&agents).Error; err != nil {
			return nil, nil, wrap(err, "agents")
		}
	}
	switch {
	case len(agents) == 0:
		return nil, nil, models.FieldError("agent", "none of your teams has an agent %q: write it as team/agent", agentSlug)
	case len(agents) > 1:
		return nil, nil, models.FieldError("agent", "several teams have an agent %q: write it as team/agent", agentSlug)
	}
	team, err := teamByID(q, agents[0].TeamID, false)
	if err != nil {
		return nil, nil, err
	}
	return &agents[0], team, nil
}

// resumableSubmission finds an unfinished upload of the same bundle.
func resumableSubmission(tx *gorm.DB, s *models.Submission) (*models.Submission, error) {
	q := tx.Where("team_id = ? AND agent_id = ? AND benchmark_id = ? AND subset_name = ? AND sha256 = ? AND size = ? AND status = ?",
		s.TeamID, s.AgentID, s.BenchmarkID, s.SubsetName, s.SHA256, s.Size, models.SubmissionUploading)
	if s.SHA256 == "" {
		q = q.Where("filename = ?", s.Filename)
	}
	var found []models.Submission
	if err := q.Order("id DESC").Limit(1).Find(&found).Error; err != nil {
		return nil, wrap(err, "submissions")
	}
	if len(found) == 0 {
		return nil, nil
	}
	return &found[0], nil
}

// duplicateBundle is ECONFLICT when the team's bundle with this SHA-256 was
// already ingested as a run of the benchmark (or is being ingested), other
// than the submission except.
func duplicateBundle(tx *gorm.DB, teamID, benchmarkID int64, sha string, except int64) error {
	var prev []models.Submission
	err := tx.Where("team_id = ? AND benchmark_id = ? AND sha256 = ? AND status IN ? AND id <> ?",
		teamID, benchmarkID, sha, []string{models.SubmissionIngesting, models.SubmissionIngested}, except).
		Order("id").Limit(1).Find(&prev).Error
	if err != nil {
		return wrap(err, "submissions")
	}
	if len(prev) == 0 {
		return nil
	}
	return duplicateError(&prev[0])
}

// duplicateError names the run an earlier submission of the same bundle became.
func duplicateError(prev *models.Submission) error {
	if prev.RunID == nil {
		return models.Errorf(models.ECONFLICT, "This bundle is already being ingested as submission %d.", prev.ID)
	}
	at := prev.CreatedAt
	if prev.IngestedAt != nil {
		at = *prev.IngestedAt
	}
	return models.Errorf(models.ECONFLICT, "This bundle was already submitted as run %d on %s.", *prev.RunID, at.UTC().Format("2 January 2006"))
}

// checkSubmissionQuota is ERATELIMIT when the team has started dailyQuota
// submissions in the last 24 hours (0 = unlimited; admins and the system are
// exempt). Discarded and refused ones count too: each took an upload.
func checkSubmissionQuota(tx *gorm.DB, actor models.Actor, team *models.Team, now time.Time, dailyQuota int) error {
	if dailyQuota <= 0 || actor.Privileged() {
		return nil
	}
	var n int64
	if err := tx.Model(&models.Submission{}).Where("team_id = ? AND created_at > ?", team.ID, now.Add(-24*time.Hour)).Count(&n).Error; err != nil {
		return wrap(err, "submissions")
	}
	if n >= int64(dailyQuota) {
		return models.Errorf(models.ERATELIMIT, "Team %s has started %d submissions in the last 24 hours, its daily quota; try again later or ask an administrator.", team.Slug, n)
	}
	return nil
}

// submissionRow is a submission with the names its views show.
type submissionRow struct {
	models.Submission
	TeamSlug      string
	AgentSlug     string
	AgentName     string
	BenchmarkSlug string
	CreatedByName string
}

// submissionListColumns are what a list of submissions shows: everything
// but the validation report, which may be megabytes per row (a bundle's
// unknown and missing tasks are listed whole) and which no list shows.
const submissionListColumns = `s.id, s.team_id, s.agent_id, s.benchmark_id, s.version_id, s.subset_name, s.created_by, s.status,
	s.filename, s.size, s.sha256, s.part_size, s.storage_key, s.multipart_id, s.format, s.error,
	s.progress_done, s.progress_total, s.run_id, s.created_at, s.updated_at, s.validated_at, s.ingested_at,
	t.slug AS team_slug, a.slug AS agent_slug, a.name AS agent_name, b.slug AS benchmark_slug,
	COALESCE(NULLIF(u.name, ''), u.email, '') AS created_by_name`

// submissionViewColumns are what one submission's page shows: the list's
// columns and the report.
const submissionViewColumns = submissionListColumns + `, s.report`

// submissionsFrom joins submissions to the names their views show, limited
// to the teams the context's actor belongs to unless they are privileged.
func submissionsFrom(ctx context.Context, q *gorm.DB) *gorm.DB {
	s := q.Table("submissions s").
		Joins("JOIN teams t ON t.id = s.team_id").
		Joins("JOIN agents a ON a.id = s.agent_id").
		Joins("JOIN benchmarks b ON b.id = s.benchmark_id").
		Joins("LEFT JOIN users u ON u.id = s.created_by")
	if a := models.ActorFrom(ctx); !a.Privileged() {
		s = s.Where("s.team_id IN (SELECT team_id FROM memberships WHERE user_id = ?)", a.UserID)
	}
	return s
}

// view turns a row into the view pages and the API show; the report is
// parsed when the row holds one (only a single submission's read selects it).
func (r *submissionRow) view() models.SubmissionView {
	v := models.SubmissionView{Submission: r.Submission, TeamSlug: r.TeamSlug, AgentSlug: r.AgentSlug, AgentName: r.AgentName,
		BenchmarkSlug: r.BenchmarkSlug, CreatedByName: r.CreatedByName, Parts: []models.SubmissionPart{}}
	if r.Report != "" {
		var rep models.SubmissionReport
		if err := json.Unmarshal([]byte(r.Report), &rep); err == nil {
			v.ParsedReport = &rep
		}
	}
	return v
}

// SubmissionByID returns a submission its team's members and administrators
// may see (without its parts, which the artifact store holds).
// EUNAUTHORIZED when nobody is signed in, ENOTFOUND for everyone else.
func (db *DB) SubmissionByID(ctx context.Context, id int64) (*models.SubmissionView, error) {
	if _, err := models.RequireUser(ctx); err != nil {
		return nil, err
	}
	var rows []submissionRow
	if err := submissionsFrom(ctx, db.q(ctx)).Select(submissionViewColumns).Where("s.id = ?", id).Limit(1).Scan(&rows).Error; err != nil {
		return nil, wrap(err, "submission")
	}
	if len(rows) == 0 {
		return nil, submissionNotFound(id)
	}
	v := rows[0].view()
	return &v, nil
}

// submissionStatuses lists every status, for filters.
func submissionStatuses() []string {
	return []string{models.SubmissionUploading, models.SubmissionUploaded, models.SubmissionValidating, models.SubmissionValidated,
		models.SubmissionRefused, models.SubmissionIngesting, models.SubmissionIngested, models.SubmissionFailed, models.SubmissionDiscarded}
}

// ListSubmissions lists submissions, newest first: a team's for its members,
// every one for administrators; without a team, a member sees all of their
// teams'. Items leave out the validation report (SubmissionByID has it).
// Page defaults to 1 and PerPage to 20 (at most 100). EUNAUTHORIZED
// when nobody is signed in, ENOTFOUND for an unknown team, EFORBIDDEN for a
// team the caller is not in, EINVALID on "status" for an unknown status.
func (db *DB) ListSubmissions(ctx context.Context, f models.SubmissionFilter) ([]models.SubmissionView, int, error) {
	if _, err := models.RequireUser(ctx); err != nil {
		return nil, 0, err
	}
	if f.Status != "" && !slices.Contains(submissionStatuses(), f.Status) {
		return nil, 0, models.FieldError("status", "status must be one of %s, not %q", strings.Join(submissionStatuses(), ", "), f.Status)
	}
	if f.Page < 1 {
		f.Page = 1
	}
	if f.PerPage < 1 {
		f.PerPage = 20
	}
	f.PerPage = min(f.PerPage, 100)
	q := db.q(ctx)
	scoped := func() *gorm.DB { return submissionsFrom(ctx, q) }
	if f.TeamSlug != "" {
		team, err := teamBySlug(q, f.TeamSlug, false)
		if err != nil {
			return nil, 0, err
		}
		if _, err := requireTeamRole(ctx, q, team.ID, false); err != nil {
			return nil, 0, err
		}
		base := scoped
		scoped = func() *gorm.DB { return base().Where("s.team_id = ?", team.ID) }
	}
	if f.Status != "" {
		base := scoped
		scoped = func() *gorm.DB { return base().Where("s.status = ?", f.Status) }
	}
	var total int64
	if err := scoped().Count(&total).Error; err != nil {
		return nil, 0, wrap(err, "submissions")
	}
	var rows []submissionRow
	err := scoped().Select(submissionListColumns).Order("s.created_at DESC, s.id DESC").
		Offset((f.Page - 1) * f.PerPage).Limit(f.PerPage).Scan(&rows).Error
	if err != nil {
		return nil, 0, wrap(err, "submissions")
	}
	out := make([]models.SubmissionView, len(rows))
	for i := range rows {
		out[i] = rows[i].view()
	}
	return out, int(total), nil
}

// SubmissionFormOptions lists what the upload form offers: the agents (of
// any kind) of the caller's teams — every team's for administrators — by team
// and name, and the benchmarks with imported tasks the caller may see, each
// with its subsets, "full" first. EUNAUTHORIZED when nobody is signed in.
func (db *DB) SubmissionFormOptions(ctx context.Context) (*models.SubmissionFormOptions, error) {
	a, err := models.RequireUser(ctx)
	if err != nil {
		return nil, err
	}
	q := db.q(ctx)
	out := &models.SubmissionFormOptions{Agents: []models.AgentChoice{}, Benchmarks: []models.BenchmarkChoice{}}
	aq := q.Table("agents a").Select("t.slug AS team_slug, a.slug AS agent_slug, a.name").
		Joins("JOIN teams t ON t.id = a.team_id").Order("t.slug, LOWER(a.name), a.id")
	if !a.Privileged() {
		aq = aq.Where("a.team_id IN (SELECT team_id FROM memberships WHERE user_id = ?)", a.UserID)
	}
	if err := aq.Scan(&out.Agents).Error; err != nil {
		return nil, wrap(err, "agents")
	}
	var benches []struct {
		Slug, Name string
		VersionID  int64
	}
	bq := q.Table("benchmarks b").Select("b.slug, b.name, b.current_version_id AS version_id").
		Where("b.current_version_id IS NOT NULL").Order("LOWER(b.name), b.slug")
	if !a.Privileged() {
		bq = bq.Where("b.published = ?", true)
	}
	if err := bq.Scan(&benches).Error; err != nil {
		return nil, wrap(err, "benchmarks")
	}
	versionIDs := make([]int64, len(benches))
	for i, b := range benches {
		versionIDs[i] = b.VersionID
	}
	byVersion, err := subsetNamesByVersion(q, versionIDs)
	if err != nil {
		return nil, err
	}
	for _, b := range benches {
		out.Benchmarks = append(out.Benchmarks, models.BenchmarkChoice{Slug: b.Slug, Name: b.Name,
			Subsets: append([]string{models.SubsetFull}, byVersion[b.VersionID]...)})
	}
	return out, nil
}

// SubmissionForJob loads a submission for the queue's jobs. System only.
func (db *DB) SubmissionForJob(ctx context.Context, id int64) (*models.Submission, error) {
	if !models.ActorFrom(ctx).System {
		return nil, models.Errorf(models.EFORBIDDEN, "Only the queue reads submissions for processing.")
	}
	var s models.Submission
	if err := db.q(ctx).First(&s, id).Error; err != nil {
		return nil, wrap(err, "submission")
	}
	return &s, nil
}

// SubmissionCatalog returns the external ids of every task of a
// submission's benchmark version and of its subset, in task order, with the
// benchmark's slug: what a bundle is checked against. System only.
func (db *DB) SubmissionCatalog(ctx context.Context, s *models.Submission) (benchmark string, taskIDs, subsetTaskIDs []string, err error) {
	if !models.ActorFrom(ctx).System {
		return "", nil, nil, models.Errorf(models.EFORBIDDEN, "Only the queue reads submission catalogs.")
	}
	q := db.q(ctx)
	var slugs []string
	if err := q.Model(&models.Benchmark{}).Where("id = ?", s.BenchmarkID).Pluck("slug", &slugs).Error; err != nil || len(slugs) == 0 {
		return "", nil, nil, wrap(err, "benchmark")
	}
	if err := q.Model(&models.Task{}).Where("version_id = ?", s.VersionID).Order("position").Pluck("external_id", &taskIDs).Error; err != nil {
		return "", nil, nil, wrap(err, "tasks")
	}
	ids, err := db.subsetTaskIDs(ctx, q, s.VersionID, s.SubsetName)
	if err != nil {
		return "", nil, nil, err
	}
	if err := q.Model(&models.Task{}).Where("id IN ?", append(ids, 0)).Order("position").Pluck("external_id", &subsetTaskIDs).Error; err != nil {
		return "", nil, nil, wrap(err, "subset tasks")
	}
	return slugs[0], taskIDs, subsetTaskIDs, nil
}

// changeSubmission locks a submission, checks that its status is one of
// from (ECONFLICT with a message saying why otherwise), applies updates and
// records the audit action (none when ""). It returns the row before the
// change.
func (db *DB) changeSubmission(ctx context.Context, tx *gorm.DB, id int64, from []string, updates map[string]any, audit, details string) (*models.Submission, error) {
	var s models.Submission
	if err := lockRow(tx, db.dialect).First(&s, id).Error; err != nil {
		if models.ErrorCode(wrap(err, "submission")) == models.ENOTFOUND {
			return nil, submissionNotFound(id)
		}
		return nil, wrap(err, "submission")
	}
	if !slices.Contains(from, s.Status) {
		return &s, submissionStateError(&s)
	}
	updates["updated_at"] = db.now()
	if err := tx.Model(&models.Submission{}).Where("id = ?", id).Updates(updates).Error; err != nil {
		return nil, wrap(err, "submission")
	}
	if audit != "" {
		if err := db.auditTx(ctx, tx, audit, submissionSubject(id), details, &s.TeamID); err != nil {
			return nil, err
		}
	}
	return &s, nil
}

// SubmissionStateError is ECONFLICT explaining what a submission's status
// still allows.
func submissionStateError(s *models.Submission) error {
	var why string
	switch s.Status {
	case models.SubmissionUploading:
		why = "its upload is not complete"
	case models.SubmissionUploaded, models.SubmissionValidating:
		why = "it is being validated"
	case models.SubmissionValidated:
		why = "it is validated and waits to be ingested or discarded"
	case models.SubmissionIngesting:
		why = "it is being ingested"
	case models.SubmissionIngested:
		why = "it was ingested"
		if s.RunID != nil {
			why += fmt.Sprintf(" as run %d", *s.RunID)
		}
	case models.SubmissionRefused:
		why = "it was refused: " + s.Error
	case models.SubmissionFailed:
		why = "its ingest failed: " + s.Error
	case models.SubmissionDiscarded:
		why = "it was discarded"
	default:
		why = "it is " + s.Status
	}
	return models.Errorf(models.ECONFLICT, "Submission %d cannot do this: %s.", s.ID, why)
}

// SetSubmissionUpload records the artifact store's multipart upload id of a
// submission that is uploading. System only (the runner, after it began the
// upload for the submitter).
func (db *DB) SetSubmissionUpload(ctx context.Context, id int64, multipartID string) error {
	if !models.ActorFrom(ctx).System {
		return models.Errorf(models.EFORBIDDEN, "Only the runner starts uploads.")
	}
	return db.tx(ctx, func(tx *gorm.DB) error {
		_, err := db.changeSubmission(ctx, tx, id, []string{models.SubmissionUploading}, map[string]any{"multipart_id": multipartID}, "", "")
		return err
	})
}

// RecordSubmissionPart writes the audit event of a received part; the
// submission must still be uploading (ECONFLICT otherwise). The caller has
// already checked the actor may upload to it (SubmissionByID).
func (db *DB) RecordSubmissionPart(ctx context.Context, id int64, p models.SubmissionPart) error {
	return db.tx(ctx, func(tx *gorm.DB) error {
		details := fmt.Sprintf("part %d: %d bytes, md5 %s", p.Number, p.Size, p.MD5)
		_, err := db.changeSubmission(ctx, tx, id, []string{models.SubmissionUploading}, map[string]any{}, "submission.part", details)
		return err
	})
}

// CompleteSubmissionUpload marks an assembled upload uploaded (with its
// size, for streamed uploads whose size was unknown) and, in the same
// transaction, calls enqueue to queue its validation. ECONFLICT unless it is
// uploading. The caller has already checked the actor (SubmissionByID) or is
// the system.
func (db *DB) CompleteSubmissionUpload(ctx context.Context, id, size int64, enqueue func(ctx context.Context, tx *sql.Tx, id int64) error) error {
	return db.tx(ctx, func(tx *gorm.DB) error {
		updates := map[string]any{"status": models.SubmissionUploaded, "multipart_id": "", "progress_done": 0, "progress_total": 0}
		if size > 0 {
			updates["size"] = size
		}
		if _, err := db.changeSubmission(ctx, tx, id, []string{models.SubmissionUploading}, updates,
			"submission.complete", fmt.Sprintf("%s received", models.FormatBytes(size))); err != nil {
			return err
		}
		t, err := sqlTx(tx)
		if err != nil {
			return err
		}
		return enqueue(ctx, t, id)
	})
}

// StartSubmissionValidation moves an uploaded submission to validating and
// returns it; a submission already validating (a redelivered job) is
// returned as it is. ok is false when the submission no longer needs
// validating (discarded, or validated already). System only.
func (db *DB) StartSubmissionValidation(ctx context.Context, id int64) (s *models.Submission, ok bool, err error) {
	if !models.ActorFrom(ctx).System {
		return nil, false, models.Errorf(models.EFORBIDDEN, "Only the queue validates submissions.")
	}
	err = db.tx(ctx, func(tx *gorm.DB) error {
		prev, err := db.changeSubmission(ctx, tx, id, []string{models.SubmissionUploaded, models.SubmissionValidating},
			map[string]any{"status": models.SubmissionValidating, "progress_done": 0}, "", "")
		if models.ErrorCode(err) == models.ECONFLICT {
			return nil
		}
		if err != nil {
			return err
		}
		s, ok = prev, true
		s.Status = models.SubmissionValidating
		return nil
	})
	return s, ok, err
}

// FinishSubmissionValidation stores a validated submission's report and
// detected format and the SHA-256 of the bytes received. When the team has
// already ingested the same bundle on the benchmark, the report gains a
// blocking reason naming that run. ECONFLICT unless it is validating. System
// only.
func (db *DB) FinishSubmissionValidation(ctx context.Context, id int64, report models.SubmissionReport) (*models.SubmissionReport, error) {
	if !models.ActorFrom(ctx).System {
		return nil, models.Errorf(models.EFORBIDDEN, "Only the queue validates submissions.")
	}
	if err := checkSHA256(report.SHA256); err != nil || report.SHA256 == "" {
		return nil, fmt.Errorf("validation of submission %d: the report has no SHA-256 of the bundle", id)
	}
	err := db.tx(ctx, func(tx *gorm.DB) error {
		var s models.Submission
		if err := tx.First(&s, id).Error; err != nil {
			return wrap(err, "submission")
		}
		if err := duplicateBundle(tx, s.TeamID, s.BenchmarkID, report.SHA256, s.ID); err != nil {
			if models.ErrorCode(err) != models.ECONFLICT {
				return err
			}
			report.Blocking = append(report.Blocking, models.ErrorMessage(err))
		}
		raw, err := json.Marshal(report)
		if err != nil {
			return fmt.Errorf("encode report: %w", err)
		}
		now := db.now()
		details := fmt.Sprintf("%s: %d tasks found, %d missing, %d blocking", models.BundleFormatName(report.Format),
			report.Totals().TasksFound, report.Totals().TasksMissing, len(report.Blocking))
		_, err = db.changeSubmission(ctx, tx, id, []string{models.SubmissionValidating}, map[string]any{
			"status": models.SubmissionValidated, "report": string(raw), "format": report.Format, "sha256": report.SHA256,
			"validated_at": now, "error": "", "progress_done": gorm.Expr("progress_total"),
		}, "submission.validated", details)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &report, nil
}

// RefuseSubmission marks a submission that has not been validated refused,
// with the message saying why; its bytes are the caller's to delete.
// ECONFLICT once it is validated or final. System only.
func (db *DB) RefuseSubmission(ctx context.Context, id int64, reason string) error {
	if !models.ActorFrom(ctx).System {
		return models.Errorf(models.EFORBIDDEN, "Only the queue refuses submissions.")
	}
	return db.tx(ctx, func(tx *gorm.DB) error {
		_, err := db.changeSubmission(ctx, tx, id,
			[]string{models.SubmissionUploading, models.SubmissionUploaded, models.SubmissionValidating},
			map[string]any{"status": models.SubmissionRefused, "error": truncate(reason, 2000), "multipart_id": ""},
			"submission.refused", truncate(reason, 2000))
		return err
	})
}

// RequestSubmissionIngest moves a validated submission whose report has no
// blocking reason to ingesting and, in the same transaction, calls enqueue to
// queue its ingest. Members of its team and admins only: ENOTFOUND for
// others; ECONFLICT when it is not validated, its report blocks it, or the
// team already ingested the same bundle.
func (db *DB) RequestSubmissionIngest(ctx context.Context, id int64, enqueue func(ctx context.Context, tx *sql.Tx, id int64) error) error {
	if _, err := db.SubmissionByID(ctx, id); err != nil {
		return err
	}
	return db.tx(ctx, func(tx *gorm.DB) error {
		var s models.Submission
		if err := lockRow(tx, db.dialect).First(&s, id).Error; err != nil {
			return wrap(err, "submission")
		}
		if s.Status == models.SubmissionValidated {
			var rep models.SubmissionReport
			if err := json.Unmarshal([]byte(s.Report), &rep); err != nil {
				return fmt.Errorf("submission %d: report: %w", id, err)
			}
			if len(rep.Blocking) > 0 {
				return models.Errorf(models.ECONFLICT, "Submission %d cannot be ingested: %s", id, strings.Join(rep.Blocking, " "))
			}
			if err := duplicateBundle(tx, s.TeamID, s.BenchmarkID, s.SHA256, s.ID); err != nil {
				return err
			}
		}
		_, err := db.changeSubmission(ctx, tx, id, []string{models.SubmissionValidated},
			map[string]any{"status": models.SubmissionIngesting, "progress_done": 0, "progress_total": 0}, "", "")
		if err != nil {
			return err
		}
		t, err := sqlTx(tx)
		if err != nil {
			return err
		}
		return enqueue(ctx, t, id)
	})
}

// FailSubmission marks an ingesting submission failed with the message
// saying why; no run was created. ECONFLICT unless it is ingesting. System
// only.
func (db *DB) FailSubmission(ctx context.Context, id int64, reason string) error {
	if !models.ActorFrom(ctx).System {
		return models.Errorf(models.EFORBIDDEN, "Only the queue ingests submissions.")
	}
	return db.tx(ctx, func(tx *gorm.DB) error {
		_, err := db.changeSubmission(ctx, tx, id, []string{models.SubmissionIngesting},
			map[string]any{"status": models.SubmissionFailed, "error": truncate(reason, 2000)},
			"submission.failed", truncate(reason, 2000))
		return err
	})
}

// DiscardSubmission marks an unfinished submission (uploading, uploaded or
// validated) discarded and returns it, so that the caller deletes its bytes;
// discarding a discarded submission again returns it too, so that a failed
// deletion can be retried. Members of its team and admins only: ENOTFOUND
// for others; ECONFLICT while a job works on it or once it is final.
func (db *DB) DiscardSubmission(ctx context.Context, id int64) (*models.Submission, error) {
	if _, err := db.SubmissionByID(ctx, id); err != nil {
		return nil, err
	}
	var out *models.Submission
	err := db.tx(ctx, func(tx *gorm.DB) error {
		prev, err := db.changeSubmission(ctx, tx, id,
			[]string{models.SubmissionUploading, models.SubmissionUploaded, models.SubmissionValidated},
			map[string]any{"status": models.SubmissionDiscarded}, "submission.discard", "")
		if prev != nil && prev.Status == models.SubmissionDiscarded {
			out = prev
			return nil
		}
		out = prev
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// SubmissionProgress records how many bytes of total the running job has
// read, for the progress bar. Jobs only.
func (db *DB) SubmissionProgress(ctx context.Context, id, done, total int64) error {
	if !models.ActorFrom(ctx).System {
		return models.Errorf(models.EFORBIDDEN, "Only the queue reports progress.")
	}
	return wrap(db.q(ctx).Model(&models.Submission{}).Where("id = ?", id).
		Updates(map[string]any{"progress_done": done, "progress_total": total, "updated_at": db.now()}).Error, "submission")
}

// AbandonedUploads lists up to limit submissions still uploading whose last
// part arrived (or which began) before cutoff, oldest first. System only.
func (db *DB) AbandonedUploads(ctx context.Context, cutoff time.Time, limit int) ([]models.Submission, error) {
	if !models.ActorFrom(ctx).System {
		return nil, models.Errorf(models.EFORBIDDEN, "Only the queue expires uploads.")
	}
	var out []models.Submission
	err := db.q(ctx).Where("status = ? AND updated_at < ?", models.SubmissionUploading, cutoff).
		Order("updated_at, id").Limit(limit).Find(&out).Error
	return out, wrap(err, "submissions")
}

// ExpireUpload discards an upload abandoned since before cutoff and returns
// it, so that the caller deletes its parts; ECONFLICT when a part arrived
// since or it is no longer uploading. System only.
func (db *DB) ExpireUpload(ctx context.Context, id int64, cutoff time.Time) (*models.Submission, error) {
	if !models.ActorFrom(ctx).System {
		return nil, models.Errorf(models.EFORBIDDEN, "Only the queue expires uploads.")
	}
	var out *models.Submission
	err := db.tx(ctx, func(tx *gorm.DB) error {
		var s models.Submission
		if err := lockRow(tx, db.dialect).First(&s, id).Error; err != nil {
			return wrap(err, "submission")
		}
		if s.Status != models.SubmissionUploading || !s.UpdatedAt.Before(cutoff) {
			return submissionStateError(&s)
		}
		reason := "The upload was abandoned: no part arrived for " + cutoffAge(db.now().Sub(cutoff)) + "."
		prev, err := db.changeSubmission(ctx, tx, id, []string{models.SubmissionUploading},
			map[string]any{"status": models.SubmissionDiscarded, "error": reason}, "submission.discard", reason)
		out = prev
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// cutoffAge writes an age in days, or hours under two days.
func cutoffAge(d time.Duration) string {
	if d >= 48*time.Hour {
		return fmt.Sprintf("%d days", int(d.Hours()/24))
	}
	return fmt.Sprintf("%d hours", int(d.Hours()))
}
