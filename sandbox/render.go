package sandbox

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"slices"
	"strings"
)

//go:embed templates/*.html
var templateFiles embed.FS

// The sites of a namespace.
const (
	siteNone  = ""
	siteShop  = "shop"
	siteForum = "forum"
	siteData  = "data"
)

// The signed-in visitor of every site: the sandbox has no login.
const (
	currentUser     = "sandbox_user"
	currentFullName = "Sam Sandbox"
)

// siteName is the display name of a site.
func siteName(site string) string {
	switch site {
	case siteShop:
		return "Sandbox Shop"
	case siteForum:
		return "Sandbox Forum"
	case siteData:
		return "Sandbox Data Portal"
	}
	return "Proctor sandbox"
}

// sitePath is the root path of a site in a namespace: /sandbox/a1/shop.
func (s *Server) sitePath(ns, site string) string {
	if site == siteNone {
		return s.prefix + ns
	}
	return s.prefix + ns + "/" + site
}

// pages holds one template set per page, each with the shared layout.
type pages struct {
	byName map[string]*template.Template
}

// parsePages parses the embedded templates; they are part of the binary, so a
// parse error is a bug caught by every test.
func parsePages() *pages {
	funcs := template.FuncMap{
		"money":  money,
		"rating": func(r float64) string { return fmt.Sprintf("%.1f", r) },
		"plural": func(n int, one, many string) string {
			if n == 1 {
				return fmt.Sprintf("%d %s", n, one)
			}
			return fmt.Sprintf("%d %s", n, many)
		},
		"dollars": func(cents int) string { return strings.TrimPrefix(money(cents), "$") },
		"votes": func(id, score, myVote int, base, next string) voteBox {
			return voteBox{ID: id, Score: score, MyVote: myVote, Base: base, Next: next}
		},
		"seq": func(from, to int) []int {
			var out []int
			for i := from; i <= to; i++ {
				out = append(out, i)
			}
			return out
		},
	}
	layout := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFiles, "templates/layout.html"))
	entries, err := templateFiles.ReadDir("templates")
	if err != nil {
		panic(err)
	}
	p := &pages{byName: map[string]*template.Template{}}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".html")
		if !ok || name == "layout" {
			continue
		}
		t := template.Must(template.Must(layout.Clone()).ParseFS(templateFiles, "templates/"+e.Name()))
		p.byName[name] = t
	}
	return p
}

// voteBox is the data of the shared "votes" template.
type voteBox struct {
	ID, Score, MyVote int
	Base, Next        string
}

// navItem is one link of a site's navigation bar.
type navItem struct {
	ID, Label, Href string
	Current         bool
}

// view is what every page template receives.
type view struct {
	Title    string
	Site     string
	SiteName string
	Home     string
	NS       string
	User     string
	Nav      []navItem
	CSS      template.CSS
	Flash    string
	Data     any
}

// view prepares a page of a site; the navigation marks the current section.
func (s *Server) view(r *http.Request, site, title string) *view {
	ns := r.PathValue("ns")
	base := s.sitePath(ns, site)
	v := &view{
		Title: title, Site: site, SiteName: siteName(site), Home: base, NS: ns, User: currentUser,
		CSS: template.CSS(s.styles),
	}
	path := r.URL.Path
	switch site {
	case siteShop:
		v.Nav = []navItem{
			{ID: "nav-products", Label: "Products", Href: base + "/products"},
			{ID: "nav-cart", Label: "Cart", Href: base + "/cart"},
			{ID: "nav-orders", Label: "Orders", Href: base + "/orders"},
			{ID: "nav-admin", Label: "Admin", Href: base + "/admin"},
		}
	case siteForum:
		v.Nav = []navItem{
			{ID: "nav-posts", Label: "Posts", Href: base},
			{ID: "nav-new-post", Label: "New post", Href: base + "/new"},
			{ID: "nav-users", Label: "Users", Href: base + "/users"},
		}
	case siteData:
		v.Nav = []navItem{{ID: "nav-datasets", Label: "Datasets", Href: base}}
	}
	v.Nav = slices.DeleteFunc(v.Nav, func(n navItem) bool { return slices.Contains(s.look.hiddenNav, n.ID) })
	for i := range v.Nav {
		n := &v.Nav[i]
		n.Current = path == n.Href || strings.HasPrefix(path, n.Href+"/") && n.Href != base
	}
	return v
}

// render writes a page. The page is rendered to a buffer first so that a
// template error gives a clean 500 rather than half a page.
func (s *Server) render(w http.ResponseWriter, status int, name string, v *view) {
	t, ok := s.pages.byName[name]
	if !ok {
		http.Error(w, "sandbox: no page "+name, http.StatusInternalServerError)
		return
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", v); err != nil {
		slog.Error("sandbox: render page", "page", name, "error", err)
		http.Error(w, "sandbox: the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// errorPage is the data of the error page.
type errorPage struct {
	Status  int
	Message string
	Back    string
}

// fail renders the error page of the site the request is on.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, status int, message string) {
	site := siteNone
	rest, _ := strings.CutPrefix(r.URL.Path, s.prefix)
	parts := strings.SplitN(rest, "/", 3)
	ns := ""
	if len(parts) > 0 && ValidNamespace(parts[0]) {
		ns = parts[0]
	}
	if ns != "" && len(parts) > 1 {
		switch parts[1] {
		case siteShop, siteForum, siteData:
			site = parts[1]
		}
	}
	title := http.StatusText(status)
	v := &view{Title: title, Site: site, SiteName: siteName(site), NS: ns, User: currentUser, CSS: template.CSS(s.styles)}
	if ns != "" {
		r.SetPathValue("ns", ns)
		v = s.view(r, site, title)
		v.Home = s.sitePath(ns, site)
	}
	v.Data = errorPage{Status: status, Message: message, Back: v.Home}
	s.render(w, status, "error", v)
}

// redirect answers a POST with 303 See Other, leaving a message for the next page.
func (s *Server) redirect(w http.ResponseWriter, r *http.Request, sp *space, target, flash string) {
	sp.flash = flash
	http.Redirect(w, r, target, http.StatusSeeOther)
}

// takeFlash returns and clears the namespace's one-time message.
func takeFlash(sp *space) string {
	f := sp.flash
	sp.flash = ""
	return f
}

// parseForm reads a form body of at most maxFormBytes.
func parseForm(w http.ResponseWriter, r *http.Request) error {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	return r.ParseForm()
}

// money writes cents as dollars: 3450 → "$34.50".
func money(cents int) string {
	sign := ""
	if cents < 0 {
		sign, cents = "-", -cents
	}
	return fmt.Sprintf("%s$%d.%02d", sign, cents/100, cents%100)
}
