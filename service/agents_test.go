package service_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/netguard"
	"proctor/service"
	"proctor/storage"
	"proctor/storage/storagetest"
	"proctor/vault"
)

// agentFixture is a database with the team service wired (its SSRF guard
// resolves agent.example.com to a public address and allows internal.test),
// one team with a member, a user of another team, an admin and an anonymous
// context.
type agentFixture struct {
	db                       *storage.DB
	teams                    *service.Teams
	guard                    service.HostGuard
	team                     *models.Team
	member, stranger, admin  context.Context
	anon, system             context.Context
	memberUser, strangerUser *models.User
}

func newAgentFixture(t *testing.T, db *storage.DB) *agentFixture {
	t.Helper()
	v, err := vault.New(strings.Repeat("k", vault.MinSecretLength))
	require.NoError(t, err)
	g := netguard.New([]string{"internal.test"}, nil)
	g.LookupIP = func(_ context.Context, host string) ([]net.IP, error) {
		switch host {
		case "agent.example.com":
			return []net.IP{net.ParseIP("93.184.216.34")}, nil
		case "internal.test":
			return []net.IP{net.ParseIP("10.9.9.9")}, nil
		}
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	db.UseAgentSecrets(v)

	ctx := context.Background()
	f := &agentFixture{db: db, teams: service.NewTeams(db, g), guard: g, anon: ctx, system: models.WithActor(ctx, models.SystemActor())}
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
// depend on the team registry's own rules.
func agentTestTeam(t *testing.T, db *storage.DB, slug string, owner *models.User) *models.Team {
	t.Helper()
	now := time.Now().UTC()
	team := &models.Team{Slug: slug, Name: strings.ToUpper(slug), CreatedAt: now, UpdatedAt: now}
	require.NoError(t, db.Gorm().Create(team).Error)
	require.NoError(t, db.Gorm().Create(&models.Membership{TeamID: team.ID, UserID: owner.ID, Role: models.RoleOwner, CreatedAt: now}).Error)
	return team
}

func (f *agentFixture) count(t *testing.T) int64 {
	t.Helper()
	var n int64
	require.NoError(t, f.db.Gorm().Model(&models.Agent{}).Count(&n).Error)
	return n
}

func (f *agentFixture) ciphertext(t *testing.T, id int64) []byte {
	t.Helper()
	var row struct{ SecretsCiphertext []byte }
	require.NoError(t, f.db.Gorm().Table("agents").Select("secrets_ciphertext").Where("id = ?", id).Scan(&row).Error)
	return row.SecretsCiphertext
}

func httpAgent(name string) *models.Agent {
	return &models.Agent{Name: name, Kind: models.AgentHTTP, EndpointURL: "https://agent.example.com/step", Model: "gpt-test"}
}

const secretValue = "sk-live-DO-NOT-LEAK-1234567890"

func TestTeams_CreateAgent(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newAgentFixture(t, db)

		a := httpAgent("Browser Bot")
		require.NoError(t, f.teams.CreateAgent(f.member, "lab", a, map[string]string{"OPENAI_API_KEY": secretValue, "B_TOKEN": "bee"}))
		require.Equal(t, "browser-bot", a.Slug)
		require.Equal(t, f.team.ID, a.TeamID)
		require.Equal(t, "B_TOKEN,OPENAI_API_KEY", a.SecretNames)
		require.Nil(t, a.SecretsCiphertext, "the caller never gets the ciphertext back")

		t.Run("CiphertextAtRest", func(t *testing.T) {
			sealed := f.ciphertext(t, a.ID)
			require.NotEmpty(t, sealed)
			require.False(t, bytes.Contains(sealed, []byte(secretValue)), "plaintext in the row")
			require.False(t, bytes.Contains(sealed, []byte("OPENAI_API_KEY")), "names are sealed too")
		})
		t.Run("AgentSecretsRoundTrip", func(t *testing.T) {
			got, err := f.teams.AgentSecrets(f.system, a.ID)
			require.NoError(t, err)
			require.Equal(t, map[string]string{"OPENAI_API_KEY": secretValue, "B_TOKEN": "bee"}, got)
			_, err = f.teams.AgentSecrets(f.admin, a.ID)
			require.Equal(t, models.EFORBIDDEN, models.ErrorCode(err), "not even admins read secret values")
			_, err = f.teams.AgentSecrets(f.member, a.ID)
			require.Equal(t, models.EFORBIDDEN, models.ErrorCode(err))
			_, err = f.teams.AgentSecrets(f.anon, a.ID)
			require.Equal(t, models.EUNAUTHORIZED, models.ErrorCode(err))
			_, err = f.teams.AgentSecrets(f.system, a.ID+1000)
			require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))
		})
		t.Run("CiphertextBoundToAgent", func(t *testing.T) {
			b := &models.Agent{Name: "Copy", Kind: models.AgentReplay}
			require.NoError(t, f.teams.CreateAgent(f.member, "lab", b, map[string]string{"X": "y"}))
			require.NoError(t, db.Gorm().Table("agents").Where("id = ?", b.ID).Update("secrets_ciphertext", f.ciphertext(t, a.ID)).Error)
			_, err := f.teams.AgentSecrets(f.system, b.ID)
			require.Error(t, err, "a ciphertext copied to another agent must not open")
			require.NoError(t, f.teams.DeleteAgent(f.member, "lab", "copy"))
		})
		t.Run("Permissions", func(t *testing.T) {
			before := f.count(t)
			err := f.teams.CreateAgent(f.stranger, "lab", httpAgent("Intruder"), nil)
			require.Equal(t, models.EFORBIDDEN, models.ErrorCode(err))
			err = f.teams.CreateAgent(f.anon, "lab", httpAgent("Anon"), nil)
			require.Equal(t, models.EUNAUTHORIZED, models.ErrorCode(err))
			err = f.teams.CreateAgent(f.member, "nope", httpAgent("Lost"), nil)
			require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))
			require.Equal(t, before, f.count(t))
			require.NoError(t, f.teams.CreateAgent(f.admin, "lab", httpAgent("By Admin"), nil), "admins manage every team")
		})
		t.Run("ForbiddenEndpoints", func(t *testing.T) {
			before := f.count(t)
			for i, endpoint := range []string{
				"http://127.0.0.1/", "http://169.254.169.254/", "http://10.1.2.3/", "file:///etc/passwd", "ftp://x",
				"http://localhost:8080/", "http://[::1]/", "http://0x7f.1/", "http://metadata.google.internal/",
			} {
				a := httpAgent(fmt.Sprintf("Bad %d", i))
				a.EndpointURL = endpoint
				err := f.teams.CreateAgent(f.member, "lab", a, map[string]string{"KEY": "v"})
				require.Equal(t, models.EINVALID, models.ErrorCode(err), "%s: %v", endpoint, err)
				require.Equal(t, "endpoint_url", models.ErrorField(err), endpoint)
			}
			require.Equal(t, before, f.count(t), "nothing written")
		})
		t.Run("AllowListedHost", func(t *testing.T) {
			a := httpAgent("Internal")
			a.EndpointURL = "http://internal.test:9000/step"
			require.NoError(t, f.teams.CreateAgent(f.member, "lab", a, nil))
		})
		t.Run("Validation", func(t *testing.T) {
			before := f.count(t)
			for _, tc := range []struct {
				agent   *models.Agent
				secrets map[string]string
				field   string
				code    string
			}{
				{&models.Agent{Name: "", Kind: models.AgentReplay}, nil, "name", models.EINVALID},
				{&models.Agent{Name: "Browser bot", Kind: models.AgentReplay}, nil, "slug", models.ECONFLICT},
				{&models.Agent{Name: "X", Slug: "Bad Slug", Kind: models.AgentReplay}, nil, "slug", models.EINVALID},
				{&models.Agent{Name: "X", Kind: "shell"}, nil, "kind", models.EINVALID},
				{&models.Agent{Name: "X", Kind: models.AgentHTTP}, nil, "endpoint_url", models.EINVALID},
				{&models.Agent{Name: "X", Kind: models.AgentReplay, PaperURL: "javascript:alert(1)"}, nil, "paper_url", models.EINVALID},
				{&models.Agent{Name: "X", Kind: models.AgentReplay, Config: "[1]"}, nil, "config", models.EINVALID},
				{&models.Agent{Name: "X", Kind: models.AgentReplay}, map[string]string{"lower": "v"}, "secrets", models.EINVALID},
				{&models.Agent{Name: "X", Kind: models.AgentReplay}, map[string]string{"": "v"}, "secrets", models.EINVALID},
				{&models.Agent{Name: "X", Kind: models.AgentReplay}, map[string]string{"EMPTY": ""}, "secrets", models.EINVALID},
				{&models.Agent{Name: "X", Kind: models.AgentReplay}, map[string]string{"BIG": strings.Repeat("v", 4097)}, "secrets", models.EINVALID},
				{&models.Agent{Name: "X", Kind: models.AgentReplay}, manySecrets(21), "secrets", models.EINVALID},
			} {
				err := f.teams.CreateAgent(f.member, "lab", tc.agent, tc.secrets)
				require.Equal(t, tc.code, models.ErrorCode(err), "%+v: %v", tc.agent, err)
				require.Equal(t, tc.field, models.ErrorField(err), "%+v", tc.agent)
			}
			require.Equal(t, before, f.count(t))
			require.NoError(t, f.teams.CreateAgent(f.member, "lab", &models.Agent{Name: "Twenty", Kind: models.AgentReplay}, manySecrets(20)))
		})
	})
}

func manySecrets(n int) map[string]string {
	out := map[string]string{}
	for i := range n {
		out[fmt.Sprintf("KEY_%d", i)] = "v"
	}
	return out
}

func TestTeams_UpdateAgent(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newAgentFixture(t, db)
		a := httpAgent("Editable")
		require.NoError(t, f.teams.CreateAgent(f.member, "lab", a, map[string]string{"OPENAI_API_KEY": secretValue, "OLD": "old"}))

		t.Run("SecretsKeepSetClear", func(t *testing.T) {
			edit := httpAgent("Edited")
			edit.Description = "now described"
			err := f.teams.UpdateAgent(f.member, "lab", "editable", edit, map[string]string{"OPENAI_API_KEY": "", "NEW_KEY": "new"}, []string{"OLD"})
			require.NoError(t, err)
			require.Equal(t, "editable", edit.Slug, "the slug stays")
			require.Equal(t, "Edited", edit.Name)
			require.Equal(t, "NEW_KEY,OPENAI_API_KEY", edit.SecretNames)
			got, err := f.teams.AgentSecrets(f.system, a.ID)
			require.NoError(t, err)
			require.Equal(t, map[string]string{"OPENAI_API_KEY": secretValue, "NEW_KEY": "new"}, got)
		})
		t.Run("ClearAll", func(t *testing.T) {
			b := &models.Agent{Name: "Clearable", Kind: models.AgentReplay}
			require.NoError(t, f.teams.CreateAgent(f.member, "lab", b, map[string]string{"ONLY": "x"}))
			require.NoError(t, f.teams.UpdateAgent(f.member, "lab", "clearable", &models.Agent{Name: "Clearable", Kind: models.AgentReplay}, nil, []string{"ONLY"}))
			require.Empty(t, f.ciphertext(t, b.ID))
			got, err := f.teams.AgentSecrets(f.system, b.ID)
			require.NoError(t, err)
			require.Empty(t, got)
		})
		t.Run("SlugIsFixed", func(t *testing.T) {
			edit := httpAgent("Edited")
			edit.Slug = "renamed"
			err := f.teams.UpdateAgent(f.member, "lab", "editable", edit, nil, nil)
			require.Equal(t, models.EINVALID, models.ErrorCode(err))
			require.Equal(t, "slug", models.ErrorField(err))
		})
		t.Run("RefusedEndpointChangesNothing", func(t *testing.T) {
			edit := httpAgent("Should not stick")
			edit.EndpointURL = "http://169.254.169.254/latest/"
			err := f.teams.UpdateAgent(f.member, "lab", "editable", edit, map[string]string{"OPENAI_API_KEY": "replaced"}, nil)
			require.Equal(t, models.EINVALID, models.ErrorCode(err))
			require.Equal(t, "endpoint_url", models.ErrorField(err))
			got, err := f.teams.AgentBySlug(f.member, "lab", "editable")
			require.NoError(t, err)
			require.Equal(t, "Edited", got.Name)
			require.Equal(t, "https://agent.example.com/step", got.EndpointURL)
			s, err := f.teams.AgentSecrets(f.system, a.ID)
			require.NoError(t, err)
			require.Equal(t, secretValue, s["OPENAI_API_KEY"])
		})
		t.Run("Permissions", func(t *testing.T) {
			err := f.teams.UpdateAgent(f.stranger, "lab", "editable", httpAgent("Hijack"), nil, nil)
			require.Equal(t, models.EFORBIDDEN, models.ErrorCode(err))
			err = f.teams.UpdateAgent(f.anon, "lab", "editable", httpAgent("Hijack"), nil, nil)
			require.Equal(t, models.EUNAUTHORIZED, models.ErrorCode(err))
			err = f.teams.UpdateAgent(f.member, "lab", "missing", httpAgent("Missing"), nil, nil)
			require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))
			_, err = f.teams.PatchAgent(f.stranger, "lab", "editable", &models.AgentPatch{}, nil, nil)
			require.Equal(t, models.EFORBIDDEN, models.ErrorCode(err))
		})
		t.Run("Patch", func(t *testing.T) {
			desc, open := "patched", true
			got, err := f.teams.PatchAgent(f.admin, "lab", "editable", &models.AgentPatch{Description: &desc, OpenSource: &open}, map[string]string{"PATCHED": "p"}, nil)
			require.NoError(t, err)
			require.Equal(t, "Edited", got.Name, "unset fields stay")
			require.Equal(t, "patched", got.Description)
			require.True(t, got.OpenSource)
			require.Equal(t, "NEW_KEY,OPENAI_API_KEY,PATCHED", got.SecretNames)
			require.Nil(t, got.SecretsCiphertext)
		})
	})
}

func TestTeams_AgentForms(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newAgentFixture(t, db)
		require.NoError(t, f.teams.CreateAgent(f.member, "lab", httpAgent("Formed"), map[string]string{"KEY": secretValue}))
		for _, tc := range []struct {
			ctx  context.Context
			team string
			code string
		}{
			{f.member, "lab", ""}, {f.admin, "lab", ""}, {f.stranger, "lab", models.EFORBIDDEN},
			{f.anon, "lab", models.EUNAUTHORIZED}, {f.member, "nope", models.ENOTFOUND},
		} {
			_, err := f.teams.AgentTeam(tc.ctx, tc.team)
			require.Equal(t, tc.code, models.ErrorCode(err))
			a, err := f.teams.EditableAgent(tc.ctx, tc.team, "formed")
			require.Equal(t, tc.code, models.ErrorCode(err))
			if err == nil {
				require.Equal(t, "https://agent.example.com/step", a.EndpointURL)
				require.Nil(t, a.SecretsCiphertext)
				require.Equal(t, "KEY", a.SecretNames)
			}
		}
		_, err := f.teams.EditableAgent(f.member, "lab", "nope")
		require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))
	})
}

func TestTeams_DeleteAgent(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newAgentFixture(t, db)
		require.NoError(t, f.teams.CreateAgent(f.member, "lab", httpAgent("Doomed"), nil))
		require.Equal(t, models.EFORBIDDEN, models.ErrorCode(f.teams.DeleteAgent(f.stranger, "lab", "doomed")))
		require.Equal(t, models.EUNAUTHORIZED, models.ErrorCode(f.teams.DeleteAgent(f.anon, "lab", "doomed")))
		require.Equal(t, models.ENOTFOUND, models.ErrorCode(f.teams.DeleteAgent(f.member, "lab", "nope")))
		require.NoError(t, f.teams.DeleteAgent(f.member, "lab", "doomed"))
		_, err := f.teams.AgentBySlug(f.anon, "lab", "doomed")
		require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))

		t.Run("ErrConflictWithRuns", func(t *testing.T) {
			a := httpAgent("Used")
			require.NoError(t, f.teams.CreateAgent(f.member, "lab", a, nil))
			g, now := db.Gorm(), time.Now().UTC()
			require.NoError(t, g.Exec("INSERT INTO benchmarks (slug, name, format, evaluator, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)", "b", "B", "proctor", "none", now, now).Error)
			var benchID, versionID int64
			require.NoError(t, g.Raw("SELECT id FROM benchmarks WHERE slug = ?", "b").Scan(&benchID).Error)
			require.NoError(t, g.Exec("INSERT INTO benchmark_versions (benchmark_id, version, checksum, created_at) VALUES (?, 1, ?, ?)", benchID, "sum", now).Error)
			require.NoError(t, g.Raw("SELECT id FROM benchmark_versions WHERE benchmark_id = ?", benchID).Scan(&versionID).Error)
			require.NoError(t, g.Exec("INSERT INTO runs (team_id, agent_id, version_id, status, origin, created_at) VALUES (?, ?, ?, 'completed', 'executed', ?)", f.team.ID, a.ID, versionID, now).Error)
			err := f.teams.DeleteAgent(f.member, "lab", "used")
			require.Equal(t, models.ECONFLICT, models.ErrorCode(err))
			require.Contains(t, models.ErrorMessage(err), "is used by 1 run(s)")
			_, err = f.teams.AgentBySlug(f.anon, "lab", "used")
			require.NoError(t, err, "still there")
		})
	})
}

func TestTeams_ListAgents(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newAgentFixture(t, db)
		require.NoError(t, f.teams.CreateAgent(f.member, "lab", httpAgent("Zeta"), map[string]string{"KEY": secretValue}))
		require.NoError(t, f.teams.CreateAgent(f.member, "lab", &models.Agent{Name: "Alpha", Kind: models.AgentReplay}, nil))
		require.NoError(t, f.teams.CreateAgent(f.stranger, "other", httpAgent("Mid"), nil))

		t.Run("PublicRedacted", func(t *testing.T) {
			for name, ctx := range map[string]context.Context{"anonymous": f.anon, "stranger": f.stranger} {
				res, err := f.teams.ListAgents(ctx, "lab")
				require.NoError(t, err, name)
				require.False(t, res.CanManage)
				require.Equal(t, "lab", res.Team.Slug)
				list := res.Agents
				require.Len(t, list, 2)
				require.Equal(t, "alpha", list[0].Slug)
				zeta := list[1]
				require.Empty(t, zeta.EndpointURL, "%s must not see the endpoint", name)
				require.False(t, zeta.CanManage)
				require.Nil(t, zeta.SecretsCiphertext)
				require.Equal(t, map[string]string{"KEY": "set"}, zeta.SecretStatus())
			}
			_, err := f.teams.ListAgents(f.anon, "nope")
			require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))
		})
		t.Run("MembersSeeEndpoint", func(t *testing.T) {
			for _, ctx := range []context.Context{f.member, f.admin} {
				res, err := f.teams.ListAgents(ctx, "lab")
				require.NoError(t, err)
				require.True(t, res.CanManage)
				require.Equal(t, "https://agent.example.com/step", res.Agents[1].EndpointURL)
				a, err := f.teams.AgentBySlug(ctx, "lab", "zeta")
				require.NoError(t, err)
				require.True(t, a.CanManage)
				require.Equal(t, "https://agent.example.com/step", a.EndpointURL)
				require.Nil(t, a.SecretsCiphertext)
			}
			a, err := f.teams.AgentBySlug(f.stranger, "lab", "zeta")
			require.NoError(t, err)
			require.Empty(t, a.EndpointURL)
		})
		t.Run("AllTeamsPaginated", func(t *testing.T) {
			list, total, err := f.teams.ListAllAgents(f.stranger, 1, 2)
			require.NoError(t, err)
			require.Equal(t, 3, total)
			require.Len(t, list, 2)
			require.Equal(t, []string{"alpha", "mid"}, []string{list[0].Slug, list[1].Slug})
			require.Equal(t, "other", list[1].Team.Slug)
			require.True(t, list[1].CanManage, "the stranger is a member of other")
			require.Equal(t, "https://agent.example.com/step", list[1].EndpointURL)
			list, _, err = f.teams.ListAllAgents(f.stranger, 2, 2)
			require.NoError(t, err)
			require.Len(t, list, 1)
			require.Equal(t, "zeta", list[0].Slug)
			require.Empty(t, list[0].EndpointURL)
			require.Equal(t, "lab", list[0].Team.Slug)
		})
	})
}

// TestStore_PatchAgentConcurrent: two edits of different fields that overlap both
// survive; the slower one re-applies its change to the row as it is at commit.
func TestTeams_PatchAgentConcurrent(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newAgentFixture(t, db)
		a := &models.Agent{Name: "Walker", Kind: models.AgentHTTP, EndpointURL: "https://agent.example.com/step"}
		require.NoError(t, f.teams.CreateAgent(f.member, "lab", a, nil))

		// A guard whose next lookup blocks until released, holding the first
		// edit between its checks and its transaction.
		var block atomic.Bool
		entered, release := make(chan struct{}), make(chan struct{})
		g := netguard.New(nil, nil)
		g.LookupIP = func(context.Context, string) ([]net.IP, error) {
			if block.CompareAndSwap(true, false) {
				close(entered)
				<-release
			}
			return []net.IP{net.ParseIP("93.184.216.34")}, nil
		}
		teams := service.NewTeams(db, g)

		renamed, described := "Renamed", "Now with retries"
		block.Store(true)
		done := make(chan error, 1)
		go func() {
			_, err := teams.PatchAgent(f.member, "lab", a.Slug, &models.AgentPatch{Name: &renamed}, nil, nil)
			done <- err
		}()
		<-entered
		_, err := teams.PatchAgent(f.member, "lab", a.Slug, &models.AgentPatch{Description: &described}, nil, nil)
		require.NoError(t, err)
		close(release)
		require.NoError(t, <-done)

		got, err := f.teams.AgentBySlug(f.member, "lab", a.Slug)
		require.NoError(t, err)
		require.Equal(t, renamed, got.Name)
		require.Equal(t, described, got.Description, "the overlapping edit is kept")
	})
}
