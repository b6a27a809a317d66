package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// actorReaders are the only storage functions that may read the caller from
// the context (storage/actor.go says why): the job queue's guard and the
// record of who made a change. Everything else about the caller is decided
// by the services and passed in.
var actorReaders = map[string]bool{"requireQueue": true, "actorOfRecord": true}

// knownActorReads are storage functions that still read the actor and are
// being moved; each must still do so, so the list only shrinks.
var knownActorReads = map[string]bool{}

func TestStorage_ReadsTheActorInOnePlace(t *testing.T) {
	found := actorReads(t, "../../storage")
	if len(found) == 0 && len(knownActorReads) == 0 {
		// Sanity: the scan must see the two permitted readers, or it reads nothing.
		t.Fatal("no storage function reads the actor: the scan is broken")
	}
	seen := map[string]bool{}
	for _, r := range found {
		seen[r.fn] = true
		if !actorReaders[r.fn] && !knownActorReads[r.fn] {
			t.Errorf("%s: storage function %s reads the caller (%s); the service decides and passes a scope or value (docs/architecture.md)", r.pos, r.fn, r.call)
		}
	}
	for fn := range actorReaders {
		if !seen[fn] {
			t.Errorf("storage function %s no longer reads the actor: remove it from actorReaders", fn)
		}
	}
	var stale []string
	for fn := range knownActorReads {
		if !seen[fn] {
			stale = append(stale, fn)
		}
	}
	sort.Strings(stale)
	for _, fn := range stale {
		t.Errorf("%s no longer reads the actor: remove it from knownActorReads", fn)
	}
}

func TestActorReads_FindsEachKindOfRead(t *testing.T) {
	dir := t.TempDir()
	src := `package storage

import "proctor/models"

func a(ctx context.Context) bool { return models.ActorFrom(ctx).System }
func b(ctx context.Context) error { _, err := models.RequireUser(ctx); return err }
func c(ctx context.Context) error { _, err := models.RequireAdmin(ctx); return err }
func d(ctx context.Context) error { f := func() bool { return models.ActorFrom(ctx).SignedIn() }; _ = f; return nil }
func e(x models.Actor) bool { return x.Privileged() }
`
	writeFile(t, filepath.Join(dir, "x.go"), src)
	writeFile(t, filepath.Join(dir, "x_test.go"), "package storage\n\nfunc f(ctx context.Context) { models.ActorFrom(ctx) }\n")
	var got []string
	for _, r := range actorReads(t, dir) {
		got = append(got, r.fn+":"+r.call)
	}
	want := []string{"a:models.ActorFrom", "b:models.RequireUser", "c:models.RequireAdmin", "d:models.ActorFrom"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("actorReads = %v, want %v", got, want)
	}
}

// actorRead is one read of the context's actor in a function.
type actorRead struct {
	fn, call string
	pos      token.Position
}

// actorReads finds the calls of models.ActorFrom and models.Require* in the
// non-test Go files of dir, by enclosing top-level function.
func actorReads(t *testing.T, dir string) []actorRead {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	fset := token.NewFileSet()
	var out []actorRead
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				pkg, ok := sel.X.(*ast.Ident)
				if !ok || pkg.Name != "models" {
					return true
				}
				if sel.Sel.Name == "ActorFrom" || strings.HasPrefix(sel.Sel.Name, "Require") {
					out = append(out, actorRead{fn: fd.Name.Name, call: "models." + sel.Sel.Name, pos: fset.Position(call.Pos())})
				}
				return true
			})
		}
	}
	return out
}

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
