package webarena

import (
	"proctor/eval"
	"proctor/importer"
)

// Kind is the original WebArena evaluator's registry record: it reads the
// live page at the end of an episode (url_match, program_html), and matches
// fuzzy answers with the run's judge when one is configured.
func Kind() eval.Kind {
	return eval.Kind{
		ID: id, Version: Version,
		Check: importer.CheckWebArenaSpec,
		New: func(t eval.Tools) eval.Evaluator {
			var fuzzy eval.FuzzyMatcher
			if t.Judges != nil {
				fuzzy = t.Judges
			}
			return New(fuzzy)
		},
		Probes: Probes,
	}
}
