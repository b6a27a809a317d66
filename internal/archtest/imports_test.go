// Package archtest checks the project's layering: which packages may import
// which. docs/architecture.md describes the layers; this test is their
// enforcement, read from `go list` so that it sees exactly what the build
// sees (non-test imports only).
package archtest

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"path"
	"slices"
	"sort"
	"strings"
	"testing"
)

// module is the project's module path.
const module = "proctor"

// layerRule says what a package may import from the project. A package is
// matched by its path relative to the module ("storage", "runner/episode");
// a pattern ending in "/..." matches the folder and everything under it.
type layerRule struct {
	pkg string
	// only, when set, lists every project package the package may import;
	// anything else is a violation.
	only []string
	// never lists project packages it may not import (used when only is nil).
	never []string
	why   string
}

// layerRules are the import rules of docs/architecture.md.
var layerRules = []layerRule{
	{pkg: "models", only: []string{}, why: "models is the domain's vocabulary and imports nothing of the project"},
	{pkg: "storage", only: []string{"models", "migrations"}, why: "storage holds queries and transactions only"},
	{pkg: "web", only: []string{"models"}, why: "templates render models; numbers are computed before they reach them"},
	{pkg: "api", only: []string{"models"}, why: "wire types are plain shapes that the server and its clients share"},
	{pkg: "internal/apiclient", only: []string{"api", "models"}, why: "the API's client knows the wire types, nothing of the server"},
	{pkg: "config", never: []string{"storage/...", "handlers", "runner/...", "service/...", "web"}, why: "configuration is read before anything is opened"},
	{pkg: "handlers", never: []string{"storage", "runner/...", "migrations"}, why: "handlers call the application services"},
	{pkg: "runner/...", never: []string{"storage", "migrations", "handlers", "web"}, why: "the runner calls the application services"},
	{pkg: "service/...", never: []string{"handlers", "web", "runner/...", "cmd/..."}, why: "services sit below the pages and the runner"},
}

// knownViolations are imports that break a rule today and are being moved;
// each must still exist (a fixed one is removed from this list), so the list
// only shrinks.
var knownViolations = map[string]bool{}

// listedPackage is the part of `go list -json` the test reads.
type listedPackage struct {
	ImportPath string
	Imports    []string
}

func TestImports_FollowTheLayers(t *testing.T) {
	pkgs := listPackages(t)
	found := map[string]bool{}
	for _, p := range pkgs {
		rel, ok := relative(p.ImportPath)
		if !ok {
			continue
		}
		for _, imp := range p.Imports {
			dep, ok := relative(imp)
			if !ok {
				continue
			}
			for _, r := range layerRules {
				if !matches(r.pkg, rel) || r.allows(dep) {
					continue
				}
				edge := rel + " -> " + dep
				found[edge] = true
				if !knownViolations[edge] {
					t.Errorf("%s imports %s: %s (see docs/architecture.md)", rel, dep, r.why)
				}
			}
		}
	}
	var stale []string
	for edge := range knownViolations {
		if !found[edge] {
			stale = append(stale, edge)
		}
	}
	sort.Strings(stale)
	for _, edge := range stale {
		t.Errorf("%q no longer breaks a rule: remove it from knownViolations", edge)
	}
}

func TestLayerRules_Match(t *testing.T) {
	cases := []struct {
		pattern, pkg string
		want         bool
	}{
		{"storage", "storage", true},
		{"storage", "storage/artifact", false},
		{"runner/...", "runner", true},
		{"runner/...", "runner/episode", true},
		{"runner/...", "runnerx", false},
	}
	for _, c := range cases {
		if got := matches(c.pattern, c.pkg); got != c.want {
			t.Errorf("matches(%q, %q) = %v, want %v", c.pattern, c.pkg, got, c.want)
		}
	}
	r := layerRule{only: []string{"models"}}
	if !r.allows("models") || r.allows("stats") {
		t.Error("only-rule allows the wrong packages")
	}
	r = layerRule{never: []string{"storage"}}
	if r.allows("storage") || !r.allows("storage/artifact") {
		t.Error("never-rule refuses the wrong packages")
	}
}

func (r layerRule) allows(dep string) bool {
	if r.only != nil {
		return slices.ContainsFunc(r.only, func(p string) bool { return matches(p, dep) })
	}
	return !slices.ContainsFunc(r.never, func(p string) bool { return matches(p, dep) })
}

// matches reports whether pkg (module-relative) matches pattern.
func matches(pattern, pkg string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	return pkg == pattern
}

// relative returns an import path relative to the module, and whether it is
// the project's.
func relative(importPath string) (string, bool) {
	if importPath == module {
		return ".", true
	}
	rel, ok := strings.CutPrefix(importPath, module+"/")
	return path.Clean(rel), ok
}

func listPackages(t *testing.T) []listedPackage {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", module+"/...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var pkgs []listedPackage
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("reading go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages; expected the whole project", len(pkgs))
	}
	return pkgs
}
