package service

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/storage"
)

// studyCallers are the kinds of caller the study rules tell apart.
func studyCallers() map[string]models.Actor {
	return map[string]models.Actor{
		"member": {UserID: 7, Email: "member@study.test"},
		"admin":  {UserID: 9, Email: "admin@study.test", IsAdmin: true},
		"system": models.SystemActor(),
	}
}

// TestStudyInviter: administrators and the system invite any user; members
// only users who share a team with them, and an email of no user they may
// invite reads the same whether or not it has an account. The error names
// the field of the request it came from.
func TestStudyInviter(t *testing.T) {
	t.Parallel()
	for name, a := range studyCallers() {
		for _, field := range []string{"email", "annotators"} {
			inv := studyInviter(a, field)
			require.Equal(t, a.UserID, inv.UserID, "%s invites as themselves", name)
			require.Equal(t, name != "member", inv.Anyone, "%s", name)
			err := inv.Unknown("ghost@study.test")
			require.Equal(t, models.EINVALID, models.ErrorCode(err))
			require.Equal(t, field, models.ErrorField(err))
			want := "No user has the email ghost@study.test."
			if name == "member" {
				want = "No member of your teams has the email ghost@study.test; an administrator can invite anyone."
			}
			require.Equal(t, want, models.ErrorMessage(err), "%s", name)
		}
	}
}

// TestStudyCreator: a study's creator owns it and invites on field
// "annotators"; administrators sample every completed run of the source
// benchmarks and see unpublished benchmarks, members neither.
func TestStudyCreator(t *testing.T) {
	t.Parallel()
	for name, a := range studyCallers() {
		by := studyCreator(a)
		require.Equal(t, a.UserID, by.Inviter.UserID, "%s", name)
		require.Equal(t, name != "member", by.AllRuns, "%s", name)
		require.Equal(t, models.BenchmarkScopeFor(a), by.Benchmarks, "%s", name)
		require.Equal(t, name != "member", by.Benchmarks.Unpublished, "%s", name)
		require.Equal(t, "annotators", models.ErrorField(by.Inviter.Unknown("x@study.test")))
	}
}

// TestAdmitAnnotator: a study takes at most MaxStudyAnnotators annotators
// (EINVALID on "email", whoever invites), and a user once (ECONFLICT).
func TestAdmitAnnotator(t *testing.T) {
	t.Parallel()
	admit := admitAnnotator("ann@study.test")
	require.NoError(t, admit(0, false))
	require.NoError(t, admit(models.MaxStudyAnnotators-1, false))
	err := admit(models.MaxStudyAnnotators, false)
	require.Equal(t, models.EINVALID, models.ErrorCode(err))
	require.Equal(t, "email", models.ErrorField(err))
	require.Equal(t, "A study has at most 200 annotators.", models.ErrorMessage(err))
	err = admit(models.MaxStudyAnnotators, true)
	require.Equal(t, models.EINVALID, models.ErrorCode(err), "the cap is answered first")
	err = admit(3, true)
	require.Equal(t, models.ECONFLICT, models.ErrorCode(err))
	require.Equal(t, "email", models.ErrorField(err))
	require.Equal(t, "ann@study.test is already an annotator of this study.", models.ErrorMessage(err))
}

// TestListedStudyRole: in their list, a caller owns their own studies,
// administrators manage everyone else's, and members annotate the others
// listed to them.
func TestListedStudyRole(t *testing.T) {
	t.Parallel()
	callers := studyCallers()
	member, admin := callers["member"], callers["admin"]
	mine := &models.Study{ID: 1, OwnerID: member.UserID}
	theirs := &models.Study{ID: 2, OwnerID: 42}
	adminsOwn := &models.Study{ID: 3, OwnerID: admin.UserID}
	require.Equal(t, models.StudyRoleOwner, listedStudyRole(member, mine))
	require.Equal(t, models.StudyRoleAnnotator, listedStudyRole(member, theirs))
	require.Equal(t, models.StudyRoleAdmin, listedStudyRole(admin, mine))
	require.Equal(t, models.StudyRoleAdmin, listedStudyRole(admin, theirs))
	require.Equal(t, models.StudyRoleOwner, listedStudyRole(admin, adminsOwn))
}

// TestStudyGateFor: a gate carries the caller's user id (storage reads
// their invitation and assignments by it) and applies the rule to the
// caller it was made for.
func TestStudyGateFor(t *testing.T) {
	t.Parallel()
	st := &models.Study{ID: 5, OwnerID: 7}
	for name, tc := range map[string]struct {
		a         models.Actor
		annotator bool
		role      string
		manage    bool
		code      string
	}{
		"anonymous": {models.Actor{}, false, "", false, models.EUNAUTHORIZED},
		"owner":     {studyCallers()["member"], false, models.StudyRoleOwner, true, ""},
		"stranger":  {models.Actor{UserID: 8}, false, "", false, models.ENOTFOUND},
		"annotator": {models.Actor{UserID: 8}, true, models.StudyRoleAnnotator, false, ""},
		"admin":     {studyCallers()["admin"], false, models.StudyRoleAdmin, true, ""},
		"system":    {models.SystemActor(), false, models.StudyRoleAdmin, true, ""},
	} {
		gate := StudyGateFor(models.WithActor(context.Background(), tc.a), SeeStudy)
		require.Equal(t, tc.a.UserID, gate.UserID, "%s", name)
		role, manage, err := gate.Let(st, tc.annotator)
		require.Equal(t, tc.code, models.ErrorCode(err), "%s", name)
		require.Equal(t, tc.role, role, "%s", name)
		require.Equal(t, tc.manage, manage, "%s", name)
	}
}

// TestCheckSourcesSampled: every named source must give the sample a
// finished attempt; the refusal names all the empty ones, on "run_ids"
// when a run is among them.
func TestCheckSourcesSampled(t *testing.T) {
	t.Parallel()
	spec := &storage.StudySpec{RunIDs: []int64{1, 2}, Benchmarks: []string{"mini", "wide"}}
	benchIDs := []int64{10, 20}
	full := []storage.StudyCandidate{{AttemptID: 1, RunID: 1}, {AttemptID: 2, RunID: 2, BenchmarkID: 10}, {AttemptID: 3, RunID: 3, BenchmarkID: 20}}
	require.NoError(t, checkSourcesSampled(spec, benchIDs, full))
	err := checkSourcesSampled(spec, benchIDs, full[1:])
	require.Equal(t, models.EINVALID, models.ErrorCode(err))
	require.Equal(t, "run_ids", models.ErrorField(err))
	require.Equal(t, "The sources have no finished attempts to sample: run 1.", models.ErrorMessage(err))
	err = checkSourcesSampled(spec, benchIDs, full[:1])
	require.Equal(t, "run_ids", models.ErrorField(err))
	require.Equal(t, `The sources have no finished attempts to sample: run 2, benchmark "mini", benchmark "wide".`, models.ErrorMessage(err))
	err = checkSourcesSampled(spec, benchIDs, full[:2])
	require.Equal(t, "benchmarks", models.ErrorField(err))
	require.Equal(t, `The sources have no finished attempts to sample: benchmark "wide".`, models.ErrorMessage(err))
}
