package agreement

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// ReadOptions control how an input file is read.
type ReadOptions struct {
	// Name is the file name that messages and RowErrors cite.
	Name string
	// SkipBadRows leaves a malformed row out, recording why, instead of failing
	// the whole import on it.
	SkipBadRows bool
}

// Columns of the human and judge files besides the label columns.
const (
	ColumnAnnotator  = "annotator_name"
	ColumnBenchmark  = "benchmark"
	ColumnTaskID     = "task_id"
	ColumnModel      = "model_name"
	ColumnExperiment = "exp_name"
	ColumnJudge      = "judge"
)

// rowSink collects rows and bad rows, and stops at the first bad row unless
// bad rows are skipped.
type rowSink struct {
	opts    ReadOptions
	skipped []RowError
}

// bad records a bad row; it returns the error that ends the import, or nil
// when the row is skipped.
func (s *rowSink) bad(line int, format string, args ...any) error {
	row := RowError{File: s.opts.Name, Line: line, Reason: fmt.Sprintf(format, args...)}
	if !s.opts.SkipBadRows {
		return badRow(row)
	}
	s.skipped = append(s.skipped, row)
	return nil
}

// where prefixes a whole-file message with the file name.
func (s *rowSink) where() string {
	if s.opts.Name == "" {
		return "input"
	}
	return s.opts.Name
}

// ReadHumanCSV reads human labels in AgentRewardBench's annotations.csv layout:
// a header row naming annotator_name, benchmark, task_id, model_name, optional
// exp_name, and one or more label columns (trajectory_success,
// trajectory_side_effect, trajectory_optimality, trajectory_looping,
// trajectory_score), in any order; other columns are ignored. Header names are
// matched case-insensitively.
//
// A bad row (a CSV syntax error, a wrong number of fields, an empty key field,
// an unknown label value, no label value at all, a second row by the same
// annotator for the same item) fails the import with an EINVALID error naming
// its line and reason (errors.Is ErrBadRow), or with opts.SkipBadRows is left
// out and returned among the skipped rows. A missing column or an empty file
// is EINVALID whatever the options.
func ReadHumanCSV(r io.Reader, opts ReadOptions) ([]HumanLabel, []RowError, error) {
	sink := &rowSink{opts: opts}
	var labels []HumanLabel
	first := map[string]int{} // annotator and key -> line of its first row
	err := readCSV(r, sink, []string{ColumnAnnotator, ColumnBenchmark, ColumnTaskID, ColumnModel},
		func(line int, row csvRow) error {
			key, annotator, missing := row.key(ColumnAnnotator)
			if missing != "" {
				return sink.bad(line, "empty %s", missing)
			}
			values, problem := parseValues(row.label)
			switch {
			case problem != "":
				return sink.bad(line, "%s", problem)
			case len(values) == 0:
				return sink.bad(line, "no label value: every label column is empty")
			}
			id := annotator + "\x00" + key.Benchmark + "\x00" + key.Model + "\x00" + key.TaskID
			if prev, dup := first[id]; dup {
				return sink.bad(line, "annotator %q already labelled %s on line %d", annotator, key, prev)
			}
			first[id] = line
			exp, _ := row.get(ColumnExperiment)
			labels = append(labels, HumanLabel{Key: key, Annotator: annotator, Experiment: strings.TrimSpace(exp), Values: values, Line: line})
			return nil
		})
	if err != nil {
		return nil, nil, err
	}
	return labels, sink.skipped, nil
}

// ReadVerdictsCSV reads judge verdicts from CSV: a header row naming benchmark,
// model_name, task_id, judge and one or more label columns (the human file's
// names), in any order; other columns (exp_name, reasoning, cost) are ignored.
// An empty label cell means the judge did not answer that question. Bad rows
// are handled as ReadHumanCSV handles them; a second verdict by the same judge
// for the same item is a bad row.
func ReadVerdictsCSV(r io.Reader, opts ReadOptions) ([]Verdict, []RowError, error) {
	sink := &rowSink{opts: opts}
	dups := verdictLines{}
	var verdicts []Verdict
	err := readCSV(r, sink, []string{ColumnBenchmark, ColumnModel, ColumnTaskID, ColumnJudge},
		func(line int, row csvRow) error {
			key, judge, missing := row.key(ColumnJudge)
			if missing != "" {
				return sink.bad(line, "empty %s", missing)
			}
			values, problem := parseValues(row.label)
			v := Verdict{Key: key, Judge: judge, Values: values, Line: line}
			if reason := dups.check(v, problem); reason != "" {
				return sink.bad(line, "%s", reason)
			}
			verdicts = append(verdicts, v)
			return nil
		})
	if err != nil {
		return nil, nil, err
	}
	return verdicts, sink.skipped, nil
}

// verdictLines remembers the line of each judge's first verdict per item.
type verdictLines map[string]int

// check returns why v is a bad row ("" when it is not), given the problems
// found in its values, and remembers it when it is good.
func (d verdictLines) check(v Verdict, problem string) string {
	switch {
	case problem != "":
		return problem
	case len(v.Values) == 0:
		return "no label value: every label is empty"
	}
	id := v.Judge + "\x00" + v.Benchmark + "\x00" + v.Model + "\x00" + v.TaskID
	if prev, dup := d[id]; dup {
		return fmt.Sprintf("judge %q already gave a verdict for %s on line %d", v.Judge, v.Key, prev)
	}
	d[id] = v.Line
	return ""
}

// csvRow is one data row with the header's column positions.
type csvRow struct {
	columns map[string]int
	fields  []string
}

// get is the raw value of a column; ok false when the file has no such column.
func (r csvRow) get(column string) (string, bool) {
	i, ok := r.columns[column]
	if !ok {
		return "", false
	}
	return r.fields[i], true
}

// label is the raw value of a label's column.
func (r csvRow) label(l Label) (string, bool) {
	spec, _ := SpecOf(l)
	return r.get(spec.Column)
}

// key reads benchmark, model_name and task_id and the named party column
// (annotator_name or judge), trimmed; missing names the first empty one.
func (r csvRow) key(party string) (key Key, name, missing string) {
	field := func(column string) string {
		v, _ := r.get(column)
		v = strings.TrimSpace(v)
		if v == "" && missing == "" {
			missing = column
		}
		return v
	}
	name = field(party)
	key = Key{Benchmark: field(ColumnBenchmark), Model: field(ColumnModel), TaskID: field(ColumnTaskID)}
	return key, name, missing
}

// readCSV reads the header, checks the required columns and at least one label
// column, then calls visit for each data row with its line number. A row with
// a syntax error or the wrong number of fields goes to sink.bad.
func readCSV(r io.Reader, sink *rowSink, required []string, visit func(line int, row csvRow) error) error {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1 // counted here, so that a short row is a bad row with its line
	header, err := cr.Read()
	switch {
	case errors.Is(err, io.EOF):
		return invalidf("%s is empty: expected a header row with %s and label columns", sink.where(), strings.Join(required, ", "))
	case err != nil:
		return invalidf("%s: cannot read the header row: %v", sink.where(), err)
	}
	columns := map[string]int{}
	for i, h := range header {
		if i == 0 {
			h = strings.TrimPrefix(h, "\ufeff") // a byte-order mark spreadsheets write
		}
		h = strings.ToLower(strings.TrimSpace(h))
		if h == "" {
			continue
		}
		if _, dup := columns[h]; dup {
			return invalidf("%s: the header names column %s twice", sink.where(), h)
		}
		columns[h] = i
	}
	var missing []string
	for _, c := range required {
		if _, ok := columns[c]; !ok {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return invalidf("%s: missing column %s (the header has %s)", sink.where(), strings.Join(missing, ", "), strings.Join(header, ", "))
	}
	hasLabel := false
	for _, l := range Labels() {
		spec, _ := SpecOf(l)
		_, ok := columns[spec.Column]
		hasLabel = hasLabel || ok
	}
	if !hasLabel {
		return invalidf("%s: no label column: expected at least one of %s", sink.where(), labelColumns())
	}

	for {
		fields, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			if err := sink.bad(pe.StartLine, "malformed CSV: %v", pe.Err); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", sink.where(), err)
		}
		line, _ := cr.FieldPos(0)
		if len(fields) != len(header) {
			if err := sink.bad(line, "has %d fields, the header has %d", len(fields), len(header)); err != nil {
				return err
			}
			continue
		}
		if err := visit(line, csvRow{columns: columns, fields: fields}); err != nil {
			return err
		}
	}
}

// ReadVerdictsJSONL reads judge verdicts from JSON Lines: one JSON object a
// line with the judge CSV's keys (benchmark, model_name, task_id, judge and
// label keys such as trajectory_success), other keys ignored, blank lines
// skipped. A label value may be a string with any spelling Spec.Parse accepts,
// a whole number for an ordinal label (4), a boolean for a two-category label
// (true is the first category: successful, yes), or null for no answer. Key
// fields may be strings or numbers (a numeric task_id). Bad lines are handled
// as ReadVerdictsCSV handles bad rows.
func ReadVerdictsJSONL(r io.Reader, opts ReadOptions) ([]Verdict, []RowError, error) {
	sink := &rowSink{opts: opts}
	dups := verdictLines{}
	var verdicts []Verdict
	br := bufio.NewReader(r)
	for line := 1; ; line++ {
		text, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, nil, fmt.Errorf("read %s: %w", sink.where(), err)
		}
		if trimmed := bytes.TrimSpace(text); len(trimmed) > 0 {
			v, reason := parseVerdictLine(trimmed, line)
			if reason == "" {
				reason = dups.check(v, "")
			}
			if reason != "" {
				if err := sink.bad(line, "%s", reason); err != nil {
					return nil, nil, err
				}
			} else {
				verdicts = append(verdicts, v)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
	}
	return verdicts, sink.skipped, nil
}

// parseVerdictLine reads one JSON Lines verdict; reason says why it is bad.
func parseVerdictLine(text []byte, line int) (Verdict, string) {
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil || obj == nil {
		return Verdict{}, "not a JSON object" + jsonReason(err)
	}
	if dec.More() {
		return Verdict{}, "more than one JSON value on the line"
	}
	var missing []string
	scalar := func(key string) string {
		var s string
		switch v := obj[key].(type) {
		case string:
			s = strings.TrimSpace(v)
		case json.Number:
			s = v.String()
		}
		if s == "" {
			missing = append(missing, key)
		}
		return s
	}
	v := Verdict{Line: line, Judge: scalar(ColumnJudge), Key: Key{
		Benchmark: scalar(ColumnBenchmark), Model: scalar(ColumnModel), TaskID: scalar(ColumnTaskID),
	}}
	if len(missing) > 0 {
		return v, "missing or empty " + strings.Join(missing, ", ")
	}
	var problems []string
	values, problem := parseValues(func(l Label) (string, bool) {
		spec, _ := SpecOf(l)
		raw, ok := obj[spec.Column]
		if !ok {
			return "", false
		}
		s, err := jsonLabelText(spec, raw)
		if err != nil {
			problems = append(problems, err.Error())
			return "", false
		}
		return s, true
	})
	if problem != "" {
		problems = append(problems, problem)
	}
	v.Values = values
	return v, strings.Join(problems, "; ")
}

// jsonLabelText turns a JSON label value into text for Spec.Parse.
func jsonLabelText(spec Spec, raw any) (string, error) {
	switch x := raw.(type) {
	case nil:
		return "", nil
	case string:
		return x, nil
	case json.Number:
		return x.String(), nil
	case bool:
		if len(spec.Categories) != 2 || spec.Ordinal {
			return "", fmt.Errorf("%s: %v is not a value of an ordinal label (allowed: %s)", spec.Column, x, spec.allowed())
		}
		if x {
			return spec.Categories[0], nil
		}
		return spec.Categories[1], nil
	}
	return "", fmt.Errorf("%s: expected text, a number or a boolean, got %s", spec.Column, jsonKind(raw))
}

func jsonKind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	}
	return fmt.Sprintf("%T", v)
}

func jsonReason(err error) string {
	if err == nil {
		return ""
	}
	return ": " + err.Error()
}
