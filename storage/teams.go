package storage

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"proctor/models"
)

// TeamBySlug loads a team by its slug; ENOTFOUND when there is none.
func (db *DB) TeamBySlug(ctx context.Context, slug string) (*models.Team, error) {
	return teamBySlug(db.q(ctx), slug, false)
}

// Membership returns a user's membership of a team; ENOTFOUND when the user
// is not a member.
func (db *DB) Membership(ctx context.Context, teamID, userID int64) (*models.Membership, error) {
	return membershipOf(db.q(ctx), teamID, userID)
}

// ListTeams returns one page (from 1) of every team with its member count, by
// name, and the total number of teams.
func (db *DB) ListTeams(ctx context.Context, page, perPage int) ([]models.TeamSummary, int, error) {
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

// MemberTeams returns the teams a user belongs to, by name.
func (db *DB) MemberTeams(ctx context.Context, userID int64) ([]models.Team, error) {
	out := []models.Team{}
	err := db.q(ctx).Model(&models.Team{}).
		Where("teams.id IN (SELECT team_id FROM memberships WHERE user_id = ?)", userID).
		Order("LOWER(teams.name), teams.id").Find(&out).Error
	return out, wrap(err, "teams")
}

// UserMemberships returns a user's memberships, each with its Team, by team
// name.
func (db *DB) UserMemberships(ctx context.Context, userID int64) ([]models.Membership, error) {
	out := []models.Membership{}
	err := db.q(ctx).Preload("Team").Joins("JOIN teams ON teams.id = memberships.team_id").
		Where("memberships.user_id = ?", userID).Order("LOWER(teams.name), teams.id").Find(&out).Error
	return out, wrap(err, "memberships")
}

// InsertTeam creates t with ownerID as its first owner, in one transaction
// with its audit event. ECONFLICT when the slug is taken.
func (db *DB) InsertTeam(ctx context.Context, t *models.Team, ownerID int64) error {
	now := db.now()
	t.CreatedAt, t.UpdatedAt = now, now
	return db.tx(ctx, func(tx *gorm.DB) error {
		if err := tx.Create(t).Error; err != nil {
			return wrap(err, "team")
		}
		m := &models.Membership{TeamID: t.ID, UserID: ownerID, Role: models.RoleOwner, CreatedAt: now}
		if err := tx.Create(m).Error; err != nil {
			return wrap(err, "membership")
		}
		return db.auditTx(ctx, tx, "team.created", "team "+t.Slug, "", &t.ID)
	})
}

// TeamMembers returns a team's memberships with their User, owners first,
// then by joining date.
func (db *DB) TeamMembers(ctx context.Context, teamID int64) ([]models.Membership, error) {
	var out []models.Membership
	err := db.q(ctx).Preload("User").Where("team_id = ?", teamID).
		Order("CASE WHEN role = 'owner' THEN 0 ELSE 1 END, created_at, id").Find(&out).Error
	return out, wrap(err, "members")
}

// InsertTeamInvite stores an invitation to team, valid until ttl from now,
// with its audit event.
func (db *DB) InsertTeamInvite(ctx context.Context, team *models.Team, inv *models.TeamInvite, ttl time.Duration) error {
	now := db.now()
	inv.TeamID, inv.CreatedAt, inv.ExpiresAt = team.ID, now, now.Add(ttl)
	return db.tx(ctx, func(tx *gorm.DB) error {
		if err := tx.Create(inv).Error; err != nil {
			return wrap(err, "invitation")
		}
		return db.auditTx(ctx, tx, "invite.created", "team "+team.Slug, fmt.Sprintf("invite %d role %s", inv.ID, inv.Role), &team.ID)
	})
}

// InviteState is an invitation as its acceptance sees it: the invitation and
// its team, whether the user is already a member, and the time now.
type InviteState struct {
	models.InviteDetail
	Member bool
	Now    time.Time
}

// TeamInvite returns the invitation with the token hash and its team, and
// whether userID is already a member; ENOTFOUND for an unknown hash.
func (db *DB) TeamInvite(ctx context.Context, tokenHash string, userID int64) (*InviteState, error) {
	return db.inviteState(db.q(ctx), tokenHash, userID, false)
}

// AcceptTeamInvite makes userID a member of the invitation's team with its
// role and uses the invitation up, in one transaction holding the team's
// row lock. check decides, from the state read inside the transaction,
// whether the user may; when a concurrent acceptance wins the race, check is
// asked again with the state that lost. ENOTFOUND for an unknown hash.
func (db *DB) AcceptTeamInvite(ctx context.Context, tokenHash string, userID int64, check func(*InviteState) error) (*models.Team, error) {
	var team models.Team
	err := db.tx(ctx, func(tx *gorm.DB) error {
		st, err := db.inviteState(tx, tokenHash, userID, true)
		if err != nil {
			return err
		}
		if err := check(st); err != nil {
			return err
		}
		// The guard on used_at makes the invitation single-use even if two
		// acceptances race past the check above.
		res := tx.Model(&models.TeamInvite{}).Where("id = ? AND used_at IS NULL", st.Invite.ID).
			Updates(map[string]any{"used_at": st.Now, "used_by": userID})
		if res.Error != nil {
			return wrap(res.Error, "invitation")
		}
		if res.RowsAffected != 1 {
			st.Invite.UsedAt = &st.Now
			return check(st)
		}
		m := &models.Membership{TeamID: st.Team.ID, UserID: userID, Role: st.Invite.Role, CreatedAt: st.Now}
		if err := tx.Create(m).Error; err != nil {
			if isUniqueViolation(err) {
				st.Member = true
				return check(st)
			}
			return wrap(err, "membership")
		}
		team = st.Team
		return db.auditTx(ctx, tx, "invite.accepted", "team "+st.Team.Slug, fmt.Sprintf("invite %d user %d role %s", st.Invite.ID, userID, st.Invite.Role), &st.Team.ID)
	})
	if err != nil {
		return nil, err
	}
	return &team, nil
}

// inviteState loads an invitation, its team (locked when lock, inside a
// transaction) and whether userID is a member.
func (db *DB) inviteState(q *gorm.DB, tokenHash string, userID int64, lock bool) (*InviteState, error) {
	st := &InviteState{Now: db.now()}
	if err := q.Where("token_hash = ?", tokenHash).First(&st.Invite).Error; err != nil {
		return nil, wrap(err, "invitation")
	}
	t, err := teamByID(q, st.Invite.TeamID, lock)
	if err != nil {
		return nil, err
	}
	st.Team = *t
	if userID != 0 {
		_, err := membershipOf(q, t.ID, userID)
		switch models.ErrorCode(err) {
		case "":
			st.Member = true
		case models.ENOTFOUND:
		default:
			return nil, err
		}
	}
	return st, nil
}

// MembershipChange is what a change of a team's membership is decided on,
// read inside its transaction under the team's row lock: the team, the
// caller's and the target's memberships (nil when not members) and how many
// owners the team has.
type MembershipChange struct {
	Team   *models.Team
	Caller *models.Membership
	Target *models.Membership
	Owners int64
}

// RemoveMembership deletes userID's membership of the team when check,
// given the state under the team's row lock (callerID's membership
// included), allows it, and records action in the audit log. ENOTFOUND for
// an unknown team. Holding the lock, two owners cannot remove each other at
// the same time.
func (db *DB) RemoveMembership(ctx context.Context, slug string, callerID, userID int64, action string, check func(MembershipChange) error) error {
	return db.changeMembership(ctx, slug, callerID, userID, check, func(tx *gorm.DB, c MembershipChange) error {
		if err := tx.Delete(c.Target).Error; err != nil {
			return wrap(err, "membership")
		}
		return db.auditTx(ctx, tx, action, "team "+c.Team.Slug, fmt.Sprintf("user %d role %s", userID, c.Target.Role), &c.Team.ID)
	})
}

// SetMembershipRole changes userID's role in the team to role when check,
// given the state under the team's row lock, allows it; the same role is no
// change. ENOTFOUND for an unknown team.
func (db *DB) SetMembershipRole(ctx context.Context, slug string, callerID, userID int64, role string, check func(MembershipChange) error) error {
	return db.changeMembership(ctx, slug, callerID, userID, check, func(tx *gorm.DB, c MembershipChange) error {
		if c.Target.Role == role {
			return nil
		}
		if err := tx.Model(c.Target).Update("role", role).Error; err != nil {
			return wrap(err, "membership")
		}
		return db.auditTx(ctx, tx, "member.role_changed", "team "+c.Team.Slug, fmt.Sprintf("user %d role %s -> %s", userID, c.Target.Role, role), &c.Team.ID)
	})
}

func (db *DB) changeMembership(ctx context.Context, slug string, callerID, userID int64, check func(MembershipChange) error, apply func(*gorm.DB, MembershipChange) error) error {
	return db.tx(ctx, func(tx *gorm.DB) error {
		t, err := teamBySlug(tx, slug, true)
		if err != nil {
			return err
		}
		c := MembershipChange{Team: t}
		if c.Caller, err = optionalMembership(tx, t.ID, callerID); err != nil {
			return err
		}
		if c.Target, err = optionalMembership(tx, t.ID, userID); err != nil {
			return err
		}
		if err := tx.Model(&models.Membership{}).Where("team_id = ? AND role = ?", t.ID, models.RoleOwner).Count(&c.Owners).Error; err != nil {
			return wrap(err, "owners")
		}
		if err := check(c); err != nil {
			return err
		}
		return apply(tx, c)
	})
}

// optionalMembership is a user's membership of a team, nil when none (or
// no user).
func optionalMembership(q *gorm.DB, teamID, userID int64) (*models.Membership, error) {
	if userID == 0 {
		return nil, nil
	}
	m, err := membershipOf(q, teamID, userID)
	if models.ErrorCode(err) == models.ENOTFOUND {
		return nil, nil
	}
	return m, err
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
