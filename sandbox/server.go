// Package sandbox is Proctor's bundled demo benchmark: three small websites (a
// shop, a forum and a data portal) served by Proctor itself, and an embedded
// benchmark file whose tasks run on them.
//
// Every URL lives under /sandbox/{ns}/, where {ns} is a namespace: the runner
// gives each episode its own (the site URLs carry the token {episode}), and each
// namespace has its own copy of the sites' state, created from a fixed seed on
// its first request and dropped when it has been idle for Options.IdleTTL. So
// episodes run in parallel without resets and without seeing each other.
package sandbox

import (
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Slug is the sandbox benchmark's slug.
const Slug = "sandbox"

// PathPrefix is where the sandbox is mounted; the handler expects full paths.
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
}

// Server serves the sandbox sites. It is an http.Handler for paths under
// /sandbox/ and is safe for concurrent use.
type Server struct {
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

// New returns a sandbox server. It starts no goroutine: idle namespaces are
// dropped while requests are served.
func New(opts Options) *Server {
	s := &Server{
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
	sum := sha256.Sum256([]byte(styleSheet))
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

// ServeHTTP serves /sandbox/{ns}/…; any other path, or a namespace that is not
// 1–40 lower-case letters, digits and hyphens, is 404.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", s.csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	rest, ok := strings.CutPrefix(r.URL.Path, PathPrefix)
	ns, _, _ := strings.Cut(rest, "/")
	if !ok || !ValidNamespace(ns) {
		s.notFound(w, r)
		return
	}
	s.mux.ServeHTTP(w, r)
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
// at /sandbox/ without stripping the prefix.
func (s *Server) routes() {
	m := http.NewServeMux()
	p := "/sandbox/{ns}"
	m.HandleFunc("GET "+p, s.index)
	m.HandleFunc("GET "+p+"/{$}", s.index)

	m.HandleFunc("GET "+p+"/shop", s.shopProducts)
	m.HandleFunc("GET "+p+"/shop/{$}", s.shopProducts)
	m.HandleFunc("GET "+p+"/shop/products", s.shopProducts)
	m.HandleFunc("GET "+p+"/shop/products/{id}", s.shopProduct)
	m.HandleFunc("POST "+p+"/shop/products/{id}/reviews", s.shopAddReview)
	m.HandleFunc("GET "+p+"/shop/cart", s.shopCart)
	m.HandleFunc("POST "+p+"/shop/cart/add", s.shopCartAdd)
	m.HandleFunc("POST "+p+"/shop/cart/remove", s.shopCartRemove)
	m.HandleFunc("POST "+p+"/shop/checkout", s.shopCheckout)
	m.HandleFunc("GET "+p+"/shop/orders", s.shopOrders)
	m.HandleFunc("GET "+p+"/shop/orders/{id}", s.shopOrder)
	m.HandleFunc("GET "+p+"/shop/admin", s.shopAdmin)
	m.HandleFunc("POST "+p+"/shop/admin/products/{id}", s.shopAdminUpdate)

	m.HandleFunc("GET "+p+"/forum", s.forumPosts)
	m.HandleFunc("GET "+p+"/forum/{$}", s.forumPosts)
	m.HandleFunc("GET "+p+"/forum/posts/{id}", s.forumPost)
	m.HandleFunc("GET "+p+"/forum/new", s.forumNew)
	m.HandleFunc("POST "+p+"/forum/posts", s.forumCreate)
	m.HandleFunc("POST "+p+"/forum/posts/{id}/comments", s.forumComment)
	m.HandleFunc("POST "+p+"/forum/posts/{id}/vote", s.forumVote)
	m.HandleFunc("GET "+p+"/forum/users", s.forumUsers)
	m.HandleFunc("GET "+p+"/forum/users/{name}", s.forumUser)

	m.HandleFunc("GET "+p+"/data", s.dataIndex)
	m.HandleFunc("GET "+p+"/data/{$}", s.dataIndex)
	m.HandleFunc("GET "+p+"/data/datasets/{slug}", s.dataDataset)
	m.HandleFunc("GET "+p+"/data/datasets/{slug}/metadata", s.dataMetadata)
	m.HandleFunc("GET "+p+"/data/datasets/{slug}/download.csv", s.dataCSV)

	m.HandleFunc("/", s.notFound)
	s.mux = m
}

// index lists the three sites of a namespace.
func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	ns := r.PathValue("ns")
	v := s.view(r, siteNone, "Proctor sandbox")
	v.Data = map[string]string{
		"Shop":  sitePath(ns, siteShop),
		"Forum": sitePath(ns, siteForum),
		"Data":  sitePath(ns, siteData),
	}
	s.render(w, http.StatusOK, "index", v)
}

// notFound answers 404 with a small page.
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	s.fail(w, r, http.StatusNotFound, "There is no page at this address.")
}
