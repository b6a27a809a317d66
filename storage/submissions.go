package storage

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"gorm.io/gorm"

	"proctor/models"
)

// A submission moves uploading → uploaded → validating → validated →
// ingesting → ingested; refused, failed and discarded are final. Every change
// of status is one guarded update (the row is locked and its status checked),
// so a redelivered job or a second click never moves it twice, and each is
// written to audit_events with the change: who submitted what and when.

// submissionNotFound hides a submission from callers who may not see it.
func submissionNotFound(id int64) error {
	return models.Errorf(models.ENOTFOUND, "Submission %d not found.", id)
}

// SubmissionInsert is how InsertSubmission writes a new submission: the
// service's rules, called inside the transaction.
type SubmissionInsert struct {
	// Resume returns an unfinished upload (status uploading) of the same
	// bundle — team, agent, benchmark, subset, SHA-256, size, and file name
	// when no SHA-256 is declared — instead of a new one.
	Resume bool
	// Details is the audit event's text.
	Details string
	// Duplicate is the error for a bundle (by its declared SHA-256) the team
	// already ingested, or is ingesting, as a run of the benchmark.
	Duplicate func(prev *models.Submission) error
	// WithinQuota is given how many submissions the team started in the last
	// 24 hours.
	WithinQuota func(recent int64) error
}

// InsertSubmission writes sub (with its storage key) and its audit event in
// one transaction, under ins's rules; resumed is true when an unfinished
// upload of the same bundle is returned instead.
func (db *DB) InsertSubmission(ctx context.Context, sub *models.Submission, ins SubmissionInsert) (*models.Submission, bool, error) {
	now := db.now()
	sub.CreatedAt, sub.UpdatedAt = now, now
	resumed := false
	err := db.tx(ctx, func(tx *gorm.DB) error {
		// Creations for one team take turns on its row: under PostgreSQL's
		// read committed, two at once would each count the team's
		// submissions without the other's and both pass the quota (or both
		// find no upload to resume). SQLite's single writer serializes them
		// already.
		if err := lockRow(tx, db.dialect).Select("id").First(&models.Team{}, sub.TeamID).Error; err != nil {
			return wrap(err, "team")
		}
		if sub.SHA256 != "" {
			prev, err := ingestedBundle(tx, sub.TeamID, sub.BenchmarkID, sub.SHA256, 0)
			if err != nil {
				return err
			}
			if prev != nil {
				return ins.Duplicate(prev)
			}
		}
		if ins.Resume {
			prev, err := resumableSubmission(tx, sub)
			if err != nil {
				return err
			}
			if prev != nil {
				sub, resumed = prev, true
				return nil
			}
		}
		var recent int64
		if err := tx.Model(&models.Submission{}).Where("team_id = ? AND created_at > ?", sub.TeamID, now.Add(-24*time.Hour)).Count(&recent).Error; err != nil {
			return wrap(err, "submissions")
		}
		if err := ins.WithinQuota(recent); err != nil {
			return err
		}
		if err := tx.Create(sub).Error; err != nil {
			return wrap(err, "submission")
		}
		sub.StorageKey = models.SubmissionKey(sub.ID)
		if err := tx.Model(sub).Update("storage_key", sub.StorageKey).Error; err != nil {
			return wrap(err, "submission")
		}
		return db.auditTx(ctx, tx, "submission.create", submissionSubject(sub.ID), ins.Details, &sub.TeamID)
	})
	if err != nil {
		return nil, false, err
	}
	return sub, resumed, nil
}

func submissionSubject(id int64) string { return "submission " + strconv.FormatInt(id, 10) }

// AgentsBySlug lists the agents named slug, by id: those of the teams user
// member belongs to, or of every team when member is 0.
func (db *DB) AgentsBySlug(ctx context.Context, slug string, member int64) ([]models.Agent, error) {
	var agents []models.Agent
	q := db.q(ctx).Select(agentColumns).Where("slug = ?", slug)
	if member != 0 {
		q = q.Where("team_id IN (SELECT team_id FROM memberships WHERE user_id = ?)", member)
	}
	if err := q.Order("id").Find(&agents).Error; err != nil {
		return nil, wrap(err, "agents")
	}
	return agents, nil
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

// ingestedBundle is the team's submission of the bundle with this SHA-256
// that was ingested as a run of the benchmark (or is being ingested), other
// than the submission except; nil when there is none.
func ingestedBundle(tx *gorm.DB, teamID, benchmarkID int64, sha string, except int64) (*models.Submission, error) {
	var prev []models.Submission
	err := tx.Where("team_id = ? AND benchmark_id = ? AND sha256 = ? AND status IN ? AND id <> ?",
		teamID, benchmarkID, sha, []string{models.SubmissionIngesting, models.SubmissionIngested}, except).
		Order("id").Limit(1).Find(&prev).Error
	if err != nil {
		return nil, wrap(err, "submissions")
	}
	if len(prev) == 0 {
		return nil, nil
	}
	return &prev[0], nil
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
// to the teams user member belongs to (every team's when member is 0).
func submissionsFrom(q *gorm.DB, member int64) *gorm.DB {
	s := q.Table("submissions s").
		Joins("JOIN teams t ON t.id = s.team_id").
		Joins("JOIN agents a ON a.id = s.agent_id").
		Joins("JOIN benchmarks b ON b.id = s.benchmark_id").
		Joins("LEFT JOIN users u ON u.id = s.created_by")
	if member != 0 {
		s = s.Where("s.team_id IN (SELECT team_id FROM memberships WHERE user_id = ?)", member)
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

// SubmissionByID returns a submission of one of the teams user member
// belongs to (of any team when member is 0), without its parts, which the
// artifact store holds. ENOTFOUND otherwise.
func (db *DB) SubmissionByID(ctx context.Context, id, member int64) (*models.SubmissionView, error) {
	var rows []submissionRow
	if err := submissionsFrom(db.q(ctx), member).Select(submissionViewColumns).Where("s.id = ?", id).Limit(1).Scan(&rows).Error; err != nil {
		return nil, wrap(err, "submission")
	}
	if len(rows) == 0 {
		return nil, submissionNotFound(id)
	}
	v := rows[0].view()
	return &v, nil
}

// ListSubmissions lists one page of submissions, newest first, of the teams
// user member belongs to (of every team when member is 0), of team teamID
// only when it is not 0, with f's status when it has one, and how many there
// are. Items leave out the validation report.
func (db *DB) ListSubmissions(ctx context.Context, f models.SubmissionFilter, teamID, member int64) ([]models.SubmissionView, int, error) {
	q := db.q(ctx)
	scoped := func() *gorm.DB {
		s := submissionsFrom(q, member)
		if teamID != 0 {
			s = s.Where("s.team_id = ?", teamID)
		}
		if f.Status != "" {
			s = s.Where("s.status = ?", f.Status)
		}
		return s
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

// SubmissionFormChoices lists the agents (of any kind) of the teams user
// member belongs to (of every team when member is 0), by team and name, and
// the benchmarks with imported tasks (unpublished ones too when unpublished
// is set), each with its subsets, "full" first.
func (db *DB) SubmissionFormChoices(ctx context.Context, member int64, unpublished bool) (*models.SubmissionFormOptions, error) {
	q := db.q(ctx)
	out := &models.SubmissionFormOptions{Agents: []models.AgentChoice{}, Benchmarks: []models.BenchmarkChoice{}}
	aq := q.Table("agents a").Select("t.slug AS team_slug, a.slug AS agent_slug, a.name").
		Joins("JOIN teams t ON t.id = a.team_id").Order("t.slug, LOWER(a.name), a.id")
	if member != 0 {
		aq = aq.Where("a.team_id IN (SELECT team_id FROM memberships WHERE user_id = ?)", member)
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
	if !unpublished {
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
	if err := requireQueue(ctx, "reads submissions for processing"); err != nil {
		return nil, err
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
	if err := requireQueue(ctx, "reads submission catalogs"); err != nil {
		return "", nil, nil, err
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
		return &s, models.SubmissionStateError(&s)
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

// SetSubmissionUpload records the artifact store's multipart upload id of a
// submission that is uploading. System only (the runner, after it began the
// upload for the submitter).
func (db *DB) SetSubmissionUpload(ctx context.Context, id int64, multipartID string) error {
	if err := requireQueue(ctx, "starts uploads"); err != nil {
		return err
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
	if err := requireQueue(ctx, "validates submissions"); err != nil {
		return nil, false, err
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
func (db *DB) FinishSubmissionValidation(ctx context.Context, id int64, report models.SubmissionReport, duplicate func(prev *models.Submission) error) (*models.SubmissionReport, error) {
	if err := requireQueue(ctx, "validates submissions"); err != nil {
		return nil, err
	}
	if sum, err := hex.DecodeString(report.SHA256); err != nil || len(sum) != 32 {
		return nil, fmt.Errorf("validation of submission %d: the report has no SHA-256 of the bundle", id)
	}
	err := db.tx(ctx, func(tx *gorm.DB) error {
		var s models.Submission
		if err := tx.First(&s, id).Error; err != nil {
			return wrap(err, "submission")
		}
		prev, err := ingestedBundle(tx, s.TeamID, s.BenchmarkID, report.SHA256, s.ID)
		if err != nil {
			return err
		}
		if prev != nil {
			report.Blocking = append(report.Blocking, models.ErrorMessage(duplicate(prev)))
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
	if err := requireQueue(ctx, "refuses submissions"); err != nil {
		return err
	}
	return db.tx(ctx, func(tx *gorm.DB) error {
		_, err := db.changeSubmission(ctx, tx, id,
			[]string{models.SubmissionUploading, models.SubmissionUploaded, models.SubmissionValidating},
			map[string]any{"status": models.SubmissionRefused, "error": truncate(reason, 2000), "multipart_id": ""},
			"submission.refused", truncate(reason, 2000))
		return err
	})
}

// RequestSubmissionIngest moves a validated submission to ingesting and, in
// the same transaction, calls enqueue to queue its ingest. admit is called
// first with the locked submission and the team's earlier ingest of the same
// bundle (nil when none), and refuses with its error. ECONFLICT unless it is
// validated. The caller has already checked the actor may act on it.
func (db *DB) RequestSubmissionIngest(ctx context.Context, id int64, admit func(s, duplicate *models.Submission) error,
	enqueue func(ctx context.Context, tx *sql.Tx, id int64) error) error {
	return db.tx(ctx, func(tx *gorm.DB) error {
		var s models.Submission
		if err := lockRow(tx, db.dialect).First(&s, id).Error; err != nil {
			return wrap(err, "submission")
		}
		var prev *models.Submission
		if s.Status == models.SubmissionValidated {
			var err error
			if prev, err = ingestedBundle(tx, s.TeamID, s.BenchmarkID, s.SHA256, s.ID); err != nil {
				return err
			}
		}
		if err := admit(&s, prev); err != nil {
			return err
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
	if err := requireQueue(ctx, "ingests submissions"); err != nil {
		return err
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
// deletion can be retried. ECONFLICT while a job works on it or once it is
// final. The caller has already checked the actor may act on it.
func (db *DB) DiscardSubmission(ctx context.Context, id int64) (*models.Submission, error) {
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
	if err := requireQueue(ctx, "reports progress"); err != nil {
		return err
	}
	return wrap(db.q(ctx).Model(&models.Submission{}).Where("id = ?", id).
		Updates(map[string]any{"progress_done": done, "progress_total": total, "updated_at": db.now()}).Error, "submission")
}

// AbandonedUploads lists up to limit submissions still uploading whose last
// part arrived (or which began) before cutoff, oldest first. System only.
func (db *DB) AbandonedUploads(ctx context.Context, cutoff time.Time, limit int) ([]models.Submission, error) {
	if err := requireQueue(ctx, "expires uploads"); err != nil {
		return nil, err
	}
	var out []models.Submission
	err := db.q(ctx).Where("status = ? AND updated_at < ?", models.SubmissionUploading, cutoff).
		Order("updated_at, id").Limit(limit).Find(&out).Error
	return out, wrap(err, "submissions")
}

// ExpireUpload discards an upload abandoned since before cutoff with the
// reason and returns it, so that the caller deletes its parts; ECONFLICT
// when a part arrived since or it is no longer uploading. System only.
func (db *DB) ExpireUpload(ctx context.Context, id int64, cutoff time.Time, reason string) (*models.Submission, error) {
	if err := requireQueue(ctx, "expires uploads"); err != nil {
		return nil, err
	}
	var out *models.Submission
	err := db.tx(ctx, func(tx *gorm.DB) error {
		var s models.Submission
		if err := lockRow(tx, db.dialect).First(&s, id).Error; err != nil {
			return wrap(err, "submission")
		}
		if s.Status != models.SubmissionUploading || !s.UpdatedAt.Before(cutoff) {
			return models.SubmissionStateError(&s)
		}
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
