package models

import (
	"net/mail"
	"strings"
	"time"
)

// User is a person with an account. Admins manage benchmarks, sites and the queue.
type User struct {
	ID           int64
	Email        string
	Name         string
	PasswordHash string
	IsAdmin      bool
	// MustChangePassword is set while the account's password is a one-time
	// one: every page leads to the password form until it is replaced.
	MustChangePassword bool
	CreatedAt          time.Time
	UpdatedAt          time.Time
}

// Session is a server-side login session; the cookie holds a random token whose
// SHA-256 is the ID, so a leaked database does not leak live sessions.
type Session struct {
	ID         string
	UserID     int64
	CSRFToken  string
	UserAgent  string
	IP         string
	CreatedAt  time.Time
	LastSeenAt time.Time
	ExpiresAt  time.Time
}

// Team owns agents and runs. Members have the role owner or member.
type Team struct {
	ID          int64
	Slug        string
	Name        string
	Description string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Team roles.
const (
	RoleOwner  = "owner"
	RoleMember = "member"
)

// Membership links a user to a team with a role.
type Membership struct {
	ID        int64
	TeamID    int64
	UserID    int64
	Role      string
	CreatedAt time.Time

	User *User `gorm:"foreignKey:UserID"`
	Team *Team `gorm:"foreignKey:TeamID"`
}

// TeamInvite is a single-use, expiring invitation link; only the token's hash is stored.
type TeamInvite struct {
	ID        int64
	TeamID    int64
	TokenHash string
	Role      string
	CreatedBy int64
	CreatedAt time.Time
	ExpiresAt time.Time
	UsedAt    *time.Time
	UsedBy    *int64
}

// APIToken is a named personal token for the JSON API; only its hash is stored and
// the plaintext is shown once, at creation.
type APIToken struct {
	ID         int64
	UserID     int64
	Name       string
	Prefix     string // the first characters, shown so users can tell tokens apart
	TokenHash  string
	CreatedAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
}

// Account is what the account page shows: the user, their teams and their tokens.
type Account struct {
	User *User
	// Memberships of the user, each with its Team, by team name.
	Memberships []Membership
	Tokens      []APIToken
}

// AuditEvent records who did what and when, for security-relevant actions.
type AuditEvent struct {
	ID        int64
	UserID    *int64
	TeamID    *int64
	Action    string
	Subject   string
	Details   string
	IP        string
	CreatedAt time.Time
}

// TableName keeps the audit table's name short and explicit.
func (AuditEvent) TableName() string { return "audit_events" }

// ValidSlug reports whether s is a URL-safe identifier: lower-case letters, digits
// and inner hyphens, 1–64 characters.
func ValidSlug(s string) bool {
	if len(s) == 0 || len(s) > 64 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

// Slugify turns a display name into a slug candidate.
func Slugify(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(strings.TrimSpace(name)) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
			dash = false
		case b.Len() > 0 && !dash:
			b.WriteByte('-')
			dash = true
		}
	}
	s := strings.TrimRight(b.String(), "-")
	if len(s) > 64 {
		s = strings.TrimRight(s[:64], "-")
	}
	return s
}

// CanonicalEmail is the form emails are stored and looked up in: trimmed and
// lower-cased. It does not validate; NormalizeEmail does.
func CanonicalEmail(email string) string {
	return strings.ToLower(strings.TrimSpace(email))
}

// NormalizeEmail validates an address and returns it in canonical form; EINVALID
// otherwise.
func NormalizeEmail(email string) (string, error) {
	email = CanonicalEmail(email)
	addr, err := mail.ParseAddress(email)
	if err != nil || addr.Address != email || len(email) > 254 {
		return "", FieldError("email", "%q is not a valid email address", email)
	}
	return email, nil
}

// Password length bounds, in bytes. bcrypt reads at most 72 bytes, so longer
// passwords are refused rather than silently truncated.
const (
	MinPasswordLength = 10
	MaxPasswordLength = 72
)

// ValidatePassword enforces the password policy; EINVALID otherwise.
func ValidatePassword(pw string) error {
	switch {
	case len(pw) < MinPasswordLength:
		return FieldError("password", "password must be at least %d characters", MinPasswordLength)
	case len(pw) > MaxPasswordLength:
		return FieldError("password", "password must be at most %d bytes", MaxPasswordLength)
	}
	return nil
}
