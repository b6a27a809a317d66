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
	b, err := columnBytes(src, "JSON list")
	if err != nil || len(b) == 0 {
		*s = nil
		return err
	}
	return json.Unmarshal(b, (*[]T)(s))
}

// columnBytes is a text column's bytes as the driver gives them (nil for
// NULL), what names the type in the error for anything else.
func columnBytes(src any, what string) ([]byte, error) {
	switch v := src.(type) {
	case nil:
		return nil, nil
	case string:
		return []byte(v), nil
	case []byte:
		return v, nil
	}
	return nil, fmt.Errorf("%s: cannot scan %T", what, src)
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
	b, err := columnBytes(src, "JSON map")
	if err != nil || len(b) == 0 {
		*m = nil
		return err
	}
	return json.Unmarshal(b, (*map[string]T)(m))
}
