package sandbox

import (
	"net/http"
	"strings"
	"sync"
	"time"
)

// RebuildsPathPrefix is where Proctor mounts the sample candidates of the
// hidden-tests sample benchmark (Rebuilds): two rebuilds of the sandbox shop
// that hidden tests can be run against without hosting anything else.
const RebuildsPathPrefix = "/rebuilds/"

// The sample candidates, each at RebuildsPathPrefix + name + "/".
const (
	// RebuildCopy is an exact copy of the sandbox shop: it passes every test.
	RebuildCopy = "copy"
	// RebuildBroken is the shop with the defects of RebuildOptions.Broken
	// (AllDefects under Rebuilds).
	RebuildBroken = "broken"
)

// DefaultRestartDowntime is how long a sample candidate answers 503 after its
// restart hook is called, as a real site would while it starts again.
const DefaultRestartDowntime = 300 * time.Millisecond

// rebuildVisitorToken is the placeholder of RebuildCandidate's base URL that
// Proctor's hidden-test executor replaces by a fresh value per visitor
// (runner/hidden.VisitorToken; that package is not imported here, being the
// one that tests these sites).
const rebuildVisitorToken = "{visitor}"

// Defects are the broken rebuild's deliberate faults. Each is switched on
// alone by tests so that the hidden tests it fails can be named per defect.
type Defects struct {
	// WrongImages gives every product card, and the product page's card, a
	// picture that is not the product's: a striped banner on dark colours.
	// The page reads the same, but it does not look like the reference.
	WrongImages bool
	// MissingTab leaves the Orders tab out of the shop's navigation; the
	// orders pages stay reachable by their address.
	MissingTab bool
	// CheckoutNotFound answers the booking route, POST …/shop/checkout, with
	// the 404 page: no order can be placed.
	CheckoutNotFound bool
	// StateLostOnRestart makes the restart hook drop every visitor's state:
	// carts, orders, reviews and prices start again from the seed.
	StateLostOnRestart bool
}

// AllDefects returns the broken rebuild's defects all switched on.
func AllDefects() Defects {
	return Defects{WrongImages: true, MissingTab: true, CheckoutNotFound: true, StateLostOnRestart: true}
}

// wrongImagesCSS draws the wrong pictures: a banner on each product card and
// on the product page's card, and dark colours under them, so that the cards'
// visual checkpoints score far below their threshold while every text,
// link and form stays as the tests read them.
const wrongImagesCSS = `
li.product,div.card:has(> #product-price){background:#1b2a41;color:#f4d35e;border-color:#f4d35e}
li.product a,li.product .muted,div.card:has(> #product-price) .muted{color:#f4d35e}
li.product::before,div.card:has(> #product-price)::before{content:"";display:block;height:96px;margin-bottom:8px;border-radius:6px;background:repeating-linear-gradient(45deg,#d62828 0 12px,#fcbf49 12px 24px)}
`

// variant is how the defects change the shop's server.
func (d Defects) variant() variant {
	var v variant
	if d.WrongImages {
		v.extraCSS = wrongImagesCSS
	}
	if d.MissingTab {
		v.hiddenNav = append(v.hiddenNav, "nav-orders")
	}
	if d.CheckoutNotFound {
		v.missingRoutes = append(v.missingRoutes, "POST /shop/checkout")
	}
	return v
}

// RebuildOptions configure NewRebuilds.
type RebuildOptions struct {
	// Broken are the broken rebuild's defects (none when zero: it is then a
	// second copy).
	Broken Defects
	// RestartDowntime is how long a rebuild is down after a restart
	// (DefaultRestartDowntime when zero).
	RestartDowntime time.Duration
	// Now is the clock of the downtime and of the shops (time.Now when nil);
	// tests inject their own.
	Now func() time.Time
}

// RebuildURLs are the URLs a team would submit for a sample candidate.
type RebuildURLs struct {
	// BaseURL is the shop, with the {visitor} token that gives every test
	// visitor a namespace of its own.
	BaseURL string
	// RestartURL is the restart hook (POST, 204).
	RestartURL string
	// HealthURL answers 200 when the candidate is up and 503 while it restarts.
	HealthURL string
}

// RebuildCandidate returns the URLs of the sample candidate name (RebuildCopy
// or RebuildBroken) served by a Proctor reachable at baseURL.
func RebuildCandidate(baseURL, name string) RebuildURLs {
	root := strings.TrimRight(baseURL, "/") + RebuildsPathPrefix + name + "/"
	return RebuildURLs{BaseURL: root + rebuildVisitorToken + "/shop", RestartURL: root + "restart", HealthURL: root + "health"}
}

// Rebuilds returns the handler of the sample candidates, mounted at
// RebuildsPathPrefix: RebuildCopy and RebuildBroken with AllDefects.
func Rebuilds() http.Handler {
	return NewRebuilds(RebuildOptions{Broken: AllDefects()})
}

// NewRebuilds returns the sample candidates' handler for paths under
// RebuildsPathPrefix. Each candidate is a sandbox server of its own under
// /rebuilds/<name>/, with {ns}/shop as the shop of visitor {ns}, a restart
// hook at POST /rebuilds/<name>/restart and a health URL at GET
// /rebuilds/<name>/health. Any other path is 404.
func NewRebuilds(opts RebuildOptions) http.Handler {
	if opts.RestartDowntime <= 0 {
		opts.RestartDowntime = DefaultRestartDowntime
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	newRebuild := func(name string, d Defects) *rebuild {
		prefix := RebuildsPathPrefix + name + "/"
		return &rebuild{
			prefix:    prefix,
			site:      newServer(Options{Now: opts.Now, PathPrefix: prefix}, d.variant()),
			keepState: !d.StateLostOnRestart,
			downtime:  opts.RestartDowntime,
			now:       opts.Now,
		}
	}
	return rebuilds{
		RebuildCopy:   newRebuild(RebuildCopy, Defects{}),
		RebuildBroken: newRebuild(RebuildBroken, opts.Broken),
	}
}

// rebuilds are the sample candidates by name.
type rebuilds map[string]*rebuild

// ServeHTTP hands a request to the candidate its path names; an unknown
// candidate is 404.
func (rs rebuilds) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, _ := strings.CutPrefix(r.URL.Path, RebuildsPathPrefix)
	name, _, _ := strings.Cut(rest, "/")
	rb, ok := rs[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	rb.ServeHTTP(w, r)
}

// rebuild is one sample candidate: a sandbox server that a restart hook takes
// down for a moment, as a real deployment would be.
type rebuild struct {
	prefix    string // /rebuilds/<name>/
	site      *Server
	keepState bool // false: a restart drops every namespace
	downtime  time.Duration
	now       func() time.Time

	mu        sync.Mutex
	downUntil time.Time
}

// ServeHTTP answers the restart hook and the health URL, then, unless the
// candidate is restarting (503), its shop.
func (rb *rebuild) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case rb.prefix + "restart":
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "restart with POST", http.StatusMethodNotAllowed)
			return
		}
		rb.restart()
		w.WriteHeader(http.StatusNoContent)
		return
	case rb.prefix + "health":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "ask with GET", http.StatusMethodNotAllowed)
			return
		}
		if rb.down() {
			unavailable(w)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
		return
	}
	if rb.down() {
		unavailable(w)
		return
	}
	rb.site.ServeHTTP(w, r)
}

// restart takes the candidate down for its downtime; a candidate that loses
// its state on restart drops every namespace, which then starts again from
// the seed.
func (rb *rebuild) restart() {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	rb.downUntil = rb.now().Add(rb.downtime)
	if !rb.keepState {
		_ = rb.site.Close() // Close only drops state and never fails
	}
}

// down reports whether the candidate is restarting.
func (rb *rebuild) down() bool {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	return rb.now().Before(rb.downUntil)
}

// unavailable answers 503 as a site that is starting again does.
func unavailable(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "1")
	w.Header().Set("Cache-Control", "no-store")
	http.Error(w, "restarting", http.StatusServiceUnavailable)
}
