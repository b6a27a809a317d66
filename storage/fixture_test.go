package storage_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/storage"
	"proctor/vault"
)

// agentFixture is a database whose agent secrets are sealed, one team "lab"
// with a member, team "other" with a stranger, an admin and an anonymous
// context.
type agentFixture struct {
	db                       *storage.DB
	team                     *models.Team
	member, stranger, admin  context.Context
	anon, system             context.Context
	memberUser, strangerUser *models.User
}

func newAgentFixture(t *testing.T, db *storage.DB) *agentFixture {
	t.Helper()
	v, err := vault.New(strings.Repeat("k", vault.MinSecretLength))
	require.NoError(t, err)
	db.UseAgentSecrets(v)
	ctx := context.Background()
	f := &agentFixture{db: db, anon: ctx, system: models.WithActor(ctx, models.SystemActor())}
	f.memberUser = agentTestUser(t, db, "member@agents.test", false)
	f.strangerUser = agentTestUser(t, db, "stranger@agents.test", false)
	adminUser := agentTestUser(t, db, "admin@agents.test", true)
	f.member, f.stranger, f.admin = actorCtx(f.memberUser), actorCtx(f.strangerUser), actorCtx(adminUser)
	f.team = agentTestTeam(t, db, "lab", f.memberUser)
	agentTestTeam(t, db, "other", f.strangerUser)
	return f
}

func agentTestUser(t *testing.T, db *storage.DB, email string, admin bool) *models.User {
	t.Helper()
	u, err := db.CreateUser(context.Background(), email, strings.Split(email, "@")[0], "correct horse battery", admin)
	require.NoError(t, err)
	return u
}

func actorCtx(u *models.User) context.Context {
	return models.WithActor(context.Background(), models.Actor{UserID: u.ID, Email: u.Email, IsAdmin: u.IsAdmin})
}

// agentTestTeam inserts a team with one owner directly, so these tests do not
// depend on the team service's rules.
func agentTestTeam(t *testing.T, db *storage.DB, slug string, owner *models.User) *models.Team {
	t.Helper()
	now := time.Now().UTC()
	team := &models.Team{Slug: slug, Name: strings.ToUpper(slug), CreatedAt: now, UpdatedAt: now}
	require.NoError(t, db.Gorm().Create(team).Error)
	require.NoError(t, db.Gorm().Create(&models.Membership{TeamID: team.ID, UserID: owner.ID, Role: models.RoleOwner, CreatedAt: now}).Error)
	return team
}

func acctUser(t *testing.T, db *storage.DB, email string, admin bool) *models.User {
	t.Helper()
	u, err := db.CreateUser(context.Background(), email, strings.Split(email, "@")[0], "correct horse battery", admin)
	require.NoError(t, err)
	return u
}

// runScope is the run scope of the context's actor, as the services compute
// it (models.RunScopeFor) and pass it to storage's reads of runs.
func runScope(ctx context.Context) models.RunScope {
	return models.RunScopeFor(models.ActorFrom(ctx))
}

// errOutsider is what refuseOutsiders answers.
const errOutsider = "refused: the caller does not act for the run's team"

// refuseOutsiders is the mayManage gate of storage's tests of run actions:
// it refuses (EFORBIDDEN, errOutsider) a caller who does not act for the
// run's team. The services' rule (EUNAUTHORIZED or EFORBIDDEN, and their
// messages) is tested in package service.
func refuseOutsiders(manage bool) error {
	if manage {
		return nil
	}
	return models.Errorf(models.EFORBIDDEN, errOutsider)
}
