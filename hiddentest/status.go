package hiddentest

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
)

// Status is an expected HTTP status: an exact code (written as a number, 404)
// or a class (written as a string, "2xx"). Exactly one of Code and Class is set.
type Status struct {
	// Code is an exact status code, 100 to 599.
	Code int
	// Class is the first digit of a status class, 1 to 5.
	Class int
}

// statusHint is the message of a malformed status; the parser names its path.
const statusHint = `give a status code from 100 to 599 (404) or a class from "1xx" to "5xx"`

// UnmarshalJSON reads 404 or "2xx".
func (s *Status) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '"' {
		var class string
		if err := json.Unmarshal(data, &class); err != nil {
			return errors.New(statusHint)
		}
		if len(class) != 3 || class[0] < '1' || class[0] > '5' || class[1:] != "xx" {
			return errors.New(statusHint)
		}
		*s = Status{Class: int(class[0] - '0')}
		return nil
	}
	code, err := strconv.Atoi(string(data))
	if err != nil || code < 100 || code > 599 {
		return errors.New(statusHint)
	}
	*s = Status{Code: code}
	return nil
}

// MarshalJSON writes a code as a number and a class as a string.
func (s Status) MarshalJSON() ([]byte, error) {
	if s.Class != 0 {
		return json.Marshal(s.String())
	}
	return []byte(strconv.Itoa(s.Code)), nil
}

// String is "404" or "2xx".
func (s Status) String() string {
	if s.Class != 0 {
		return strconv.Itoa(s.Class) + "xx"
	}
	return strconv.Itoa(s.Code)
}

// Matches reports whether a response's status code satisfies the expectation.
func (s Status) Matches(code int) bool {
	if s.Class != 0 {
		return code/100 == s.Class
	}
	return code == s.Code
}
