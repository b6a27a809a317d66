package hidden

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"proctor/hiddentest"
)

// OfflineBuildReason is why offline_build tests end NotRun: the check needs
// the candidate's build command run with the network cut off, and Proctor does
// not host candidates (docs/hidden-tests.md), so there is nothing here to
// build. Such a test is no fault of the candidate: it decides nothing.
const OfflineBuildReason = "offline build tests are not run: Proctor does not host candidates, so it cannot run a build command with the network cut off"

// NoRestartHookReason is why a restart test ends Errored for a candidate that
// declared no restart hook.
const NoRestartHookReason = "the candidate declared no restart hook"

// RunSystem runs one system test against the candidate: health (the health
// URL answers 2xx), restart (POST to the restart hook, then the health URL
// answers 2xx again within the timeout), a security probe (no answer to the
// probe's requests shows what it looks for) or offline_build (NotRun with
// OfflineBuildReason). A candidate that does not answer, or whose
// address the SSRF guard refuses, ends the test Errored; one that answers
// wrongly, Failed. client is NewClient's.
func RunSystem(ctx context.Context, client *http.Client, c Candidate, t *hiddentest.Test) (out Outcome) {
	out = Outcome{TestID: t.ID, Started: time.Now()}
	defer func() { out.Duration = time.Since(out.Started) }()
	s := t.System
	if s == nil {
		out.Result, out.Reason = Errored, "the test has no system check"
		return out
	}
	limit := t.Timeout()
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	sys := systemRun{ctx: ctx, client: client, limit: limit, urls: c.forVisitor(), out: &out}
	switch s.Kind {
	case hiddentest.SystemHealth:
		sys.health(s)
	case hiddentest.SystemRestart:
		sys.restart(s)
	case hiddentest.SystemSecurity:
		sys.security(s)
	case hiddentest.SystemOfflineBuild:
		out.Result, out.Reason = NotRun, OfflineBuildReason
	default:
		out.Result, out.Reason = Errored, fmt.Sprintf("unknown system test kind %q", s.Kind)
	}
	return out
}

// systemRun is one system test under way.
type systemRun struct {
	ctx    context.Context
	client *http.Client
	limit  time.Duration
	urls   candidateURLs
	out    *Outcome
}

// healthURL is what health and restart tests request: the test's path under
// the base URL, else the declared health URL, else the base URL's "/".
func (r *systemRun) healthURL(s *hiddentest.SystemTest) string {
	switch {
	case s.Path != "":
		return hiddentest.JoinURL(r.urls.base, s.Path)
	case r.urls.health != "":
		return r.urls.health
	}
	return hiddentest.JoinURL(r.urls.base, "/")
}

// shown is how a step names target: the candidate's restart hook and
// health URL by their role, since results may be shown to people who may not
// see the hooks (a hook URL often carries a token); any other URL as it is.
func (r *systemRun) shown(target string) string {
	switch {
	case target == r.urls.restart && target != "":
		return "<restart hook>"
	case target == r.urls.health && target != "":
		return "<health URL>"
	}
	return target
}

// do sends one request and records it as a step; on an error the step and the
// outcome are Errored and ok is false.
func (r *systemRun) do(action, method, target, body, contentType string) (ex exchange, step *StepRecord, ok bool) {
	rec := StepRecord{Index: len(r.out.Steps), Action: action, Detail: method + " " + r.shown(target)}
	req, err := http.NewRequestWithContext(r.ctx, method, target, strings.NewReader(body))
	if err != nil {
		rec.Result, rec.Reason = Errored, fmt.Sprintf("building the request: %v", err)
		return r.errored(rec)
	}
	if body == "" {
		req.Body, req.ContentLength = http.NoBody, 0
	} else if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	ex, err = send(r.client, req)
	rec.Duration = ex.duration
	if ex.status != 0 {
		rec.Detail += fmt.Sprintf(" → %d", ex.status)
	}
	if err != nil {
		rec.Result, rec.Reason = Errored, failureReason(r.ctx, err, r.limit)
		return r.errored(rec)
	}
	rec.Result = Passed
	if ex.truncated {
		rec.Reason = truncatedNote()
	}
	r.out.Steps = append(r.out.Steps, rec)
	return ex, &r.out.Steps[len(r.out.Steps)-1], true
}

func (r *systemRun) errored(rec StepRecord) (exchange, *StepRecord, bool) {
	r.out.Steps = append(r.out.Steps, rec)
	r.out.Result, r.out.Reason = Errored, rec.Reason
	return exchange{}, nil, false
}

func (r *systemRun) fail(step *StepRecord, reason string) {
	step.Result, step.Reason = Failed, reason
	r.out.Result, r.out.Reason = Failed, reason
}

func (r *systemRun) health(s *hiddentest.SystemTest) {
	ex, step, ok := r.do("health", http.MethodGet, r.healthURL(s), "", "")
	switch {
	case !ok:
	case ex.status/100 != 2:
		r.fail(step, fmt.Sprintf("the health URL answered %d, expected 2xx", ex.status))
	default:
		r.out.Result = Passed
	}
}

// restart calls the restart hook, then asks the health URL every
// restartPollInterval until it answers 2xx. A hook that cannot be called or
// answers other than 2xx errors the test (the restart did not happen as
// declared); a candidate that does not come back within the timeout fails it.
func (r *systemRun) restart(s *hiddentest.SystemTest) {
	if r.urls.restart == "" {
		r.out.Result, r.out.Reason = Errored, NoRestartHookReason
		return
	}
	ex, step, ok := r.do("restart", http.MethodPost, r.urls.restart, "", "")
	if !ok {
		r.out.Reason = "the restart hook: " + r.out.Reason
		return
	}
	if ex.status/100 != 2 {
		step.Result, step.Reason = Errored, fmt.Sprintf("the restart hook answered %d, expected 2xx", ex.status)
		r.out.Result, r.out.Reason = Errored, step.Reason
		return
	}
	target := r.healthURL(s)
	rec := StepRecord{Index: len(r.out.Steps), Action: "wait_healthy", Detail: "GET " + r.shown(target)}
	start := time.Now()
	w := waitHealthy(r.ctx, r.client, target, r.limit)
	rec.Duration = time.Since(start)
	switch {
	case w.ok:
		rec.Result = Passed
		rec.Detail += fmt.Sprintf(" → %d after %d tries", w.status, w.tries)
		r.out.Steps = append(r.out.Steps, rec)
		r.out.Result = Passed
	case r.ctx.Err() == context.Canceled:
		rec.Result, rec.Reason = Errored, "the test was canceled"
		r.out.Steps = append(r.out.Steps, rec)
		r.out.Result, r.out.Reason = Errored, rec.Reason
	default:
		r.out.Steps = append(r.out.Steps, rec)
		r.fail(&r.out.Steps[len(r.out.Steps)-1], fmt.Sprintf(
			"the candidate did not answer 2xx at its health URL within %s of the restart (%d tries; last: %s)",
			r.limit.Round(time.Millisecond), w.tries, w.last))
	}
}

// security sends the probe's requests, one per path as written, without
// following redirects, and fails the test with every response that shows what
// the probe looks for.
func (r *systemRun) security(s *hiddentest.SystemTest) {
	method := (&hiddentest.RequestTest{Method: s.Method}).EffectiveMethod()
	var fails []string
	for _, p := range s.Paths {
		ex, step, ok := r.do("probe", method, hiddentest.JoinURL(r.urls.base, p), s.Body, s.ContentType)
		if !ok {
			return
		}
		if why := s.ProbeFailure(ex.header, ex.body); why != "" {
			step.Result, step.Reason = Failed, why
			fails = append(fails, p+": "+why)
		}
	}
	if len(fails) > 0 {
		r.out.Result, r.out.Reason = Failed, strings.Join(fails, "; ")
		return
	}
	r.out.Result = Passed
}
