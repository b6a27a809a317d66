package service

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"proctor/agreement"
	"proctor/models"
	"proctor/storage"
	"proctor/study"
)

// StudyStore is what the study service needs from storage. Its reads and
// writes load the study with the actor's role in it: EUNAUTHORIZED for
// anonymous callers, ENOTFOUND for users who neither manage nor annotate it,
// EFORBIDDEN for annotators where only managers may act.
type StudyStore interface {
	AccessStore
	CreateStudy(ctx context.Context, spec *storage.StudySpec, by storage.StudyCreator, sample func(benchIDs []int64, cands []storage.StudyCandidate) ([]storage.StudyPick, error)) (*models.Study, error)
	Studies(ctx context.Context, userID int64, all bool) ([]models.StudyListItem, error)
	StudyOverview(ctx context.Context, gate models.StudyGate, id int64) (*models.StudyView, error)
	InviteAnnotator(ctx context.Context, gate models.StudyGate, studyID int64, inv storage.StudyInvite) error
	RemoveAnnotator(ctx context.Context, gate models.StudyGate, studyID, userID int64) error
	SetStudyJudges(ctx context.Context, gate models.StudyGate, studyID int64, checked []models.StudyJudge) error
	OpenStudy(ctx context.Context, gate models.StudyGate, id int64, assign func(st *models.Study, items, annotators []int64) (map[int64][]int64, error)) error
	CloseStudy(ctx context.Context, gate models.StudyGate, id int64) error
	StudyQueue(ctx context.Context, gate models.StudyGate, studyID int64) (*models.StudyQueue, error)
	StudyItem(ctx context.Context, gate models.StudyGate, studyID, itemID int64, fullDetails bool) (*models.StudyItemView, error)
	SaveStudyLabels(ctx context.Context, gate models.StudyGate, studyID, itemID int64,
		apply func(st *models.Study, as *models.StudyAssignment, rubric []models.RubricItem, now time.Time) error) (*models.StudyAssignment, error)
	StudyVerdicts(ctx context.Context, gate models.StudyGate, studyID int64) ([]models.StudyVerdict, error)
	StudyData(ctx context.Context, gate models.StudyGate, studyID int64) (*models.StudyData, error)
	ImportStudyLabels(ctx context.Context, gate models.StudyGate, studyID int64, match storage.StudyImportMatcher) (*models.StudyImportResult, error)
	ImportStudyVerdicts(ctx context.Context, gate models.StudyGate, studyID int64, match storage.StudyImportMatcher) (*models.StudyImportResult, error)
}

// StudyJobs enqueues the judging of a study's judge configurations (the
// runner's queue).
type StudyJobs interface {
	// JudgeStudy enqueues one job per named configuration over the items it
	// has not judged yet; one already waiting or running is not queued twice.
	JudgeStudy(ctx context.Context, studyID int64, judges []string) error
	// JudgeAvailable is nil when an LLM judge can be used, else an
	// EUNAVAILABLE error saying what to do.
	JudgeAvailable() error
}

// Messages of the study service.
const (
	// StudyJudgesAdminOnly is why a study's owner cannot start its judges.
	StudyJudgesAdminOnly = "Running the judges calls the server's paid LLM endpoint, so only an administrator may start it: ask one to run this study's judges."
	// NoStudyJudging is why judges cannot run in a process without a queue.
	NoStudyJudging = "Judges cannot run on this server right now: it has no job queue. Try again later or ask an administrator."
)

// Studies is the agreement-study service: creating a study over
// trajectories, inviting its annotators, opening and closing it, annotating
// (blind or not), importing labels and verdicts, its judge configurations
// and their judging, and its report with agreement statistics. Owners and
// administrators manage a study and read its report; invited annotators see
// the study, their own queue and the items assigned to them (without
// verdicts, scores or other labels when the study is blind); for everyone
// else it does not exist.
type Studies struct {
	store  StudyStore
	jobs   StudyJobs
	access Access
}

// NewStudies returns the study service over store, judging through jobs;
// nil jobs (a process without a queue) answers EUNAVAILABLE to judging.
func NewStudies(store StudyStore, jobs StudyJobs) *Studies {
	return &Studies{store: store, jobs: jobs, access: NewAccess(store)}
}

// CreateStudy validates the request, draws the sample (study.Sample over the
// finished attempts of the sources the caller may see, stratified when
// asked) and creates the study as a draft with its items and invited
// annotators, in one transaction. EUNAUTHORIZED unless a user is signed in;
// EINVALID naming the field for a bad request, an email of no user the
// caller may invite or sources with nothing to sample; ENOTFOUND naming a run
// or benchmark the caller may not see; EFORBIDDEN (BlindRunMessage) for a
// run whose results the blind-study rule keeps from the caller, who would
// read them as the new study's owner.
func (s *Studies) CreateStudy(ctx context.Context, req models.StudyRequest) (*models.Study, error) {
	a := models.ActorFrom(ctx)
	if a.UserID == 0 {
		return nil, models.Errorf(models.EUNAUTHORIZED, "You must be signed in to create a study.")
	}
	spec, err := checkStudyRequest(req)
	if err != nil {
		return nil, err
	}
	if err := s.access.ReadRuns(ctx, spec.RunIDs...); err != nil {
		return nil, err
	}
	return s.store.CreateStudy(ctx, spec, studyCreator(a), func(benchIDs []int64, cands []storage.StudyCandidate) ([]storage.StudyPick, error) {
		if err := checkSourcesSampled(spec, benchIDs, cands); err != nil {
			return nil, err
		}
		stratified := spec.Sampling == models.SampleStratified
		pool := make([]study.Candidate, len(cands))
		for i, c := range cands {
			pool[i] = study.Candidate{AttemptID: c.AttemptID}
			if stratified {
				pool[i].Stratum = stratum(c, spec.StratifyBy)
			}
		}
		picked := study.Sample(pool, spec.SampleSize, spec.Seed, stratified)
		out := make([]storage.StudyPick, len(picked))
		for i, c := range picked {
			out[i] = storage.StudyPick{AttemptID: c.AttemptID, Stratum: c.Stratum}
		}
		return out, nil
	})
}

// Studies lists the studies the caller owns or annotates (administrators:
// every study), newest first. EUNAUTHORIZED for anonymous callers.
func (s *Studies) Studies(ctx context.Context) ([]models.StudyListItem, error) {
	a, err := models.RequireUser(ctx)
	if err != nil {
		return nil, err
	}
	list, err := s.store.Studies(ctx, a.UserID, a.Privileged())
	if err != nil {
		return nil, err
	}
	for i := range list {
		list[i].Role = listedStudyRole(a, &list[i].Study)
	}
	return list, nil
}

// StudyOverview is a study's page: managers see every annotator's progress
// and the judges' work, annotators their own progress. EUNAUTHORIZED,
// ENOTFOUND for a study the caller may not see.
func (s *Studies) StudyOverview(ctx context.Context, id int64) (*models.StudyView, error) {
	if _, err := models.RequireUser(ctx); err != nil {
		return nil, err
	}
	return s.store.StudyOverview(ctx, StudyGateFor(ctx, SeeStudy), id)
}

// InviteAnnotator invites a user by email to a draft study (managers only).
// EUNAUTHORIZED, ENOTFOUND, EFORBIDDEN, ECONFLICT or EINVALID (field
// "email").
func (s *Studies) InviteAnnotator(ctx context.Context, studyID int64, email string) error {
	a, err := models.RequireUser(ctx)
	if err != nil {
		return err
	}
	// A malformed email is answered once the caller may invite to the
	// study: after the gate's answer, inside the transaction.
	email, bad := models.NormalizeEmail(email)
	gate := manageWhen(func(st *models.Study) error {
		if err := draftOnly(st, "annotators are invited"); err != nil {
			return err
		}
		return bad
	})
	return s.store.InviteAnnotator(ctx, StudyGateFor(ctx, gate), studyID, storage.StudyInvite{
		Email: email, By: studyInviter(a, "email"), Admit: admitAnnotator(email),
	})
}

// RemoveAnnotator withdraws an invitation to a draft study (managers only).
// EUNAUTHORIZED, ENOTFOUND, EFORBIDDEN or ECONFLICT.
func (s *Studies) RemoveAnnotator(ctx context.Context, studyID, userID int64) error {
	if _, err := models.RequireUser(ctx); err != nil {
		return err
	}
	return s.store.RemoveAnnotator(ctx, StudyGateFor(ctx, manageDraft("annotators are removed")), studyID, userID)
}

// SetStudyJudges replaces the judge configurations of a study that is not
// closed (managers only), dropping the verdicts of those removed or changed.
// EINVALID (field "judges") for a bad configuration; EUNAUTHORIZED,
// ENOTFOUND, EFORBIDDEN or ECONFLICT.
func (s *Studies) SetStudyJudges(ctx context.Context, studyID int64, judges []models.StudyJudge) error {
	if _, err := models.RequireUser(ctx); err != nil {
		return err
	}
	checked, err := checkStudyJudges(judges)
	if err != nil {
		return err
	}
	return s.store.SetStudyJudges(ctx, StudyGateFor(ctx, manageWhen(func(st *models.Study) error {
		if st.Status == models.StudyClosed {
			return models.Errorf(models.ECONFLICT, "The study is closed; its judges can no longer be changed.")
		}
		return nil
	})), studyID, checked)
}

// OpenStudy assigns a draft study's items (study.Assign: the overlap
// fraction of the items to OverlapAnnotators annotators each, the rest to
// one, balanced and deterministic from the seed) and opens it (managers
// only). EUNAUTHORIZED, ENOTFOUND, EFORBIDDEN, ECONFLICT or EINVALID (field
// "annotators") without enough annotators.
func (s *Studies) OpenStudy(ctx context.Context, id int64) error {
	if _, err := models.RequireUser(ctx); err != nil {
		return err
	}
	return s.store.OpenStudy(ctx, StudyGateFor(ctx, manageWhen(func(st *models.Study) error {
		if st.Status != models.StudyDraft {
			return models.Errorf(models.ECONFLICT, "The study is already %s.", st.Status)
		}
		return nil
	})), id, func(st *models.Study, items, annotators []int64) (map[int64][]int64, error) {
		switch {
		case len(annotators) == 0:
			return nil, models.FieldError("annotators", "Invite at least one annotator before opening the study.")
		case st.OverlapFraction > 0 && len(annotators) < st.OverlapAnnotators:
			return nil, models.FieldError("annotators", "Overlapping items go to %d annotators each, but the study has %d; invite more or lower the overlap.",
				st.OverlapAnnotators, len(annotators))
		}
		return study.Assign(items, annotators, st.OverlapFraction, st.OverlapAnnotators, st.Seed), nil
	})
}

// CloseStudy closes an open study (managers only): its labels are final.
// EUNAUTHORIZED, ENOTFOUND, EFORBIDDEN or ECONFLICT.
func (s *Studies) CloseStudy(ctx context.Context, id int64) error {
	if _, err := models.RequireUser(ctx); err != nil {
		return err
	}
	return s.store.CloseStudy(ctx, StudyGateFor(ctx, manageWhen(func(st *models.Study) error {
		switch st.Status {
		case models.StudyDraft:
			return models.Errorf(models.ECONFLICT, "The study is still a draft; open it before closing it.")
		case models.StudyClosed:
			return models.Errorf(models.ECONFLICT, "The study is already closed.")
		}
		return nil
	})), id)
}

// StudyQueue is the caller's own queue in a study. EUNAUTHORIZED or
// ENOTFOUND as StudyOverview.
func (s *Studies) StudyQueue(ctx context.Context, studyID int64) (*models.StudyQueue, error) {
	if _, err := models.RequireUser(ctx); err != nil {
		return nil, err
	}
	return s.store.StudyQueue(ctx, StudyGateFor(ctx, SeeStudy), studyID)
}

// StudyItem is one item for the annotation page: annotators only their
// assigned items, managers any. An annotator of a blind study sees no
// verdict, score, outcome or other annotator's label, and the trajectory is
// never marked with its run's results. EUNAUTHORIZED, ENOTFOUND, or
// EFORBIDDEN for an item not assigned to an annotator.
func (s *Studies) StudyItem(ctx context.Context, studyID, itemID int64) (*models.StudyItemView, error) {
	a, err := models.RequireUser(ctx)
	if err != nil {
		return nil, err
	}
	// Evaluation details in full for administrators, in their public view
	// for everyone else.
	v, err := s.store.StudyItem(ctx, StudyGateFor(ctx, SeeStudy), studyID, itemID, a.Privileged())
	if err != nil {
		return nil, err
	}
	if v.Study.Blind && v.Role == models.StudyRoleAnnotator {
		stripBlind(v)
	}
	if v.Reveal != nil {
		publicVerdictErrors(ctx, v.Reveal.Verdicts)
	}
	return v, nil
}

// SaveStudyLabels saves the caller's labels for an item assigned to them
// while the study is open. Values are stored in canonical spelling; a label
// left out keeps its saved value and "" clears it. "save" keeps the status
// (a done item whose answers are no longer complete goes back to pending),
// "submit" needs every asked label (and every rubric item when rubric is
// asked), "skip" and "flag" need a reason. Time spent adds up, at most
// MaxStudyTimeDeltaMS per save. EUNAUTHORIZED, ENOTFOUND as StudyItem;
// ECONFLICT unless the study is open; EFORBIDDEN naming the item when it is
// not assigned to the caller; EINVALID naming the field (the label,
// "reason", "action" or "time_spent_ms") for a bad input or the missing
// labels.
func (s *Studies) SaveStudyLabels(ctx context.Context, studyID, itemID int64, in models.StudyLabelInput) (*models.StudyAssignment, error) {
	if _, err := models.RequireUser(ctx); err != nil {
		return nil, err
	}
	action := strings.TrimSpace(in.Action)
	if action == "" {
		action = models.LabelActionSave
	}
	reason := strings.TrimSpace(in.Reason)
	switch action {
	case models.LabelActionSave, models.LabelActionSubmit:
	case models.LabelActionSkip, models.LabelActionFlag:
		if reason == "" {
			return nil, models.FieldError("reason", "Say why you %s this item.", map[string]string{models.LabelActionSkip: "skip", models.LabelActionFlag: "flag"}[action])
		}
	default:
		return nil, models.FieldError("action", "The action must be save, submit, skip or flag, not %q.", action)
	}
	if len(reason) > models.MaxStudyReasonLen {
		return nil, models.FieldError("reason", "The reason must be at most %d characters.", models.MaxStudyReasonLen)
	}
	if in.TimeSpentMS < 0 {
		return nil, models.FieldError("time_spent_ms", "The time spent cannot be negative.")
	}
	return s.store.SaveStudyLabels(ctx, StudyGateFor(ctx, labelling), studyID, itemID, func(st *models.Study, as *models.StudyAssignment, rubric []models.RubricItem, now time.Time) error {
		labels := models.StudyLabels{}
		for k, v := range as.Labels {
			labels[k] = v
		}
		keys := make([]string, 0, len(in.Labels))
		for k := range in.Labels {
			keys = append(keys, k)
		}
		slices.Sort(keys) // the first bad label named is always the same one
		for _, k := range keys {
			v, err := canonicalLabel(k, in.Labels[k], st.Asks, rubric)
			if err == nil {
				err = offeredAnswer(k, in.Labels[k], v)
			}
			if err != nil {
				return err
			}
			if v == "" {
				delete(labels, k)
			} else {
				labels[k] = v
			}
		}
		missing := missingLabels(st, labels, rubric)
		switch action {
		case models.LabelActionSubmit:
			if len(missing) > 0 {
				return models.FieldError(missing[0], "Answer every question before submitting; missing: %s.", strings.Join(missing, ", "))
			}
			as.Status, as.Reason, as.SubmittedAt = models.AssignmentDone, "", &now
		case models.LabelActionSkip:
			as.Status, as.Reason, as.SubmittedAt = models.AssignmentSkipped, reason, &now
		case models.LabelActionFlag:
			as.Status, as.Reason, as.SubmittedAt = models.AssignmentFlagged, reason, &now
		case models.LabelActionSave:
			if as.Status == models.AssignmentDone && len(missing) > 0 {
				as.Status, as.SubmittedAt = models.AssignmentPending, nil
			}
		}
		as.Labels = labels
		as.TimeSpentMS += min(in.TimeSpentMS, models.MaxStudyTimeDeltaMS)
		return nil
	})
}

// StudyVerdicts lists the judges' verdicts: managers always, annotators only
// of studies that are not blind. Why a judge gave no verdict reads as one
// fixed sentence for everyone but administrators (publicVerdictErrors), here
// and wherever the service returns verdicts. EUNAUTHORIZED, ENOTFOUND, or EFORBIDDEN to
// the annotators of a blind study.
func (s *Studies) StudyVerdicts(ctx context.Context, studyID int64) ([]models.StudyVerdict, error) {
	if _, err := models.RequireUser(ctx); err != nil {
		return nil, err
	}
	out, err := s.store.StudyVerdicts(ctx, StudyGateFor(ctx, seeVerdicts), studyID)
	if err != nil {
		return nil, err
	}
	publicVerdictErrors(ctx, out)
	return out, nil
}

// StudyData is everything the agreement report and the exports read
// (managers only). EUNAUTHORIZED, ENOTFOUND or EFORBIDDEN.
func (s *Studies) StudyData(ctx context.Context, studyID int64) (*models.StudyData, error) {
	return s.studyData(ctx, studyID)
}

// studyData is StudyData for managers.
func (s *Studies) studyData(ctx context.Context, studyID int64) (*models.StudyData, error) {
	if _, err := models.RequireUser(ctx); err != nil {
		return nil, err
	}
	d, err := s.store.StudyData(ctx, StudyGateFor(ctx, ManageStudy), studyID)
	if err != nil {
		return nil, err
	}
	publicVerdictErrors(ctx, d.Verdicts)
	return d, nil
}

// StudyReport is a study's data with its agreement report (agreement
// statistics with bootstrap intervals, seeded by the study's seed), faceted
// by facets (managers only). EUNAUTHORIZED, ENOTFOUND or EFORBIDDEN; EINVALID
// when the report cannot be built.
func (s *Studies) StudyReport(ctx context.Context, studyID int64, facets []string) (*models.StudyData, *agreement.StudyReport, error) {
	d, err := s.studyData(ctx, studyID)
	if err != nil {
		return nil, nil, err
	}
	r, err := BuildStudyReport(d, facets)
	if err != nil {
		return nil, nil, err
	}
	return d, r, nil
}

// StudyDisagreements is a study's data with a report for listing its
// disagreements: no intervals (no bootstrap) and no breakdown (managers
// only). EUNAUTHORIZED, ENOTFOUND or EFORBIDDEN.
func (s *Studies) StudyDisagreements(ctx context.Context, studyID int64) (*models.StudyData, *agreement.StudyReport, error) {
	d, err := s.studyData(ctx, studyID)
	if err != nil {
		return nil, nil, err
	}
	r, err := agreement.BuildStudyReport(d, agreement.Options{Facets: []string{}})
	if err != nil {
		return nil, nil, err
	}
	return d, r, nil
}

// BuildStudyReport computes the agreement report of a study's data: its
// intervals bootstrapped with the study's seed, so that a page shows the same
// intervals every time, and its breakdowns by facets without intervals: the
// bootstrap is most of a report's cost (seconds for thousands of items and a
// few judges), and drawing it again for every facet value would multiply it.
func BuildStudyReport(d *models.StudyData, facets []string) (*agreement.StudyReport, error) {
	return agreement.BuildStudyReport(d, agreement.Options{Resamples: agreement.DefaultResamples, Seed: uint64(d.Study.Seed),
		Facets: facets, BreakdownsWithoutIntervals: true})
}

// ImportStudyLabels stores human labels from a file as done labels of the
// named annotators, matched to the study's items by benchmark, model and
// task id (managers only), whatever the study's status. EUNAUTHORIZED,
// ENOTFOUND or EFORBIDDEN; EINVALID naming the line of a bad row, when no
// row matches an item, or when the study would hold too many imported
// annotators.
func (s *Studies) ImportStudyLabels(ctx context.Context, studyID int64, rows []models.StudyImportRow) (*models.StudyImportResult, error) {
	if _, err := models.RequireUser(ctx); err != nil {
		return nil, err
	}
	return s.store.ImportStudyLabels(ctx, StudyGateFor(ctx, ManageStudy), studyID, func(_ *models.Study, items []models.StudyDataItem, stored []string) ([]storage.StudyImportMatch, *models.StudyImportResult, error) {
		matches, res, err := matchImport(items, rows, "annotator")
		if err != nil {
			return nil, nil, err
		}
		if err := checkImportedNames(stored, matches, models.MaxStudyAnnotators, "annotator"); err != nil {
			return nil, nil, err
		}
		return matches, res, nil
	})
}

// ImportStudyVerdicts stores judge verdicts from a file as imported judges,
// matched as ImportStudyLabels matches (managers only). EUNAUTHORIZED,
// ENOTFOUND or EFORBIDDEN; EINVALID as ImportStudyLabels, or for a judge
// named like one of the study's configurations.
func (s *Studies) ImportStudyVerdicts(ctx context.Context, studyID int64, rows []models.StudyImportRow) (*models.StudyImportResult, error) {
	if _, err := models.RequireUser(ctx); err != nil {
		return nil, err
	}
	return s.store.ImportStudyVerdicts(ctx, StudyGateFor(ctx, ManageStudy), studyID, func(st *models.Study, items []models.StudyDataItem, stored []string) ([]storage.StudyImportMatch, *models.StudyImportResult, error) {
		matches, res, err := matchImport(items, rows, "judge")
		if err != nil {
			return nil, nil, err
		}
		for _, m := range matches {
			for _, j := range st.Judges {
				if strings.EqualFold(j.Name, m.Who) {
					return nil, nil, models.Errorf(models.EINVALID, "%q is the name of one of the study's judge configurations; rename the judge in the file.", m.Who)
				}
			}
		}
		if err := checkImportedNames(stored, matches, models.MaxStudyJudges, "judge"); err != nil {
			return nil, nil, err
		}
		return matches, res, nil
	})
}

// JudgeAvailable is nil when this process can judge: it has a queue and an
// LLM judge. EUNAVAILABLE saying what to do otherwise.
func (s *Studies) JudgeAvailable() error {
	if s.jobs == nil {
		return models.Errorf(models.EUNAVAILABLE, NoStudyJudging)
	}
	return s.jobs.JudgeAvailable()
}

// QueueStudyJudges queues the named judge configurations of a study (every
// one when names is empty), one job each over the items it has not judged
// yet. Every judgment is a paid call to the server's LLM endpoint, so only
// administrators may start it. ENOTFOUND for a study the caller may not
// see, EFORBIDDEN for its annotators and its owner (StudyJudgesAdminOnly);
// EINVALID (field "judge") naming unknown configurations, or when the study
// has none; EUNAVAILABLE without a queue or an LLM judge.
func (s *Studies) QueueStudyJudges(ctx context.Context, studyID int64, names []string) error {
	view, err := s.StudyOverview(ctx, studyID)
	if err != nil {
		return err
	}
	if !view.CanManage {
		return models.Errorf(models.EFORBIDDEN, "Only the study's owner or an administrator may run its judges.")
	}
	if !models.ActorFrom(ctx).Privileged() {
		// Up to MaxStudySample items × MaxStudyJudges configurations a
		// click: the operator decides when to spend that.
		return models.Errorf(models.EFORBIDDEN, StudyJudgesAdminOnly)
	}
	chosen, err := chooseStudyJudges(view.Study.Judges, names)
	if err != nil {
		return err
	}
	if err := s.JudgeAvailable(); err != nil {
		return err
	}
	return s.jobs.JudgeStudy(ctx, studyID, chosen)
}

// chooseStudyJudges returns the names of the configurations to run: every
// one for no names, else the named ones (once each), EINVALID naming those
// the study does not have.
func chooseStudyJudges(configs []models.StudyJudge, names []string) ([]string, error) {
	if len(configs) == 0 {
		return nil, models.FieldError("judge", "The study has no judge configurations to run: add one first.")
	}
	have := map[string]bool{}
	var all []string
	for _, c := range configs {
		have[c.Name] = true
		all = append(all, c.Name)
	}
	if len(names) == 0 {
		return all, nil
	}
	var chosen, unknown []string
	seen := map[string]bool{}
	for _, n := range names {
		n = strings.TrimSpace(n)
		switch {
		case seen[n]:
		case have[n]:
			chosen = append(chosen, n)
		default:
			unknown = append(unknown, strconv.Quote(n))
		}
		seen[n] = true
	}
	if len(unknown) > 0 {
		return nil, models.FieldError("judge", "The study has no judge configuration named %s (it has: %s).", strings.Join(unknown, ", "), strings.Join(all, ", "))
	}
	return chosen, nil
}

// CanonicalVerdictLabels checks a judge's labels against the item's rubric
// and returns them in canonical spelling, leaving out empty ones: EINVALID
// on the bad label's key. The runner saves verdicts through it.
func CanonicalVerdictLabels(in models.StudyLabels, rubric []models.RubricItem) (models.StudyLabels, error) {
	labels := models.StudyLabels{}
	for k, raw := range in {
		val, err := canonicalLabel(k, raw, nil, rubric)
		if err != nil {
			return nil, err
		}
		if val != "" {
			labels[k] = val
		}
	}
	return labels, nil
}

// StudyRule is an access rule of the study service for one operation:
// given the caller, the study (nil when there is no such study) and whether
// the caller was invited to annotate it, the caller's role in the study and
// whether they manage it, or the error to answer.
type StudyRule func(a models.Actor, st *models.Study, annotator bool) (role string, manage bool, err error)

// StudyGateFor binds rule to the context's caller: the gate storage applies
// inside the transaction that reads or changes the study, reading the
// caller's invitation and assignments by their user id.
func StudyGateFor(ctx context.Context, rule StudyRule) models.StudyGate {
	a := models.ActorFrom(ctx)
	return models.StudyGate{UserID: a.UserID, Let: func(st *models.Study, annotator bool) (string, bool, error) {
		return rule(a, st, annotator)
	}}
}

// SeeStudy is who sees a study: its managers (the owner and administrators,
// and the system) everything, its invited annotators the study, their own
// queue and the items assigned to them; for everyone else it does not exist
// (ENOTFOUND). Nothing about studies is public, so anonymous callers get
// EUNAUTHORIZED for every study id alike, which lets pages send them to sign
// in without telling which ids exist.
func SeeStudy(a models.Actor, st *models.Study, annotator bool) (string, bool, error) {
	switch {
	case !a.SignedIn():
		return "", false, models.Errorf(models.EUNAUTHORIZED, "You must be signed in.")
	case st == nil:
		return "", false, nil // storage answers ENOTFOUND
	case a.UserID != 0 && st.OwnerID == a.UserID:
		return models.StudyRoleOwner, true, nil
	case a.Privileged():
		return models.StudyRoleAdmin, true, nil
	case annotator:
		return models.StudyRoleAnnotator, false, nil
	}
	return "", false, models.Errorf(models.ENOTFOUND, "Study %d not found.", st.ID)
}

// ManageStudy lets in a study's managers only: SeeStudy's answer, and
// EFORBIDDEN for its annotators.
func ManageStudy(a models.Actor, st *models.Study, annotator bool) (string, bool, error) {
	role, manage, err := SeeStudy(a, st, annotator)
	if err == nil && st != nil && !manage {
		err = models.Errorf(models.EFORBIDDEN, "Only the study's owner and administrators may do this.")
	}
	return role, manage, err
}

// manageWhen is ManageStudy, then check on the study (its status) inside
// the transaction that changes it.
func manageWhen(check func(st *models.Study) error) StudyRule {
	return func(a models.Actor, st *models.Study, annotator bool) (string, bool, error) {
		role, manage, err := ManageStudy(a, st, annotator)
		if err == nil && st != nil {
			err = check(st)
		}
		return role, manage, err
	}
}

// manageDraft is ManageStudy for changes made only to a draft study: what
// names them in the ECONFLICT answered otherwise.
func manageDraft(what string) StudyRule {
	return manageWhen(func(st *models.Study) error { return draftOnly(st, what) })
}

// draftOnly is ECONFLICT, naming what is done, unless the study is a draft.
func draftOnly(st *models.Study, what string) error {
	if st.Status != models.StudyDraft {
		return models.Errorf(models.ECONFLICT, "The study is %s: %s only while it is a draft.", st.Status, what)
	}
	return nil
}

// labelling is SeeStudy for saving labels, which an open study only takes.
// Storage holds the study in share mode while it saves, so a close either
// waits for the save or makes it read the study closed: no label is saved
// after the study's closing time.
func labelling(a models.Actor, st *models.Study, annotator bool) (string, bool, error) {
	role, manage, err := SeeStudy(a, st, annotator)
	if err != nil || st == nil {
		return role, manage, err
	}
	switch st.Status {
	case models.StudyDraft:
		err = models.Errorf(models.ECONFLICT, "The study is not open yet; labels are accepted once it opens.")
	case models.StudyClosed:
		err = models.Errorf(models.ECONFLICT, "The study is closed; labels can no longer be changed.")
	}
	return role, manage, err
}

// seeVerdicts lets in the study's managers and the annotators of a study
// that is not blind: a blind study's verdicts are kept from its annotators.
func seeVerdicts(a models.Actor, st *models.Study, annotator bool) (string, bool, error) {
	role, manage, err := SeeStudy(a, st, annotator)
	if err == nil && st != nil && st.Blind && !manage {
		err = models.Errorf(models.EFORBIDDEN, "This study is blind: its judges' verdicts are hidden from its annotators.")
	}
	return role, manage, err
}

// stripBlind removes from an item view what a blind study keeps from its
// annotators: every evaluation, the attempt's outcome, score and error, the
// run's success and error counts, the reveal, and the item's stratum, which
// is the attempt's outcome when the sample is stratified by outcome. Every
// stratum is cleared, not only outcomes: annotators need none of them.
func stripBlind(v *models.StudyItemView) {
	tl := &v.Timeline
	tl.Evaluation, tl.Evaluations = nil, nil
	tl.Attempt.Outcome, tl.Attempt.Score, tl.Attempt.ErrorClass, tl.Attempt.ErrorMessage = "", nil, "", ""
	tl.Run.Successes, tl.Run.Errors = 0, 0
	tl.CanManage = false
	v.Item.Stratum = ""
	v.Reveal = nil
}

// publicVerdictErrors replaces why a judge gave no verdict by one fixed
// sentence for everyone but administrators: the runner's text may quote the
// judge endpoint's address or a piece of its reply, which study owners and
// annotators must not read.
func publicVerdictErrors(ctx context.Context, verdicts []models.StudyVerdict) {
	if models.ActorFrom(ctx).Privileged() {
		return
	}
	for i := range verdicts {
		if verdicts[i].Error != "" {
			verdicts[i].Error = storage.PublicJudgeFailed
		}
	}
}
