package storage_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/migrations"
	"proctor/models"
	"proctor/storage/storagetest"
)

// TestMigrate_AgentsRebuild replays the part of migration 18 that SQLite
// needs to accept agent kind mcp, rebuilding the agents table with foreign
// keys off as the migrator runs it, on a database holding agents, one of
// them deleted: every row comes through, the foreign keys still hold, the
// board triggers are back, ids keep counting up past the deleted agent's,
// and the kind constraint holds with mcp in it. (PostgreSQL swaps its
// constraint in place.)
func TestMigrate_AgentsRebuild(t *testing.T) {
	t.Parallel()
	db := storagetest.OpenSQLite(t)
	g := db.Gorm()
	now := time.Now().UTC()
	team := &models.Team{Slug: "lab", Name: "Lab", CreatedAt: now, UpdatedAt: now}
	require.NoError(t, g.Create(team).Error)
	var agents []*models.Agent
	for _, name := range []string{"kept", "also-kept", "deleted"} {
		a := &models.Agent{TeamID: team.ID, Slug: name, Name: name, Kind: models.AgentReplay, CreatedAt: now, UpdatedAt: now}
		require.NoError(t, g.Create(a).Error)
		agents = append(agents, a)
	}
	require.NoError(t, g.Delete(&models.Agent{}, agents[2].ID).Error)

	list, err := migrations.For(migrations.SQLite)
	require.NoError(t, err)
	var rebuild string
	for _, m := range list {
		if m.Version == 18 {
			require.True(t, strings.HasPrefix(m.SQL, "-- proctor:foreign-keys-off"), "the migrator runs it with foreign keys off")
			_, rebuild, _ = strings.Cut(m.SQL, "CREATE TEMP TABLE agents_seq")
			rebuild = "CREATE TEMP TABLE agents_seq" + rebuild
		}
	}
	require.Contains(t, rebuild, "RENAME TO agents")

	ctx := context.Background()
	conn, err := db.SQL().Conn(ctx) // SQLite's one writer connection: closed before the checks below
	require.NoError(t, err)
	_, err = conn.ExecContext(ctx, "PRAGMA foreign_keys = OFF")
	require.NoError(t, err)
	tx, err := conn.BeginTx(ctx, nil)
	require.NoError(t, err)
	_, err = tx.ExecContext(ctx, rebuild)
	require.NoError(t, err)
	rows, err := tx.QueryContext(ctx, "PRAGMA foreign_key_check")
	require.NoError(t, err)
	require.False(t, rows.Next(), "no foreign key is broken")
	require.NoError(t, rows.Close())
	require.NoError(t, tx.Commit())
	_, err = conn.ExecContext(ctx, "PRAGMA foreign_keys = ON")
	require.NoError(t, err)
	require.NoError(t, conn.Close())

	var slugs []string
	require.NoError(t, g.Model(&models.Agent{}).Order("id").Pluck("slug", &slugs).Error)
	require.Equal(t, []string{"kept", "also-kept"}, slugs)
	var triggers []string
	require.NoError(t, g.Raw("SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'agents' ORDER BY name").Scan(&triggers).Error)
	require.Equal(t, []string{"board_agents_delete", "board_agents_update"}, triggers)

	next := &models.Agent{TeamID: team.ID, Slug: "connector", Name: "Connector", Kind: models.AgentMCP, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, g.Create(next).Error)
	require.Greater(t, next.ID, agents[2].ID, "the deleted agent's id does not come back")
	bad := &models.Agent{TeamID: team.ID, Slug: "bad", Name: "Bad", Kind: "exec", CreatedAt: now, UpdatedAt: now}
	require.Error(t, g.Create(bad).Error, "the kind constraint still holds")
}
