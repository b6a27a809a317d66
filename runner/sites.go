package runner

import (
	"fmt"
	"net/url"
	"sort"
	"strings"

	"proctor/models"
)

// EpisodeToken in a configured site URL is replaced by the attempt's namespace,
// giving every try its own site state (the bundled sandbox works this way).
const EpisodeToken = "{episode}"

// siteMap resolves a benchmark's sites for one try: placeholder → URL, and the
// URL prefixes the browser may load.
type siteMap struct {
	byPlaceholder map[string]string
	allowed       []string
}

// resolveSites builds the site map; a site without a configured URL is an
// environment problem named in the error.
func resolveSites(sites []models.Site, namespace string) (*siteMap, error) {
	m := &siteMap{byPlaceholder: map[string]string{}}
	for _, s := range sites {
		if s.URL == "" {
			return nil, fmt.Errorf("site %s has no URL configured (Admin → Sites)", s.Name)
		}
		resolved := strings.TrimRight(strings.ReplaceAll(s.URL, EpisodeToken, namespace), "/")
		u, err := url.Parse(resolved)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("site %s has an invalid URL %q", s.Name, s.URL)
		}
		placeholder := s.Placeholder
		if placeholder == "" {
			placeholder = models.PlaceholderFor(s.Name)
		}
		m.byPlaceholder[placeholder] = resolved
		allowed := resolved + "/"
		if i := strings.Index(s.URL, EpisodeToken); i >= 0 {
			// The whole namespace is the episode's: its sites and shared assets.
			allowed = strings.ReplaceAll(s.URL[:i+len(EpisodeToken)], EpisodeToken, namespace) + "/"
		}
		m.allowed = append(m.allowed, allowed)
	}
	sort.Strings(m.allowed)
	return m, nil
}

// resolve replaces every site placeholder in text, longest first.
func (m *siteMap) resolve(text string) string {
	keys := make([]string, 0, len(m.byPlaceholder))
	for k := range m.byPlaceholder {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return len(keys[i]) > len(keys[j]) })
	for _, k := range keys {
		text = strings.ReplaceAll(text, k, m.byPlaceholder[k])
	}
	return text
}

// resolveAll resolves each string of a list.
func (m *siteMap) resolveAll(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = m.resolve(s)
	}
	return out
}
