package storage

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"proctor/models"
)

// InviteTTL is how long a team invitation link stays valid.
const InviteTTL = 7 * 24 * time.Hour

// Team field bounds.
const (
	maxTeamNameLength        = 100
	maxTeamDescriptionLength = 2000
)

// TeamBySlug loads a team by its slug; ENOTFOUND when there is none.
func (db *DB) TeamBySlug(ctx context.Context, slug string) (*models.Team, error) {
	return teamBySlug(db.q(ctx), slug, false)
}

// RequireTeamMember returns the context's actor when it may act as a member of
// the team: EUNAUTHORIZED for anonymous callers, EFORBIDDEN for non-members;
// admins and the system always pass.
func (db *DB) RequireTeamMember(ctx context.Context, teamID int64) (models.Actor, error) {
	return requireTeamRole(ctx, db.q(ctx), teamID, false)
}

// ListTeams returns one page (from 1) of every team with its member count, by
// name, and the total number of teams. Team listings are public.
func (db *DB) ListTeams(ctx context.Context, page, perPage int) ([]models.TeamSummary, int, error) {
	if page < 1 || perPage < 1 {
		return nil, 0, models.Errorf(models.EINVALID, "page and per_page must be positive")
	}
	var total int64
	if err := db.q(ctx).Model(&models.Team{}).Count(&total).Error; err != nil {
		return nil, 0, wrap(err, "teams")
	}
	out := []models.TeamSummary{}
	err := db.q(ctx).Model(&models.Team{}).
		Select("teams.*, (SELECT COUNT(*) FROM memberships WHERE memberships.team_id = teams.id) AS member_count").
		Order("LOWER(teams.name), teams.id").Limit(perPage).Offset((page - 1) * perPage).Scan(&out).Error
	if err != nil {
		return nil, 0, wrap(err, "teams")
	}
	return out, int(total), nil
}

// MemberTeams returns the teams the signed-in user belongs to, by name; none
// for anonymous callers and the system actor.
func (db *DB) MemberTeams(ctx context.Context) ([]models.Team, error) {
	a := models.ActorFrom(ctx)
	out := []models.Team{}
	if a.UserID == 0 {
		return out, nil
	}
	err := db.q(ctx).Model(&models.Team{}).
		Where("teams.id IN (SELECT team_id FROM memberships WHERE user_id = ?)", a.UserID).
		Order("LOWER(teams.name), teams.id").Find(&out).Error
	return out, wrap(err, "teams")
}

// CreateTeam creates a team whose first owner is the signed-in user. The slug
// comes from the name when empty. EUNAUTHORIZED when nobody is signed in,
// EFORBIDDEN for the system actor (a team needs a user as owner), EINVALID
// (fields name, slug, description) for bad input, ECONFLICT (field slug) when
// the slug is taken.
func (db *DB) CreateTeam(ctx context.Context, name, slug, description string) (*models.Team, error) {
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
	now := db.now()
	t := &models.Team{Slug: slug, Name: name, Description: description, CreatedAt: now, UpdatedAt: now}
	err = db.tx(ctx, func(tx *gorm.DB) error {
		if err := tx.Create(t).Error; err != nil {
			if isUniqueViolation(err) {
				return &models.Error{Code: models.ECONFLICT, Field: "slug", Message: fmt.Sprintf("a team with the slug %q already exists", slug), Err: err}
			}
			return wrap(err, "team")
		}
		m := &models.Membership{TeamID: t.ID, UserID: a.UserID, Role: models.RoleOwner, CreatedAt: now}
		if err := tx.Create(m).Error; err != nil {
			return wrap(err, "membership")
		}
		return db.auditTx(ctx, tx, "team.created", "team "+t.Slug, "", &t.ID)
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// TeamDetails returns a team as the context's actor may see it: everyone sees the
// team; members and admins also see the member list. ENOTFOUND for an unknown slug.
func (db *DB) TeamDetails(ctx context.Context, slug string) (*models.TeamDetail, error) {
	q := db.q(ctx)
	t, err := teamBySlug(q, slug, false)
	if err != nil {
		return nil, err
	}
	a := models.ActorFrom(ctx)
	d := &models.TeamDetail{Team: *t}
	if a.UserID != 0 {
		m, err := membershipOf(q, t.ID, a.UserID)
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
		err := q.Preload("User").Where("team_id = ?", t.ID).
			Order("CASE WHEN role = 'owner' THEN 0 ELSE 1 END, created_at, id").Find(&d.Members).Error
		if err != nil {
			return nil, wrap(err, "members")
		}
	}
	return d, nil
}

// CreateTeamInvite creates a single-use invitation to the team with the given role
// (member when empty), valid for InviteTTL, and returns it with its plaintext
// token, which is never stored. EUNAUTHORIZED when nobody is signed in,
// ENOTFOUND for an unknown team, EFORBIDDEN for non-owners, EINVALID (field role).
func (db *DB) CreateTeamInvite(ctx context.Context, slug, role string) (*models.InviteDetail, string, error) {
	if role == "" {
		role = models.RoleMember
	}
	if err := validRole(role); err != nil {
		return nil, "", err
	}
	var d models.InviteDetail
	var plain string
	err := db.tx(ctx, func(tx *gorm.DB) error {
		t, err := teamBySlug(tx, slug, false)
		if err != nil {
			return err
		}
		a, err := requireTeamRole(ctx, tx, t.ID, true)
		if err != nil {
			return err
		}
		if a.UserID == 0 {
			return models.Errorf(models.EFORBIDDEN, "An invitation needs a user as its author; the system actor has no account.")
		}
		var hash string
		plain, hash = models.NewToken("inv_")
		now := db.now()
		d = models.InviteDetail{Team: *t, Invite: models.TeamInvite{TeamID: t.ID, TokenHash: hash, Role: role, CreatedBy: a.UserID, CreatedAt: now, ExpiresAt: now.Add(InviteTTL)}}
		if err := tx.Create(&d.Invite).Error; err != nil {
			return wrap(err, "invitation")
		}
		return db.auditTx(ctx, tx, "invite.created", "team "+t.Slug, fmt.Sprintf("invite %d role %s", d.Invite.ID, role), &t.ID)
	})
	if err != nil {
		return nil, "", err
	}
	return &d, plain, nil
}

// InviteByToken returns the invitation a link carries, checked as AcceptTeamInvite
// would check it, so the confirmation page can say what is wrong up front.
// EUNAUTHORIZED when nobody is signed in, ENOTFOUND for an unknown token,
// ECONFLICT when it is used or expired or the actor is already a member.
func (db *DB) InviteByToken(ctx context.Context, token string) (*models.InviteDetail, error) {
	a, err := models.RequireUser(ctx)
	if err != nil {
		return nil, err
	}
	return db.checkInvite(db.q(ctx), a, token, false)
}

// AcceptTeamInvite makes the signed-in user a member of the invitation's team with
// the invitation's role and uses the invitation up. EUNAUTHORIZED when nobody is
// signed in, ENOTFOUND for an unknown token, ECONFLICT when the invitation is used
// or expired or the user is already a member.
func (db *DB) AcceptTeamInvite(ctx context.Context, token string) (*models.Team, error) {
	a, err := models.RequireUser(ctx)
	if err != nil {
		return nil, err
	}
	if a.UserID == 0 {
		return nil, models.Errorf(models.EFORBIDDEN, "Only a user can join a team.")
	}
	var team models.Team
	err = db.tx(ctx, func(tx *gorm.DB) error {
		d, err := db.checkInvite(tx, a, token, true)
		if err != nil {
			return err
		}
		now := db.now()
		// The guard on used_at makes the invitation single-use even if two
		// acceptances race past the check above.
		res := tx.Model(&models.TeamInvite{}).Where("id = ? AND used_at IS NULL", d.Invite.ID).
			Updates(map[string]any{"used_at": now, "used_by": a.UserID})
		if res.Error != nil {
			return wrap(res.Error, "invitation")
		}
		if res.RowsAffected != 1 {
			return models.Errorf(models.ECONFLICT, "This invitation has already been used.")
		}
		m := &models.Membership{TeamID: d.Team.ID, UserID: a.UserID, Role: d.Invite.Role, CreatedAt: now}
		if err := tx.Create(m).Error; err != nil {
			if isUniqueViolation(err) {
				return models.Errorf(models.ECONFLICT, "You are already a member of %s.", d.Team.Name)
			}
			return wrap(err, "membership")
		}
		team = d.Team
		return db.auditTx(ctx, tx, "invite.accepted", "team "+d.Team.Slug, fmt.Sprintf("invite %d user %d role %s", d.Invite.ID, a.UserID, d.Invite.Role), &d.Team.ID)
	})
	if err != nil {
		return nil, err
	}
	return &team, nil
}

// checkInvite loads an invitation and its team and checks that actor a may use
// it; lock takes the team's row lock first (inside a transaction).
func (db *DB) checkInvite(q *gorm.DB, a models.Actor, token string, lock bool) (*models.InviteDetail, error) {
	var d models.InviteDetail
	if err := q.Where("token_hash = ?", models.HashToken(token)).First(&d.Invite).Error; err != nil {
		if models.ErrorCode(wrap(err, "invitation")) == models.ENOTFOUND {
			return nil, models.Errorf(models.ENOTFOUND, "This invitation link is not valid.")
		}
		return nil, wrap(err, "invitation")
	}
	t, err := teamByID(q, d.Invite.TeamID, lock)
	if err != nil {
		return nil, err
	}
	d.Team = *t
	switch {
	case d.Invite.UsedAt != nil:
		return nil, models.Errorf(models.ECONFLICT, "This invitation has already been used. Ask an owner of %s for a new link.", t.Name)
	case !db.now().Before(d.Invite.ExpiresAt):
		return nil, models.Errorf(models.ECONFLICT, "This invitation has expired. Ask an owner of %s for a new link.", t.Name)
	}
	if a.UserID != 0 {
		_, err := membershipOf(q, t.ID, a.UserID)
		switch models.ErrorCode(err) {
		case "":
			return nil, models.Errorf(models.ECONFLICT, "You are already a member of %s.", t.Name)
		case models.ENOTFOUND:
		default:
			return nil, err
		}
	}
	return &d, nil
}

// RemoveTeamMember removes a user from a team. EUNAUTHORIZED when nobody is signed
// in, ENOTFOUND for an unknown team or a user who is not a member, EFORBIDDEN for
// non-owners, ECONFLICT when the user is the team's last owner.
func (db *DB) RemoveTeamMember(ctx context.Context, slug string, userID int64) error {
	return db.tx(ctx, func(tx *gorm.DB) error {
		t, err := teamBySlug(tx, slug, true)
		if err != nil {
			return err
		}
		if _, err := requireTeamRole(ctx, tx, t.ID, true); err != nil {
			return err
		}
		m, err := membershipOf(tx, t.ID, userID)
		if err != nil {
			return err
		}
		if err := keepAnOwner(tx, t, m, "remove the last owner of %s; make another member an owner first"); err != nil {
			return err
		}
		if err := tx.Delete(m).Error; err != nil {
			return wrap(err, "membership")
		}
		return db.auditTx(ctx, tx, "member.removed", "team "+t.Slug, fmt.Sprintf("user %d role %s", userID, m.Role), &t.ID)
	})
}

// LeaveTeam removes the signed-in user from a team. EUNAUTHORIZED when nobody is
// signed in, ENOTFOUND for an unknown team, EFORBIDDEN when the user is not a
// member, ECONFLICT when the user is the team's last owner.
func (db *DB) LeaveTeam(ctx context.Context, slug string) error {
	a, err := models.RequireUser(ctx)
	if err != nil {
		return err
	}
	return db.tx(ctx, func(tx *gorm.DB) error {
		t, err := teamBySlug(tx, slug, true)
		if err != nil {
			return err
		}
		m, err := membershipOf(tx, t.ID, a.UserID)
		if models.ErrorCode(err) == models.ENOTFOUND {
			return models.Errorf(models.EFORBIDDEN, "You are not a member of %s.", t.Name)
		} else if err != nil {
			return err
		}
		if err := keepAnOwner(tx, t, m, "leave %s: you are its last owner; make another member an owner first"); err != nil {
			return err
		}
		if err := tx.Delete(m).Error; err != nil {
			return wrap(err, "membership")
		}
		return db.auditTx(ctx, tx, "member.left", "team "+t.Slug, fmt.Sprintf("user %d role %s", a.UserID, m.Role), &t.ID)
	})
}

// SetTeamMemberRole changes a member's role. EUNAUTHORIZED when nobody is signed
// in, ENOTFOUND for an unknown team or a user who is not a member, EFORBIDDEN for
// non-owners, EINVALID (field role), ECONFLICT when it would leave no owner.
func (db *DB) SetTeamMemberRole(ctx context.Context, slug string, userID int64, role string) error {
	if err := validRole(role); err != nil {
		return err
	}
	return db.tx(ctx, func(tx *gorm.DB) error {
		t, err := teamBySlug(tx, slug, true)
		if err != nil {
			return err
		}
		if _, err := requireTeamRole(ctx, tx, t.ID, true); err != nil {
			return err
		}
		m, err := membershipOf(tx, t.ID, userID)
		if err != nil {
			return err
		}
		if m.Role == role {
			return nil
		}
		if err := keepAnOwner(tx, t, m, "make the last owner of %s a member; make another member an owner first"); err != nil {
			return err
		}
		if err := tx.Model(m).Update("role", role).Error; err != nil {
			return wrap(err, "membership")
		}
		return db.auditTx(ctx, tx, "member.role_changed", "team "+t.Slug, fmt.Sprintf("user %d role %s -> %s", userID, m.Role, role), &t.ID)
	})
}

// keepAnOwner refuses (ECONFLICT, "You cannot " + why) a change that takes m out of
// the owners when m is the team's only owner. Callers hold the team's row lock,
// so two owners cannot demote each other at the same time.
func keepAnOwner(tx *gorm.DB, t *models.Team, m *models.Membership, why string) error {
	if m.Role != models.RoleOwner {
		return nil
	}
	var owners int64
	if err := tx.Model(&models.Membership{}).Where("team_id = ? AND role = ?", t.ID, models.RoleOwner).Count(&owners).Error; err != nil {
		return wrap(err, "owners")
	}
	if owners <= 1 {
		return models.Errorf(models.ECONFLICT, "You cannot "+why+".", t.Name)
	}
	return nil
}

// requireTeamRole returns the context's actor when it may act as a member of the
// team (as an owner when ownerOnly): EUNAUTHORIZED for anonymous callers,
// EFORBIDDEN otherwise; admins and the system always pass. It runs on the given
// query handle, so it also works inside a transaction.
func requireTeamRole(ctx context.Context, q *gorm.DB, teamID int64, ownerOnly bool) (models.Actor, error) {
	a, err := models.RequireUser(ctx)
	if err != nil || a.Privileged() {
		return a, err
	}
	who := "members"
	if ownerOnly {
		who = "owners"
	}
	m, err := membershipOf(q, teamID, a.UserID)
	switch {
	case models.ErrorCode(err) == models.ENOTFOUND:
		return a, models.Errorf(models.EFORBIDDEN, "Only %s of this team may do this.", who)
	case err != nil:
		return a, err
	case ownerOnly && m.Role != models.RoleOwner:
		return a, models.Errorf(models.EFORBIDDEN, "Only owners of this team may do this.")
	}
	return a, nil
}

func teamBySlug(q *gorm.DB, slug string, lock bool) (*models.Team, error) {
	var t models.Team
	if lock {
		q = q.Clauses(clause.Locking{Strength: "UPDATE"})
	}
	if err := q.Where("slug = ?", slug).First(&t).Error; err != nil {
		return nil, wrap(err, "team")
	}
	return &t, nil
}

func teamByID(q *gorm.DB, id int64, lock bool) (*models.Team, error) {
	var t models.Team
	if lock {
		q = q.Clauses(clause.Locking{Strength: "UPDATE"})
	}
	if err := q.Where("id = ?", id).First(&t).Error; err != nil {
		return nil, wrap(err, "team")
	}
	return &t, nil
}

func membershipOf(q *gorm.DB, teamID, userID int64) (*models.Membership, error) {
	var m models.Membership
	if err := q.Where("team_id = ? AND user_id = ?", teamID, userID).First(&m).Error; err != nil {
		return nil, wrap(err, "membership")
	}
	return &m, nil
}

func validRole(role string) error {
	if role != models.RoleOwner && role != models.RoleMember {
		return models.FieldError("role", "role must be %q or %q, not %q", models.RoleOwner, models.RoleMember, role)
	}
	return nil
}
