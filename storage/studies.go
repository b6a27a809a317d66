package storage

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"proctor/migrations"
	"proctor/models"
)

// studyAccess is a study as the gate's caller may see it.
type studyAccess struct {
	Study *models.Study
	Role  string // models.StudyRole*
	// Manage is true for the owner and administrators (and the system).
	Manage bool
	// Annotator is true when the caller was invited to annotate the study.
	Annotator bool
	UserID    int64 // the caller's (the gate's)
}

// studyLock is the row lock loadStudyAccess takes on the study in
// PostgreSQL; SQLite's single writer connection already runs write
// transactions one at a time.
type studyLock int

const (
	studyUnlocked studyLock = iota
	// studyShared (FOR SHARE) keeps the study as read until the transaction
	// ends, so that a label is never saved into a study that a concurrent
	// transaction has just closed; transactions sharing it do not wait for
	// each other.
	studyShared
	// studyExclusive (FOR UPDATE) is for transactions that change the study.
	studyExclusive
)

// changeStudy runs change in a transaction holding the study row
// exclusively, once gate lets the caller in.
func (db *DB) changeStudy(ctx context.Context, id int64, gate models.StudyGate, change func(tx *gorm.DB, acc *studyAccess) error) error {
	return db.tx(ctx, func(tx *gorm.DB) error {
		acc, err := db.loadStudyAccess(tx, id, studyExclusive, gate)
		if err != nil {
			return err
		}
		return change(tx, acc)
	})
}

// loadStudyAccess loads a study, locked as asked, with the gate's caller's
// role in it as the gate decides; the gate's error otherwise.
func (db *DB) loadStudyAccess(q *gorm.DB, id int64, lock studyLock, gate models.StudyGate) (*studyAccess, error) {
	qq := q
	switch {
	case lock == studyExclusive:
		qq = lockRow(q, db.dialect)
	case lock == studyShared && db.dialect == migrations.Postgres:
		qq = q.Clauses(clause.Locking{Strength: "SHARE"})
	}
	var rows []models.Study
	if err := qq.Where("id = ?", id).Limit(1).Find(&rows).Error; err != nil {
		return nil, wrap(err, "study")
	}
	if len(rows) == 0 {
		_, _, err := gate.Let(nil, false)
		if err == nil {
			err = models.Errorf(models.ENOTFOUND, "Study %d not found.", id)
		}
		return nil, err
	}
	acc := &studyAccess{Study: &rows[0], UserID: gate.UserID}
	if gate.UserID != 0 {
		var n int64
		if err := q.Table("study_annotators").Where("study_id = ? AND user_id = ?", id, gate.UserID).Count(&n).Error; err != nil {
			return nil, wrap(err, "study annotators")
		}
		acc.Annotator = n > 0
	}
	var err error
	if acc.Role, acc.Manage, err = gate.Let(acc.Study, acc.Annotator); err != nil {
		return nil, err
	}
	return acc, nil
}

// systemGate lets the system (the job queue) into every study as an
// administrator.
func systemGate() models.StudyGate {
	return models.StudyGate{Let: func(*models.Study, bool) (string, bool, error) {
		return models.StudyRoleAdmin, true, nil
	}}
}

func studySubject(id int64) string { return "study " + strconv.FormatInt(id, 10) }

// StudyInviter is who invites annotators to a study, as the study service
// decided from the caller (service.Studies' invite policy).
type StudyInviter struct {
	// UserID invites, and owns the study it creates; 0 is the system,
	// which invites on the owner's behalf.
	UserID int64
	// Anyone is true when the inviter may invite any user; otherwise only
	// users who share a team with them.
	Anyone bool
	// Unknown is the error for an email of no user the inviter may invite.
	Unknown func(email string) error
}

// usersByEmail looks up the users inv may invite to a study by canonical
// email, in the order given (any user, or only those who share a team with
// the inviter, as inv says): inv.Unknown's error for the first email of no
// such user, from the same query whether or not the email has an account.
func usersByEmail(q *gorm.DB, inv StudyInviter, emails []string) ([]models.User, error) {
	if len(emails) == 0 {
		return nil, nil
	}
	uq := q.Select("id, email, name").Where("email IN ?", emails)
	if !inv.Anyone {
		uq = uq.Where("id IN (SELECT m.user_id FROM memberships m JOIN memberships mine ON mine.team_id = m.team_id WHERE mine.user_id = ?)", inv.UserID)
	}
	var users []models.User
	if err := uq.Find(&users).Error; err != nil {
		return nil, wrap(err, "users")
	}
	byEmail := make(map[string]models.User, len(users))
	for _, u := range users {
		byEmail[u.Email] = u
	}
	out := make([]models.User, 0, len(emails))
	for _, e := range emails {
		u, ok := byEmail[e]
		if !ok {
			return nil, inv.Unknown(e)
		}
		out = append(out, u)
	}
	return out, nil
}

// StudySpec is a study request as the study service validated and
// normalised it: what CreateStudy stores.
type StudySpec struct {
	Name, Description    string
	RunIDs               []int64
	Benchmarks           []string
	Sampling, StratifyBy string
	Seed                 int64
	SampleSize           int
	OverlapFraction      float64
	OverlapAnnotators    int
	Blind                bool
	Labels               []string
	Judges               []models.StudyJudge
	Emails               []string
}

// StudyPick is an attempt drawn into a study's sample, with its stratum.
type StudyPick struct {
	AttemptID int64
	Stratum   string
}

// StudyCandidate is a finished attempt of a study's sources with what it may
// be stratified by.
type StudyCandidate struct {
	AttemptID int64
	RunID     int64
	// BenchmarkID is the source benchmark whose completed runs include the
	// attempt's run; 0 when the run is a source only by its id.
	BenchmarkID int64
	Outcome     string
	Agent       string
	SiteKey     string
	Difficulty  string
}

// StudyCreator is who creates a study, as the study service decided from
// the caller: Inviter owns the study and invites its annotators; the source
// benchmarks are looked up in the Benchmarks scope, and their completed runs
// sampled are every one when AllRuns, else the published ones and those of
// the creator's teams.
type StudyCreator struct {
	Inviter    StudyInviter
	AllRuns    bool
	Benchmarks models.BenchmarkScope
	// Runs is the scope the runs named as sources are looked up in.
	Runs models.RunScope
}

// studySources resolves a request's sources as by may see them and lists
// their finished attempts: ENOTFOUND naming a run or benchmark by may not
// see. It returns the benchmarks' ids in request order.
func (db *DB) studySources(ctx context.Context, q *gorm.DB, s *StudySpec, by StudyCreator) ([]int64, []StudyCandidate, error) {
	for _, id := range s.RunIDs {
		if _, _, err := db.runAccess(q, by.Runs, id, false); err != nil {
			if models.ErrorCode(err) == models.ENOTFOUND {
				return nil, nil, &models.Error{Code: models.ENOTFOUND, Field: "run_ids", Message: models.ErrorMessage(err)}
			}
			return nil, nil, err
		}
	}
	benchIDs := make([]int64, len(s.Benchmarks))
	for i, slug := range s.Benchmarks {
		b, err := benchmarkIn(q, slug, by.Benchmarks)
		if err != nil {
			if models.ErrorCode(err) == models.ENOTFOUND {
				return nil, nil, &models.Error{Code: models.ENOTFOUND, Field: "benchmarks", Message: fmt.Sprintf("Benchmark %q not found.", slug)}
			}
			return nil, nil, err
		}
		benchIDs[i] = b.ID
	}
	// The completed runs of the benchmarks that the creator may see.
	runBenchmark := map[int64]int64{}
	if len(benchIDs) > 0 {
		var rows []struct{ ID, BenchmarkID int64 }
		rq := q.Table("runs r").Select("r.id, v.benchmark_id").Joins("JOIN benchmark_versions v ON v.id = r.version_id").
			Where("v.benchmark_id IN ? AND r.status = ?", benchIDs, models.RunCompleted)
		if !by.AllRuns {
			rq = rq.Where("((r.published = ? AND r.hidden_at IS NULL) OR r.team_id IN (SELECT m.team_id FROM memberships m WHERE m.user_id = ?))", true, by.Inviter.UserID)
		}
		if err := rq.Scan(&rows).Error; err != nil {
			return nil, nil, wrap(err, "runs")
		}
		for _, r := range rows {
			runBenchmark[r.ID] = r.BenchmarkID
		}
	}
	runIDs := slices.Clone(s.RunIDs)
	for id := range runBenchmark {
		if !slices.Contains(runIDs, id) {
			runIDs = append(runIDs, id)
		}
	}
	var cands []StudyCandidate
	if len(runIDs) > 0 {
		err := q.Table("attempts a").
			Select("a.id AS attempt_id, a.run_id, a.outcome, ag.name AS agent, t.site_key, t.difficulty").
			Joins("JOIN runs r ON r.id = a.run_id").
			Joins("JOIN agents ag ON ag.id = r.agent_id").
			Joins("JOIN tasks t ON t.id = a.task_id").
			Where("a.run_id IN ? AND a.status = ? AND a.outcome IN ?", runIDs, models.AttemptDone,
				[]string{models.OutcomeSuccess, models.OutcomeFailure, models.OutcomeError}).
			Order("a.id").Scan(&cands).Error
		if err != nil {
			return nil, nil, wrap(err, "attempts")
		}
	}
	for i := range cands {
		cands[i].BenchmarkID = runBenchmark[cands[i].RunID]
	}
	return benchIDs, cands, nil
}

// CreateStudy draws the sample (sample picks among the finished attempts of
// the sources by may see, given the source benchmarks' ids in request order,
// or refuses) and creates the study as a draft owned by by's inviter, with
// its items and invited annotators, in one transaction. ENOTFOUND naming a
// run or benchmark by may not see; sample's error; the inviter's Unknown
// error for an email of no user they may invite (usersByEmail).
func (db *DB) CreateStudy(ctx context.Context, spec *StudySpec, by StudyCreator, sample func(benchIDs []int64, cands []StudyCandidate) ([]StudyPick, error)) (*models.Study, error) {
	var st *models.Study
	err := db.tx(ctx, func(tx *gorm.DB) error {
		benchIDs, cands, err := db.studySources(ctx, tx, spec, by)
		if err != nil {
			return err
		}
		picked, err := sample(benchIDs, cands)
		if err != nil {
			return err
		}
		invitees, err := usersByEmail(tx, by.Inviter, spec.Emails)
		if err != nil {
			return err
		}
		now := db.now()
		st = &models.Study{
			OwnerID: by.Inviter.UserID, Name: spec.Name, Description: spec.Description, Status: models.StudyDraft,
			RunIDs: spec.RunIDs, BenchmarkIDs: benchIDs, Sampling: spec.Sampling, StratifyBy: spec.StratifyBy,
			Seed: spec.Seed, SampleSize: spec.SampleSize, ItemCount: len(picked),
			OverlapFraction: spec.OverlapFraction, OverlapAnnotators: spec.OverlapAnnotators, Blind: spec.Blind,
			Labels: spec.Labels, Judges: spec.Judges, CreatedAt: now, UpdatedAt: now,
		}
		if st.RunIDs == nil {
			st.RunIDs = models.JSONList[int64]{}
		}
		if err := tx.Create(st).Error; err != nil {
			return wrap(err, "study")
		}
		items := make([]models.StudyItem, len(picked))
		for i, c := range picked {
			items[i] = models.StudyItem{StudyID: st.ID, AttemptID: c.AttemptID, Position: i + 1, Stratum: c.Stratum}
		}
		if err := createBatches(tx, items, "study items"); err != nil {
			return err
		}
		annotators := make([]models.StudyAnnotator, len(invitees))
		for i, u := range invitees {
			annotators[i] = models.StudyAnnotator{StudyID: st.ID, UserID: u.ID, InvitedBy: by.Inviter.UserID, InvitedAt: now}
		}
		if err := createBatches(tx, annotators, "study annotators"); err != nil {
			return err
		}
		details := fmt.Sprintf("%d items, %d annotators", len(items), len(annotators))
		return db.auditTx(ctx, tx, "study.created", studySubject(st.ID), details, nil)
	})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// unnamedStudyOwner names a study's owner who has no name to annotators,
// who never see other users' emails.
const unnamedStudyOwner = "the study's owner"

// studyOwnerName is how a study names its owner: by name, else by email to
// its managers and as unnamedStudyOwner to its annotators.
func studyOwnerName(name, email string, manage bool) string {
	switch {
	case name != "":
		return name
	case manage:
		return email
	}
	return unnamedStudyOwner
}

// Studies lists the studies userID owns or annotates (with all: every
// study, as administrators see them), newest first, with the user's own
// assignment counts, in one query; the study service sets each one's Role.
// The owner is named as studyOwnerName names them, the studies listed for
// all being managed.
func (db *DB) Studies(ctx context.Context, userID int64, all bool) ([]models.StudyListItem, error) {
	const isAnnotator = "EXISTS (SELECT 1 FROM study_annotators x WHERE x.study_id = s.id AND x.user_id = ?)"
	// The owner's name as studyOwnerName gives it: the email for managers only.
	q := db.q(ctx).Table("studies s").Joins("JOIN users u ON u.id = s.owner_id").
		Select(`s.*, CASE WHEN s.owner_id = ? OR ? THEN COALESCE(NULLIF(u.name, ''), u.email) ELSE COALESCE(NULLIF(u.name, ''), ?) END AS owner_name,
			(SELECT COUNT(*) FROM study_assignments sa WHERE sa.study_id = s.id AND sa.user_id = ?) AS assigned,
			(SELECT COUNT(*) FROM study_assignments sa WHERE sa.study_id = s.id AND sa.user_id = ? AND sa.status <> ?) AS finished`,
			userID, all, unnamedStudyOwner, userID, userID, models.AssignmentPending)
	if !all {
		q = q.Where("s.owner_id = ? OR "+isAnnotator, userID, userID)
	}
	var out []models.StudyListItem
	if err := q.Order("s.created_at DESC, s.id DESC").Scan(&out).Error; err != nil {
		return nil, wrap(err, "studies")
	}
	return out, nil
}

// progressRow counts one annotator's assignments of one status.
type progressRow struct {
	UserID    int64
	Status    string
	N         int
	TimeSpent int64
}

func (p *progressRow) addTo(sp *models.StudyProgress) {
	sp.Assigned += p.N
	switch p.Status {
	case models.AssignmentDone:
		sp.Done += p.N
	case models.AssignmentSkipped:
		sp.Skipped += p.N
	case models.AssignmentFlagged:
		sp.Flagged += p.N
	}
}

// studyProgress counts a study's annotator assignments by user and status;
// userID 0 counts every annotator's.
func studyProgress(q *gorm.DB, studyID, userID int64) ([]progressRow, error) {
	pq := q.Table("study_assignments").
		Select("user_id, status, COUNT(*) AS n, COALESCE(SUM(time_spent_ms), 0) AS time_spent").
		Where("study_id = ? AND user_id IS NOT NULL", studyID)
	if userID != 0 {
		pq = pq.Where("user_id = ?", userID)
	}
	var rows []progressRow
	if err := pq.Group("user_id, status").Scan(&rows).Error; err != nil {
		return nil, wrap(err, "study progress")
	}
	return rows, nil
}

// StudyOverview is a study's page: for managers every annotator with their
// progress, the whole study's progress and what each judge configuration has
// judged; for annotators their own progress only. The owner is named as
// studyOwnerName names them. The gate's error when it refuses the actor.
func (db *DB) StudyOverview(ctx context.Context, gate models.StudyGate, id int64) (*models.StudyView, error) {
	q := db.q(ctx)
	acc, err := db.loadStudyAccess(q, id, studyUnlocked, gate)
	if err != nil {
		return nil, err
	}
	v := &models.StudyView{Study: *acc.Study, Role: acc.Role, CanManage: acc.Manage}
	var owner []struct{ Name, Email string }
	if err := q.Table("users").Select("name, email").Where("id = ?", acc.Study.OwnerID).Scan(&owner).Error; err != nil {
		return nil, wrap(err, "study owner")
	}
	if len(owner) == 1 {
		v.OwnerName = studyOwnerName(owner[0].Name, owner[0].Email, acc.Manage)
	}
	if !acc.Manage {
		rows, err := studyProgress(q, id, acc.UserID)
		if err != nil {
			return nil, err
		}
		for i := range rows {
			rows[i].addTo(&v.Progress)
		}
		return v, nil
	}
	var people []struct {
		UserID      int64
		Name, Email string
	}
	if err := q.Table("study_annotators sa").Joins("JOIN users u ON u.id = sa.user_id").
		Select("sa.user_id, u.name, u.email").Where("sa.study_id = ?", id).
		Order("LOWER(COALESCE(NULLIF(u.name, ''), u.email)), sa.user_id").Scan(&people).Error; err != nil {
		return nil, wrap(err, "study annotators")
	}
	v.Annotators = make([]models.StudyAnnotatorView, len(people))
	for i, p := range people {
		v.Annotators[i] = models.StudyAnnotatorView{UserID: p.UserID, Name: p.Name, Email: p.Email}
	}
	rows, err := studyProgress(q, id, 0)
	if err != nil {
		return nil, err
	}
	index := make(map[int64]int, len(v.Annotators))
	for i, an := range v.Annotators {
		index[an.UserID] = i
	}
	for i := range rows {
		rows[i].addTo(&v.Progress)
		if j, ok := index[rows[i].UserID]; ok {
			rows[i].addTo(&v.Annotators[j].Progress)
			v.Annotators[j].TimeSpentMS += rows[i].TimeSpent
		}
	}
	var judged []struct {
		Judge               string
		Judged, Errors      int
		TokensIn, TokensOut int64
		Cost                float64
	}
	if err := q.Table("study_verdicts").
		Select(`judge, SUM(CASE WHEN error = '' THEN 1 ELSE 0 END) AS judged, SUM(CASE WHEN error <> '' THEN 1 ELSE 0 END) AS errors,
			COALESCE(SUM(tokens_in), 0) AS tokens_in, COALESCE(SUM(tokens_out), 0) AS tokens_out, COALESCE(SUM(cost), 0) AS cost`).
		Where("study_id = ? AND imported = ?", id, false).Group("judge").Scan(&judged).Error; err != nil {
		return nil, wrap(err, "study verdicts")
	}
	for _, j := range acc.Study.Judges {
		run := models.StudyJudgeRun{StudyJudge: j}
		for _, r := range judged {
			if r.Judge == j.Name {
				run.Judged, run.Errors, run.TokensIn, run.TokensOut, run.Cost = r.Judged, r.Errors, r.TokensIn, r.TokensOut, r.Cost
			}
		}
		v.Judges = append(v.Judges, run)
	}
	return v, nil
}

// StudyInvite is an invitation to a study as the study service checked it:
// the invitee's canonical email, who invites, and Admit, the service's rule
// given the study's number of annotators and whether the invitee already is
// one.
type StudyInvite struct {
	Email string
	By    StudyInviter
	Admit func(annotators int64, invited bool) error
}

// InviteAnnotator invites the user with inv's email to annotate a study, as
// inv.By may (usersByEmail), once inv.Admit lets them in. The gate's error
// when it refuses the caller (or the study's status); inv.By.Unknown's error
// for an email of no user the inviter may invite; inv.Admit's error.
func (db *DB) InviteAnnotator(ctx context.Context, gate models.StudyGate, studyID int64, inv StudyInvite) error {
	return db.changeStudy(ctx, studyID, gate, func(tx *gorm.DB, acc *studyAccess) error {
		users, err := usersByEmail(tx, inv.By, []string{inv.Email})
		if err != nil {
			return err
		}
		var n, invited int64
		if err := tx.Table("study_annotators").Where("study_id = ?", studyID).Count(&n).Error; err != nil {
			return wrap(err, "study annotators")
		}
		if err := tx.Table("study_annotators").Where("study_id = ? AND user_id = ?", studyID, users[0].ID).Count(&invited).Error; err != nil {
			return wrap(err, "study annotators")
		}
		if err := inv.Admit(n, invited > 0); err != nil {
			return err
		}
		an := &models.StudyAnnotator{StudyID: studyID, UserID: users[0].ID, InvitedBy: inv.By.UserID, InvitedAt: db.now()}
		if an.InvitedBy == 0 {
			an.InvitedBy = acc.Study.OwnerID // the system invites on the owner's behalf
		}
		if err := tx.Create(an).Error; err != nil {
			return wrap(err, "study annotator")
		}
		return db.auditTx(ctx, tx, "study.annotator_invited", studySubject(studyID), "user "+strconv.FormatInt(users[0].ID, 10), nil)
	})
}

// RemoveAnnotator withdraws a user's invitation to a study. The gate's error
// when it refuses the actor (or the study's status); ENOTFOUND when the user
// is not invited.
func (db *DB) RemoveAnnotator(ctx context.Context, gate models.StudyGate, studyID, userID int64) error {
	return db.changeStudy(ctx, studyID, gate, func(tx *gorm.DB, acc *studyAccess) error {
		res := tx.Where("study_id = ? AND user_id = ?", studyID, userID).Delete(&models.StudyAnnotator{})
		if res.Error != nil {
			return wrap(res.Error, "study annotator")
		}
		if res.RowsAffected == 0 {
			return models.Errorf(models.ENOTFOUND, "User %d is not an annotator of this study.", userID)
		}
		return db.auditTx(ctx, tx, "study.annotator_removed", studySubject(studyID), "user "+strconv.FormatInt(userID, 10), nil)
	})
}

// SetStudyJudges replaces a study's judge configurations. Verdicts are kept
// by judge name, so in the same transaction it drops the verdicts judged here
// (not imported ones) of every configuration removed or changed (model,
// prompt, screenshots or accessibility): a report must never credit a
// configuration with what another one answered. Unchanged configurations keep
// theirs. The gate's error when it refuses the actor (or the study's
// status); EINVALID (field "judges") for a configuration named like a judge
// imported from a file. The judges are checked by the study service.
func (db *DB) SetStudyJudges(ctx context.Context, gate models.StudyGate, studyID int64, checked []models.StudyJudge) error {
	return db.changeStudy(ctx, studyID, gate, func(tx *gorm.DB, acc *studyAccess) error {
		var imported []string
		if err := tx.Table("study_verdicts").Where("study_id = ? AND imported = ?", studyID, true).
			Distinct().Pluck("judge", &imported).Error; err != nil {
			return wrap(err, "study verdicts")
		}
		for _, j := range checked {
			if slices.Contains(imported, j.Name) {
				return models.FieldError("judges", "%q names a judge imported from a file; give the configuration another name.", j.Name)
			}
		}
		// Verdicts judged under a name no unchanged configuration keeps are
		// stale: the configuration was removed or now judges differently.
		kept := []string{}
		for _, j := range checked {
			if slices.Contains(acc.Study.Judges, j) {
				kept = append(kept, j.Name)
			}
		}
		dq := tx.Where("study_id = ? AND imported = ?", studyID, false)
		if len(kept) > 0 {
			dq = dq.Where("judge NOT IN ?", kept)
		}
		res := dq.Delete(&models.StudyVerdict{})
		if res.Error != nil {
			return wrap(res.Error, "study verdicts")
		}
		err := tx.Model(&models.Study{}).Where("id = ?", studyID).
			Updates(map[string]any{"judges": models.JSONList[models.StudyJudge](checked), "updated_at": db.now()}).Error
		if err != nil {
			return wrap(err, "study")
		}
		details := fmt.Sprintf("%d configurations, %d verdicts of removed or changed ones dropped", len(checked), res.RowsAffected)
		return db.auditTx(ctx, tx, "study.judges_set", studySubject(studyID), details, nil)
	})
}

// OpenStudy gives the study's items to its annotators (assign returns each
// annotator's queue of items, in order, or refuses) and opens it. The gate's
// error when it refuses the actor (or the study's status); assign's error.
func (db *DB) OpenStudy(ctx context.Context, gate models.StudyGate, id int64, assign func(st *models.Study, items, annotators []int64) (map[int64][]int64, error)) error {
	return db.changeStudy(ctx, id, gate, func(tx *gorm.DB, acc *studyAccess) error {
		st := acc.Study
		var annotators []int64
		if err := tx.Table("study_annotators").Where("study_id = ?", id).Order("user_id").Pluck("user_id", &annotators).Error; err != nil {
			return wrap(err, "study annotators")
		}
		var items []int64
		if err := tx.Table("study_items").Where("study_id = ?", id).Order("position").Pluck("id", &items).Error; err != nil {
			return wrap(err, "study items")
		}
		queues, err := assign(st, items, annotators)
		if err != nil {
			return err
		}
		now := db.now()
		var rows []models.StudyAssignment
		for _, who := range annotators {
			for i, item := range queues[who] {
				rows = append(rows, models.StudyAssignment{
					StudyID: id, StudyItemID: item, UserID: who, Position: i + 1, Status: models.AssignmentPending,
					Labels: models.StudyLabels{}, CreatedAt: now, UpdatedAt: now,
				})
			}
		}
		if err := createBatches(tx, rows, "study assignments"); err != nil {
			return err
		}
		if err := tx.Model(&models.Study{}).Where("id = ?", id).
			Updates(map[string]any{"status": models.StudyOpen, "opened_at": now, "updated_at": now}).Error; err != nil {
			return wrap(err, "study")
		}
		details := fmt.Sprintf("%d assignments to %d annotators", len(rows), len(annotators))
		return db.auditTx(ctx, tx, "study.opened", studySubject(id), details, nil)
	})
}

// CloseStudy closes a study: its labels are final. The gate's error when it
// refuses the actor (or the study's status).
func (db *DB) CloseStudy(ctx context.Context, gate models.StudyGate, id int64) error {
	return db.changeStudy(ctx, id, gate, func(tx *gorm.DB, acc *studyAccess) error {
		now := db.now()
		if err := tx.Model(&models.Study{}).Where("id = ?", id).
			Updates(map[string]any{"status": models.StudyClosed, "closed_at": now, "updated_at": now}).Error; err != nil {
			return wrap(err, "study")
		}
		return db.auditTx(ctx, tx, "study.closed", studySubject(id), "", nil)
	})
}
