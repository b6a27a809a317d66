// Package importer parses benchmark files (WebArena-Verified, original WebArena,
// Odysseys and Proctor's own JSON Lines format) into one neutral Dataset ready to
// be stored. It touches no database: storage decides whether the Dataset's checksum
// is a new version.
package importer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"unicode/utf8"

	"proctor/eval"
	"proctor/models"
)

// Size limits of the input.
const (
	MaxInputBytes = 256 << 20 // a benchmark file or a subset file
	MaxLineBytes  = 16 << 20  // one line of a JSON Lines file
)

// Dataset is a parsed benchmark ready to be stored (models.Dataset, which the
// benchmark service hands to storage).
type Dataset = models.Dataset

// Subset is a named set of tasks of a Dataset.
type Subset = models.DatasetSubset

// SubsetFile is a subset given beside the benchmark file (--subset NAME=FILE).
type SubsetFile struct {
	Name string    // the subset's name, a slug
	R    io.Reader // the subset file: {"description", "task_ids", "checksum"}
}

// SiteSpec is a site the tasks use and the placeholder standing for its URL.
type SiteSpec = models.DatasetSite

// limits are the size limits; tests shrink them to exercise the refusals cheaply.
type limits struct {
	input int64
	line  int
}

func defaultLimits() limits { return limits{input: MaxInputBytes, line: MaxLineBytes} }

// Parse reads a benchmark in the given format and the optional subset files into a
// Dataset, checking each task's evaluation spec with its evaluator's record in
// kinds. Every failure is a *models.Error naming where it happened: EINVALID for
// bad input or an evaluator kinds does not know, ETOOLARGE when the input or a
// JSON Lines line exceeds its size limit.
func Parse(kinds *eval.Registry, format string, r io.Reader, subsets []SubsetFile) (*Dataset, error) {
	return parse(kinds, format, r, subsets, defaultLimits())
}

// parsed is what a format parser hands to the shared finishing steps.
type parsed struct {
	evaluator     string
	passThreshold *float64 // from the proctor header line; nil for the default
	name          string
	description   string
	tasks         []models.Task
	where         []string // how messages name each task ("task 17", "line 4 (task t7)")
	pos           []string // where each task sits in the file ("index 3", "line 4")
	subsets       []Subset // subsets declared inside the benchmark file
	subsetWhere   []string
}

func parse(kinds *eval.Registry, format string, r io.Reader, subsetFiles []SubsetFile, lim limits) (*Dataset, error) {
	if r == nil {
		return nil, models.Errorf(models.EINVALID, "no benchmark input given")
	}
	var p *parsed
	var err error
	switch format {
	case models.FormatWebArenaVerified, models.FormatWebArena, models.FormatOdysseys:
		var data []byte
		if data, err = readLimited(r, lim.input, "input"); err != nil {
			return nil, err
		}
		var raws []json.RawMessage
		if raws, err = splitArray(data); err != nil {
			return nil, err
		}
		switch format {
		case models.FormatWebArenaVerified:
			p, err = parseWebArenaVerified(raws)
		case models.FormatWebArena:
			p, err = parseWebArena(raws)
		default:
			p, err = parseOdysseys(raws)
		}
	case models.FormatProctor:
		p, err = parseProctor(r, lim, kinds)
	default:
		return nil, models.Errorf(models.EINVALID, "unknown format %q: use one of %s",
			format, strings.Join(models.ImportFormats(), ", "))
	}
	if err != nil {
		return nil, err
	}
	kind, err := kinds.Kind(p.evaluator)
	if err != nil {
		return nil, err
	}
	d, err := finish(format, p, subsetFiles, lim)
	if err != nil {
		return nil, err
	}
	d.Grades = kind.Grades
	return d, nil
}

// finish checks what spans tasks (ids, subsets) and fills the derived fields.
func finish(format string, p *parsed, subsetFiles []SubsetFile, lim limits) (*Dataset, error) {
	if len(p.tasks) == 0 {
		return nil, models.Errorf(models.EINVALID, "the benchmark has no tasks")
	}
	index := make(map[string]int, len(p.tasks))
	for i := range p.tasks {
		id := p.tasks[i].ExternalID
		if first, dup := index[id]; dup {
			return nil, models.Errorf(models.EINVALID, "%s: duplicate task id: at %s and %s", p.where[i], p.pos[first], p.pos[i])
		}
		index[id] = i
		p.tasks[i].Position = i
	}

	subsets := p.subsets
	where := p.subsetWhere
	for _, f := range subsetFiles {
		s, err := parseSubsetFile(f, lim)
		if err != nil {
			return nil, err
		}
		subsets = append(subsets, s)
		where = append(where, fmt.Sprintf("subset %q", f.Name))
	}
	seen := map[string]bool{}
	for i := range subsets {
		s := &subsets[i]
		if err := checkSubsetName(s.Name, where[i]); err != nil {
			return nil, err
		}
		if seen[s.Name] {
			return nil, models.Errorf(models.EINVALID, "%s: a subset with this name is given twice", where[i])
		}
		seen[s.Name] = true
		if err := resolveSubset(s, index, where[i]); err != nil {
			return nil, err
		}
	}
	sort.Slice(subsets, func(i, j int) bool { return subsets[i].Name < subsets[j].Name })

	d := &Dataset{
		Format:        format,
		Evaluator:     p.evaluator,
		PassThreshold: p.passThreshold,
		Name:          p.name,
		Description:   p.description,
		Tasks:         p.tasks,
		Subsets:       subsets,
		Sites:         siteSpecs(p.tasks),
	}
	sum, err := datasetChecksum(d)
	if err != nil {
		return nil, err
	}
	d.Checksum = sum
	return d, nil
}

// siteSpecs lists every site the tasks use, sorted by name.
func siteSpecs(tasks []models.Task) []SiteSpec {
	names := map[string]bool{}
	for _, t := range tasks {
		for _, s := range t.Sites {
			names[s] = true
		}
	}
	specs := make([]SiteSpec, 0, len(names))
	for n := range names {
		specs = append(specs, SiteSpec{Name: n, Placeholder: models.PlaceholderFor(n)})
	}
	sort.Slice(specs, func(i, j int) bool { return specs[i].Name < specs[j].Name })
	return specs
}

// readLimited reads all of r, refusing more than limit bytes with ETOOLARGE. A
// leading UTF-8 byte order mark is dropped: editors on Windows add one.
func readLimited(r io.Reader, limit int64, what string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, &models.Error{Code: models.EINVALID, Message: what + ": cannot be read", Err: err}
	}
	if int64(len(data)) > limit {
		return nil, models.Errorf(models.ETOOLARGE, "%s: larger than %s", what, formatBytes(limit))
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if err := checkUTF8(data, what, 1); err != nil {
		return nil, err
	}
	return data, nil
}

// checkUTF8 refuses text that is not valid UTF-8, naming the line (counted
// from firstLine) and column of the first bad byte: JSON decoding would
// otherwise replace it with U+FFFD and import a task other than the file's.
func checkUTF8(data []byte, what string, firstLine int) error {
	if utf8.Valid(data) {
		return nil
	}
	line, col := firstLine, 1
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size <= 1 {
			return models.Errorf(models.EINVALID, "%s: line %d, column %d: byte 0x%02x is not valid UTF-8; save the file as UTF-8",
				what, line, col, data[i])
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		i += size
	}
	return nil
}

// formatBytes writes a size limit the way people say it (256 MiB).
func formatBytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
