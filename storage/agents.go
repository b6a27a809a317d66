package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"proctor/migrations"
	"proctor/models"
)

// AgentSecrets seals and opens agent secrets (implemented by *vault.Vault).
type AgentSecrets interface {
	Seal(plaintext []byte, context string) ([]byte, error)
	Open(sealed []byte, context string) ([]byte, error)
}

// UseAgentSecrets gives the agent registry the sealer of secrets at rest.
// Main and test setups call it once, before serving; without it, saving or
// opening secrets fails closed with an internal error.
func (db *DB) UseAgentSecrets(secrets AgentSecrets) {
	db.agentSecrets = secrets
}

// agentColumns are every agents column except the sealed secrets, which only
// the update path and AgentSecrets read.
const agentColumns = "agents.id, agents.team_id, agents.slug, agents.name, agents.description, agents.model, " +
	"agents.framework, agents.open_source, agents.paper_url, agents.code_url, agents.kind, agents.endpoint_url, " +
	"agents.config, agents.secret_names, agents.created_at, agents.updated_at"

// secretsContext binds an agent's sealed secrets to its row, so ciphertext copied
// onto another agent does not open there. It is built from the team id and the
// slug, neither of which changes after creation (the agent service refuses a new slug),
// so the context is stable across edits.
func secretsContext(teamID int64, slug string) string {
	return fmt.Sprintf("agent:%d:%s", teamID, slug)
}

// InsertAgent stores a in team's registry with its secrets (name → value)
// sealed, with its audit event. ECONFLICT when the team already has the
// slug. On success a holds the stored agent without its ciphertext.
func (db *DB) InsertAgent(ctx context.Context, team *models.Team, a *models.Agent, secrets map[string]string) error {
	a.ID, a.TeamID, a.Team = 0, team.ID, nil
	if err := db.sealAgentSecrets(a, secrets); err != nil {
		return err
	}
	now := db.now()
	a.CreatedAt, a.UpdatedAt = now, now
	err := db.tx(ctx, func(tx *gorm.DB) error {
		if err := tx.Omit(clause.Associations).Create(a).Error; err != nil {
			return wrap(err, "agent")
		}
		return db.auditAgent(ctx, tx, "agent.create", team, a)
	})
	if err != nil {
		return err
	}
	a.SecretsCiphertext, a.Team = nil, team
	return nil
}

// AgentEdit is an agent's edit as its transaction sees it: change receives
// the row as it is under the lock and its open secrets, edits the row in
// place and returns the secrets to store.
type AgentEdit func(row *models.Agent, secrets map[string]string) (map[string]string, error)

// UpdateAgent edits the team's agent agentID in one transaction: the row is
// read (locked on PostgreSQL) with its secrets opened, change edits it, and
// the editable fields are written back with the secrets re-sealed, with the
// audit event. Reading inside the transaction means two concurrent edits
// cannot drop each other's changes or secrets. ENOTFOUND for an unknown
// agent. It returns the stored agent without its ciphertext.
func (db *DB) UpdateAgent(ctx context.Context, team *models.Team, agentID int64, change AgentEdit) (*models.Agent, error) {
	var next models.Agent
	now := db.now()
	err := db.tx(ctx, func(tx *gorm.DB) error {
		var row models.Agent
		q := tx.Where("id = ? AND team_id = ?", agentID, team.ID)
		if db.dialect == migrations.Postgres {
			q = q.Clauses(clause.Locking{Strength: "UPDATE"})
		}
		if err := q.First(&row).Error; err != nil {
			return wrap(err, "agent")
		}
		stored, err := db.openAgentSecrets(&row)
		if err != nil {
			return err
		}
		next = row
		merged, err := change(&next, stored)
		if err != nil {
			return err
		}
		next.ID, next.TeamID, next.Slug, next.Team, next.UpdatedAt = row.ID, row.TeamID, row.Slug, nil, now
		if err := db.sealAgentSecrets(&next, merged); err != nil {
			return err
		}
		err = tx.Model(&models.Agent{}).Where("id = ?", row.ID).Updates(map[string]any{
			"name": next.Name, "description": next.Description, "model": next.Model,
			"framework": next.Framework, "open_source": next.OpenSource, "paper_url": next.PaperURL,
			"code_url": next.CodeURL, "kind": next.Kind, "endpoint_url": next.EndpointURL,
			"config": next.Config, "secrets_ciphertext": next.SecretsCiphertext,
			"secret_names": next.SecretNames, "updated_at": now,
		}).Error
		if err != nil {
			return wrap(err, "agent")
		}
		return db.auditAgent(ctx, tx, "agent.update", team, &next)
	})
	if err != nil {
		return nil, err
	}
	next.SecretsCiphertext, next.Team = nil, team
	return &next, nil
}

// DeleteAgent removes the team's agent when check, given the agent and how
// many runs used it, allows it, with its audit event. ENOTFOUND for an
// unknown agent.
func (db *DB) DeleteAgent(ctx context.Context, team *models.Team, agentSlug string, check func(a *models.Agent, runs int64) error) error {
	return db.tx(ctx, func(tx *gorm.DB) error {
		var a models.Agent
		if err := tx.Select(agentColumns).Where("team_id = ? AND slug = ?", team.ID, agentSlug).First(&a).Error; err != nil {
			return wrap(err, "agent")
		}
		var runs int64
		if err := tx.Table("runs").Where("agent_id = ?", a.ID).Count(&runs).Error; err != nil {
			return wrap(err, "runs")
		}
		if err := check(&a, runs); err != nil {
			return err
		}
		if err := tx.Delete(&models.Agent{}, a.ID).Error; err != nil {
			return wrap(err, "agent")
		}
		return db.auditAgent(ctx, tx, "agent.delete", team, &a)
	})
}

// AgentInTeam returns a team's agent by slug without its ciphertext;
// ENOTFOUND when the team has none.
func (db *DB) AgentInTeam(ctx context.Context, team *models.Team, agentSlug string) (*models.Agent, error) {
	var a models.Agent
	if err := db.q(ctx).Select(agentColumns).Where("team_id = ? AND slug = ?", team.ID, agentSlug).First(&a).Error; err != nil {
		return nil, wrap(err, "agent")
	}
	a.Team = team
	return &a, nil
}

// TeamAgentList returns a team's agents by name, without their ciphertext.
func (db *DB) TeamAgentList(ctx context.Context, team *models.Team) ([]models.Agent, error) {
	var out []models.Agent
	if err := db.q(ctx).Select(agentColumns).Where("team_id = ?", team.ID).Order("LOWER(name), id").Find(&out).Error; err != nil {
		return nil, wrap(err, "agents")
	}
	for i := range out {
		out[i].Team = team
	}
	return out, nil
}

// ListAllAgents returns one page (from 1) of every team's agents by name with
// their team, without their ciphertext, and the total count.
func (db *DB) ListAllAgents(ctx context.Context, page, perPage int) ([]models.Agent, int, error) {
	var total int64
	if err := db.q(ctx).Model(&models.Agent{}).Count(&total).Error; err != nil {
		return nil, 0, wrap(err, "agents")
	}
	var out []models.Agent
	err := db.q(ctx).Select(agentColumns).Preload("Team").Order("LOWER(agents.name), agents.id").
		Offset((page - 1) * perPage).Limit(perPage).Find(&out).Error
	if err != nil {
		return nil, 0, wrap(err, "agents")
	}
	return out, int(total), nil
}

// MemberTeamIDs returns the ids of the teams a user belongs to.
func (db *DB) MemberTeamIDs(ctx context.Context, userID int64) ([]int64, error) {
	var ids []int64
	err := db.q(ctx).Model(&models.Membership{}).Where("user_id = ?", userID).Pluck("team_id", &ids).Error
	return ids, wrap(err, "memberships")
}

// AgentSecrets opens an agent's secrets (for the runner); ENOTFOUND for an
// unknown agent.
func (db *DB) AgentSecrets(ctx context.Context, agentID int64) (map[string]string, error) {
	var row models.Agent
	if err := db.q(ctx).Where("id = ?", agentID).First(&row).Error; err != nil {
		return nil, wrap(err, "agent")
	}
	return db.openAgentSecrets(&row)
}

// sealAgentSecrets stores secrets on a as sealed JSON plus their sorted names;
// no secrets means no ciphertext.
func (db *DB) sealAgentSecrets(a *models.Agent, secrets map[string]string) error {
	if len(secrets) == 0 {
		a.SecretsCiphertext, a.SecretNames = nil, ""
		return nil
	}
	if db.agentSecrets == nil {
		return errors.New("storage: agent secrets cannot be sealed: UseAgentSecrets was not called")
	}
	plain, err := json.Marshal(secrets)
	if err != nil {
		return fmt.Errorf("encode agent secrets: %w", err)
	}
	sealed, err := db.agentSecrets.Seal(plain, secretsContext(a.TeamID, a.Slug))
	if err != nil {
		return fmt.Errorf("seal secrets of agent %q: %w", a.Slug, err)
	}
	a.SecretsCiphertext, a.SecretNames = sealed, models.SortedSecretNames(secrets)
	return nil
}

// openAgentSecrets decrypts the secrets stored on a row; an empty map when none.
func (db *DB) openAgentSecrets(a *models.Agent) (map[string]string, error) {
	out := map[string]string{}
	if len(a.SecretsCiphertext) == 0 {
		return out, nil
	}
	if db.agentSecrets == nil {
		return nil, errors.New("storage: agent secrets cannot be opened: UseAgentSecrets was not called")
	}
	plain, err := db.agentSecrets.Open(a.SecretsCiphertext, secretsContext(a.TeamID, a.Slug))
	if err != nil {
		return nil, fmt.Errorf("open secrets of agent %d: %w", a.ID, err)
	}
	if err := json.Unmarshal(plain, &out); err != nil {
		return nil, fmt.Errorf("decode secrets of agent %d: %w", a.ID, err)
	}
	return out, nil
}

// auditAgent records an agent change; only secret names are logged, never values.
func (db *DB) auditAgent(ctx context.Context, tx *gorm.DB, action string, team *models.Team, a *models.Agent) error {
	return db.auditTx(ctx, tx, action, "agent:"+team.Slug+"/"+a.Slug, "secrets: "+a.SecretNames, &team.ID)
}
