package handlers_test

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"

	"proctor/docs"
	"proctor/handlers"
	"proctor/internal/evaltest"
	"proctor/static"
)

// routeCoverage records which kinds of caller (anonymous, user, admin) requested
// each route during the package's tests. Test-only state: TestMain reads it after
// every test has run.
type routeCoverage struct {
	mu   sync.Mutex
	seen map[string]map[string]bool // "GET /teams/:slug" -> role -> seen
}

var coverage = &routeCoverage{seen: map[string]map[string]bool{}}

func (rc *routeCoverage) record(pattern, method, role string) {
	if pattern == "" {
		return
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	key := method + " " + pattern
	if rc.seen[key] == nil {
		rc.seen[key] = map[string]bool{}
	}
	rc.seen[key][role] = true
}

// uncovered lists the registered routes some kind of caller never requested.
func (rc *routeCoverage) uncovered(routes []string) []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var missing []string
	for _, r := range routes {
		var lacking []string
		for _, role := range []string{"anonymous", "user", "admin"} {
			if !rc.seen[r][role] {
				lacking = append(lacking, role)
			}
		}
		if len(lacking) > 0 {
			missing = append(missing, fmt.Sprintf("%s (no %s request)", r, strings.Join(lacking, ", ")))
		}
	}
	sort.Strings(missing)
	return missing
}

// TestMain runs the package's tests and then, when the whole package ran, fails
// if any route was not requested by an anonymous caller, a signed-in user and an
// admin: a new route cannot land without its permission tests.
func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if code != 0 || flag.Lookup("test.run").Value.String() != "" {
		os.Exit(code)
	}
	srv, err := handlers.New(handlers.Options{}, handlers.Deps{Evaluators: evaltest.Registry(), Static: static.Files(), Docs: docs.Files(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		fmt.Fprintln(os.Stderr, "route coverage:", err)
		os.Exit(1)
	}
	var routes []string
	for _, r := range srv.Routes() {
		if r.Method == "echo_route_not_found" || strings.HasPrefix(r.Path, "/static/") {
			continue
		}
		routes = append(routes, r.Method+" "+r.Path)
	}
	if missing := coverage.uncovered(routes); len(missing) > 0 {
		fmt.Fprintf(os.Stderr, "route coverage: %d routes lack permission tests for some kind of caller:\n  %s\n", len(missing), strings.Join(missing, "\n  "))
		os.Exit(1)
	}
	fmt.Printf("route coverage: all %d routes requested by anonymous, user and admin callers\n", len(routes))
	os.Exit(code)
}
