package verified

import (
	"net/url"
	"sort"
	"strings"
)

// Sites maps each WebArena site to the base URLs it is served at, keyed by its
// name ("gitlab", "shopping_admin") or its placeholder ("__GITLAB__"). The
// first URL is the one placeholders in a spec render to; any of them in a
// recorded URL or answer reads as the site, as WebArena-Verified's environment
// config allows several URLs per site.
type Sites map[string][]string

// Placeholder returns the URL placeholder of a site name: gitlab is __GITLAB__.
// A placeholder is returned unchanged.
func Placeholder(site string) string {
	if strings.HasPrefix(site, "__") && strings.HasSuffix(site, "__") && len(site) > 4 {
		return site
	}
	return "__" + strings.ToUpper(site) + "__"
}

// siteMap resolves placeholders for one task: only the task's own sites take
// part, longest URL first, as in WebArena-Verified.
type siteMap struct {
	sites []siteURLs
}

type siteURLs struct {
	placeholder string
	urls        []string // normalised, without a trailing slash
}

// newSiteMap keeps the sites of a task (all of them when the task names none).
func newSiteMap(all Sites, taskSites []string) *siteMap {
	m := &siteMap{}
	if len(all) == 0 {
		return m
	}
	want := map[string]bool{}
	for _, s := range taskSites {
		want[Placeholder(s)] = true
	}
	for key, urls := range all {
		ph := Placeholder(key)
		if len(taskSites) > 0 && !want[ph] {
			continue
		}
		su := siteURLs{placeholder: ph}
		for _, u := range urls {
			if n := normalizeSiteURL(u); n != "" {
				su.urls = append(su.urls, n)
			}
		}
		if len(su.urls) > 0 {
			m.sites = append(m.sites, su)
		}
	}
	sort.Slice(m.sites, func(i, j int) bool {
		li, lj := longest(m.sites[i].urls), longest(m.sites[j].urls)
		if li != lj {
			return li > lj
		}
		return m.sites[i].placeholder < m.sites[j].placeholder
	})
	return m
}

func longest(urls []string) int {
	n := 0
	for _, u := range urls {
		n = max(n, len(u))
	}
	return n
}

// normalizeSiteURL lower-cases the scheme and host, drops a default port and
// the trailing slash, so site URLs compare with normalised request URLs.
func normalizeSiteURL(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	u.Scheme = strings.ToLower(u.Scheme)
	u.Host = dropDefaultPort(u.Scheme, strings.ToLower(u.Host))
	return strings.TrimRight(u.Scheme+"://"+u.Host+u.EscapedPath(), "/")
}

func dropDefaultPort(scheme, host string) string {
	if scheme == "http" {
		return strings.TrimSuffix(host, ":80")
	}
	if scheme == "https" {
		return strings.TrimSuffix(host, ":443")
	}
	return host
}

// known reports whether the map has any site URL.
func (m *siteMap) known() bool { return m != nil && len(m.sites) > 0 }

// render replaces a leading placeholder with its site's first URL; ok is false
// when s starts with a placeholder of no known site.
func (m *siteMap) render(s string) (string, bool) {
	if !strings.HasPrefix(s, "__") {
		return s, true
	}
	if m != nil {
		for _, site := range m.sites {
			if rest, ok := strings.CutPrefix(s, site.placeholder); ok {
				return site.urls[0] + rest, true
			}
		}
	}
	end := strings.Index(s[2:], "__")
	if end < 0 {
		return s, true
	}
	return s, false
}

// derender replaces a known site URL in s with its placeholder; ok is false
// when s contains none.
func (m *siteMap) derender(s string) (string, bool) {
	if m == nil {
		return s, false
	}
	for _, site := range m.sites {
		for _, u := range site.urls {
			if strings.Contains(s, u) {
				return strings.ReplaceAll(s, u, site.placeholder), true
			}
		}
	}
	return s, false
}

// derenderText is derender for free text; nil when no site URL is known, so
// string normalisation can skip it.
func (m *siteMap) derenderText(s string) string {
	out, _ := m.derender(s)
	return out
}

// placeholderIn returns the first __NAME__ placeholder s starts with.
func placeholderIn(s string) string {
	if !strings.HasPrefix(s, "__") {
		return ""
	}
	end := strings.Index(s[2:], "__")
	if end < 0 {
		return ""
	}
	return s[:end+4]
}
