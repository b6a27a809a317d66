package models

import (
	"database/sql/driver"
	"encoding/json"
	"fmt"
)

// JSONStrings is a string list stored as a JSON array in a text column.
type JSONStrings []string

// Value encodes the list as JSON; a nil list is stored as [].
func (s JSONStrings) Value() (driver.Value, error) {
	if s == nil {
		return "[]", nil
	}
	b, err := json.Marshal([]string(s))
	return string(b), err
}

// Scan decodes a JSON array from the database.
func (s *JSONStrings) Scan(src any) error {
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
		return fmt.Errorf("JSONStrings: cannot scan %T", src)
	}
	if len(b) == 0 {
		*s = nil
		return nil
	}
	return json.Unmarshal(b, (*[]string)(s))
}
