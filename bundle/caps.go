package bundle

import (
	"context"
	"unicode/utf8"
)

// What the reader keeps of a bundle is capped: every limit of Limits bounds
// what is read, these bound what is held and shown (docs/bundle-formats.md).
const (
	// maxTextBytes caps a step's thought, URL, title and error, and a task's
	// error message: longer text is cut, with a warning naming the files.
	maxTextBytes = 64 << 10
	// maxActionBytes caps an action or a final answer, as models.Action
	// JSON: JSON cannot be cut, and a cut answer would be scored as another
	// answer, so a longer one makes its file invalid.
	maxActionBytes = 256 << 10
	// maxManifestBytes caps manifest.json: its fields are short (see
	// manifestFields), so a larger one is not a manifest.
	maxManifestBytes = 64 << 10

	// maxReportList caps each list of the report (tasks found, missing,
	// unknown, …, invalid files); Report.Counts holds the full lengths.
	maxReportList = 1000
	// maxShownBytes caps an id or a path in the report and in messages.
	maxShownBytes = 256
	// maxProblemBytes caps a problem's text (which may quote a file's content).
	maxProblemBytes = 1 << 10
)

// Memory an inspection holds beyond the strings themselves, counted against
// Limits.MaxMetadataBytes: an estimate of the structures around them.
const (
	nameOverhead    = 64  // a file name in the inspector's and the walk's lists
	recordOverhead  = 256 // a parsed file's record
	stepOverhead    = 384 // a step, in its file's record and in its task
	problemOverhead = 128 // an invalid file, on the report and on its task
)

// ellipsis ends a shortened text.
const ellipsis = "…"

// shorten cuts s to at most max bytes at a character boundary, ending it
// with an ellipsis when cut. The result never shares memory with a long s.
func shorten(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}

// cutText cuts a retained text field to maxTextBytes, reporting whether it did.
func cutText(s string, cut *bool) string {
	if len(s) <= maxTextBytes {
		return s
	}
	*cut = true
	return shorten(s, maxTextBytes)
}

// metadata counts the bytes an inspection holds, refusing the bundle past
// its limit: the caps per field bound one step, not a bundle of millions.
type metadata struct {
	bytes, limit int64
}

func (m *metadata) add(n int64) error {
	m.bytes += n
	if m.limit > 0 && m.bytes > m.limit {
		return refuse("", "the bundle's metadata (file names, steps, thoughts, actions, answers and problems) takes more than %s, "+
			"over the limit: split the bundle, or leave out what the formats do not read", humanBytes(m.limit))
	}
	return nil
}

// checkEvery is how many rounds of a loop over paths or tasks pass between
// two looks at the context: often enough to stop within milliseconds, rarely
// enough to cost nothing.
const checkEvery = 1024

// pacer stops long loops (a bundle holds up to hundreds of thousands of
// files) soon after their context ends, and after the first refusal met in
// them (the metadata limit), which it keeps.
type pacer struct {
	ctx    context.Context
	rounds int
	err    error
}

// next counts one round and returns the error that ends the loop, if any.
func (p *pacer) next() error {
	p.rounds++
	if p.err == nil && p.rounds%checkEvery == 0 {
		p.err = p.ctx.Err()
	}
	return p.err
}

// fail keeps err as the loop's end unless one is kept already.
func (p *pacer) fail(err error) {
	if p.err == nil {
		p.err = err
	}
}
