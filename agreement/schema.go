// Package agreement measures how far LLM judges agree with human annotators on
// web-agent trajectories: the label schema, the import of human labels in
// AgentRewardBench's annotations.csv layout and of judge verdicts (CSV or JSON
// Lines), the human majority label per item, and the agreement report with
// human-vs-human and judge-vs-human figures, exported as JSON or CSV.
//
// It works on plain values (HumanLabel, Verdict), not database rows, so the
// offline CLI and the studies in the database build the same report. The
// statistics themselves are in package stats; docs/agreement.md documents every
// convention (unsure, ties, undefined statistics).
package agreement

import (
	"fmt"
	"strconv"
	"strings"
)

// Label names one question annotators and judges answer about a trajectory.
type Label string

// The labels Proctor collects.
const (
	LabelSuccess    Label = "success"     // successful | unsuccessful | unsure
	LabelSideEffect Label = "side_effect" // yes | no | unsure
	LabelLooping    Label = "looping"     // yes | no; unsure in files
	LabelOptimality Label = "optimality"  // 1 complete failure … 4 completely optimal; unsure in files
	LabelScore      Label = "score"       // 1 … 5
	// LabelRubric is one rubric item's pass or fail. A study asks it once per
	// rubric item of the item's task, and each (item, rubric item) is a unit
	// of its own: its Key's TaskID is the task id, "#" and the rubric item's
	// key (RubricUnitTaskID).
	LabelRubric Label = "rubric" // pass | fail
)

// Unsure is the canonical "unsure" value of labels that read it
// (Spec.ReadsUnsure). It is not a category: as AgentRewardBench does, it is
// left out of votes, pairs and every statistic, and counted per label.
const Unsure = "unsure"

// Labels lists every label in report order.
func Labels() []Label {
	return []Label{LabelSuccess, LabelSideEffect, LabelLooping, LabelOptimality, LabelScore, LabelRubric}
}

// Spec describes a label: the column that holds it, its categories in order,
// how values are spelled, and which category the binary metrics treat as
// positive.
type Spec struct {
	Label Label
	// Column is the label's column in CSV files and key in JSON Lines,
	// AgentRewardBench's name (trajectory_success, …; trajectory_score for the
	// 1–5 score, which AgentRewardBench does not have).
	Column string
	// Categories are the canonical values in order; a category's index is its
	// code in stats tables.
	Categories []string
	// Display are the categories as AgentRewardBench spells them, for export
	// and messages (same order as Categories).
	Display []string
	// Ordinal says the order of Categories is meaningful (weighted kappa,
	// ordinal and interval alpha).
	Ordinal bool
	// AllowsUnsure says Proctor's annotation form offers "unsure" as an
	// answer to the label (success and side effect).
	AllowsUnsure bool
	// ReadsUnsure says "unsure" is an accepted value wherever the label is
	// read: files, study imports, stored labels and BuildReport's input. It
	// holds for every label of AgentRewardBench's annotations.csv, whose
	// published file answers Unsure in the success, side-effect and
	// optimality columns (looping reads it too, so that no such file fails
	// on it), and whenever AllowsUnsure does.
	ReadsUnsure bool
	// Positive is the index of the positive class for precision, recall, F1,
	// NPV and TNR; -1 when the label has none (ordinal labels).
	Positive int
	// aliases map other accepted spellings (lower case) to a category index.
	aliases map[string]int
}

// SpecOf returns the Spec of a label; ok false for an unknown label.
func SpecOf(l Label) (Spec, bool) {
	switch l {
	case LabelSuccess:
		// "success" and "failure" are how Proctor's own verdicts (and
		// AgentRewardBench's functional judge) spell the two outcomes.
		return Spec{Label: l, Column: "trajectory_success",
			Categories: []string{"successful", "unsuccessful"}, Display: []string{"Successful", "Unsuccessful"},
			AllowsUnsure: true, ReadsUnsure: true, Positive: 0, aliases: map[string]int{"success": 0, "failure": 1}}, true
	case LabelSideEffect:
		return Spec{Label: l, Column: "trajectory_side_effect",
			Categories: []string{"yes", "no"}, Display: []string{"Yes", "No"},
			AllowsUnsure: true, ReadsUnsure: true, Positive: 0}, true
	case LabelLooping:
		return Spec{Label: l, Column: "trajectory_looping",
			Categories: []string{"yes", "no"}, Display: []string{"Yes", "No"},
			ReadsUnsure: true, Positive: 0}, true
	case LabelOptimality:
		return Spec{Label: l, Column: "trajectory_optimality",
			Categories: []string{"1", "2", "3", "4"},
			Display:    []string{"1. Complete Failure", "2. Suboptimal", "3. Somewhat Optimal", "4. Completely Optimal"},
			Ordinal:    true, ReadsUnsure: true, Positive: -1,
			aliases: map[string]int{"complete failure": 0, "suboptimal": 1, "somewhat optimal": 2, "completely optimal": 3}}, true
	case LabelScore:
		return Spec{Label: l, Column: "trajectory_score",
			Categories: []string{"1", "2", "3", "4", "5"}, Display: []string{"1", "2", "3", "4", "5"},
			Ordinal: true, Positive: -1}, true
	case LabelRubric:
		// "pass" is positive so that precision and recall say how well a
		// judge recognises a requirement met.
		return Spec{Label: l, Column: "rubric_pass",
			Categories: []string{"pass", "fail"}, Display: []string{"Pass", "Fail"},
			Positive: 0, aliases: map[string]int{"passed": 0, "failed": 1}}, true
	}
	return Spec{}, false
}

// Parse reads one value of the label, case-insensitively and with surrounding
// spaces ignored, and returns its canonical spelling: a category, Unsure (for
// a label that reads it), or "" for an empty value (not labelled). Accepted
// spellings: the categories and their AgentRewardBench display forms
// ("Successful", "2. Suboptimal"); for success also "success" and "failure";
// for ordinal labels the number alone, "N." followed by the category's name,
// or the name alone ("Suboptimal"). An unknown value is an error naming it and
// the allowed ones.
func (s Spec) Parse(raw string) (string, error) {
	v := strings.ToLower(strings.TrimSpace(raw))
	if v == "" {
		return "", nil
	}
	if v == Unsure {
		if s.ReadsUnsure {
			return Unsure, nil
		}
		return "", fmt.Errorf("%s: %q is not allowed: this label has no unsure answer (allowed: %s)", s.Column, raw, s.allowed())
	}
	if i, ok := s.index(v); ok {
		return s.Categories[i], nil
	}
	if s.Ordinal {
		if i, ok, err := s.parseNumbered(v); ok || err != nil {
			if err != nil {
				return "", fmt.Errorf("%s: %q: %w (allowed: %s)", s.Column, raw, err, s.allowed())
			}
			return s.Categories[i], nil
		}
	}
	return "", fmt.Errorf("%s: unknown value %q (allowed: %s)", s.Column, raw, s.allowed())
}

// index finds v (lower case) among the categories, display forms and aliases.
func (s Spec) index(v string) (int, bool) {
	for i := range s.Categories {
		if v == s.Categories[i] || v == strings.ToLower(s.Display[i]) {
			return i, true
		}
	}
	i, ok := s.aliases[v]
	return i, ok
}

// parseNumbered reads "N", "N.", "N. name" or "N.0" for an ordinal label: ok
// when v starts with a number, err when that number is out of range or the
// name after it belongs to another category.
func (s Spec) parseNumbered(v string) (int, bool, error) {
	digits := len(v) - len(strings.TrimLeft(v, "0123456789"))
	if digits == 0 {
		return 0, false, nil
	}
	n, err := strconv.Atoi(v[:digits])
	if err != nil {
		return 0, true, fmt.Errorf("not a number")
	}
	rest := strings.TrimSpace(v[digits:])
	if fraction, ok := strings.CutPrefix(rest, "."); ok && fraction != "" && strings.Trim(fraction, "0123456789") == "" {
		// A number written as a float, as spreadsheets do: 4.0 is 4, 2.5 is no
		// category.
		if strings.Trim(fraction, "0") != "" {
			return 0, true, fmt.Errorf("not a whole number")
		}
		rest = ""
	}
	rest = strings.TrimSpace(strings.TrimPrefix(rest, "."))
	first, _ := strconv.Atoi(s.Categories[0])
	i := n - first
	if i < 0 || i >= len(s.Categories) {
		return 0, true, fmt.Errorf("%d is out of range", n)
	}
	if rest != "" {
		named, ok := s.index(rest)
		if !ok || named != i {
			return 0, true, fmt.Errorf("the number %d and the name %q disagree", n, rest)
		}
	}
	return i, true, nil
}

// allowed lists the accepted values for messages.
func (s Spec) allowed() string {
	values := append([]string(nil), s.Display...)
	if s.ReadsUnsure {
		values = append(values, "Unsure")
	}
	return strings.Join(values, ", ")
}

// Code is the category index of a canonical value; ok false for "", Unsure and
// anything else.
func (s Spec) Code(canonical string) (int, bool) {
	for i, c := range s.Categories {
		if c == canonical {
			return i, true
		}
	}
	return 0, false
}

// DisplayOf is the AgentRewardBench spelling of a canonical value ("Unsure"
// for Unsure, "" for "").
func (s Spec) DisplayOf(canonical string) string {
	if canonical == Unsure {
		return "Unsure"
	}
	if i, ok := s.Code(canonical); ok {
		return s.Display[i]
	}
	return canonical
}
