package apiclient

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"proctor/api"
	"proctor/models"
)

// Error is an error answer of the API ({"error":{"code","field","message"}})
// or of the storage a presigned URL points to. It unwraps to the equivalent
// *models.Error, so models.ErrorCode and errors.As work on it as on the
// server's own errors.
type Error struct {
	Status  int    // the HTTP status
	Code    string // models.E* code; derived from Status when the body has none
	Field   string // the input field at fault, if any
	Message string // client-safe message
	// Problems are every problem of input the server checked whole, each
	// with its field; the first is also Field and Message. Nil for one.
	Problems   []api.Problem
	RequestID  string // X-Request-Id, to quote when reporting a problem
	RetryAfter time.Duration
}

// problemText is a problem as a line: its field, then its message.
func problemText(p api.Problem) string {
	if p.Field == "" {
		return p.Message
	}
	return p.Field + ": " + p.Message
}

// Error renders the message with its field (every problem, a line each, when
// there are several), and the status and request id when the server gave no
// message of its own.
func (e *Error) Error() string {
	msg := problemText(api.Problem{Field: e.Field, Message: e.Message})
	if len(e.Problems) > 1 {
		lines := make([]string, len(e.Problems))
		for i, p := range e.Problems {
			lines[i] = problemText(p)
		}
		msg = fmt.Sprintf("%d problems:\n  %s", len(lines), strings.Join(lines, "\n  "))
	}
	if e.Code == models.EINTERNAL && e.RequestID != "" {
		msg += fmt.Sprintf(" (HTTP %d, request id %s)", e.Status, e.RequestID)
	}
	return msg
}

// Unwrap exposes the error as a *models.Error with the same code, field and message.
func (e *Error) Unwrap() error {
	return &models.Error{Code: e.Code, Field: e.Field, Message: e.Message}
}

// ConnectionError is a call that got no complete answer: the server was
// unreachable, or the connection broke while sending or receiving.
type ConnectionError struct {
	Method string
	URL    string // without its query
	Err    error
	Tries  int // how many times the call was sent
}

func (e *ConnectionError) Error() string {
	tries := ""
	if e.Tries > 1 {
		tries = fmt.Sprintf(" (tried %d times)", e.Tries)
	}
	return fmt.Sprintf("%s %s: connection failed%s: %v", e.Method, e.URL, tries, e.Err)
}

func (e *ConnectionError) Unwrap() error { return e.Err }

// IsConnectionError reports whether err is a lost or refused connection (as
// opposed to an answer of the server, or a canceled context).
func IsConnectionError(err error) bool {
	var ce *ConnectionError
	return errors.As(err, &ce)
}

// codeOfStatus is the models.E* code of an HTTP status, for answers without
// the API's error body (a proxy's page, storage's XML).
func codeOfStatus(status int) string {
	switch status {
	case http.StatusBadRequest:
		return models.EINVALID
	case http.StatusUnauthorized:
		return models.EUNAUTHORIZED
	case http.StatusForbidden:
		return models.EFORBIDDEN
	case http.StatusNotFound, http.StatusMethodNotAllowed:
		return models.ENOTFOUND
	case http.StatusConflict, http.StatusPreconditionFailed:
		return models.ECONFLICT
	case http.StatusRequestEntityTooLarge:
		return models.ETOOLARGE
	case http.StatusTooManyRequests:
		return models.ERATELIMIT
	case http.StatusServiceUnavailable, http.StatusBadGateway, http.StatusGatewayTimeout:
		return models.EUNAVAILABLE
	}
	return models.EINTERNAL
}

// decodeError turns an error answer into *Error, reading at most maxErrorBody
// bytes of it: the API's JSON shape, S3's XML shape, or the status alone.
func decodeError(res *http.Response) *Error {
	defer res.Body.Close()
	e := &Error{Status: res.StatusCode, Code: codeOfStatus(res.StatusCode), RequestID: res.Header.Get("X-Request-Id")}
	if s, err := strconv.Atoi(res.Header.Get("Retry-After")); err == nil && s > 0 {
		e.RetryAfter = time.Duration(s) * time.Second
	}
	body, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
	var answer api.ErrorResponse
	var s3 struct {
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	}
	switch {
	case json.Unmarshal(body, &answer) == nil && answer.Error.Message != "":
		if answer.Error.Code != "" {
			e.Code = answer.Error.Code
		}
		e.Field, e.Message = answer.Error.Field, answer.Error.Message
		if len(answer.Error.Problems) > 1 {
			e.Problems = answer.Error.Problems
		}
	case xml.Unmarshal(body, &s3) == nil && (s3.Code != "" || s3.Message != ""):
		e.Message = fmt.Sprintf("storage answered %d %s: %s", res.StatusCode, s3.Code, s3.Message)
	default:
		e.Message = fmt.Sprintf("the server answered %s", res.Status)
		if text := firstLine(body); text != "" {
			e.Message += ": " + text
		}
	}
	if e.RetryAfter > 0 && e.Code == models.ERATELIMIT {
		e.Message += fmt.Sprintf(" (try again in %s)", e.RetryAfter)
	}
	return e
}

// firstLine is the start of a plain-text body, for a message.
func firstLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if strings.HasPrefix(s, "<") { // an HTML page says nothing a terminal can show
		return ""
	}
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// isNetError reports a broken connection while reading an answer.
func isNetError(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.ErrUnexpectedEOF)
}
