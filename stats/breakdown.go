package stats

import (
	"slices"
	"strings"

	"proctor/models"
)

// The breakdowns' vocabulary is models': pages show it.
type (
	// Dimension is a task label that breakdowns group attempts by.
	Dimension = models.Dimension
	// Group is the metrics of the attempts that share one label value.
	Group = models.MetricsGroup
)

// The dimensions Proctor breaks results down by (models.Dimensions lists them).
const (
	DimensionSite           = models.DimensionSite
	DimensionDomain         = models.DimensionDomain
	DimensionDifficulty     = models.DimensionDifficulty
	DimensionAttribute      = models.DimensionAttribute
	DimensionTaskType       = models.DimensionTaskType
	DimensionIntentTemplate = models.DimensionIntentTemplate
)

// Unlabeled is the group key for attempts with no label in a dimension. They are
// grouped rather than dropped so that the groups of a single-valued dimension add
// up to the whole and a partly labeled benchmark shows how much is unlabeled.
const Unlabeled = models.UnlabeledGroup

// Breakdown summarizes attempts per label value of dimension d, sorted by key
// (byte order), with the Unlabeled group last when there is one. A label is
// trimmed of surrounding spaces; an empty one counts as Unlabeled. For
// DimensionAttribute an attempt is in the group of each distinct attribute it has,
// so group sizes can add up to more than len(attempts). An unknown dimension gives
// nil.
func Breakdown(attempts []Attempt, d Dimension) []Group {
	if !slices.Contains(models.Dimensions(), d) {
		return nil
	}
	members := map[string][]Attempt{}
	for _, a := range attempts {
		for _, key := range labels(a, d) {
			members[key] = append(members[key], a)
		}
	}
	keys := make([]string, 0, len(members))
	for key := range members {
		keys = append(keys, key)
	}
	slices.SortFunc(keys, func(a, b string) int {
		// Unlabeled last: "(none)" would otherwise sort before every letter.
		switch {
		case a == b:
			return 0
		case a == Unlabeled:
			return 1
		case b == Unlabeled:
			return -1
		}
		return strings.Compare(a, b)
	})
	groups := make([]Group, len(keys))
	for i, key := range keys {
		groups[i] = Group{Key: key, Metrics: Summarize(members[key])}
	}
	return groups
}

// labels is the group keys of a in dimension d: exactly one for single-valued
// dimensions, one per distinct attribute (or Unlabeled) for attributes.
func labels(a Attempt, d Dimension) []string {
	var single string
	switch d {
	case DimensionSite:
		single = a.Site
	case DimensionDomain:
		single = a.Domain
	case DimensionDifficulty:
		single = a.Difficulty
	case DimensionTaskType:
		single = a.TaskType
	case DimensionIntentTemplate:
		single = a.IntentTemplate
	case DimensionAttribute:
		keys := make([]string, 0, len(a.Attributes))
		for _, attribute := range a.Attributes {
			if key := labelKey(attribute); key != Unlabeled && !slices.Contains(keys, key) {
				keys = append(keys, key)
			}
		}
		if len(keys) == 0 {
			return []string{Unlabeled}
		}
		return keys
	}
	return []string{labelKey(single)}
}

// labelKey is the group key for one label value.
func labelKey(label string) string {
	if label = strings.TrimSpace(label); label == "" {
		return Unlabeled
	}
	return label
}
