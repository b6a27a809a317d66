// Package models holds Proctor's domain types and the pure rules around them.
// It imports nothing else from the project.
package models

import (
	"errors"
	"fmt"
	"time"
)

// Error codes shared by every layer; handlers map them to HTTP statuses in one place.
const (
	EINVALID      = "invalid"        // the input is malformed or breaks a rule
	ENOTFOUND     = "not_found"      // the thing does not exist or is not visible to the caller
	ECONFLICT     = "conflict"       // the thing already exists or the state forbids the change
	EUNAUTHORIZED = "unauthorized"   // no valid credentials
	EFORBIDDEN    = "forbidden"      // credentials are valid but lack the permission
	ETOOLARGE     = "too_large"      // the input exceeds a size limit
	ERATELIMIT    = "rate_limited"   // too many attempts; try again later
	EUNAVAILABLE  = "unavailable"    // a dependency is not reachable
	EGONE         = "gone"           // the thing existed but is over (an ended episode)
	EINTERNAL     = "internal_error" // a bug or an unexpected failure; details are logged, not shown
)

// Error is an application error: Code and Message are safe to show to a client,
// Field names the offending input when there is one, and Err keeps the internal cause.
type Error struct {
	Code    string
	Message string
	Field   string
	Err     error
	// RetryAfter is, for ERATELIMIT, how long to wait before trying again
	// (0: a minute). It is sent as the Retry-After header.
	RetryAfter time.Duration
}

// RateLimited builds an ERATELIMIT error that says when to try again.
func RateLimited(wait time.Duration, format string, args ...any) *Error {
	return &Error{Code: ERATELIMIT, Message: fmt.Sprintf(format, args...), RetryAfter: wait}
}

// ErrorRetryAfter is how long the caller of a refused request should wait:
// the RetryAfter of err's first *Error, a minute when it gives none.
func ErrorRetryAfter(err error) time.Duration {
	var e *Error
	if errors.As(err, &e) && e.RetryAfter > 0 {
		return e.RetryAfter
	}
	return time.Minute
}

// Error returns the message with the field and the internal cause, for logs.
func (e *Error) Error() string {
	msg := e.Message
	if e.Field != "" {
		msg = e.Field + ": " + msg
	}
	if e.Err != nil {
		return msg + ": " + e.Err.Error()
	}
	return msg
}

// Unwrap exposes the internal cause to errors.Is and errors.As.
func (e *Error) Unwrap() error { return e.Err }

// Errorf builds an Error with a client-safe formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// FieldError builds an EINVALID error attached to one input field.
func FieldError(field, format string, args ...any) *Error {
	return &Error{Code: EINVALID, Field: field, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain, EINTERNAL otherwise.
func ErrorCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	if err == nil {
		return ""
	}
	return EINTERNAL
}

// ErrorMessage returns the client-safe message of err; internal errors get a generic one.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "An internal error occurred."
}

// ErrorProblems returns every *Error that err joins (errors.Join, in order,
// depth first), or err's own *Error alone. Input checked whole is refused
// with one problem per field at fault. It returns nil when err holds an
// error that is not an *Error anywhere it joins: an internal failure must
// not pass for a list of the caller's mistakes.
func ErrorProblems(err error) []*Error {
	var out []*Error
	internal := false
	var walk func(error)
	walk = func(err error) {
		switch e := err.(type) {
		case *Error:
			out = append(out, e)
		case interface{ Unwrap() []error }:
			for _, inner := range e.Unwrap() {
				walk(inner)
			}
		case interface{ Unwrap() error }:
			if inner := e.Unwrap(); inner != nil {
				walk(inner)
			} else {
				internal = true
			}
		default:
			internal = true
		}
	}
	if err != nil {
		walk(err)
	}
	if internal {
		return nil
	}
	return out
}

// ErrorField returns the offending field of err, if any.
func ErrorField(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Field
	}
	return ""
}
