package vault

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/url"
	"slices"
	"strings"
)

// Redacted is what a secret is replaced with in recorded text.
const Redacted = "[redacted]"

// MinRedactedLength is the shortest secret a Redactor looks for: shorter
// values would replace ordinary words.
const MinRedactedLength = 6

// Redactor removes known secrets (an agent's token or API key, the judge's
// key) from text Proctor records: errors, steps, judge rationales and logs.
// It finds each secret as written and in the forms it travels in (JSON
// string escapes, URL query and path escapes, base64). The zero value and a
// nil Redactor redact nothing.
type Redactor struct {
	replacer *strings.Replacer
}

// NewRedactor returns a Redactor for secrets; empty and too-short values
// are skipped.
func NewRedactor(secrets ...string) *Redactor {
	var forms []string
	for _, s := range secrets {
		if len(s) < MinRedactedLength {
			continue
		}
		quoted, _ := json.Marshal(s)
		forms = append(forms, s, string(quoted[1:len(quoted)-1]), url.QueryEscape(s), url.PathEscape(s),
			base64.StdEncoding.EncodeToString([]byte(s)), base64.RawStdEncoding.EncodeToString([]byte(s)),
			base64.URLEncoding.EncodeToString([]byte(s)), base64.RawURLEncoding.EncodeToString([]byte(s)))
	}
	if len(forms) == 0 {
		return &Redactor{}
	}
	// Longer forms first, so a form that contains another is replaced whole.
	slices.SortFunc(forms, func(a, b string) int { return len(b) - len(a) })
	forms = slices.Compact(forms)
	pairs := make([]string, 0, 2*len(forms))
	for _, f := range forms {
		pairs = append(pairs, f, Redacted)
	}
	return &Redactor{replacer: strings.NewReplacer(pairs...)}
}

// Text returns s with every secret replaced by Redacted.
func (r *Redactor) Text(s string) string {
	if r == nil || r.replacer == nil || s == "" {
		return s
	}
	return r.replacer.Replace(s)
}

// Logger returns l writing through a handler that redacts the message and
// every string attribute (errors included) before l's own handler sees them.
func (r *Redactor) Logger(l *slog.Logger) *slog.Logger {
	if r == nil || r.replacer == nil {
		return l
	}
	return slog.New(redactingHandler{next: l.Handler(), r: r})
}

// redactingHandler is a slog.Handler that redacts before it passes on.
type redactingHandler struct {
	next slog.Handler
	r    *Redactor
}

func (h redactingHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

func (h redactingHandler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, h.r.Text(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h redactingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		clean[i] = h.attr(a)
	}
	return redactingHandler{next: h.next.WithAttrs(clean), r: h.r}
}

func (h redactingHandler) WithGroup(name string) slog.Handler {
	return redactingHandler{next: h.next.WithGroup(name), r: h.r}
}

// attr redacts an attribute's value, inside groups too; values that are not
// strings are redacted as the text they print as.
func (h redactingHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.r.Text(v.String()))
	case slog.KindGroup:
		group := v.Group()
		clean := make([]any, len(group))
		for i, g := range group {
			clean[i] = h.attr(g)
		}
		return slog.Group(a.Key, clean...)
	case slog.KindAny:
		if text := v.String(); h.r.Text(text) != text {
			return slog.String(a.Key, h.r.Text(text))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
