package service

import (
	"fmt"

	"proctor/models"
	"proctor/storage"
)

// The study service's rules that depend on the caller, decided here and
// handed to storage as plain values: who may invite whom, what a study's
// creator samples from, when an invitation is admitted and the caller's role
// in the studies they list.

// studyInviter is the invite policy for the caller a: administrators (and
// the system) invite any user; everyone else only users who share a team
// with them. Otherwise any signed-in user could create a study to learn
// which emails have accounts, so for them an unknown email and the email of
// a user outside their teams get the same EINVALID on field.
func studyInviter(a models.Actor, field string) storage.StudyInviter {
	anyone := a.Privileged()
	return storage.StudyInviter{UserID: a.UserID, Anyone: anyone, Unknown: func(email string) error {
		if anyone {
			return models.FieldError(field, "No user has the email %s.", email)
		}
		return models.FieldError(field, "No member of your teams has the email %s; an administrator can invite anyone.", email)
	}}
}

// studyCreator is who a creates a study as: its owner, inviting its
// annotators as studyInviter says (on field "annotators"), sampling the
// benchmarks and runs a may see (models.BenchmarkScopeFor, RunScopeFor) and,
// of the benchmarks' completed
// runs, every one for administrators, else the published runs and those of
// a's teams.
func studyCreator(a models.Actor) storage.StudyCreator {
	return storage.StudyCreator{
		Inviter:    studyInviter(a, "annotators"),
		AllRuns:    a.Privileged(),
		Benchmarks: models.BenchmarkScopeFor(a),
		Runs:       models.RunScopeFor(a),
	}
}

// admitAnnotator is the rule for inviting email to a study with annotators
// annotators: EINVALID (field "email") once the study has
// MaxStudyAnnotators, else ECONFLICT when the user already is one.
func admitAnnotator(email string) func(annotators int64, invited bool) error {
	return func(annotators int64, invited bool) error {
		if annotators >= models.MaxStudyAnnotators {
			return models.FieldError("email", "A study has at most %d annotators.", models.MaxStudyAnnotators)
		}
		if invited {
			return &models.Error{Code: models.ECONFLICT, Field: "email", Message: fmt.Sprintf("%s is already an annotator of this study.", email)}
		}
		return nil
	}
}

// listedStudyRole is a's role in a study of their list, which lists the
// studies they own or annotate (administrators: every study): owner first,
// then admin, else annotator, as SeeStudy names it.
func listedStudyRole(a models.Actor, st *models.Study) string {
	role, _, _ := SeeStudy(a, st, true)
	return role
}
