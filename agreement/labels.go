package agreement

import (
	"errors"
	"fmt"
	"strings"

	"proctor/models"
)

// Key identifies a trajectory the way AgentRewardBench does: the benchmark,
// the agent's model and the task.
type Key struct {
	Benchmark string `json:"benchmark"`
	Model     string `json:"model_name"`
	TaskID    string `json:"task_id"`
}

// String is benchmark/model/task, for messages.
func (k Key) String() string { return k.Benchmark + "/" + k.Model + "/" + k.TaskID }

// trimmed is k with surrounding spaces removed from its fields, as the readers
// store them: " webarena" and "webarena" name one benchmark.
func (k Key) trimmed() Key {
	return Key{Benchmark: strings.TrimSpace(k.Benchmark), Model: strings.TrimSpace(k.Model), TaskID: strings.TrimSpace(k.TaskID)}
}

// Values maps labels to values. Readers store canonical values (Spec.Parse);
// BuildReport accepts any spelling Parse accepts. A missing label or "" means
// not labelled.
type Values map[Label]string

// HumanLabel is one annotator's labels for one item.
type HumanLabel struct {
	Key
	Annotator string `json:"annotator_name"`
	// Experiment is AgentRewardBench's exp_name, kept for export only.
	Experiment string `json:"exp_name,omitempty"`
	Values     Values `json:"labels"`
	// Line is the row's line in its file, 0 when it did not come from one.
	Line int `json:"-"`
}

// Verdict is one judge's labels for one item.
type Verdict struct {
	Key
	Judge  string `json:"judge"`
	Values Values `json:"labels"`
	// Line is the row's line in its file, 0 when it did not come from one.
	Line int `json:"-"`
}

// RowError is an input row left out of an import, and why.
type RowError struct {
	File   string `json:"file"`
	Line   int    `json:"line"`
	Reason string `json:"reason"`
}

// String is "FILE line N: reason".
func (e RowError) String() string {
	if e.File == "" {
		return fmt.Sprintf("line %d: %s", e.Line, e.Reason)
	}
	return fmt.Sprintf("%s line %d: %s", e.File, e.Line, e.Reason)
}

// ErrBadRow is the cause of the EINVALID error a reader returns for the first
// bad row when bad rows are not skipped: errors.Is(err, ErrBadRow) tells a
// caller that skipping bad rows would let the import proceed.
var ErrBadRow = errors.New("bad row")

// badRow is the error for row when it cannot be skipped.
func badRow(row RowError) error {
	return &models.Error{Code: models.EINVALID, Message: row.String(), Err: ErrBadRow}
}

// invalidf is an EINVALID error about the input as a whole.
func invalidf(format string, args ...any) error {
	return models.Errorf(models.EINVALID, format, args...)
}

// parseValues reads every label column present into canonical values; the
// reasons of all bad values are joined.
func parseValues(get func(Label) (string, bool)) (Values, string) {
	values := Values{}
	var problems []string
	for _, l := range Labels() {
		raw, ok := get(l)
		if !ok {
			continue
		}
		spec, _ := SpecOf(l)
		v, err := spec.Parse(raw)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		if v != "" {
			values[l] = v
		}
	}
	return values, strings.Join(problems, "; ")
}

// labelColumns lists the label columns for messages.
func labelColumns() string {
	cols := make([]string, 0, len(Labels()))
	for _, l := range Labels() {
		spec, _ := SpecOf(l)
		cols = append(cols, spec.Column)
	}
	return strings.Join(cols, ", ")
}
