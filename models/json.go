package models

import (
	"database/sql/driver"
	"encoding/json"
	"fmt"
)

// JSONList is a list stored as a JSON array in a text column.
type JSONList[T any] []T

// JSONStrings is a string list stored as a JSON array.
type JSONStrings = JSONList[string]

// JSONInts is an integer list stored as a JSON array.
type JSONInts = JSONList[int]

// Value encodes the list as JSON; a nil list is stored as [].
func (s JSONList[T]) Value() (driver.Value, error) {
	if s == nil {
		return "[]", nil
	}
	b, err := json.Marshal([]T(s))
	return string(b), err
}

// Scan decodes a JSON array from the database.
func (s *JSONList[T]) Scan(src any) error {
	var b []byte
	switch v := src.(type) {
	case nil:
		*s = nil
		return nil
	case string:
		b = []byte(v)
	case []byte:
		b = v
	default:
		return fmt.Errorf("JSON list: cannot scan %T", src)
	}
	if len(b) == 0 {
		*s = nil
		return nil
	}
	return json.Unmarshal(b, (*[]T)(s))
}

// JSONMap is a string-keyed map stored as a JSON object in a text column.
type JSONMap[T any] map[string]T

// Value encodes the map as JSON; a nil map is stored as {}.
func (m JSONMap[T]) Value() (driver.Value, error) {
	if m == nil {
		return "{}", nil
	}
	b, err := json.Marshal(map[string]T(m))
	return string(b), err
}

// Scan decodes a JSON object from the database.
func (m *JSONMap[T]) Scan(src any) error {
	var b []byte
	switch v := src.(type) {
	case nil:
		*m = nil
		return nil
	case string:
		b = []byte(v)
	case []byte:
		b = v
	default:
		return fmt.Errorf("JSON map: cannot scan %T", src)
	}
	if len(b) == 0 {
		*m = nil
		return nil
	}
	return json.Unmarshal(b, (*map[string]T)(m))
}
