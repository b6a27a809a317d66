package config

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"proctor/migrations"
)

// DatabaseLocation is a parsed PROCTOR_DATABASE_URL. Its fields are those of
// storage.DatabaseLocation, which storage.Open takes, so that main converts one
// into the other without config importing storage.
type DatabaseLocation struct {
	Dialect string // migrations.SQLite or migrations.Postgres
	Path    string // SQLite file path
	DSN     string // PostgreSQL connection string
}

// parseDatabaseURL reads sqlite:///absolute/path.db, sqlite:relative/path.db
// and postgres:// (or postgresql://) URLs. Its errors say only what is wrong;
// the caller names the variable and the (redacted) value.
func parseDatabaseURL(raw string) (DatabaseLocation, error) {
	switch {
	case strings.HasPrefix(raw, "sqlite://"):
		u, err := url.Parse(raw)
		if err != nil {
			return DatabaseLocation{}, fmt.Errorf("not a valid URL: %v", err)
		}
		if u.Host != "" {
			return DatabaseLocation{}, errors.New("an absolute path takes three slashes, as in sqlite:///var/lib/proctor.db")
		}
		if u.Path == "" || u.Path == "/" {
			return DatabaseLocation{}, errors.New("it names no database file")
		}
		return DatabaseLocation{Dialect: migrations.SQLite, Path: u.Path}, nil
	case strings.HasPrefix(raw, "sqlite:"):
		p := strings.TrimPrefix(raw, "sqlite:")
		if p == "" {
			return DatabaseLocation{}, errors.New("it names no database file")
		}
		if strings.ContainsAny(p, "?#") {
			return DatabaseLocation{}, errors.New("a relative path takes no query or fragment")
		}
		return DatabaseLocation{Dialect: migrations.SQLite, Path: filepath.Clean(p)}, nil
	case strings.HasPrefix(raw, "postgres://"), strings.HasPrefix(raw, "postgresql://"):
		// pgx redacts the password in its own errors.
		if _, err := pgxpool.ParseConfig(raw); err != nil {
			return DatabaseLocation{}, fmt.Errorf("not a valid PostgreSQL URL: %v", err)
		}
		return DatabaseLocation{Dialect: migrations.Postgres, DSN: raw}, nil
	}
	return DatabaseLocation{}, errMismatch
}

// Artifact store kinds.
const (
	ArtifactsLocal = "local"
	ArtifactsS3    = "s3"
)

// ArtifactsLocation is a parsed PROCTOR_ARTIFACTS_URL.
type ArtifactsLocation struct {
	Kind   string // ArtifactsLocal or ArtifactsS3
	Dir    string // local folder
	Bucket string // S3 bucket
	Prefix string // S3 key prefix, without a trailing slash
	// MinFreeBytes is the free space below which a local store reports
	// itself not ready on /readyz (0: never).
	MinFreeBytes int64
}

// parseArtifactsURL reads file:///absolute/dir, file:relative/dir and
// s3://BUCKET/PREFIX; MinFreeBytes is left zero.
func parseArtifactsURL(raw string) (ArtifactsLocation, error) {
	switch {
	case strings.HasPrefix(raw, "file://"):
		u, err := url.Parse(raw)
		if err != nil || u.Host != "" || u.Path == "" {
			return ArtifactsLocation{}, errors.New("an absolute folder takes three slashes, as in file:///var/lib/proctor")
		}
		return ArtifactsLocation{Kind: ArtifactsLocal, Dir: u.Path}, nil
	case strings.HasPrefix(raw, "file:"):
		p := strings.TrimPrefix(raw, "file:")
		if p == "" {
			return ArtifactsLocation{}, errors.New("it names no folder")
		}
		return ArtifactsLocation{Kind: ArtifactsLocal, Dir: filepath.Clean(p)}, nil
	case strings.HasPrefix(raw, "s3://"):
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" {
			return ArtifactsLocation{}, errors.New("it names no bucket")
		}
		if !validBucket(u.Host) {
			return ArtifactsLocation{}, fmt.Errorf("%q is not a valid bucket name (3–63 lower-case letters, digits, dots, hyphens)", u.Host)
		}
		prefix := strings.Trim(u.Path, "/")
		if strings.Contains(prefix, "//") || strings.Contains("/"+prefix+"/", "/../") {
			return ArtifactsLocation{}, fmt.Errorf("the prefix %q is not a clean path", prefix)
		}
		return ArtifactsLocation{Kind: ArtifactsS3, Bucket: u.Host, Prefix: prefix}, nil
	}
	return ArtifactsLocation{}, errMismatch
}

func validBucket(b string) bool {
	if len(b) < 3 || len(b) > 63 {
		return false
	}
	for _, r := range b {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.') {
			return false
		}
	}
	return b[0] != '-' && b[0] != '.' && b[len(b)-1] != '-' && b[len(b)-1] != '.'
}

// redactURL hides a password in a URL so that it never reaches an error
// message or a log. A URL that does not parse loses everything between its
// scheme and its last @, as its password cannot be told apart.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	switch {
	case err == nil && u.User == nil:
		return raw
	case err == nil:
		return u.Redacted()
	}
	scheme, rest, ok := strings.Cut(raw, "://")
	at := strings.LastIndex(rest, "@")
	if !ok || at < 0 {
		return raw
	}
	return scheme + "://xxxxx" + rest[at:]
}
