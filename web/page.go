// Package web holds Proctor's templ components: the layout, pages and shared
// pieces. It renders data it is given and never touches the database.
package web

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/a-h/templ"

	"proctor/models"
)

// Page is what the layout needs on every page.
type Page struct {
	Title    string
	User     *models.User
	CSRF     string
	Path     string
	Flash    string
	Asset    func(name string) string
	HasAsset func(name string) bool
}

// SignedIn reports whether a user is signed in.
func (p Page) SignedIn() bool { return p.User != nil }

// Admin reports whether the signed-in user is an administrator.
func (p Page) Admin() bool { return p.User != nil && p.User.IsAdmin }

// Form carries submitted values and per-field errors for re-rendering a form.
type Form struct {
	Values map[string]string
	Errors map[string]string
	// Error is a message that belongs to no single field.
	Error string
}

// NewForm returns an empty form.
func NewForm() Form { return Form{Values: map[string]string{}, Errors: map[string]string{}} }

// Value returns a submitted value.
func (f Form) Value(name string) string { return f.Values[name] }

// Err returns the error attached to a field.
func (f Form) Err(name string) string { return f.Errors[name] }

// WithError attaches err to its field (or the form) using the client-safe message.
func (f Form) WithError(err error) Form {
	if f.Errors == nil {
		f.Errors = map[string]string{}
	}
	if field := models.ErrorField(err); field != "" {
		f.Errors[field] = models.ErrorMessage(err)
	} else {
		f.Error = models.ErrorMessage(err)
	}
	return f
}

// ErrorTitle is the page title for an HTTP error status.
func ErrorTitle(status int) string {
	switch status {
	case http.StatusNotFound:
		return "Not found"
	case http.StatusForbidden:
		return "Forbidden"
	case http.StatusUnauthorized:
		return "Sign-in required"
	case http.StatusTooManyRequests:
		return "Too many attempts"
	}
	if t := http.StatusText(status); t != "" {
		return t
	}
	return "Error"
}

// FormatTime renders a time for tables, in UTC.
func FormatTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

// FormatTimePtr renders an optional time.
func FormatTimePtr(t *time.Time) string {
	if t == nil {
		return "never"
	}
	return FormatTime(*t)
}

// timeOrDash renders an optional time, "—" when unknown or not yet.
func timeOrDash(t *time.Time) string {
	if t == nil {
		return "—"
	}
	return FormatTime(*t)
}

// Itoa formats an integer for templates.
func Itoa[T ~int | ~int64](n T) string { return fmt.Sprint(n) }

// Count writes a number with its noun, singular for one: "1 task",
// "2 tasks". Nouns whose plural is not the singular plus "s" give it after
// a slash: Count(n, "study/studies").
func Count[T ~int | ~int64](n T, noun string) string {
	one, many, irregular := strings.Cut(noun, "/")
	if !irregular {
		many = one + "s"
	}
	if n == 1 {
		return "1 " + one
	}
	return Itoa(n) + " " + many
}

// withNext links to an auth page that returns to next afterwards.
func withNext(path, next string) templ.SafeURL {
	if next == "" || next == "/" {
		return templ.SafeURL(path)
	}
	return templ.SafeURL(path + "?next=" + url.QueryEscape(next))
}
