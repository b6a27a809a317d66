package importer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"

	"proctor/models"
)

// invalid builds an EINVALID error whose message starts with where it happened.
func invalid(where, format string, args ...any) *models.Error {
	return models.Errorf(models.EINVALID, "%s: %s", where, fmt.Sprintf(format, args...))
}

// fieldErr builds an EINVALID error naming the place and the field.
func fieldErr(where, field, format string, args ...any) *models.Error {
	return models.Errorf(models.EINVALID, "%s: field %q: %s", where, field, fmt.Sprintf(format, args...))
}

// quoteID writes a task id bare when it is plain (17, a3f9, web-ds.12) and quoted
// otherwise, so spaces or odd characters cannot blur the message.
func quoteID(id string) string {
	if id == "" {
		return `""`
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._:-/", r)) {
			return strconv.Quote(id)
		}
	}
	return id
}

// splitArray checks that data is one JSON array and returns its elements.
func splitArray(data []byte) ([]json.RawMessage, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, models.Errorf(models.EINVALID, "the input is empty: expected a JSON array of tasks")
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			line, col := position(data, se.Offset)
			return nil, &models.Error{Code: models.EINVALID, Err: err,
				Message: fmt.Sprintf("malformed JSON at line %d, column %d: %s", line, col, strings.TrimPrefix(se.Error(), "json: "))}
		case errors.As(err, &te):
			return nil, &models.Error{Code: models.EINVALID, Err: err,
				Message: fmt.Sprintf("expected a JSON array of tasks, found %s", te.Value)}
		}
		return nil, &models.Error{Code: models.EINVALID, Message: "malformed JSON", Err: err}
	}
	return raws, nil
}

// position turns the offset of a json.SyntaxError (bytes read when the error was
// found) into a 1-based line and column.
func position(data []byte, offset int64) (line, col int) {
	at := int(offset) - 1
	if at < 0 {
		at = 0
	}
	if at > len(data) {
		at = len(data)
	}
	before := data[:at]
	line = 1 + bytes.Count(before, []byte("\n"))
	col = at - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// decodeErr explains a decoding failure of one task (or header) in words that name
// the place and, when known, the field.
func decodeErr(where string, err error) *models.Error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	msg := ""
	switch {
	case errors.As(err, &te):
		if te.Field == "" {
			msg = fmt.Sprintf("%s: expected %s, found %s", where, describeType(te.Type), te.Value)
		} else {
			msg = fmt.Sprintf("%s: field %q: expected %s, found %s", where, te.Field, describeType(te.Type), te.Value)
		}
	case errors.As(err, &se):
		msg = fmt.Sprintf("%s, column %d: malformed JSON: %s", where, se.Offset, strings.TrimPrefix(se.Error(), "json: "))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		msg = fmt.Sprintf("%s: field %s: unknown field", where, strings.TrimPrefix(err.Error(), "json: unknown field "))
	case errors.Is(err, io.ErrUnexpectedEOF):
		msg = fmt.Sprintf("%s: malformed JSON: unexpected end of input", where)
	default:
		msg = fmt.Sprintf("%s: malformed JSON: %s", where, strings.TrimPrefix(err.Error(), "json: "))
	}
	return &models.Error{Code: models.EINVALID, Message: msg, Err: err}
}

// describeType names the JSON shape a Go type expects.
func describeType(t reflect.Type) string {
	if t == nil {
		return "another type"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.String {
			return "an array of strings"
		}
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return t.String()
}

// canonicalJSON re-encodes a JSON value compactly with object keys sorted and
// numbers kept as written, so that formatting and key order do not change it.
func canonicalJSON(raw []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", err
	}
	return encodeCanonical(v)
}

// encodeCanonical encodes v compactly without HTML escaping (maps sort their keys).
func encodeCanonical(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// hiddenJSON canonicalizes an optional JSON value: absent or null gives "".
func hiddenJSON(raw json.RawMessage) (string, error) {
	if isNull(raw) {
		return "", nil
	}
	return canonicalJSON(raw)
}

// isNull reports whether raw is absent or the JSON null.
func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

// jsonKind names the JSON type of raw for messages: object, array, string, …
func jsonKind(raw json.RawMessage) string {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return "nothing"
	}
	switch t[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}
