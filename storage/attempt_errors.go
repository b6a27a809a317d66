package storage

import (
	"maps"
	"regexp"
	"strings"

	"proctor/models"
)

// Sizes of an attempt's recorded error: the text everyone who may see the
// run reads, and the administrators' full text.
const (
	maxErrorMessage = 2000
	maxErrorDetail  = 8000
)

// serverPathText is the word a server path is replaced with.
const serverPathText = "[server path]"

// pathToken matches the words of a message a path could be.
var pathToken = regexp.MustCompile(`[^\s"'()<>\[\],;]+`)

// attemptErrorColumns is how an attempt's error is recorded, wherever one is:
// the class, the message everyone who may see the run reads, and the full
// text for administrators (error_detail, see models.Attempt.ErrorDetail). A
// message Proctor wrote (every class but the agent's own errors) has its
// server paths replaced: a stack of folders, a temporary file or the data
// folder says nothing a team can act on and tells an outsider how the server
// is laid out. The full text is kept only when it differs.
func attemptErrorColumns(class, message string) map[string]any {
	public, detail := message, ""
	if class != models.ErrorClassAgent {
		if scrubbed := scrubServerPaths(message); scrubbed != message {
			public, detail = scrubbed, message
		}
	}
	return map[string]any{
		"error_class":   class,
		"error_message": truncate(public, maxErrorMessage),
		"error_detail":  truncate(detail, maxErrorDetail),
	}
}

// noAttemptError is the columns of an attempt without an error.
func noAttemptError() map[string]any { return attemptErrorColumns("", "") }

// withColumns returns updates with cols added.
func withColumns(updates, cols map[string]any) map[string]any {
	maps.Copy(updates, cols)
	return updates
}

// scrubServerPaths replaces every file path in msg with "[server path]": an
// absolute path (/var/lib/proctor/…), one relative to a folder (./x, ../x),
// or two or more folders deep (data/artifacts/runs/…). URLs are kept whole:
// the pages an episode visited are the run's own record.
func scrubServerPaths(msg string) string {
	return pathToken.ReplaceAllStringFunc(msg, func(word string) string {
		if strings.Contains(word, "://") || !strings.Contains(word, "/") {
			return word
		}
		// Punctuation that ends a sentence or a "path: reason" is not the path's.
		trimmed := strings.TrimRight(word, ".:!?")
		tail := word[len(trimmed):]
		switch {
		case strings.HasPrefix(trimmed, "/") && len(trimmed) > 1,
			strings.HasPrefix(trimmed, "./"), strings.HasPrefix(trimmed, "../"),
			strings.Count(strings.Trim(trimmed, "/"), "/") >= 2:
			return serverPathText + tail
		}
		return word
	})
}
