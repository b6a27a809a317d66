package importer

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"proctor/models"
)

// subsetFileJSON is a WebArena-Verified subset file; Proctor accepts the same shape
// for every format. Task ids may be integers or strings.
type subsetFileJSON struct {
	Description *string           `json:"description"`
	TaskIDs     []json.RawMessage `json:"task_ids"`
	Checksum    *string           `json:"checksum"`
}

// parseSubsetFile reads one --subset file.
func parseSubsetFile(f SubsetFile, lim limits) (Subset, error) {
	where := fmt.Sprintf("subset %q", f.Name)
	if f.R == nil {
		return Subset{}, invalid(where, "no file given")
	}
	data, err := readLimited(f.R, lim.input, where)
	if err != nil {
		return Subset{}, err
	}
	var in subsetFileJSON
	if err := json.Unmarshal(data, &in); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line, col := position(data, se.Offset)
			return Subset{}, &models.Error{Code: models.EINVALID, Err: err,
				Message: fmt.Sprintf("%s: malformed JSON at line %d, column %d: %s", where, line, col, strings.TrimPrefix(se.Error(), "json: "))}
		}
		return Subset{}, decodeErr(where, err)
	}
	if in.TaskIDs == nil {
		return Subset{}, fieldErr(where, "task_ids", "missing: expected an array of task ids")
	}
	desc, sum := "", ""
	if in.Description != nil {
		desc = *in.Description
	}
	if in.Checksum != nil {
		sum = *in.Checksum
	}
	return newSubset(where, f.Name, desc, in.TaskIDs, sum)
}

// newSubset converts task ids written as integers or strings and checks the
// declared checksum, when there is one, against the ids.
func newSubset(where, name, description string, rawIDs []json.RawMessage, declared string) (Subset, error) {
	ids := make([]string, 0, len(rawIDs))
	for i, raw := range rawIDs {
		id, err := taskIDOf(raw)
		if err != nil {
			return Subset{}, fieldErr(where, "task_ids", "item %d: %v", i, err)
		}
		ids = append(ids, id)
	}
	sum, err := idsChecksum(ids)
	if err != nil {
		return Subset{}, &models.Error{Code: models.EINVALID, Message: where + ": task ids cannot be encoded", Err: err}
	}
	declared = strings.TrimSpace(declared)
	if declared != "" && !strings.EqualFold(declared, sum) {
		return Subset{}, invalid(where, "checksum mismatch: file says %s, sorted task ids hash to %s", declared, sum)
	}
	return Subset{Name: name, Description: strings.TrimSpace(description), Checksum: sum, ExternalIDs: ids}, nil
}

// taskIDOf reads a task id written as a JSON string or integer.
func taskIDOf(raw json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		if strings.TrimSpace(s) == "" {
			return "", errors.New("empty task id")
		}
		return s, nil
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err == nil {
		if v, err := strconv.ParseInt(string(n), 10, 64); err == nil {
			return strconv.FormatInt(v, 10), nil
		}
		return "", fmt.Errorf("%s is not an integer task id", n)
	}
	return "", fmt.Errorf("expected a task id (integer or string), found %s", jsonKind(raw))
}

// idsChecksum is the subset checksum of WebArena-Verified: the SHA-256 hex of the
// sorted task ids written as compact JSON, [1,2,3]. When every id is a decimal
// integer the ids sort and encode as numbers (reproducing the published subset
// checksums); otherwise they sort and encode as strings, ["a","b"].
func idsChecksum(ids []string) (string, error) {
	nums := make([]int64, 0, len(ids))
	allInts := true
	for _, id := range ids {
		v, ok := decimalID(id)
		if !ok {
			allInts = false
			break
		}
		nums = append(nums, v)
	}
	var enc string
	var err error
	if allInts {
		sort.Slice(nums, func(i, j int) bool { return nums[i] < nums[j] })
		enc, err = encodeCanonical(nums)
	} else {
		strs := append([]string(nil), ids...)
		sort.Strings(strs)
		enc, err = encodeCanonical(strs)
	}
	if err != nil {
		return "", err
	}
	return sha256Hex([]byte(enc)), nil
}

// decimalID reports whether id is an integer written canonically (17, not 017).
func decimalID(id string) (int64, bool) {
	v, err := strconv.ParseInt(id, 10, 64)
	if err != nil || strconv.FormatInt(v, 10) != id {
		return 0, false
	}
	return v, true
}

// checkSubsetName applies models.ValidateSubsetName, naming where the subset came from.
func checkSubsetName(name, where string) error {
	if err := models.ValidateSubsetName(name); err != nil {
		return invalid(where, "%s", models.ErrorMessage(err))
	}
	return nil
}

// resolveSubset checks a subset's ids against the dataset and orders them like the
// dataset, so that the same subset always reads the same way.
func resolveSubset(s *Subset, index map[string]int, where string) error {
	if len(s.ExternalIDs) == 0 {
		return invalid(where, "the subset has no tasks")
	}
	seen := make(map[string]bool, len(s.ExternalIDs))
	for _, id := range s.ExternalIDs {
		if seen[id] {
			return invalid(where, "task id %s is listed twice", quoteID(id))
		}
		seen[id] = true
		if _, ok := index[id]; !ok {
			return invalid(where, "task id %s is not in the benchmark", quoteID(id))
		}
	}
	sort.Slice(s.ExternalIDs, func(i, j int) bool { return index[s.ExternalIDs[i]] < index[s.ExternalIDs[j]] })
	return nil
}
