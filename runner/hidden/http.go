package hidden

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"syscall"
	"time"

	"proctor/hiddentest"
	"proctor/models"
	"proctor/netguard"
)

// MaxBodyBytes is the most of a response body the executor reads. A larger
// body (or one that never ends) is judged on its first MaxBodyBytes bytes and
// the step says so: a page that needs more than this to show what a test looks
// for is not a page a visitor would wait for, and an endless body must not
// hold a worker.
const MaxBodyBytes = 4 << 20

// VisitorToken is the placeholder in a candidate's URLs replaced by a fresh
// value for every test (docs/hidden-tests.md).
const VisitorToken = "{visitor}"

// NewClient returns the HTTP client request and system tests use: every
// connection goes through guard, the SSRF guard agent endpoints use (with the
// same PROCTOR_AGENT_ALLOW_HOSTS allow-list), because a candidate URL is
// submitted by a team and called from the workers. It follows no redirects
// itself and has no overall timeout: RunRequest follows redirects one exchange
// at a time, and every test bounds itself with its own timeout.
func NewClient(guard *netguard.Guard) *http.Client {
	return &http.Client{
		Transport:     guard.Transport(),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// candidateURLs are a candidate's URLs for one test, with the visitor token
// replaced by the same fresh value in each.
type candidateURLs struct {
	base, restart, health string
}

func (c Candidate) forVisitor() candidateURLs {
	visitor := newVisitor()
	sub := func(s string) string { return strings.ReplaceAll(s, VisitorToken, visitor) }
	return candidateURLs{base: sub(c.BaseURL), restart: sub(c.RestartURL), health: sub(c.HealthURL)}
}

// newVisitor is a fresh visitor value: random, so that parallel tests and
// reruns never share a sandbox namespace or per-visitor state.
func newVisitor() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return "v" + hex.EncodeToString(b)
}

// exchange is one HTTP request sent and the answer read.
type exchange struct {
	status    int
	header    http.Header
	body      []byte
	truncated bool   // the body was longer than MaxBodyBytes
	location  string // the Location header as an absolute URL, "" without one
	duration  time.Duration
}

// send makes one HTTP exchange and reads at most MaxBodyBytes of the body.
func send(client *http.Client, req *http.Request) (exchange, error) {
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return exchange{duration: time.Since(start)}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBodyBytes+1))
	ex := exchange{status: resp.StatusCode, header: resp.Header, duration: time.Since(start)}
	if err != nil {
		return ex, fmt.Errorf("reading the body: %w", err)
	}
	if len(body) > MaxBodyBytes {
		body, ex.truncated = body[:MaxBodyBytes], true
	}
	ex.body = body
	if loc, err := resp.Location(); err == nil {
		ex.location = loc.String() // resolved against the request's URL
	}
	return ex, nil
}

// truncatedNote is the note a step carries when its body was cut.
func truncatedNote() string {
	return fmt.Sprintf("the body is longer than %d bytes; only its first %d bytes were checked", MaxBodyBytes, MaxBodyBytes)
}

// failureReason words an error met before an answer arrived: the test's
// timeout passing, the SSRF guard refusing the address, or the candidate
// being unreachable. ctx is the test's context, limit its timeout.
func failureReason(ctx context.Context, err error, limit time.Duration) string {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || isTimeout(err):
		return fmt.Sprintf("no answer within %s", limit.Round(time.Millisecond))
	case ctx.Err() != nil:
		return "the test was canceled"
	}
	if msg, refused := guardRefusal(err); refused {
		return "the SSRF guard refused the candidate's address: " + msg
	} else if msg != "" {
		return "unreachable: " + msg
	}
	return "unreachable: " + connReason(err)
}

// guardRefusal returns the SSRF guard's message when err is the guard's,
// and whether it refused the address: a name that does not resolve is not a
// refusal (netguard.Unresolved; it may resolve later).
func guardRefusal(err error) (msg string, refused bool) {
	var e *models.Error
	if !errors.As(err, &e) {
		return "", false
	}
	return models.ErrorMessage(e), !netguard.Unresolved(err)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// connReason says in a few words why a connection failed, without Go's
// wrapping ("Get \"…\": dial tcp …:").
func connReason(err error) string {
	// A *url.Error names the URL, which may be a hook with a token in it.
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		err = urlErr.Err
	}
	var dnsErr *net.DNSError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "no route to the host"
	case errors.As(err, &dnsErr):
		return fmt.Sprintf("the host %q does not resolve", dnsErr.Name)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the connection closed before a complete answer"
	}
	return err.Error()
}

// RunRequest runs one request test against the candidate: it sends the
// request (its path under the candidate's base URL, the visitor token
// replaced by a fresh value, with its query, form or body and headers) with a
// cookie jar of its own, follows redirects when and as far as the test says,
// and judges the last answer by the test's expectations. Every exchange is a
// step. The test's timeout bounds everything; a hung candidate, an
// unreachable one, a refused address and a redirect loop end it Errored, a
// broken expectation Failed with all of them listed. client is NewClient's.
func RunRequest(ctx context.Context, client *http.Client, c Candidate, t *hiddentest.Test) (out Outcome) {
	out = Outcome{TestID: t.ID, Started: time.Now()}
	defer func() { out.Duration = time.Since(out.Started) }()
	r := t.Request
	if r == nil {
		out.Result, out.Reason = Errored, "the test has no request"
		return out
	}
	limit := t.Timeout()
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()

	urls := c.forVisitor()
	jar, err := cookiejar.New(nil)
	if err != nil {
		out.Result, out.Reason = Errored, fmt.Sprintf("creating a cookie jar: %v", err)
		return out
	}
	cl := *client
	cl.Jar = jar
	cl.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

	method, target := r.EffectiveMethod(), r.URL(urls.base)
	body, contentType := r.FormBody(), "application/x-www-form-urlencoded"
	if body == "" {
		body, contentType = r.Body, r.ContentType
	}
	seen := map[string]bool{}
	var chain []string
	var notes []string
	var last exchange
	for hop := 0; ; hop++ {
		key := method + " " + target
		if seen[key] {
			// The exchange whose redirect leads back is the one that errs.
			out.Result = Errored
			out.Reason = "redirect loop: " + strings.Join(append(chain, target), " → ")
			prev := &out.Steps[len(out.Steps)-1]
			prev.Result, prev.Reason = Errored, out.Reason
			return out
		}
		seen[key] = true
		chain = append(chain, target)

		req, err := http.NewRequestWithContext(ctx, method, target, strings.NewReader(body))
		if err != nil {
			out.Result, out.Reason = Errored, fmt.Sprintf("building the request %s %s: %v", method, target, err)
			return out
		}
		if body == "" {
			req.Body, req.ContentLength = http.NoBody, 0
		} else if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		for k, v := range r.Headers {
			req.Header.Set(k, v)
		}
		step := StepRecord{Index: len(out.Steps), Action: "request", Detail: method + " " + target}
		last, err = send(&cl, req)
		step.Duration = last.duration
		if err != nil && last.status == 0 {
			step.Result, step.Reason = Errored, failureReason(ctx, err, limit)
			out.Steps = append(out.Steps, step)
			out.Result, out.Reason = Errored, step.Reason
			return out
		}
		step.Detail += fmt.Sprintf(" → %d", last.status)
		if err != nil {
			// The answer started but its body did not arrive in full.
			step.Result, step.Reason = Errored, failureReason(ctx, err, limit)
			out.Steps = append(out.Steps, step)
			out.Result, out.Reason = Errored, step.Reason
			return out
		}
		step.Result = Passed
		if last.truncated {
			step.Reason = truncatedNote()
		}
		out.Steps = append(out.Steps, step)

		next, ok := redirectTarget(req, last)
		if !ok || !r.FollowRedirects {
			break
		}
		if hop >= r.Redirects() {
			notes = append(notes, fmt.Sprintf("stopped following redirects after %d, as the test allows", r.Redirects()))
			break
		}
		// As browsers do: 307 and 308 repeat the request, the others turn it
		// into a GET without a body (HEAD stays HEAD).
		if last.status != http.StatusTemporaryRedirect && last.status != http.StatusPermanentRedirect {
			if method != http.MethodHead {
				method = http.MethodGet
			}
			body, contentType = "", ""
		}
		target = next
	}

	got := hiddentest.Response{Status: last.status, Header: last.header, Body: last.body}
	if last.location != "" {
		got.Location = hiddentest.RelativeURL(urls.base, last.location)
	}
	if last.truncated {
		notes = append(notes, truncatedNote())
	}
	if fails := r.Expect.Failures(got); len(fails) > 0 {
		out.Steps[len(out.Steps)-1].Result = Failed
		out.Result, out.Reason = Failed, strings.Join(append(fails, notes...), "; ")
		out.Steps[len(out.Steps)-1].Reason = out.Reason
		return out
	}
	out.Result = Passed
	return out
}

// redirectTarget is the absolute URL a redirect answer points to, if the
// answer is a redirect with a usable Location.
func redirectTarget(req *http.Request, ex exchange) (string, bool) {
	switch ex.status {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
	default:
		return "", false
	}
	if ex.location == "" {
		return "", false
	}
	u, err := req.URL.Parse(ex.location)
	if err != nil {
		return "", false
	}
	u.Fragment, u.RawFragment = "", ""
	return u.String(), true
}
