package api

import "time"

// Explicit shapes, so that no password hash, token digest or other internal
// field of the domain's users and teams can leak into an answer.

// User is a user as their own account shows them.
type User struct {
	ID        int64     `json:"id"`
	Email     string    `json:"email"`
	Name      string    `json:"name"`
	IsAdmin   bool      `json:"is_admin"`
	CreatedAt time.Time `json:"created_at"`
}

// UserTeam is one of the caller's teams with their role in it.
type UserTeam struct {
	ID   int64  `json:"id"`
	Slug string `json:"slug"`
	Name string `json:"name"`
	Role string `json:"role"`
}

// MeResponse is GET /api/v1/me: the caller with their teams.
type MeResponse struct {
	User
	Teams []UserTeam `json:"teams"`
}

// Token is a personal API token; never its value, which only CreatedToken
// carries.
type Token struct {
	ID         int64      `json:"id"`
	Name       string     `json:"name"`
	Prefix     string     `json:"prefix"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
}

// CreatedToken is POST /api/v1/tokens: the new token with its value.
type CreatedToken struct {
	Token
	// Value is the plaintext (prt_…), present only in the creation response.
	Value string `json:"token"`
}

// TokenList is GET /api/v1/tokens.
type TokenList struct {
	Items []Token `json:"items"`
}

// TokenInput is the body of POST /api/v1/tokens.
type TokenInput struct {
	Name string `json:"name"`
}

// Team is a team.
type Team struct {
	ID          int64     `json:"id"`
	Slug        string    `json:"slug"`
	Name        string    `json:"name"`
	Description string    `json:"description"`
	CreatedAt   time.Time `json:"created_at"`
}

// TeamListItem is a team in GET /api/v1/teams.
type TeamListItem struct {
	Team
	MemberCount int `json:"member_count"`
}

// Member is a member of a team.
type Member struct {
	UserID   int64     `json:"user_id"`
	Name     string    `json:"name"`
	Email    string    `json:"email"`
	Role     string    `json:"role"`
	JoinedAt time.Time `json:"joined_at"`
}

// TeamDetail is GET /api/v1/teams/{slug}.
type TeamDetail struct {
	Team
	// Members is present only for the team's members and administrators.
	Members *[]Member `json:"members,omitempty"`
}

// Invite is a single-use invitation link to a team.
type Invite struct {
	URL       string    `json:"url"`
	Team      string    `json:"team"`
	Role      string    `json:"role"`
	ExpiresAt time.Time `json:"expires_at"`
}

// TeamInput is the body of POST /api/v1/teams; the slug is derived from
// the name when left out.
type TeamInput struct {
	Name        string `json:"name"`
	Slug        string `json:"slug"`
	Description string `json:"description"`
}

// InviteInput is the optional body of POST /api/v1/teams/{slug}/invites;
// the role defaults to member.
type InviteInput struct {
	Role string `json:"role"`
}
