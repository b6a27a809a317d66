package service

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"proctor/models"
	"proctor/storage"
)

// InviteTTL is how long a team invitation link stays valid.
const InviteTTL = 7 * 24 * time.Hour

// Team and token field bounds.
const (
	maxTeamNameLength        = 100
	maxTeamDescriptionLength = 2000
	maxTokenNameLength       = 100
)

// tokenDisplayLength is how many leading characters of a token are kept in
// clear (the prefix plus eight random characters) so that users can tell
// tokens apart.
const tokenDisplayLength = len(storage.APITokenPrefix) + 8

// TeamStore is what the team service needs from storage.
type TeamStore interface {
	TeamBySlug(ctx context.Context, slug string) (*models.Team, error)
	Membership(ctx context.Context, teamID, userID int64) (*models.Membership, error)
	ListTeams(ctx context.Context, page, perPage int) ([]models.TeamSummary, int, error)
	MemberTeams(ctx context.Context, userID int64) ([]models.Team, error)
	MemberTeamIDs(ctx context.Context, userID int64) ([]int64, error)
	UserMemberships(ctx context.Context, userID int64) ([]models.Membership, error)
	UserByID(ctx context.Context, id int64) (*models.User, error)
	InsertTeam(ctx context.Context, t *models.Team, ownerID int64) error
	TeamMembers(ctx context.Context, teamID int64) ([]models.Membership, error)
	InsertTeamInvite(ctx context.Context, team *models.Team, inv *models.TeamInvite, ttl time.Duration) error
	TeamInvite(ctx context.Context, tokenHash string, userID int64) (*storage.InviteState, error)
	AcceptTeamInvite(ctx context.Context, tokenHash string, userID int64, check func(*storage.InviteState) error) (*models.Team, error)
	RemoveMembership(ctx context.Context, slug string, callerID, userID int64, action string, check func(storage.MembershipChange) error) error
	SetMembershipRole(ctx context.Context, slug string, callerID, userID int64, role string, check func(storage.MembershipChange) error) error
	InsertAPIToken(ctx context.Context, t *models.APIToken) error
	ListAPITokens(ctx context.Context, userID int64) ([]models.APIToken, error)
	APITokenUser(ctx context.Context, tokenHash string) (*models.User, error)
	RevokeAPIToken(ctx context.Context, userID, id int64) (*models.APIToken, error)
	InsertAgent(ctx context.Context, team *models.Team, a *models.Agent, secrets map[string]string) error
	UpdateAgent(ctx context.Context, team *models.Team, agentID int64, change storage.AgentEdit) (*models.Agent, error)
	DeleteAgent(ctx context.Context, team *models.Team, agentSlug string, check func(a *models.Agent, runs int64) error) error
	AgentInTeam(ctx context.Context, team *models.Team, agentSlug string) (*models.Agent, error)
	TeamAgentList(ctx context.Context, team *models.Team) ([]models.Agent, error)
	ListAllAgents(ctx context.Context, page, perPage int) ([]models.Agent, int, error)
	AgentSecrets(ctx context.Context, agentID int64) (map[string]string, error)
}

// HostGuard refuses URLs that point at internal addresses (implemented by
// *netguard.Guard); its refusals are EINVALID on the endpoint_url field.
type HostGuard interface {
	CheckURL(ctx context.Context, rawURL string) error
}

// Teams is the team service: teams and their memberships and invitations,
// the caller's API tokens, and each team's agent registry (the SSRF guard
// on agent endpoints, what of an agent a caller is shown). Team pages and
// agent listings are public; members act for their team, owners manage it,
// administrators and the system may do anything a member or owner may.
type Teams struct {
	store TeamStore
	guard HostGuard
}

// NewTeams returns the team service over store; guard checks agent
// endpoints (nil refuses every endpoint URL with an internal error, failing
// closed).
func NewTeams(store TeamStore, guard HostGuard) *Teams {
	return &Teams{store: store, guard: guard}
}

// requireRole returns the caller when they may act as a member of the team
// (as an owner when ownerOnly): EUNAUTHORIZED for anonymous callers,
// EFORBIDDEN otherwise; admins and the system always pass.
func requireRole(ctx context.Context, store interface {
	Membership(ctx context.Context, teamID, userID int64) (*models.Membership, error)
}, teamID int64, ownerOnly bool) (models.Actor, error) {
	a, err := models.RequireUser(ctx)
	if err != nil || a.Privileged() {
		return a, err
	}
	m, err := store.Membership(ctx, teamID, a.UserID)
	return a, roleRefusal(m, err, ownerOnly)
}

// roleRefusal is why membership m (nil or ENOTFOUND err when none) may not
// act as a member (an owner when ownerOnly) of a team; nil when it may.
func roleRefusal(m *models.Membership, err error, ownerOnly bool) error {
	who := "members"
	if ownerOnly {
		who = "owners"
	}
	switch {
	case models.ErrorCode(err) == models.ENOTFOUND || err == nil && m == nil:
		return models.Errorf(models.EFORBIDDEN, "Only %s of this team may do this.", who)
	case err != nil:
		return err
	case ownerOnly && m.Role != models.RoleOwner:
		return models.Errorf(models.EFORBIDDEN, "Only owners of this team may do this.")
	}
	return nil
}

// pageOf checks page parameters: EINVALID unless both are positive.
func pageOf(page, perPage int) error {
	if page < 1 || perPage < 1 {
		return models.Errorf(models.EINVALID, "page and per_page must be positive")
	}
	return nil
}

// ListTeams returns one page (from 1) of every team with its member count,
// by name, and the total number of teams. Public; EINVALID for a bad page.
func (s *Teams) ListTeams(ctx context.Context, page, perPage int) ([]models.TeamSummary, int, error) {
	if err := pageOf(page, perPage); err != nil {
		return nil, 0, err
	}
	return s.store.ListTeams(ctx, page, perPage)
}

// MemberTeams returns the teams the signed-in user belongs to, by name; none
// for anonymous callers and the system actor.
func (s *Teams) MemberTeams(ctx context.Context) ([]models.Team, error) {
	a := models.ActorFrom(ctx)
	if a.UserID == 0 {
		return []models.Team{}, nil
	}
	return s.store.MemberTeams(ctx, a.UserID)
}

// CreateTeam creates a team whose first owner is the signed-in user. The slug
// comes from the name when empty. EUNAUTHORIZED when nobody is signed in,
// EFORBIDDEN for the system actor (a team needs a user as owner), EINVALID
// (fields name, slug, description) for bad input, ECONFLICT (field slug) when
// the slug is taken.
func (s *Teams) CreateTeam(ctx context.Context, name, slug, description string) (*models.Team, error) {
	a, err := models.RequireUser(ctx)
	if err != nil {
		return nil, err
	}
	if a.UserID == 0 {
		return nil, models.Errorf(models.EFORBIDDEN, "A team needs a user as its first owner; the system actor has no account.")
	}
	name, description = strings.TrimSpace(name), strings.TrimSpace(description)
	slug = strings.ToLower(strings.TrimSpace(slug))
	switch {
	case name == "":
		return nil, models.FieldError("name", "name is required")
	case utf8.RuneCountInString(name) > maxTeamNameLength:
		return nil, models.FieldError("name", "name must be at most %d characters", maxTeamNameLength)
	case utf8.RuneCountInString(description) > maxTeamDescriptionLength:
		return nil, models.FieldError("description", "description must be at most %d characters", maxTeamDescriptionLength)
	}
	if slug == "" {
		if slug = models.Slugify(name); slug == "" {
			return nil, models.FieldError("slug", "the name %q gives no usable slug; choose one made of lower-case letters, digits and hyphens", name)
		}
	}
	if !models.ValidSlug(slug) {
		return nil, models.FieldError("slug", "slug %q must be 1–64 lower-case letters, digits and inner hyphens", slug)
	}
	t := &models.Team{Slug: slug, Name: name, Description: description}
	if err := s.store.InsertTeam(ctx, t, a.UserID); err != nil {
		if models.ErrorCode(err) == models.ECONFLICT {
			return nil, &models.Error{Code: models.ECONFLICT, Field: "slug", Message: fmt.Sprintf("a team with the slug %q already exists", slug), Err: err}
		}
		return nil, err
	}
	return t, nil
}

// TeamDetails returns a team as the caller may see it: everyone sees the
// team; members and admins also see the member list. ENOTFOUND for an
// unknown slug.
func (s *Teams) TeamDetails(ctx context.Context, slug string) (*models.TeamDetail, error) {
	t, err := s.store.TeamBySlug(ctx, slug)
	if err != nil {
		return nil, err
	}
	a := models.ActorFrom(ctx)
	d := &models.TeamDetail{Team: *t}
	if a.UserID != 0 {
		m, err := s.store.Membership(ctx, t.ID, a.UserID)
		switch models.ErrorCode(err) {
		case "":
			d.Viewer = m
		case models.ENOTFOUND:
		default:
			return nil, err
		}
	}
	d.MembersVisible = d.Viewer != nil || a.Privileged()
	d.CanManage = a.Privileged() || d.Viewer != nil && d.Viewer.Role == models.RoleOwner
	if d.MembersVisible {
		if d.Members, err = s.store.TeamMembers(ctx, t.ID); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// validRole is EINVALID (field role) for anything but owner or member.
func validRole(role string) error {
	if role != models.RoleOwner && role != models.RoleMember {
		return models.FieldError("role", "role must be %q or %q, not %q", models.RoleOwner, models.RoleMember, role)
	}
	return nil
}

// CreateTeamInvite creates a single-use invitation to the team with the given
// role (member when empty), valid for InviteTTL, and returns it with its
// plaintext token, which is never stored. EUNAUTHORIZED when nobody is
// signed in, ENOTFOUND for an unknown team, EFORBIDDEN for non-owners and the
// system actor, EINVALID (field role).
func (s *Teams) CreateTeamInvite(ctx context.Context, slug, role string) (*models.InviteDetail, string, error) {
	if role == "" {
		role = models.RoleMember
	}
	if err := validRole(role); err != nil {
		return nil, "", err
	}
	t, err := s.store.TeamBySlug(ctx, slug)
	if err != nil {
		return nil, "", err
	}
	a, err := requireRole(ctx, s.store, t.ID, true)
	if err != nil {
		return nil, "", err
	}
	if a.UserID == 0 {
		return nil, "", models.Errorf(models.EFORBIDDEN, "An invitation needs a user as its author; the system actor has no account.")
	}
	plain, hash := models.NewToken("inv_")
	inv := models.TeamInvite{TokenHash: hash, Role: role, CreatedBy: a.UserID}
	if err := s.store.InsertTeamInvite(ctx, t, &inv, InviteTTL); err != nil {
		return nil, "", err
	}
	return &models.InviteDetail{Team: *t, Invite: inv}, plain, nil
}

// inviteRefusal is why st's invitation may not be accepted: used, expired,
// or its user already a member (ECONFLICT); nil when it may.
func inviteRefusal(st *storage.InviteState) error {
	t := st.Team
	switch {
	case st.Invite.UsedAt != nil:
		return models.Errorf(models.ECONFLICT, "This invitation has already been used. Ask an owner of %s for a new link.", t.Name)
	case !st.Now.Before(st.Invite.ExpiresAt):
		return models.Errorf(models.ECONFLICT, "This invitation has expired. Ask an owner of %s for a new link.", t.Name)
	case st.Member:
		return models.Errorf(models.ECONFLICT, "You are already a member of %s.", t.Name)
	}
	return nil
}

// invalidInvite turns an unknown invitation into the message its link shows.
func invalidInvite(err error) error {
	if models.ErrorCode(err) == models.ENOTFOUND {
		return models.Errorf(models.ENOTFOUND, "This invitation link is not valid.")
	}
	return err
}

// InviteByToken returns the invitation a link carries, checked as
// AcceptTeamInvite would check it, so the confirmation page can say what is
// wrong up front. EUNAUTHORIZED when nobody is signed in, ENOTFOUND for an
// unknown token, ECONFLICT when it is used or expired or the caller is
// already a member.
func (s *Teams) InviteByToken(ctx context.Context, token string) (*models.InviteDetail, error) {
	a, err := models.RequireUser(ctx)
	if err != nil {
		return nil, err
	}
	st, err := s.store.TeamInvite(ctx, models.HashToken(token), a.UserID)
	if err != nil {
		return nil, invalidInvite(err)
	}
	if err := inviteRefusal(st); err != nil {
		return nil, err
	}
	return &st.InviteDetail, nil
}

// AcceptTeamInvite makes the signed-in user a member of the invitation's team
// with the invitation's role and uses the invitation up. EUNAUTHORIZED when
// nobody is signed in, EFORBIDDEN for the system actor, ENOTFOUND for an
// unknown token, ECONFLICT when the invitation is used or expired or the user
// is already a member.
func (s *Teams) AcceptTeamInvite(ctx context.Context, token string) (*models.Team, error) {
	a, err := models.RequireUser(ctx)
	if err != nil {
		return nil, err
	}
	if a.UserID == 0 {
		return nil, models.Errorf(models.EFORBIDDEN, "Only a user can join a team.")
	}
	t, err := s.store.AcceptTeamInvite(ctx, models.HashToken(token), a.UserID, inviteRefusal)
	if err != nil {
		return nil, invalidInvite(err)
	}
	return t, nil
}

// keepAnOwner refuses (ECONFLICT, "You cannot " + why) a change that takes
// the target out of the owners when it is the team's only owner.
func keepAnOwner(c storage.MembershipChange, why string) error {
	if c.Target.Role == models.RoleOwner && c.Owners <= 1 {
		return models.Errorf(models.ECONFLICT, "You cannot "+why+".", c.Team.Name)
	}
	return nil
}

// managerCheck is the rule of an owner's change to another member: the
// caller must be an owner of the team (or privileged) and the target a
// member (ENOTFOUND otherwise).
func managerCheck(a models.Actor, c storage.MembershipChange) error {
	if !a.Privileged() {
		if err := roleRefusal(c.Caller, nil, true); err != nil {
			return err
		}
	}
	if c.Target == nil {
		return models.Errorf(models.ENOTFOUND, "membership not found.")
	}
	return nil
}

// RemoveTeamMember removes a user from a team. EUNAUTHORIZED when nobody is
// signed in, ENOTFOUND for an unknown team or a user who is not a member,
// EFORBIDDEN for non-owners, ECONFLICT when the user is the team's last owner.
func (s *Teams) RemoveTeamMember(ctx context.Context, slug string, userID int64) error {
	a, err := models.RequireUser(ctx)
	if err != nil {
		return err
	}
	return s.store.RemoveMembership(ctx, slug, a.UserID, userID, "member.removed", func(c storage.MembershipChange) error {
		if err := managerCheck(a, c); err != nil {
			return err
		}
		return keepAnOwner(c, "remove the last owner of %s; make another member an owner first")
	})
}

// LeaveTeam removes the signed-in user from a team. EUNAUTHORIZED when nobody
// is signed in, ENOTFOUND for an unknown team, EFORBIDDEN when the user is
// not a member, ECONFLICT when the user is the team's last owner.
func (s *Teams) LeaveTeam(ctx context.Context, slug string) error {
	a, err := models.RequireUser(ctx)
	if err != nil {
		return err
	}
	return s.store.RemoveMembership(ctx, slug, a.UserID, a.UserID, "member.left", func(c storage.MembershipChange) error {
		if c.Target == nil {
			return models.Errorf(models.EFORBIDDEN, "You are not a member of %s.", c.Team.Name)
		}
		return keepAnOwner(c, "leave %s: you are its last owner; make another member an owner first")
	})
}

// SetTeamMemberRole changes a member's role. EUNAUTHORIZED when nobody is
// signed in, ENOTFOUND for an unknown team or a user who is not a member,
// EFORBIDDEN for non-owners, EINVALID (field role), ECONFLICT when it would
// leave no owner.
func (s *Teams) SetTeamMemberRole(ctx context.Context, slug string, userID int64, role string) error {
	if err := validRole(role); err != nil {
		return err
	}
	a, err := models.RequireUser(ctx)
	if err != nil {
		return err
	}
	return s.store.SetMembershipRole(ctx, slug, a.UserID, userID, role, func(c storage.MembershipChange) error {
		if err := managerCheck(a, c); err != nil {
			return err
		}
		if c.Target.Role == role {
			return nil
		}
		return keepAnOwner(c, "make the last owner of %s a member; make another member an owner first")
	})
}

// accountUser returns the signed-in user's actor: EUNAUTHORIZED when nobody
// is signed in, EFORBIDDEN (why) for the system actor, which has no account.
func accountUser(ctx context.Context, why string) (models.Actor, error) {
	a, err := models.RequireUser(ctx)
	if err != nil {
		return a, err
	}
	if a.UserID == 0 {
		return a, models.Errorf(models.EFORBIDDEN, "%s", why)
	}
	return a, nil
}

// CreateAPIToken creates a named personal API token for the signed-in user
// and returns it with its plaintext, which is never stored and cannot be
// shown again. EUNAUTHORIZED when nobody is signed in, EFORBIDDEN for the
// system actor (it has no account), EINVALID (field name) for a missing or
// too long name, ECONFLICT (field name) when an active token of the user
// already has that name.
func (s *Teams) CreateAPIToken(ctx context.Context, name string) (*models.APIToken, string, error) {
	a, err := accountUser(ctx, "API tokens belong to a user account; the system actor has none.")
	if err != nil {
		return nil, "", err
	}
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		return nil, "", models.FieldError("name", "name is required: say where the token will be used, e.g. \"CI\"")
	case utf8.RuneCountInString(name) > maxTokenNameLength:
		return nil, "", models.FieldError("name", "name must be at most %d characters", maxTokenNameLength)
	}
	plain, hash := models.NewToken(storage.APITokenPrefix)
	t := &models.APIToken{UserID: a.UserID, Name: name, Prefix: plain[:tokenDisplayLength], TokenHash: hash}
	if err := s.store.InsertAPIToken(ctx, t); err != nil {
		if models.ErrorCode(err) == models.ECONFLICT {
			return nil, "", &models.Error{Code: models.ECONFLICT, Field: "name", Message: fmt.Sprintf("a token named %q already exists", name), Err: err}
		}
		return nil, "", err
	}
	return t, plain, nil
}

// TokenUser resolves a bearer token to its user (recording when it was last
// used); EUNAUTHORIZED for an unknown or revoked token.
func (s *Teams) TokenUser(ctx context.Context, token string) (*models.User, error) {
	fail := models.Errorf(models.EUNAUTHORIZED, "The API token is invalid or revoked.")
	if !strings.HasPrefix(token, storage.APITokenPrefix) {
		return nil, fail
	}
	u, err := s.store.APITokenUser(ctx, models.HashToken(token))
	if models.ErrorCode(err) == models.ENOTFOUND {
		return nil, fail
	}
	return u, err
}

// ListAPITokens returns the signed-in user's tokens, active ones first,
// newest first; none for the system actor. EUNAUTHORIZED when nobody is
// signed in.
func (s *Teams) ListAPITokens(ctx context.Context) ([]models.APIToken, error) {
	a, err := models.RequireUser(ctx)
	if err != nil {
		return nil, err
	}
	return s.store.ListAPITokens(ctx, a.UserID)
}

// RevokeAPIToken revokes one of the signed-in user's tokens and returns it;
// revoking a revoked token changes nothing. EUNAUTHORIZED when nobody is
// signed in, ENOTFOUND when the token does not exist or belongs to someone
// else (admins included: a token is its owner's alone).
func (s *Teams) RevokeAPIToken(ctx context.Context, id int64) (*models.APIToken, error) {
	a, err := models.RequireUser(ctx)
	if err != nil {
		return nil, err
	}
	return s.store.RevokeAPIToken(ctx, a.UserID, id)
}

// AccountOverview returns the signed-in user's account, teams and API
// tokens. EUNAUTHORIZED when nobody is signed in, EFORBIDDEN for the system
// actor.
func (s *Teams) AccountOverview(ctx context.Context) (*models.Account, error) {
	a, err := accountUser(ctx, "The system actor has no account.")
	if err != nil {
		return nil, err
	}
	u, err := s.store.UserByID(ctx, a.UserID)
	if err != nil {
		return nil, err
	}
	acc := &models.Account{User: u}
	if acc.Memberships, err = s.store.UserMemberships(ctx, a.UserID); err != nil {
		return nil, err
	}
	if acc.Tokens, err = s.store.ListAPITokens(ctx, a.UserID); err != nil {
		return nil, err
	}
	return acc, nil
}

// agentTeam returns the team when the caller may act for it (a member or
// privileged): ENOTFOUND, EUNAUTHORIZED or EFORBIDDEN otherwise.
func (s *Teams) agentTeam(ctx context.Context, teamSlug string) (*models.Team, error) {
	team, err := s.store.TeamBySlug(ctx, teamSlug)
	if err != nil {
		return nil, err
	}
	if _, err := requireRole(ctx, s.store, team.ID, false); err != nil {
		return nil, err
	}
	return team, nil
}

// agentSlugTaken is the refusal of a slug the team already has.
func agentSlugTaken(team *models.Team, slug string) error {
	return &models.Error{Code: models.ECONFLICT, Field: "slug", Message: fmt.Sprintf("team %s already has an agent with the slug %q; choose another", team.Slug, slug)}
}

// checkEndpoint runs the SSRF guard on a non-empty endpoint URL, failing
// closed when no guard was configured.
func (s *Teams) checkEndpoint(ctx context.Context, endpoint string) error {
	return checkURL(ctx, s.guard, endpoint)
}

// checkURL runs guard on a non-empty URL, failing closed without one.
func checkURL(ctx context.Context, guard HostGuard, raw string) error {
	if raw == "" {
		return nil
	}
	if guard == nil {
		return errors.New("service: URL check unavailable: no host guard was configured")
	}
	return guard.CheckURL(ctx, raw)
}

// CreateAgent registers a in the team's registry with the given secrets
// (name → value), sealed at rest. Only team members and admins may:
// anonymous callers get EUNAUTHORIZED, others EFORBIDDEN. EINVALID names the
// bad field (endpoint_url when the endpoint is refused by the SSRF guard),
// ECONFLICT the slug when the team already has it, ENOTFOUND an unknown
// team. On success a holds the stored agent without its ciphertext.
func (s *Teams) CreateAgent(ctx context.Context, teamSlug string, a *models.Agent, secrets map[string]string) error {
	team, err := s.agentTeam(ctx, teamSlug)
	if err != nil {
		return err
	}
	a.ID, a.TeamID, a.Team = 0, team.ID, nil
	if err := a.Validate(); err != nil {
		return err
	}
	if _, err := s.store.AgentInTeam(ctx, team, a.Slug); err == nil {
		return agentSlugTaken(team, a.Slug)
	} else if models.ErrorCode(err) != models.ENOTFOUND {
		return err
	}
	if err := s.checkEndpoint(ctx, a.EndpointURL); err != nil {
		return err
	}
	merged, err := models.MergeAgentSecrets(nil, secrets, nil)
	if err != nil {
		return err
	}
	if err := s.store.InsertAgent(ctx, team, a, merged); err != nil {
		if models.ErrorCode(err) == models.ECONFLICT {
			return agentSlugTaken(team, a.Slug)
		}
		return err
	}
	a.CanManage = true
	return nil
}

// UpdateAgent replaces the editable fields of the team's agent with a's.
// Secrets with a non-empty value are set, empty values keep the stored
// secret, and names in clearSecrets are removed. An empty a.Slug keeps the
// slug; another one is EINVALID on slug, since the slug cannot change.
// Permissions and errors are those of CreateAgent, plus ENOTFOUND for an
// unknown agent. On success a holds the stored agent without its ciphertext.
func (s *Teams) UpdateAgent(ctx context.Context, teamSlug, agentSlug string, a *models.Agent, secrets map[string]string, clearSecrets []string) error {
	out, err := s.updateAgent(ctx, teamSlug, agentSlug, func(next *models.Agent) {
		if a.Slug != "" {
			next.Slug = a.Slug
		}
		next.Name, next.Description, next.Model, next.Framework = a.Name, a.Description, a.Model, a.Framework
		next.OpenSource, next.PaperURL, next.CodeURL = a.OpenSource, a.PaperURL, a.CodeURL
		next.Kind, next.EndpointURL, next.Config = a.Kind, a.EndpointURL, a.Config
	}, secrets, clearSecrets)
	if err != nil {
		return err
	}
	*a = *out
	return nil
}

// PatchAgent applies a partial edit (nil fields unchanged) and the same
// secret rules as UpdateAgent, returning the stored agent without its
// ciphertext.
func (s *Teams) PatchAgent(ctx context.Context, teamSlug, agentSlug string, p *models.AgentPatch, secrets map[string]string, clearSecrets []string) (*models.Agent, error) {
	return s.updateAgent(ctx, teamSlug, agentSlug, p.Apply, secrets, clearSecrets)
}

// updateAgent is the one edit path: permission, change, validation and the
// SSRF check outside the transaction (DNS must not hold the writer), then
// the change is applied again inside it to the row as it is at that moment
// and the secrets merged, so two concurrent edits cannot drop each other's
// changes or secrets.
func (s *Teams) updateAgent(ctx context.Context, teamSlug, agentSlug string, change func(*models.Agent), secrets map[string]string, clearSecrets []string) (*models.Agent, error) {
	team, err := s.agentTeam(ctx, teamSlug)
	if err != nil {
		return nil, err
	}
	cur, err := s.store.AgentInTeam(ctx, team, agentSlug)
	if err != nil {
		return nil, err
	}
	next := *cur
	change(&next)
	if strings.ToLower(strings.TrimSpace(next.Slug)) != cur.Slug {
		return nil, models.FieldError("slug", "the slug cannot be changed after creation: runs refer to it and it binds the agent's secrets")
	}
	next.ID, next.TeamID, next.Slug, next.Team = cur.ID, cur.TeamID, cur.Slug, nil
	if err := next.Validate(); err != nil {
		return nil, err
	}
	if err := s.checkEndpoint(ctx, next.EndpointURL); err != nil {
		return nil, err
	}
	out, err := s.store.UpdateAgent(ctx, team, cur.ID, func(row *models.Agent, stored map[string]string) (map[string]string, error) {
		change(row)
		row.Slug, row.Team = cur.Slug, nil
		if err := row.Validate(); err != nil {
			return nil, err
		}
		if row.EndpointURL != next.EndpointURL {
			// The endpoint changed underneath us and was not checked against SSRF.
			return nil, models.Errorf(models.ECONFLICT, "The agent was changed by someone else while saving; reload and try again.")
		}
		return models.MergeAgentSecrets(stored, secrets, clearSecrets)
	})
	if err != nil {
		return nil, err
	}
	out.CanManage = true
	return out, nil
}

// DeleteAgent removes the team's agent. Members and admins only
// (EUNAUTHORIZED, EFORBIDDEN); ENOTFOUND for an unknown team or agent;
// ECONFLICT when runs used the agent, since their results must keep their
// agent.
func (s *Teams) DeleteAgent(ctx context.Context, teamSlug, agentSlug string) error {
	team, err := s.agentTeam(ctx, teamSlug)
	if err != nil {
		return err
	}
	return s.store.DeleteAgent(ctx, team, agentSlug, func(a *models.Agent, runs int64) error {
		if runs > 0 {
			return models.Errorf(models.ECONFLICT, "Agent %q is used by %d run(s) and cannot be deleted: their results refer to it.", a.Slug, runs)
		}
		return nil
	})
}

// agentManager returns a predicate telling whether the caller may manage
// agents of a team: admins and the system always, users in their teams.
func (s *Teams) agentManager(ctx context.Context) (func(teamID int64) bool, error) {
	a := models.ActorFrom(ctx)
	switch {
	case a.Privileged():
		return func(int64) bool { return true }, nil
	case a.UserID == 0:
		return func(int64) bool { return false }, nil
	}
	ids, err := s.store.MemberTeamIDs(ctx, a.UserID)
	if err != nil {
		return nil, err
	}
	member := make(map[int64]bool, len(ids))
	for _, id := range ids {
		member[id] = true
	}
	return func(teamID int64) bool { return member[teamID] }, nil
}

// redactAgent marks what the caller may manage and hides what they may not
// see: the ciphertext from everyone, the endpoint from non-managers.
func redactAgent(a *models.Agent, manage func(teamID int64) bool) {
	a.SecretsCiphertext = nil
	a.CanManage = manage(a.TeamID)
	if !a.CanManage {
		a.EndpointURL = ""
	}
}

// AgentBySlug returns a team's agent to anyone, without its secrets; the
// endpoint URL is blanked unless the caller is a team member or an admin
// (CanManage). ENOTFOUND for an unknown team or agent.
func (s *Teams) AgentBySlug(ctx context.Context, teamSlug, agentSlug string) (*models.Agent, error) {
	team, err := s.store.TeamBySlug(ctx, teamSlug)
	if err != nil {
		return nil, err
	}
	a, err := s.store.AgentInTeam(ctx, team, agentSlug)
	if err != nil {
		return nil, err
	}
	manage, err := s.agentManager(ctx)
	if err != nil {
		return nil, err
	}
	redactAgent(a, manage)
	return a, nil
}

// ListAgents returns a team's agents by name to anyone, redacted as in
// AgentBySlug. ENOTFOUND for an unknown team.
func (s *Teams) ListAgents(ctx context.Context, teamSlug string) (*models.TeamAgents, error) {
	team, err := s.store.TeamBySlug(ctx, teamSlug)
	if err != nil {
		return nil, err
	}
	list, err := s.store.TeamAgentList(ctx, team)
	if err != nil {
		return nil, err
	}
	manage, err := s.agentManager(ctx)
	if err != nil {
		return nil, err
	}
	for i := range list {
		redactAgent(&list[i], manage)
	}
	return &models.TeamAgents{Team: team, Agents: list, CanManage: manage(team.ID)}, nil
}

// AgentTeam returns the team when the caller may register agents in it, for
// the new-agent form: EUNAUTHORIZED, EFORBIDDEN or ENOTFOUND otherwise.
func (s *Teams) AgentTeam(ctx context.Context, teamSlug string) (*models.Team, error) {
	return s.agentTeam(ctx, teamSlug)
}

// EditableAgent returns the team's agent, without its secrets, when the
// caller may edit it, for the edit form: EUNAUTHORIZED, EFORBIDDEN or
// ENOTFOUND otherwise.
func (s *Teams) EditableAgent(ctx context.Context, teamSlug, agentSlug string) (*models.Agent, error) {
	team, err := s.agentTeam(ctx, teamSlug)
	if err != nil {
		return nil, err
	}
	a, err := s.store.AgentInTeam(ctx, team, agentSlug)
	if err != nil {
		return nil, err
	}
	a.CanManage = true
	return a, nil
}

// ListAllAgents returns one page (from 1) of every team's agents by name
// with their team, and the total count, redacted as in AgentBySlug; public.
// EINVALID for a bad page.
func (s *Teams) ListAllAgents(ctx context.Context, page, perPage int) ([]models.Agent, int, error) {
	if err := pageOf(page, perPage); err != nil {
		return nil, 0, err
	}
	list, total, err := s.store.ListAllAgents(ctx, page, perPage)
	if err != nil {
		return nil, 0, err
	}
	manage, err := s.agentManager(ctx)
	if err != nil {
		return nil, 0, err
	}
	for i := range list {
		redactAgent(&list[i], manage)
	}
	return list, total, nil
}

// AgentSecrets opens an agent's secrets for the runner. Only the system
// actor may (EUNAUTHORIZED for anonymous callers, EFORBIDDEN for users,
// admins included); ENOTFOUND for an unknown agent.
func (s *Teams) AgentSecrets(ctx context.Context, agentID int64) (map[string]string, error) {
	a := models.ActorFrom(ctx)
	if !a.SignedIn() {
		return nil, models.Errorf(models.EUNAUTHORIZED, "You must be signed in.")
	}
	if !a.System {
		return nil, models.Errorf(models.EFORBIDDEN, "Agent secrets are only opened by Proctor's runner.")
	}
	return s.store.AgentSecrets(ctx, agentID)
}
