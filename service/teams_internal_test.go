package service

import (
	"context"
	"testing"

	"proctor/models"
)

// memberships is a membership store of fixed team memberships by user id.
type memberships map[int64]string

func (m memberships) Membership(_ context.Context, teamID, userID int64) (*models.Membership, error) {
	role, ok := m[userID]
	if !ok {
		return nil, models.Errorf(models.ENOTFOUND, "Membership not found.")
	}
	return &models.Membership{TeamID: teamID, UserID: userID, Role: role}, nil
}

// TestRequireRole shows the team-member rule (it was storage's
// RequireTeamMember) with each kind of caller: anonymous callers are
// EUNAUTHORIZED, users of other teams EFORBIDDEN, the team's members and
// owners, administrators and the system pass as themselves; owners only
// when ownerOnly.
func TestRequireRole(t *testing.T) {
	t.Parallel()
	const owner, member, stranger, admin = 1, 2, 3, 4
	store := memberships{owner: models.RoleOwner, member: models.RoleMember}
	with := func(a models.Actor) context.Context { return models.WithActor(context.Background(), a) }
	for _, tc := range []struct {
		name      string
		ctx       context.Context
		ownerOnly bool
		code, msg string
	}{
		{"Anonymous", context.Background(), false, models.EUNAUTHORIZED, "You must be signed in."},
		{"Stranger", with(models.Actor{UserID: stranger}), false, models.EFORBIDDEN, "Only members of this team may do this."},
		{"Member", with(models.Actor{UserID: member}), false, "", ""},
		{"Owner", with(models.Actor{UserID: owner}), false, "", ""},
		{"Admin", with(models.Actor{UserID: admin, IsAdmin: true}), false, "", ""},
		{"System", with(models.SystemActor()), false, "", ""},
		{"MemberAsOwner", with(models.Actor{UserID: member}), true, models.EFORBIDDEN, "Only owners of this team may do this."},
		{"StrangerAsOwner", with(models.Actor{UserID: stranger}), true, models.EFORBIDDEN, "Only owners of this team may do this."},
		{"OwnerAsOwner", with(models.Actor{UserID: owner}), true, "", ""},
		{"AdminAsOwner", with(models.Actor{UserID: admin, IsAdmin: true}), true, "", ""},
	} {
		a, err := requireRole(tc.ctx, store, 7, tc.ownerOnly)
		if got := models.ErrorCode(err); got != tc.code || tc.code != "" && models.ErrorMessage(err) != tc.msg {
			t.Errorf("%s: requireRole = %v (%s), want %s %q", tc.name, err, got, tc.code, tc.msg)
		}
		if want := models.ActorFrom(tc.ctx); err == nil && a != want {
			t.Errorf("%s: requireRole returned %+v, want the caller %+v", tc.name, a, want)
		}
	}
}

// TestTeamManager shows the gate storage applies under a run's lock for
// the run actions (cancel, retry): a caller who acts for the run's team
// passes; others are refused as requireRole refuses them.
func TestTeamManager(t *testing.T) {
	t.Parallel()
	with := func(a models.Actor) context.Context { return models.WithActor(context.Background(), a) }
	for _, tc := range []struct {
		name      string
		ctx       context.Context
		manage    bool
		code, msg string
	}{
		{"Anonymous", context.Background(), false, models.EUNAUTHORIZED, "You must be signed in."},
		{"Stranger", with(models.Actor{UserID: 3}), false, models.EFORBIDDEN, "Only members of this team may do this."},
		{"Member", with(models.Actor{UserID: 2}), true, "", ""},
		{"Admin", with(models.Actor{UserID: 4, IsAdmin: true}), true, "", ""},
		{"System", with(models.SystemActor()), true, "", ""},
	} {
		err := teamManager(tc.ctx)(tc.manage)
		if got := models.ErrorCode(err); got != tc.code || tc.code != "" && models.ErrorMessage(err) != tc.msg {
			t.Errorf("%s: teamManager = %v (%s), want %s %q", tc.name, err, got, tc.code, tc.msg)
		}
		if scope := runScope(tc.ctx); scope.All && !tc.manage {
			t.Errorf("%s: a scope of all runs acts for every team", tc.name)
		}
	}
}
