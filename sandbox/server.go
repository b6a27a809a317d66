// Package sandbox is Proctor's bundled demo benchmark: three small websites (a
// shop, a forum and a data portal) served by Proctor itself, and an embedded
// benchmark file whose tasks run on them.
//
// Every URL lives under /sandbox/{ns}/ (or the Server's Options.PathPrefix),
// where {ns} is a namespace: the runner gives each episode its own (the site
// URLs carry the token {episode}), and each namespace has its own copy of the
// sites' state, created from a fixed seed on its first request and dropped
// when it has been idle for Options.IdleTTL. So episodes run in parallel
// without resets and without seeing each other.
package sandbox

import (
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// Slug is the sandbox benchmark's slug.
const Slug = "sandbox"

// PathPrefix is where Proctor mounts the sandbox, and a Server's default
// Options.PathPrefix; the handler expects full paths.
const PathPrefix = "/sandbox/"

// EpisodeToken is the token in configured site URLs that the runner replaces by
// the attempt's namespace.
const EpisodeToken = "{episode}"

// Defaults of Options.
const (
	DefaultIdleTTL       = 30 * time.Minute
	DefaultMaxNamespaces = 1000
)

// maxFormBytes caps a form submission.
const maxFormBytes = 64 << 10

//go:embed benchmark.jsonl
var benchmarkFile []byte

//go:embed style.css
var styleSheet string

// Benchmark returns the sandbox benchmark in Proctor's JSON Lines format
// (docs/benchmark-format.md); its sites are shop, forum and data.
func Benchmark() []byte {
	return append([]byte(nil), benchmarkFile...)
}

// SiteURLs returns the configured URL of each sandbox site for a Proctor
// reachable at baseURL (such as http://127.0.0.1:8080), with the {episode}
// token the runner replaces by a namespace per attempt.
func SiteURLs(baseURL string) map[string]string {
	base := strings.TrimRight(baseURL, "/") + PathPrefix + EpisodeToken
	return map[string]string{
		"shop":  base + "/shop",
		"forum": base + "/forum",
		"data":  base + "/data",
	}
}

// Options configure a Server.
type Options struct {
	// IdleTTL is how long a namespace's state is kept without requests
	// (DefaultIdleTTL when zero).
	IdleTTL time.Duration
	// MaxNamespaces caps how many namespaces are kept; the least recently used is
	// dropped to make room (DefaultMaxNamespaces when zero).
	MaxNamespaces int
	// Now is the clock (time.Now when nil); tests inject their own.
	Now func() time.Time
	// PathPrefix is where the server is mounted, such as "/rebuilds/copy/"
	// (PathPrefix when empty): its routes, the links and redirects of its
	// pages and its namespaces all follow it. It is one or more path segments
	// of lower-case letters, digits, hyphens and underscores, with a leading
	// and a trailing slash; New panics on anything else, since a prefix is
	// fixed in the program rather than read from input.
	PathPrefix string
}

// Server serves the sandbox sites. It is an http.Handler for paths under its
// path prefix (/sandbox/ by default) and is safe for concurrent use.
type Server struct {
	prefix    string
	look      variant
	styles    string // the stylesheet inlined in every page, hashed in csp
	idleTTL   time.Duration
	maxSpaces int
	now       func() time.Time
	mux       *http.ServeMux
	pages     *pages
	datasets  []*dataset
	csp       string

	mu        sync.Mutex
	spaces    map[string]*space
	nextSweep time.Time
}

// space is one namespace's state; mu guards everything in it.
type space struct {
	mu       sync.Mutex
	lastSeen time.Time // guarded by Server.mu
	shop     *shopState
	forum    *forumState
	flash    string // a one-time message for the next page, set after a POST
}

// variant makes a Server look or behave differently from the sandbox's own
// sites. Only the deliberately broken sample candidate of the hidden-tests
// benchmark uses it (rebuilds.go); the zero value is the sandbox itself.
type variant struct {
	// extraCSS is appended to the stylesheet, and so to its CSP hash.
	extraCSS string
	// hiddenNav are ids of navigation links left out of every page.
	hiddenNav []string
	// missingRoutes are routes answered with the 404 page, written as
	// registered without the namespace: "POST /shop/checkout".
	missingRoutes []string
}

// New returns a sandbox server. It starts no goroutine: idle namespaces are
// dropped while requests are served. It panics on an invalid
// Options.PathPrefix.
func New(opts Options) *Server {
	return newServer(opts, variant{})
}

// newServer returns a server whose pages follow look.
func newServer(opts Options, look variant) *Server {
	prefix := opts.PathPrefix
	if prefix == "" {
		prefix = PathPrefix
	}
	if !validPathPrefix(prefix) {
		panic(fmt.Sprintf("sandbox: invalid path prefix %q: want slash-separated segments of [a-z0-9_-] with a leading and a trailing slash", prefix))
	}
	s := &Server{
		prefix:    prefix,
		look:      look,
		styles:    styleSheet + look.extraCSS,
		idleTTL:   opts.IdleTTL,
		maxSpaces: opts.MaxNamespaces,
		now:       opts.Now,
		spaces:    map[string]*space{},
		pages:     parsePages(),
		datasets:  seedDatasets(),
	}
	if s.idleTTL <= 0 {
		s.idleTTL = DefaultIdleTTL
	}
	if s.maxSpaces <= 0 {
		s.maxSpaces = DefaultMaxNamespaces
	}
	if s.now == nil {
		s.now = time.Now
	}
	sum := sha256.Sum256([]byte(s.styles))
	s.csp = "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) +
		"'; img-src data:; form-action 'self'; base-uri 'none'; frame-ancestors 'self'"
	s.routes()
	return s
}

// Close drops every namespace's state. The server keeps serving (namespaces are
// recreated from the seed on demand); call it on shutdown to release memory early.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.spaces = map[string]*space{}
	return nil
}

// ServeHTTP serves {prefix}{ns}/…; any other path, or a namespace that is not
// 1–40 lower-case letters, digits and hyphens, is 404.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", s.csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	rest, ok := strings.CutPrefix(r.URL.Path, s.prefix)
	ns, _, _ := strings.Cut(rest, "/")
	if !ok || !ValidNamespace(ns) {
		s.notFound(w, r)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// validPathPrefix reports whether prefix is "/", then one or more segments
// of [a-z0-9_-] each followed by "/": safe inside a ServeMux pattern and a URL.
func validPathPrefix(prefix string) bool {
	inner, ok := strings.CutPrefix(prefix, "/")
	if !ok || !strings.HasSuffix(inner, "/") {
		return false
	}
	for _, seg := range strings.Split(strings.TrimSuffix(inner, "/"), "/") {
		if seg == "" {
			return false
		}
		for i := 0; i < len(seg); i++ {
			c := seg[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// ValidNamespace reports whether ns matches ^[a-z0-9-]{1,40}$.
func ValidNamespace(ns string) bool {
	if len(ns) == 0 || len(ns) > 40 {
		return false
	}
	for i := 0; i < len(ns); i++ {
		c := ns[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// space returns the namespace's state, creating it from the seed on first use,
// and drops namespaces idle for longer than the TTL.
func (s *Server) space(ns string) *space {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !now.Before(s.nextSweep) {
		s.sweepLocked(now)
		s.nextSweep = now.Add(min(s.idleTTL/4, time.Minute))
	}
	sp, ok := s.spaces[ns]
	if !ok {
		if len(s.spaces) >= s.maxSpaces {
			s.evictOldestLocked()
		}
		sp = &space{shop: seedShop(), forum: seedForum()}
		s.spaces[ns] = sp
	}
	sp.lastSeen = now
	return sp
}

func (s *Server) sweepLocked(now time.Time) {
	for ns, sp := range s.spaces {
		if now.Sub(sp.lastSeen) > s.idleTTL {
			delete(s.spaces, ns)
		}
	}
}

func (s *Server) evictOldestLocked() {
	oldest := ""
	var at time.Time
	for ns, sp := range s.spaces {
		if oldest == "" || sp.lastSeen.Before(at) {
			oldest, at = ns, sp.lastSeen
		}
	}
	delete(s.spaces, oldest)
}

// namespaces reports how many namespaces hold state (for tests).
func (s *Server) namespaces() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.spaces)
}

// routes registers every page. Paths are full: the web server mounts the handler
// at its prefix without stripping it.
func (s *Server) routes() {
	m := &routeTable{mux: http.NewServeMux(), prefix: s.prefix + "{ns}", missing: s.look.missingRoutes, notFound: s.notFound}
	m.handle("GET", "", s.index)
	m.handle("GET", "/{$}", s.index)

	m.handle("GET", "/shop", s.shopProducts)
	m.handle("GET", "/shop/{$}", s.shopProducts)
	m.handle("GET", "/shop/products", s.shopProducts)
	m.handle("GET", "/shop/products/{id}", s.shopProduct)
	m.handle("POST", "/shop/products/{id}/reviews", s.shopAddReview)
	m.handle("GET", "/shop/cart", s.shopCart)
	m.handle("POST", "/shop/cart/add", s.shopCartAdd)
	m.handle("POST", "/shop/cart/remove", s.shopCartRemove)
	m.handle("POST", "/shop/checkout", s.shopCheckout)
	m.handle("GET", "/shop/orders", s.shopOrders)
	m.handle("GET", "/shop/orders/{id}", s.shopOrder)
	m.handle("GET", "/shop/admin", s.shopAdmin)
	m.handle("POST", "/shop/admin/products/{id}", s.shopAdminUpdate)

	m.handle("GET", "/forum", s.forumPosts)
	m.handle("GET", "/forum/{$}", s.forumPosts)
	m.handle("GET", "/forum/posts/{id}", s.forumPost)
	m.handle("GET", "/forum/new", s.forumNew)
	m.handle("POST", "/forum/posts", s.forumCreate)
	m.handle("POST", "/forum/posts/{id}/comments", s.forumComment)
	m.handle("POST", "/forum/posts/{id}/vote", s.forumVote)
	m.handle("GET", "/forum/users", s.forumUsers)
	m.handle("GET", "/forum/users/{name}", s.forumUser)

	m.handle("GET", "/data", s.dataIndex)
	m.handle("GET", "/data/{$}", s.dataIndex)
	m.handle("GET", "/data/datasets/{slug}", s.dataDataset)
	m.handle("GET", "/data/datasets/{slug}/metadata", s.dataMetadata)
	m.handle("GET", "/data/datasets/{slug}/download.csv", s.dataCSV)

	m.mux.HandleFunc("/", s.notFound)
	s.mux = m.mux
}

// routeTable registers a server's routes under its prefix, answering the
// variant's missing routes with the 404 page.
type routeTable struct {
	mux      *http.ServeMux
	prefix   string // "/sandbox/{ns}"
	missing  []string
	notFound http.HandlerFunc
}

// handle registers a route; path is below the namespace ("/shop/cart", or ""
// for the namespace's index).
func (t *routeTable) handle(method, path string, h http.HandlerFunc) {
	if slices.Contains(t.missing, method+" "+path) {
		h = t.notFound
	}
	t.mux.HandleFunc(method+" "+t.prefix+path, h)
}

// index lists the three sites of a namespace.
func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	ns := r.PathValue("ns")
	v := s.view(r, siteNone, "Proctor sandbox")
	v.Data = map[string]string{
		"Shop":  s.sitePath(ns, siteShop),
		"Forum": s.sitePath(ns, siteForum),
		"Data":  s.sitePath(ns, siteData),
	}
	s.render(w, http.StatusOK, "index", v)
}

// notFound answers 404 with a small page.
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	s.fail(w, r, http.StatusNotFound, "There is no page at this address.")
}
