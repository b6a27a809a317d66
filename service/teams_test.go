package service_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/service"
	"proctor/service/servicetest"
	"proctor/storage"
	"proctor/storage/storagetest"
)

// memberRole returns a user's role in a team, "" when the user is not a member,
// read from the table itself.
func memberRole(t *testing.T, db *storage.DB, teamID, userID int64) string {
	t.Helper()
	var roles []string
	require.NoError(t, db.Gorm().Model(&models.Membership{}).
		Where("team_id = ? AND user_id = ?", teamID, userID).Pluck("role", &roles).Error)
	if len(roles) == 0 {
		return ""
	}
	return roles[0]
}

func TestTeams_Teams(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		teams := servicetest.Teams(db)
		owner := acctUser(t, db, "owner@example.org", false)
		member := acctUser(t, db, "member@example.org", false)
		stranger := acctUser(t, db, "stranger@example.org", false)
		admin := acctUser(t, db, "root@example.org", true)
		anon := context.Background()

		team, err := teams.CreateTeam(acctCtx(owner), "  Web Agents Lab ", "", "We build agents.")
		require.NoError(t, err)
		require.Equal(t, "web-agents-lab", team.Slug)
		require.Equal(t, "Web Agents Lab", team.Name)

		t.Run("CreateValidation", func(t *testing.T) {
			for _, tc := range []struct{ name, slug, field, code string }{
				{"", "", "name", models.EINVALID},
				{strings.Repeat("n", 101), "", "name", models.EINVALID},
				{"Ok", "Bad Slug!", "slug", models.EINVALID},
				{"!!!", "", "slug", models.EINVALID},
				{"Web agents lab", "", "slug", models.ECONFLICT},
				{"Other", "web-agents-lab", "slug", models.ECONFLICT},
			} {
				_, err := teams.CreateTeam(acctCtx(stranger), tc.name, tc.slug, "")
				require.Equal(t, tc.code, models.ErrorCode(err), "%q/%q: %v", tc.name, tc.slug, err)
				require.Equal(t, tc.field, models.ErrorField(err), "%q/%q", tc.name, tc.slug)
			}
			_, err := teams.CreateTeam(anon, "Anon", "", "")
			require.Equal(t, models.EUNAUTHORIZED, models.ErrorCode(err))
			_, err = teams.CreateTeam(acctCtx(stranger), strings.Repeat("n", 100), "", "")
			require.NoError(t, err, "100 characters is allowed")
		})
		t.Run("ErrNotFound", func(t *testing.T) {
			_, err := db.TeamBySlug(anon, "nope")
			require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))
			_, err = teams.TeamDetails(anon, "nope")
			require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))
		})

		// The owner invites a member through a link.
		created, plain, err := teams.CreateTeamInvite(acctCtx(owner), team.Slug, "")
		require.NoError(t, err)
		inv := created.Invite
		require.Equal(t, team.Slug, created.Team.Slug)
		require.Equal(t, models.RoleMember, inv.Role)
		require.WithinDuration(t, time.Now().Add(service.InviteTTL), inv.ExpiresAt, time.Minute)
		require.Equal(t, models.HashToken(plain), inv.TokenHash)

		t.Run("InviteOwnersOnly", func(t *testing.T) {
			_, _, err := teams.CreateTeamInvite(anon, team.Slug, "member")
			require.Equal(t, models.EUNAUTHORIZED, models.ErrorCode(err))
			_, _, err = teams.CreateTeamInvite(acctCtx(stranger), team.Slug, "member")
			require.Equal(t, models.EFORBIDDEN, models.ErrorCode(err))
			_, _, err = teams.CreateTeamInvite(acctCtx(owner), team.Slug, "boss")
			require.Equal(t, models.EINVALID, models.ErrorCode(err))
			require.Equal(t, "role", models.ErrorField(err))
			_, _, err = teams.CreateTeamInvite(acctCtx(owner), "nope", "member")
			require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))
		})

		d, err := teams.InviteByToken(acctCtx(member), plain)
		require.NoError(t, err)
		require.Equal(t, team.ID, d.Team.ID)
		joined, err := teams.AcceptTeamInvite(acctCtx(member), plain)
		require.NoError(t, err)
		require.Equal(t, team.ID, joined.ID)

		t.Run("InviteSingleUse", func(t *testing.T) {
			_, err := teams.AcceptTeamInvite(acctCtx(stranger), plain)
			require.Equal(t, models.ECONFLICT, models.ErrorCode(err))
			require.Contains(t, models.ErrorMessage(err), "already been used")
			_, err = teams.InviteByToken(acctCtx(stranger), plain)
			require.Equal(t, models.ECONFLICT, models.ErrorCode(err))
			_, err = teams.AcceptTeamInvite(acctCtx(stranger), "inv_unknown")
			require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))
			_, err = teams.AcceptTeamInvite(anon, plain)
			require.Equal(t, models.EUNAUTHORIZED, models.ErrorCode(err))
		})
		t.Run("InviteExpired", func(t *testing.T) {
			inv, plain, err := teams.CreateTeamInvite(acctCtx(owner), team.Slug, "member")
			require.NoError(t, err)
			require.NoError(t, db.Gorm().Model(&inv.Invite).Update("expires_at", time.Now().UTC().Add(-time.Hour)).Error)
			_, err = teams.AcceptTeamInvite(acctCtx(stranger), plain)
			require.Equal(t, models.ECONFLICT, models.ErrorCode(err))
			require.Contains(t, models.ErrorMessage(err), "This invitation has expired")
			require.Empty(t, memberRole(t, db, team.ID, stranger.ID), "nothing half-written")
		})
		t.Run("InviteAlreadyMember", func(t *testing.T) {
			_, plain, err := teams.CreateTeamInvite(acctCtx(owner), team.Slug, "member")
			require.NoError(t, err)
			_, err = teams.AcceptTeamInvite(acctCtx(member), plain)
			require.Equal(t, models.ECONFLICT, models.ErrorCode(err))
			require.Contains(t, models.ErrorMessage(err), "already a member")
			_, err = teams.InviteByToken(acctCtx(stranger), plain)
			require.NoError(t, err, "the refused acceptance did not use the invitation")
		})

		t.Run("RequireTeamMember", func(t *testing.T) {
			// The team-member rule, as the run form applies it.
			runs := servicetest.Runs(db, 0)
			_, err := runs.RunFormOptions(anon, team.Slug)
			require.Equal(t, models.EUNAUTHORIZED, models.ErrorCode(err))
			_, err = runs.RunFormOptions(acctCtx(stranger), team.Slug)
			require.Equal(t, models.EFORBIDDEN, models.ErrorCode(err))
			require.Equal(t, "Only members of this team may do this.", models.ErrorMessage(err))
			for _, u := range []*models.User{owner, member, admin} {
				opts, err := runs.RunFormOptions(acctCtx(u), team.Slug)
				require.NoError(t, err, u.Email)
				require.Equal(t, team.ID, opts.Team.ID)
			}
			_, err = runs.RunFormOptions(models.WithActor(anon, models.SystemActor()), team.Slug)
			require.NoError(t, err)
		})
		t.Run("AccountMemberships", func(t *testing.T) {
			acc, err := teams.AccountOverview(acctCtx(member))
			require.NoError(t, err)
			require.Len(t, acc.Memberships, 1)
			require.Equal(t, team.Slug, acc.Memberships[0].Team.Slug)
			require.Equal(t, models.RoleMember, acc.Memberships[0].Role)
		})
		t.Run("ListTeams", func(t *testing.T) {
			// By name: the "nnn…" team from CreateValidation, then "Web Agents Lab".
			list, total, err := teams.ListTeams(anon, 1, 1)
			require.NoError(t, err)
			require.Equal(t, 2, total)
			require.Len(t, list, 1)
			require.Equal(t, 1, list[0].MemberCount)
			list, _, err = teams.ListTeams(anon, 2, 1)
			require.NoError(t, err)
			require.Len(t, list, 1)
			require.Equal(t, team.ID, list[0].ID)
			require.Equal(t, team.Slug, list[0].Slug)
			require.Equal(t, 2, list[0].MemberCount)
			list, _, err = teams.ListTeams(anon, 3, 1)
			require.NoError(t, err)
			require.Empty(t, list)
		})
		t.Run("DetailsVisibility", func(t *testing.T) {
			for _, tc := range []struct {
				ctx     context.Context
				visible bool
				manage  bool
			}{
				{anon, false, false}, {acctCtx(stranger), false, false}, {acctCtx(member), true, false},
				{acctCtx(owner), true, true}, {acctCtx(admin), true, true},
			} {
				d, err := teams.TeamDetails(tc.ctx, team.Slug)
				require.NoError(t, err)
				require.Equal(t, tc.visible, d.MembersVisible)
				require.Equal(t, tc.manage, d.CanManage)
				if tc.visible {
					require.Len(t, d.Members, 2)
					require.Equal(t, owner.ID, d.Members[0].UserID, "owners first")
					require.Equal(t, owner.Email, d.Members[0].User.Email)
				} else {
					require.Empty(t, d.Members)
				}
			}
		})

		t.Run("Roles", func(t *testing.T) {
			err := teams.SetTeamMemberRole(acctCtx(member), team.Slug, member.ID, models.RoleOwner)
			require.Equal(t, models.EFORBIDDEN, models.ErrorCode(err), "members cannot promote themselves")
			err = teams.SetTeamMemberRole(acctCtx(owner), team.Slug, owner.ID, models.RoleMember)
			require.Equal(t, models.ECONFLICT, models.ErrorCode(err), "never zero owners")
			err = teams.SetTeamMemberRole(acctCtx(owner), team.Slug, member.ID, "king")
			require.Equal(t, models.EINVALID, models.ErrorCode(err))
			err = teams.SetTeamMemberRole(acctCtx(owner), team.Slug, stranger.ID, models.RoleOwner)
			require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))
			require.NoError(t, teams.SetTeamMemberRole(acctCtx(admin), team.Slug, member.ID, models.RoleOwner))
			require.NoError(t, teams.SetTeamMemberRole(acctCtx(member), team.Slug, owner.ID, models.RoleMember))
			require.Equal(t, models.RoleMember, memberRole(t, db, team.ID, owner.ID))
			// Back to the original roles.
			require.NoError(t, teams.SetTeamMemberRole(acctCtx(member), team.Slug, owner.ID, models.RoleOwner))
			require.NoError(t, teams.SetTeamMemberRole(acctCtx(owner), team.Slug, member.ID, models.RoleMember))
		})
		t.Run("RemoveAndLeave", func(t *testing.T) {
			err := teams.RemoveTeamMember(acctCtx(member), team.Slug, owner.ID)
			require.Equal(t, models.EFORBIDDEN, models.ErrorCode(err))
			err = teams.RemoveTeamMember(acctCtx(stranger), team.Slug, member.ID)
			require.Equal(t, models.EFORBIDDEN, models.ErrorCode(err))
			err = teams.RemoveTeamMember(anon, team.Slug, member.ID)
			require.Equal(t, models.EUNAUTHORIZED, models.ErrorCode(err))
			err = teams.RemoveTeamMember(acctCtx(owner), team.Slug, owner.ID)
			require.Equal(t, models.ECONFLICT, models.ErrorCode(err))
			require.Contains(t, models.ErrorMessage(err), "last owner")
			err = teams.RemoveTeamMember(acctCtx(owner), team.Slug, stranger.ID)
			require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))
			err = teams.LeaveTeam(acctCtx(owner), team.Slug)
			require.Equal(t, models.ECONFLICT, models.ErrorCode(err))
			require.Contains(t, models.ErrorMessage(err), "last owner")
			err = teams.LeaveTeam(acctCtx(stranger), team.Slug)
			require.Equal(t, models.EFORBIDDEN, models.ErrorCode(err))
			err = teams.LeaveTeam(anon, team.Slug)
			require.Equal(t, models.EUNAUTHORIZED, models.ErrorCode(err))

			require.NoError(t, teams.LeaveTeam(acctCtx(member), team.Slug))
			require.Empty(t, memberRole(t, db, team.ID, member.ID))

			_, plain, err := teams.CreateTeamInvite(acctCtx(admin), team.Slug, models.RoleOwner)
			require.NoError(t, err)
			_, err = teams.AcceptTeamInvite(acctCtx(stranger), plain)
			require.NoError(t, err)
			require.Equal(t, models.RoleOwner, memberRole(t, db, team.ID, stranger.ID))
			require.NoError(t, teams.RemoveTeamMember(acctCtx(stranger), team.Slug, owner.ID), "a second owner may remove the first")
			err = teams.RemoveTeamMember(acctCtx(admin), team.Slug, stranger.ID)
			require.Equal(t, models.ECONFLICT, models.ErrorCode(err), "admins cannot empty a team of owners either")
		})
		t.Run("Audited", func(t *testing.T) {
			actions := acctAuditActions(t, db)
			for _, a := range []string{"team.created", "invite.created", "invite.accepted", "member.role_changed", "member.left", "member.removed"} {
				require.Contains(t, actions, a)
			}
		})
	})
}

func TestTeams_TeamsConcurrency(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		teams := servicetest.Teams(db)
		a := acctUser(t, db, "a@example.org", false)
		b := acctUser(t, db, "b@example.org", false)
		team, err := teams.CreateTeam(acctCtx(a), "Race", "", "")
		require.NoError(t, err)
		_, plain, err := teams.CreateTeamInvite(acctCtx(a), team.Slug, models.RoleOwner)
		require.NoError(t, err)
		_, err = teams.AcceptTeamInvite(acctCtx(b), plain)
		require.NoError(t, err)

		t.Run("InviteUsedOnce", func(t *testing.T) {
			_, plain, err := teams.CreateTeamInvite(acctCtx(a), team.Slug, models.RoleMember)
			require.NoError(t, err)
			var users []*models.User
			for i := range 4 {
				users = append(users, acctUser(t, db, "joiner"+string(rune('0'+i))+"@example.org", false))
			}
			errs := make(chan error, len(users))
			for _, u := range users {
				go func() {
					_, err := teams.AcceptTeamInvite(acctCtx(u), plain)
					errs <- err
				}()
			}
			var ok int
			for range users {
				err := <-errs
				if err == nil {
					ok++
				} else {
					require.Equal(t, models.ECONFLICT, models.ErrorCode(err), "%v", err)
				}
			}
			require.Equal(t, 1, ok)
		})
		t.Run("NeverZeroOwners", func(t *testing.T) {
			// Both owners leave at once: one must be refused.
			errs := make(chan error, 2)
			for _, u := range []*models.User{a, b} {
				go func() { errs <- teams.LeaveTeam(acctCtx(u), team.Slug) }()
			}
			e1, e2 := <-errs, <-errs
			require.True(t, (e1 == nil) != (e2 == nil), "exactly one leaves: %v / %v", e1, e2)
			var owners int64
			require.NoError(t, db.Gorm().Model(&models.Membership{}).Where("team_id = ? AND role = ?", team.ID, models.RoleOwner).Count(&owners).Error)
			require.EqualValues(t, 1, owners)
		})
	})
}
