package service_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/service/servicetest"
	"proctor/storage"
	"proctor/storage/storagetest"
)

// TestTeams_Authorization drives every read and write of the team service
// as an anonymous visitor, a member (the owner) of team lab, a member of
// another team, an administrator and a blind annotator (a user of no team
// who annotates one of lab's attempts in an open blind study). A code is the
// error the caller gets ("" for none); check, when set, looks at what an
// allowed caller was shown. Writes that change who belongs to a team act on
// a fresh team each time, so that one caller's change does not decide the
// next caller's answer.
func TestTeams_Authorization(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newAuthzFixture(t, db)
		teams := servicetest.Teams(db)
		// The lab's walker speaks HTTP at a public address, so that what the
		// endpoint is shown to can be checked.
		endpoint := "http://93.184.216.34/step"
		require.NoError(t, db.Gorm().Model(&models.Agent{}).Where("slug = ?", "walker").
			Updates(map[string]any{"kind": models.AgentHTTP, "endpoint_url": endpoint}).Error)
		var walkerID int64
		require.NoError(t, db.Gorm().Model(&models.Agent{}).Where("slug = ?", "walker").Pluck("id", &walkerID).Error)
		_, second := f.user(t, "second@teams.test", false)
		n := 0
		next := func(prefix string) string { n++; return fmt.Sprintf("%s-%d", prefix, n) }
		// freshTeam is a new team owned by the member with a second owner,
		// and an invitation to it.
		freshTeam := func() (slug, invite string) {
			team, err := teams.CreateTeam(f.member, next("Fresh"), "", "")
			require.NoError(t, err)
			_, join, err := teams.CreateTeamInvite(f.member, team.Slug, models.RoleOwner)
			require.NoError(t, err)
			_, err = teams.AcceptTeamInvite(second, join)
			require.NoError(t, err)
			_, invite, err = teams.CreateTeamInvite(f.member, team.Slug, models.RoleMember)
			require.NoError(t, err)
			return team.Slug, invite
		}
		secondID := models.ActorFrom(second).UserID

		ok := outcome{}
		unauthorized := outcome{code: models.EUNAUTHORIZED}
		forbidden := outcome{code: models.EFORBIDDEN}
		notFound := outcome{code: models.ENOTFOUND}
		conflict := outcome{code: models.ECONFLICT}
		shown := func(check func(t *testing.T, got any)) outcome { return outcome{check: check} }
		membersShown := func(want bool) outcome {
			return shown(func(t *testing.T, got any) {
				d := got.(*models.TeamDetail)
				require.Equal(t, want, d.MembersVisible)
				require.Equal(t, want, len(d.Members) > 0)
			})
		}
		endpointShown := func(want bool) outcome {
			return shown(func(t *testing.T, got any) {
				var agents []models.Agent
				switch v := got.(type) {
				case *models.Agent:
					agents = []models.Agent{*v}
				case *models.TeamAgents:
					require.Equal(t, want, v.CanManage)
					agents = v.Agents
				case []models.Agent:
					agents = v
				}
				seen := false
				for _, a := range agents {
					require.Nil(t, a.SecretsCiphertext, "nobody gets the ciphertext")
					if a.ID == walkerID {
						seen = true
						require.Equal(t, want, a.CanManage)
						require.Equal(t, want, a.EndpointURL == endpoint, "endpoint shown")
					}
				}
				require.True(t, seen, "the walker is listed")
			})
		}
		ownTeams := func(want int) outcome {
			return shown(func(t *testing.T, got any) { require.Len(t, got.([]models.Team), want) })
		}
		agentName := func() *models.Agent { return &models.Agent{Name: next("Agent"), Kind: models.AgentReplay} }
		ops := []authzOp{
			{"ListTeams", func(ctx context.Context) (any, error) {
				list, _, err := teams.ListTeams(ctx, 1, 50)
				return list, err
			}, callerOutcomes{ok, ok, ok, ok, ok}},
			{"MemberTeams", func(ctx context.Context) (any, error) { return teams.MemberTeams(ctx) },
				callerOutcomes{ownTeams(0), ok, ownTeams(1), ownTeams(0), ownTeams(0)}},
			{"TeamDetails", func(ctx context.Context) (any, error) { return teams.TeamDetails(ctx, "lab") },
				callerOutcomes{membersShown(false), membersShown(true), membersShown(false), membersShown(true), membersShown(false)}},
			{"CreateTeam", func(ctx context.Context) (any, error) { return teams.CreateTeam(ctx, next("Team"), "", "") },
				callerOutcomes{unauthorized, ok, ok, ok, ok}},
			{"CreateTeamInvite", func(ctx context.Context) (any, error) {
				_, plain, err := teams.CreateTeamInvite(ctx, "lab", models.RoleMember)
				return plain, err
			}, callerOutcomes{unauthorized, ok, forbidden, ok, forbidden}},
			{"InviteByToken", func(ctx context.Context) (any, error) {
				_, invite := freshTeam()
				return teams.InviteByToken(ctx, invite)
			}, callerOutcomes{unauthorized, conflict, ok, ok, ok}},
			{"AcceptTeamInvite", func(ctx context.Context) (any, error) {
				_, invite := freshTeam()
				return teams.AcceptTeamInvite(ctx, invite)
			}, callerOutcomes{unauthorized, conflict, ok, ok, ok}},
			{"SetTeamMemberRole", func(ctx context.Context) (any, error) {
				slug, _ := freshTeam()
				return nil, teams.SetTeamMemberRole(ctx, slug, secondID, models.RoleMember)
			}, callerOutcomes{unauthorized, ok, forbidden, ok, forbidden}},
			{"RemoveTeamMember", func(ctx context.Context) (any, error) {
				slug, _ := freshTeam()
				return nil, teams.RemoveTeamMember(ctx, slug, secondID)
			}, callerOutcomes{unauthorized, ok, forbidden, ok, forbidden}},
			{"LeaveTeam", func(ctx context.Context) (any, error) {
				slug, _ := freshTeam()
				return nil, teams.LeaveTeam(ctx, slug)
			}, callerOutcomes{unauthorized, ok, forbidden, forbidden, forbidden}},
			{"AccountOverview", func(ctx context.Context) (any, error) { return teams.AccountOverview(ctx) },
				callerOutcomes{unauthorized, ok, ok, ok, ok}},
			{"ListAPITokens", func(ctx context.Context) (any, error) { return teams.ListAPITokens(ctx) },
				callerOutcomes{unauthorized, ok, ok, ok, ok}},
			{"CreateAPIToken", func(ctx context.Context) (any, error) {
				tok, _, err := teams.CreateAPIToken(ctx, next("token"))
				return tok, err
			}, callerOutcomes{unauthorized, ok, ok, ok, ok}},
			{"TokenUser", func(ctx context.Context) (any, error) {
				_, plain, err := teams.CreateAPIToken(f.member, next("token"))
				require.NoError(t, err)
				return teams.TokenUser(ctx, plain)
			}, callerOutcomes{ok, ok, ok, ok, ok}},
			{"RevokeAPIToken", func(ctx context.Context) (any, error) {
				tok, _, err := teams.CreateAPIToken(f.member, next("token"))
				require.NoError(t, err)
				return teams.RevokeAPIToken(ctx, tok.ID)
			}, callerOutcomes{unauthorized, ok, notFound, notFound, notFound}},
			{"ListAgents", func(ctx context.Context) (any, error) { return teams.ListAgents(ctx, "lab") },
				callerOutcomes{endpointShown(false), endpointShown(true), endpointShown(false), endpointShown(true), endpointShown(false)}},
			{"ListAllAgents", func(ctx context.Context) (any, error) {
				list, _, err := teams.ListAllAgents(ctx, 1, 50)
				return list, err
			}, callerOutcomes{endpointShown(false), endpointShown(true), endpointShown(false), endpointShown(true), endpointShown(false)}},
			{"AgentBySlug", func(ctx context.Context) (any, error) { return teams.AgentBySlug(ctx, "lab", "walker") },
				callerOutcomes{endpointShown(false), endpointShown(true), endpointShown(false), endpointShown(true), endpointShown(false)}},
			{"AgentTeam", func(ctx context.Context) (any, error) { return teams.AgentTeam(ctx, "lab") },
				callerOutcomes{unauthorized, ok, forbidden, ok, forbidden}},
			{"EditableAgent", func(ctx context.Context) (any, error) { return teams.EditableAgent(ctx, "lab", "walker") },
				callerOutcomes{unauthorized, endpointShown(true), forbidden, endpointShown(true), forbidden}},
			{"AgentSecrets", func(ctx context.Context) (any, error) { return teams.AgentSecrets(ctx, walkerID) },
				callerOutcomes{unauthorized, forbidden, forbidden, forbidden, forbidden}},
			{"CreateAgent", func(ctx context.Context) (any, error) {
				a := agentName()
				return a, teams.CreateAgent(ctx, "lab", a, map[string]string{"KEY": "v"})
			}, callerOutcomes{unauthorized, ok, forbidden, ok, forbidden}},
			{"UpdateAgent", func(ctx context.Context) (any, error) {
				a := &models.Agent{Name: "Walker", Kind: models.AgentHTTP, EndpointURL: endpoint}
				return a, teams.UpdateAgent(ctx, "lab", "walker", a, nil, nil)
			}, callerOutcomes{unauthorized, ok, forbidden, ok, forbidden}},
			{"PatchAgent", func(ctx context.Context) (any, error) {
				desc := next("described")
				return teams.PatchAgent(ctx, "lab", "walker", &models.AgentPatch{Description: &desc}, nil, nil)
			}, callerOutcomes{unauthorized, ok, forbidden, ok, forbidden}},
			{"DeleteAgent", func(ctx context.Context) (any, error) {
				a := agentName()
				require.NoError(t, teams.CreateAgent(f.member, "lab", a, nil))
				return nil, teams.DeleteAgent(ctx, "lab", a.Slug)
			}, callerOutcomes{unauthorized, ok, forbidden, ok, forbidden}},
		}
		checkAuthzTable(t, ops, tableCallers{anon: f.anon, member: f.member, other: f.other, admin: f.admin, blind: f.annotator}, nil)

		t.Run("SystemActor", func(t *testing.T) {
			secrets, err := teams.AgentSecrets(f.system, walkerID)
			require.NoError(t, err, "the runner opens secrets")
			require.Empty(t, secrets)
			_, err = teams.CreateTeam(f.system, "System", "", "")
			require.Equal(t, models.EFORBIDDEN, models.ErrorCode(err), "a team needs a user as owner")
			_, _, err = teams.CreateAPIToken(f.system, "system")
			require.Equal(t, models.EFORBIDDEN, models.ErrorCode(err))
			_, err = teams.AcceptTeamInvite(f.system, "inv_x")
			require.Equal(t, models.EFORBIDDEN, models.ErrorCode(err))
		})
		t.Run("PlainMemberIsNoOwner", func(t *testing.T) {
			slug, invite := freshTeam()
			_, plain := f.user(t, "plain@teams.test", false)
			_, err := teams.AcceptTeamInvite(plain, invite)
			require.NoError(t, err)
			for name, err := range map[string]error{
				"invite":   errOf(teams.CreateTeamInvite(plain, slug, models.RoleMember)),
				"set role": teams.SetTeamMemberRole(plain, slug, secondID, models.RoleMember),
				"remove":   teams.RemoveTeamMember(plain, slug, secondID),
			} {
				require.Equal(t, models.EFORBIDDEN, models.ErrorCode(err), name)
				require.Equal(t, "Only owners of this team may do this.", models.ErrorMessage(err), name)
			}
			require.NoError(t, teams.CreateAgent(plain, slug, agentName(), nil), "a plain member registers agents")
		})
	})
}

// errOf returns the error of a call returning three values.
func errOf[A, B any](_ A, _ B, err error) error { return err }
