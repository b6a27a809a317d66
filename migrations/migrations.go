// Package migrations embeds Proctor's versioned SQL migrations, one tree per
// database dialect. Files are named NNNN_description.sql and applied in order.
package migrations

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

//go:embed sqlite/*.sql postgres/*.sql
var files embed.FS

// Migration is one numbered SQL file.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Dialects with a migration tree.
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
)

// For returns the migrations of a dialect in version order. A malformed file name
// or a duplicated version is an error, so a bad tree never half-applies.
func For(dialect string) ([]Migration, error) {
	if dialect != SQLite && dialect != Postgres {
		return nil, fmt.Errorf("migrations: unknown dialect %q", dialect)
	}
	entries, err := fs.ReadDir(files, dialect)
	if err != nil {
		return nil, fmt.Errorf("migrations: read %s: %w", dialect, err)
	}
	seen := map[int]string{}
	var out []Migration
	for _, e := range entries {
		name := e.Name()
		num, rest, ok := strings.Cut(strings.TrimSuffix(name, ".sql"), "_")
		version, err := strconv.Atoi(num)
		if !ok || err != nil || version <= 0 {
			return nil, fmt.Errorf("migrations: %s/%s: name must be NNNN_description.sql", dialect, name)
		}
		if prev, dup := seen[version]; dup {
			return nil, fmt.Errorf("migrations: %s: version %d used by %s and %s", dialect, version, prev, name)
		}
		seen[version] = name
		body, err := fs.ReadFile(files, path.Join(dialect, name))
		if err != nil {
			return nil, fmt.Errorf("migrations: read %s/%s: %w", dialect, name, err)
		}
		out = append(out, Migration{Version: version, Name: rest, SQL: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}
