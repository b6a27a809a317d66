package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

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

// HostGuard refuses endpoint URLs that point at internal addresses (implemented
// by *netguard.Guard); errors are EINVALID on the endpoint_url field.
type HostGuard interface {
	CheckURL(ctx context.Context, rawURL string) error
}

// UseAgentDeps gives the agent registry its sealer and SSRF guard. Main and test
// setups call it once, before serving; without it, saving secrets or an endpoint
// URL fails closed with an internal error.
func (db *DB) UseAgentDeps(secrets AgentSecrets, guard HostGuard) {
	db.agentSecrets, db.hostGuard = secrets, guard
}

// agentColumns are every agents column except the sealed secrets, which only
// the update path and AgentSecrets read.
const agentColumns = "agents.id, agents.team_id, agents.slug, agents.name, agents.description, agents.model, " +
	"agents.framework, agents.open_source, agents.paper_url, agents.code_url, agents.kind, agents.endpoint_url, " +
	"agents.config, agents.secret_names, agents.created_at, agents.updated_at"

// secretsContext binds an agent's sealed secrets to its row, so ciphertext copied
// onto another agent does not open there. It is built from the team id and the
// slug, neither of which changes after creation (UpdateAgent refuses a new slug),
// so the context is stable across edits.
func secretsContext(teamID int64, slug string) string {
	return fmt.Sprintf("agent:%d:%s", teamID, slug)
}

// CreateAgent registers a in the team's registry with the given secrets (name →
// value). Only team members and admins may: anonymous
// callers get EUNAUTHORIZED, others EFORBIDDEN. EINVALID names the bad field
// (endpoint_url when the endpoint is refused by the SSRF guard), ECONFLICT the
// slug when the team already has it, ENOTFOUND an unknown team. On success a
// holds the stored agent without its ciphertext.
func (db *DB) CreateAgent(ctx context.Context, teamSlug string, a *models.Agent, secrets map[string]string) error {
	team, err := db.TeamBySlug(ctx, teamSlug)
	if err != nil {
		return err
	}
	_, err = db.RequireTeamMember(ctx, team.ID)
	if err != nil {
		return err
	}
	a.ID, a.TeamID, a.Team = 0, team.ID, nil
	if err := a.Validate(); err != nil {
		return err
	}
	if err := db.checkAgentSlugFree(ctx, team, a.Slug); err != nil {
		return err
	}
	if err := db.checkEndpoint(ctx, a.EndpointURL); err != nil {
		return err
	}
	merged, err := models.MergeAgentSecrets(nil, secrets, nil)
	if err != nil {
		return err
	}
	if err := db.sealAgentSecrets(a, merged); err != nil {
		return err
	}
	now := db.now()
	a.CreatedAt, a.UpdatedAt = now, now
	err = db.tx(ctx, func(tx *gorm.DB) error {
		if err := tx.Omit(clause.Associations).Create(a).Error; err != nil {
			if isUniqueViolation(err) {
				return slugTaken(team, a.Slug)
			}
			return wrap(err, "agent")
		}
		return db.auditAgent(ctx, tx, "agent.create", team, a)
	})
	if err != nil {
		return err
	}
	a.SecretsCiphertext, a.Team, a.CanManage = nil, team, true
	return nil
}

// UpdateAgent replaces the editable fields of the team's agent with a's. Secrets
// with a non-empty value are set, empty values keep the stored secret, and names
// in clearSecrets are removed. An empty a.Slug keeps the slug; another one is
// EINVALID on slug, since the slug cannot change.
// Permissions and errors are those of CreateAgent, plus ENOTFOUND for an unknown
// agent. On success a holds the stored agent without its ciphertext.
func (db *DB) UpdateAgent(ctx context.Context, teamSlug, agentSlug string, a *models.Agent, secrets map[string]string, clearSecrets []string) error {
	out, err := db.updateAgent(ctx, teamSlug, agentSlug, func(next *models.Agent) error {
		if a.Slug != "" {
			next.Slug = a.Slug
		}
		next.Name, next.Description, next.Model, next.Framework = a.Name, a.Description, a.Model, a.Framework
		next.OpenSource, next.PaperURL, next.CodeURL = a.OpenSource, a.PaperURL, a.CodeURL
		next.Kind, next.EndpointURL, next.Config = a.Kind, a.EndpointURL, a.Config
		return nil
	}, secrets, clearSecrets)
	if err != nil {
		return err
	}
	*a = *out
	return nil
}

// PatchAgent applies a partial edit (nil fields unchanged) and the same secret
// rules as UpdateAgent, returning the stored agent without its ciphertext.
func (db *DB) PatchAgent(ctx context.Context, teamSlug, agentSlug string, p *models.AgentPatch, secrets map[string]string, clearSecrets []string) (*models.Agent, error) {
	return db.updateAgent(ctx, teamSlug, agentSlug, func(next *models.Agent) error {
		p.Apply(next)
		return nil
	}, secrets, clearSecrets)
}

// updateAgent is the one edit path: permission, change, validation and the SSRF
// check outside the transaction (DNS must not hold the writer), then the secrets
// are merged and re-sealed inside it from the row as it is at that moment, so two
// concurrent edits cannot drop each other's secrets.
func (db *DB) updateAgent(ctx context.Context, teamSlug, agentSlug string, change func(*models.Agent) error, secrets map[string]string, clearSecrets []string) (*models.Agent, error) {
	team, err := db.TeamBySlug(ctx, teamSlug)
	if err != nil {
		return nil, err
	}
	_, err = db.RequireTeamMember(ctx, team.ID)
	if err != nil {
		return nil, err
	}
	var cur models.Agent
	if err := db.q(ctx).Select(agentColumns).Where("team_id = ? AND slug = ?", team.ID, agentSlug).First(&cur).Error; err != nil {
		return nil, wrap(err, "agent")
	}
	next := cur
	if err := change(&next); err != nil {
		return nil, err
	}
	if strings.ToLower(strings.TrimSpace(next.Slug)) != cur.Slug {
		return nil, models.FieldError("slug", "the slug cannot be changed after creation: runs refer to it and it binds the agent's secrets")
	}
	next.ID, next.TeamID, next.Slug, next.Team = cur.ID, cur.TeamID, cur.Slug, nil
	if err := next.Validate(); err != nil {
		return nil, err
	}
	if err := db.checkEndpoint(ctx, next.EndpointURL); err != nil {
		return nil, err
	}
	now := db.now()
	next.UpdatedAt = now
	err = db.tx(ctx, func(tx *gorm.DB) error {
		var row models.Agent
		q := tx.Where("id = ?", cur.ID)
		if db.dialect == migrations.Postgres {
			q = q.Clauses(clause.Locking{Strength: "UPDATE"})
		}
		if err := q.First(&row).Error; err != nil {
			return wrap(err, "agent")
		}
		// Apply the change again to the row as it is now, so a concurrent edit
		// of other fields is kept rather than overwritten by the earlier read.
		fresh := row
		if err := change(&fresh); err != nil {
			return err
		}
		fresh.ID, fresh.TeamID, fresh.Slug, fresh.Team = row.ID, row.TeamID, row.Slug, nil
		if err := fresh.Validate(); err != nil {
			return err
		}
		if fresh.EndpointURL != next.EndpointURL {
			// The endpoint changed underneath us and was not checked against SSRF.
			return models.Errorf(models.ECONFLICT, "The agent was changed by someone else while saving; reload and try again.")
		}
		next = fresh
		next.UpdatedAt = now
		stored, err := db.openAgentSecrets(&row)
		if err != nil {
			return err
		}
		merged, err := models.MergeAgentSecrets(stored, secrets, clearSecrets)
		if err != nil {
			return err
		}
		if err := db.sealAgentSecrets(&next, merged); err != nil {
			return err
		}
		err = tx.Model(&models.Agent{}).Where("id = ?", cur.ID).Updates(map[string]any{
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
	next.SecretsCiphertext, next.Team, next.CanManage = nil, team, true
	return &next, nil
}

// DeleteAgent removes the team's agent. Members and admins only (EUNAUTHORIZED,
// EFORBIDDEN); ENOTFOUND for an unknown team or agent; ECONFLICT when runs used
// the agent, since their results must keep their agent.
func (db *DB) DeleteAgent(ctx context.Context, teamSlug, agentSlug string) error {
	team, err := db.TeamBySlug(ctx, teamSlug)
	if err != nil {
		return err
	}
	_, err = db.RequireTeamMember(ctx, team.ID)
	if err != nil {
		return err
	}
	return db.tx(ctx, func(tx *gorm.DB) error {
		var a models.Agent
		if err := tx.Select(agentColumns).Where("team_id = ? AND slug = ?", team.ID, agentSlug).First(&a).Error; err != nil {
			return wrap(err, "agent")
		}
		var runs int64
		if err := tx.Table("runs").Where("agent_id = ?", a.ID).Count(&runs).Error; err != nil {
			return wrap(err, "runs")
		}
		if runs > 0 {
			return models.Errorf(models.ECONFLICT, "Agent %q is used by %d run(s) and cannot be deleted: their results refer to it.", a.Slug, runs)
		}
		if err := tx.Delete(&models.Agent{}, a.ID).Error; err != nil {
			return wrap(err, "agent")
		}
		return db.auditAgent(ctx, tx, "agent.delete", team, &a)
	})
}

// AgentBySlug returns a team's agent to anyone, without its secrets; the endpoint
// URL is blanked unless the caller is a team member or an admin (CanManage).
// ENOTFOUND for an unknown team or agent.
func (db *DB) AgentBySlug(ctx context.Context, teamSlug, agentSlug string) (*models.Agent, error) {
	team, err := db.TeamBySlug(ctx, teamSlug)
	if err != nil {
		return nil, err
	}
	var a models.Agent
	if err := db.q(ctx).Select(agentColumns).Where("team_id = ? AND slug = ?", team.ID, agentSlug).First(&a).Error; err != nil {
		return nil, wrap(err, "agent")
	}
	a.Team = team
	manage, err := db.agentManager(ctx)
	if err != nil {
		return nil, err
	}
	redactAgent(&a, manage)
	return &a, nil
}

// ListAgents returns a team's agents by name to anyone, redacted as in
// AgentBySlug. ENOTFOUND for an unknown team.
func (db *DB) ListAgents(ctx context.Context, teamSlug string) (*models.TeamAgents, error) {
	team, err := db.TeamBySlug(ctx, teamSlug)
	if err != nil {
		return nil, err
	}
	var out []models.Agent
	if err := db.q(ctx).Select(agentColumns).Where("team_id = ?", team.ID).Order("LOWER(name), id").Find(&out).Error; err != nil {
		return nil, wrap(err, "agents")
	}
	manage, err := db.agentManager(ctx)
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].Team = team
		redactAgent(&out[i], manage)
	}
	return &models.TeamAgents{Team: team, Agents: out, CanManage: manage(team.ID)}, nil
}

// AgentTeam returns the team when the caller may register agents in it, for the
// new-agent form: EUNAUTHORIZED, EFORBIDDEN or ENOTFOUND otherwise.
func (db *DB) AgentTeam(ctx context.Context, teamSlug string) (*models.Team, error) {
	team, err := db.TeamBySlug(ctx, teamSlug)
	if err != nil {
		return nil, err
	}
	if _, err := db.RequireTeamMember(ctx, team.ID); err != nil {
		return nil, err
	}
	return team, nil
}

// EditableAgent returns the team's agent, without its secrets, when the caller
// may edit it, for the edit form: EUNAUTHORIZED, EFORBIDDEN or ENOTFOUND otherwise.
func (db *DB) EditableAgent(ctx context.Context, teamSlug, agentSlug string) (*models.Agent, error) {
	team, err := db.AgentTeam(ctx, teamSlug)
	if err != nil {
		return nil, err
	}
	var a models.Agent
	if err := db.q(ctx).Select(agentColumns).Where("team_id = ? AND slug = ?", team.ID, agentSlug).First(&a).Error; err != nil {
		return nil, wrap(err, "agent")
	}
	a.Team, a.CanManage = team, true
	return &a, nil
}

// ListAllAgents returns one page (from 1) of every team's agents by name with
// their team, and the total count, redacted as in AgentBySlug; public.
func (db *DB) ListAllAgents(ctx context.Context, page, perPage int) ([]models.Agent, int, error) {
	if page < 1 || perPage < 1 {
		return nil, 0, models.Errorf(models.EINVALID, "page and per_page must be positive")
	}
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
	manage, err := db.agentManager(ctx)
	if err != nil {
		return nil, 0, err
	}
	for i := range out {
		redactAgent(&out[i], manage)
	}
	return out, int(total), nil
}

// AgentSecrets opens an agent's secrets for the runner. Only the system actor may
// (EUNAUTHORIZED for anonymous callers, EFORBIDDEN for users, admins included);
// ENOTFOUND for an unknown agent.
func (db *DB) AgentSecrets(ctx context.Context, agentID int64) (map[string]string, error) {
	a := models.ActorFrom(ctx)
	if !a.SignedIn() {
		return nil, models.Errorf(models.EUNAUTHORIZED, "You must be signed in.")
	}
	if !a.System {
		return nil, models.Errorf(models.EFORBIDDEN, "Agent secrets are only opened by Proctor's runner.")
	}
	var row models.Agent
	if err := db.q(ctx).Where("id = ?", agentID).First(&row).Error; err != nil {
		return nil, wrap(err, "agent")
	}
	return db.openAgentSecrets(&row)
}

// agentManager returns a predicate telling whether the context's actor may
// manage agents of a team: admins and the system always, users in their teams.
func (db *DB) agentManager(ctx context.Context) (func(teamID int64) bool, error) {
	a := models.ActorFrom(ctx)
	switch {
	case a.Privileged():
		return func(int64) bool { return true }, nil
	case a.UserID == 0:
		return func(int64) bool { return false }, nil
	}
	var ids []int64
	if err := db.q(ctx).Model(&models.Membership{}).Where("user_id = ?", a.UserID).Pluck("team_id", &ids).Error; err != nil {
		return nil, wrap(err, "memberships")
	}
	member := make(map[int64]bool, len(ids))
	for _, id := range ids {
		member[id] = true
	}
	return func(teamID int64) bool { return member[teamID] }, nil
}

// redactAgent marks what the caller may manage and hides what they may not see.
func redactAgent(a *models.Agent, manage func(teamID int64) bool) {
	a.SecretsCiphertext = nil
	a.CanManage = manage(a.TeamID)
	if !a.CanManage {
		a.EndpointURL = ""
	}
}

// checkAgentSlugFree is ECONFLICT on the slug field when the team already has it.
func (db *DB) checkAgentSlugFree(ctx context.Context, team *models.Team, slug string) error {
	var n int64
	if err := db.q(ctx).Model(&models.Agent{}).Where("team_id = ? AND slug = ?", team.ID, slug).Count(&n).Error; err != nil {
		return wrap(err, "agent")
	}
	if n > 0 {
		return slugTaken(team, slug)
	}
	return nil
}

func slugTaken(team *models.Team, slug string) error {
	return &models.Error{Code: models.ECONFLICT, Field: "slug", Message: fmt.Sprintf("team %s already has an agent with the slug %q; choose another", team.Slug, slug)}
}

// checkEndpoint runs the SSRF guard on a non-empty endpoint URL, failing closed
// when no guard was configured.
func (db *DB) checkEndpoint(ctx context.Context, endpoint string) error {
	if endpoint == "" {
		return nil
	}
	if db.hostGuard == nil {
		return errors.New("storage: agent endpoint check unavailable: UseAgentDeps was not called")
	}
	return db.hostGuard.CheckURL(ctx, endpoint)
}

// sealAgentSecrets stores secrets on a as sealed JSON plus their sorted names;
// no secrets means no ciphertext.
func (db *DB) sealAgentSecrets(a *models.Agent, secrets map[string]string) error {
	if len(secrets) == 0 {
		a.SecretsCiphertext, a.SecretNames = nil, ""
		return nil
	}
	if db.agentSecrets == nil {
		return errors.New("storage: agent secrets cannot be sealed: UseAgentDeps was not called")
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
		return nil, errors.New("storage: agent secrets cannot be opened: UseAgentDeps was not called")
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
