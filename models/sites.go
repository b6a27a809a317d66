package models

import (
	"fmt"
	"net/url"
	"sort"
	"strings"
)

// EpisodeToken in a configured site URL is replaced by the attempt's namespace,
// giving every try its own site state (the bundled sandbox works this way).
const EpisodeToken = "{episode}"

// Namespace names one try of an attempt in its sites' URLs.
func Namespace(attemptID int64, try int) string { return fmt.Sprintf("a%dt%d", attemptID, try) }

// SiteMap resolves a benchmark's sites for one try: placeholder → URL, and the
// URL prefixes the browser may load.
type SiteMap struct {
	byPlaceholder map[string]string
	// Allowed are the URL prefixes the browser may load.
	Allowed []string
}

// ResolveSites builds the site map; a site without a configured URL is an
// environment problem named in the error.
func ResolveSites(sites []Site, namespace string) (*SiteMap, error) {
	m := &SiteMap{byPlaceholder: map[string]string{}}
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
			placeholder = PlaceholderFor(s.Name)
		}
		m.byPlaceholder[placeholder] = resolved
		allowed := resolved + "/"
		if i := strings.Index(s.URL, EpisodeToken); i >= 0 {
			// The whole namespace is the episode's: its sites and shared assets.
			allowed = strings.ReplaceAll(s.URL[:i+len(EpisodeToken)], EpisodeToken, namespace) + "/"
		}
		m.Allowed = append(m.Allowed, allowed)
	}
	sort.Strings(m.Allowed)
	return m, nil
}

// Resolve replaces every site placeholder in text, longest first.
func (m *SiteMap) Resolve(text string) string {
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

// ResolveAll resolves each string of a list.
func (m *SiteMap) ResolveAll(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = m.Resolve(s)
	}
	return out
}
