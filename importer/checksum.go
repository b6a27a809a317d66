package importer

import (
	"crypto/sha256"
	"encoding/hex"

	"proctor/models"
)

// checksumScheme versions the canonical encoding below. Bump it only when the
// encoding of existing content must change, knowing every benchmark then re-imports
// as a new version.
const checksumScheme = 1

// The dataset checksum hashes the parsed content, not the raw bytes: re-indenting a
// file, reordering object keys or adding fields the importer ignores must not create
// a new benchmark version, while any change to what is stored (a task's intent, its
// hidden evaluation spec, a rubric weight, a subset's members) must. JSON fields are
// already canonical (compact, keys sorted) when tasks are built. The encoding lists
// its fields explicitly instead of marshalling models.Task so that a new column in
// the model cannot silently change the checksum of unchanged benchmarks; every field
// is omitempty so a field added here later leaves old checksums alone when unused.
// Name and description are the benchmark's, not the version's: renaming a benchmark
// in its header does not make a new version.
type canonicalDataset struct {
	Scheme    int    `json:"scheme"`
	Format    string `json:"format"`
	Evaluator string `json:"evaluator,omitempty"`
	// PassThreshold grades a hidden-tests version's tasks: another threshold
	// is another version. Absent for the default.
	PassThreshold *float64          `json:"pass_threshold,omitempty"`
	Tasks         []canonicalTask   `json:"tasks"`
	Subsets       []canonicalSubset `json:"subsets,omitempty"`
}

type canonicalTask struct {
	ExternalID       string            `json:"id"`
	Intent           string            `json:"intent,omitempty"`
	IntentTemplate   string            `json:"intent_template,omitempty"`
	StartURLs        []string          `json:"start_urls,omitempty"`
	Sites            []string          `json:"sites,omitempty"`
	TaskType         string            `json:"task_type,omitempty"`
	Difficulty       string            `json:"difficulty,omitempty"`
	Domain           string            `json:"domain,omitempty"`
	Attributes       []string          `json:"attributes,omitempty"`
	Revision         int               `json:"revision,omitempty"`
	Modality         string            `json:"modality,omitempty"`
	FileFormat       string            `json:"file_format,omitempty"`
	AccessType       string            `json:"access_type,omitempty"`
	MaxToolCalls     int               `json:"max_tool_calls,omitempty"`
	MaxSeconds       int               `json:"max_seconds,omitempty"`
	Metadata         string            `json:"metadata,omitempty"`
	EvalSpec         string            `json:"eval,omitempty"`
	ReferenceAnswers string            `json:"reference_answers,omitempty"`
	ReferenceActions string            `json:"reference_actions,omitempty"`
	Rubric           []canonicalRubric `json:"rubric,omitempty"`
	// Captures are a hidden-tests task's reference images, by name and the
	// SHA-256 of their PNG bytes: a new image makes a new version.
	Captures []canonicalCapture `json:"captures,omitempty"`
}

type canonicalCapture struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
}

type canonicalRubric struct {
	Key          string  `json:"key"`
	Requirement  string  `json:"requirement,omitempty"`
	Verification string  `json:"verification,omitempty"`
	Weight       float64 `json:"weight"`
}

type canonicalSubset struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	TaskIDs     []string `json:"task_ids"`
}

// datasetChecksum hashes the canonical encoding of d's tasks (in order) and subsets
// (sorted by name, ids in task order).
func datasetChecksum(d *Dataset) (string, error) {
	c := canonicalDataset{Scheme: checksumScheme, Format: d.Format, Evaluator: d.Evaluator, PassThreshold: d.PassThreshold}
	c.Tasks = make([]canonicalTask, len(d.Tasks))
	for i, t := range d.Tasks {
		c.Tasks[i] = canonicalTaskOf(t)
	}
	for _, s := range d.Subsets {
		c.Subsets = append(c.Subsets, canonicalSubset{Name: s.Name, Description: s.Description, TaskIDs: s.ExternalIDs})
	}
	enc, err := encodeCanonical(c)
	if err != nil {
		return "", &models.Error{Code: models.EINTERNAL, Message: "the dataset cannot be encoded", Err: err}
	}
	return sha256Hex([]byte(enc)), nil
}

func canonicalTaskOf(t models.Task) canonicalTask {
	c := canonicalTask{
		ExternalID:       t.ExternalID,
		Intent:           t.Intent,
		IntentTemplate:   t.IntentTemplate,
		StartURLs:        t.StartURLs,
		Sites:            t.Sites,
		TaskType:         t.TaskType,
		Difficulty:       t.Difficulty,
		Domain:           t.Domain,
		Attributes:       t.Attributes,
		Revision:         t.Revision,
		Modality:         t.Modality,
		FileFormat:       t.FileFormat,
		AccessType:       t.AccessType,
		MaxToolCalls:     t.MaxToolCalls,
		MaxSeconds:       t.MaxSeconds,
		Metadata:         t.Metadata,
		EvalSpec:         t.EvalSpec,
		ReferenceAnswers: t.ReferenceAnswers,
		ReferenceActions: t.ReferenceActions,
	}
	for _, r := range t.RubricItems {
		c.Rubric = append(c.Rubric, canonicalRubric{Key: r.Key, Requirement: r.Requirement, Verification: r.Verification, Weight: r.Weight})
	}
	for _, rc := range t.ReferenceCaptures {
		c.Captures = append(c.Captures, canonicalCapture{Name: rc.Name, SHA256: sha256Hex(rc.PNG)})
	}
	return c
}

// sha256Hex returns the lower-case hex SHA-256 of b.
func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}
