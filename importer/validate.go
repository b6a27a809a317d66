package importer

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"proctor/models"
)

// weightTolerance is how far the weights of a rubric may sum from 1: published
// weights such as 0.22+0.12+… add up to 0.9999999999999999 in floating point.
const weightTolerance = 1e-6

// difficulties lists the accepted difficulty levels.
func difficulties() []string {
	return []string{models.DifficultyEasy, models.DifficultyMedium, models.DifficultyHard}
}

// taskTypes lists every accepted task type, WebArena's first, then WebDS's.
func taskTypes() []string {
	return []string{models.TaskRetrieve, models.TaskMutate, models.TaskNavigate, models.TaskQA, models.TaskAction}
}

// actionTypes is the action vocabulary of the agent protocol (v1); reference
// action scripts use the same one so the replay agent can play them.
func actionTypes() []string {
	return []string{"click", "fill", "press", "select", "hover", "scroll", "goto", "go_back", "go_forward",
		"new_tab", "switch_tab", "close_tab", "answer", "stop"}
}

// oneOf checks value against the allowed values.
func oneOf(where, field, value string, allowed []string) error {
	if !slices.Contains(allowed, value) {
		return fieldErr(where, field, "%q is not one of %s", value, strings.Join(allowed, ", "))
	}
	return nil
}

// validSiteIdentifier accepts WebArena site names: shopping, shopping_admin, map, …
func validSiteIdentifier(s string) bool {
	if len(s) == 0 || len(s) > 64 || !(s[0] >= 'a' && s[0] <= 'z') {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

// validSiteName accepts WebArena site names and lower-case host names
// (www.example.com): lower-case letters, digits, '.', '_' and '-'.
func validSiteName(s string) bool {
	if len(s) == 0 || len(s) > 253 || !(s[0] >= 'a' && s[0] <= 'z' || s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// checkSites requires at least one site, each valid and listed once.
func checkSites(where, field string, sites []string, valid func(string) bool, rule string) error {
	if len(sites) == 0 {
		return fieldErr(where, field, "missing or empty: a task needs at least one site")
	}
	for i, s := range sites {
		if !valid(s) {
			return fieldErr(where, field, "%q is not a site name (%s)", s, rule)
		}
		if slices.Contains(sites[:i], s) {
			return fieldErr(where, field, "%q is listed twice", s)
		}
	}
	return nil
}

// checkStrings requires every entry to be non-blank and listed once.
func checkStrings(where, field string, values []string) error {
	for i, v := range values {
		if strings.TrimSpace(v) == "" {
			return fieldErr(where, field, "item %d is empty", i)
		}
		if slices.Contains(values[:i], v) {
			return fieldErr(where, field, "%q is listed twice", v)
		}
	}
	return nil
}

// applyWeights sets rubric weights by the one rule every format shares: all items
// weighted and summing to 1 (within weightTolerance), or none weighted and each
// weighing 1/n. Some weighted and some not is ambiguous and refused.
func applyWeights(where, field string, items []models.RubricItem, weights []*float64) error {
	given := 0
	sum := 0.0
	for i, w := range weights {
		if w == nil {
			continue
		}
		given++
		if *w < 0 || *w > 1 || math.IsNaN(*w) {
			return fieldErr(where, field, "item %s: weight %v is not between 0 and 1", items[i].Key, *w)
		}
		sum += *w
	}
	switch {
	case given == 0:
		for i := range items {
			items[i].Weight = 1 / float64(len(items))
		}
	case given < len(items):
		return fieldErr(where, field, "only %d of %d rubric items have a weight: give every item a weight or none", given, len(items))
	default:
		if math.Abs(sum-1) > weightTolerance {
			return fieldErr(where, field, "rubric weights sum to %s, not 1", formatSum(sum))
		}
		for i, w := range weights {
			items[i].Weight = *w
		}
	}
	return nil
}

// formatSum prints a weight sum without float noise hiding the real problem.
func formatSum(sum float64) string {
	return fmt.Sprintf("%.6g", sum)
}

// siteFromStartURL derives a site from a start URL: a leading placeholder such as
// __SHOPPING_ADMIN__ gives shopping_admin, an http(s) URL gives its host name.
func siteFromStartURL(u string) string {
	if strings.HasPrefix(u, "__") {
		if end := strings.Index(u[2:], "__"); end > 0 {
			return strings.ToLower(u[2 : 2+end])
		}
		return ""
	}
	return hostOf(u)
}
