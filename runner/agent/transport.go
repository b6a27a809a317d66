package agent

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"proctor/models"
	"proctor/netguard"
)

// statusBodyPrefix is how much of a non-2xx body an error quotes.
const statusBodyPrefix = 200

// poster POSTs JSON bodies with the rules the http and openai agents share: one
// deadline per call, retries only when no connection was made, a body cap.
type poster struct {
	client   *http.Client
	timeout  time.Duration
	maxBytes int64
	// backoff lists the waits before each retry; its length is the retry count.
	backoff []time.Duration
	// what names the other side in messages ("agent endpoint", "chat-completions endpoint").
	what string
}

// newPoster returns a poster with the protocol's retry schedule.
func newPoster(cfg Config, what string) *poster {
	return &poster{
		client:   cfg.HTTPClient,
		timeout:  cfg.CallTimeout,
		maxBytes: cfg.MaxResponseBytes,
		backoff:  []time.Duration{100 * time.Millisecond, 300 * time.Millisecond},
		what:     what,
	}
}

// post sends body to url and returns the 2xx response body. Every failure the
// other side caused is an *Error, a deadline passing included; the caller
// canceling ctx is a plain error wrapping context.Canceled.
func (p *poster) post(ctx context.Context, url string, header http.Header, body []byte) ([]byte, error) {
	limit := p.timeout
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < limit {
		limit = time.Until(deadline)
	}
	callCtx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	for try := 0; ; try++ {
		req, err := http.NewRequestWithContext(callCtx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("build request to the %s: %w", p.what, err)
		}
		req.Header = header.Clone()
		resp, err := p.client.Do(req)
		if err == nil {
			return p.read(ctx, callCtx, resp, limit)
		}
		if try < len(p.backoff) && retryable(err) {
			select {
			case <-time.After(p.backoff[try]):
				continue
			case <-callCtx.Done():
				err = callCtx.Err()
			}
		}
		return nil, p.failure(ctx, err, try+1, limit)
	}
}

// read takes the body of a response, enforcing the size cap and the 2xx rule.
func (p *poster) read(ctx, callCtx context.Context, resp *http.Response, limit time.Duration) ([]byte, error) {
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		prefix, _ := io.ReadAll(io.LimitReader(resp.Body, statusBodyPrefix))
		msg := fmt.Sprintf("the %s answered HTTP %s", p.what, statusText(resp))
		if snippet := p.clean(string(prefix)); snippet != "" {
			msg += ": " + snippet
		}
		return nil, &Error{Kind: KindHTTPStatus, Message: msg}
	}
	if resp.ContentLength > p.maxBytes {
		return nil, agentErr(KindTooLarge, nil, "the %s's answer is %d bytes; at most %d are accepted", p.what, resp.ContentLength, p.maxBytes)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, p.maxBytes+1))
	if err != nil {
		if ctx.Err() == nil && callCtx.Err() == nil && !isTimeout(err) {
			return nil, agentErr(KindConnection, err, "the connection to the %s broke while reading its answer", p.what)
		}
		return nil, p.failure(ctx, err, 1, limit)
	}
	if int64(len(data)) > p.maxBytes {
		return nil, agentErr(KindTooLarge, nil, "the %s's answer is larger than %d bytes, the most accepted", p.what, p.maxBytes)
	}
	return data, nil
}

// failure classifies an error met before a complete answer arrived. A deadline
// passing is a timeout even when it is the caller's (whose own clock says
// whether its budget ran out, as errors.Is(err, context.DeadlineExceeded) still
// holds); only a cancellation by the caller is a plain error.
func (p *poster) failure(ctx context.Context, err error, tries int, limit time.Duration) error {
	if errors.Is(ctx.Err(), context.Canceled) {
		return fmt.Errorf("call to the %s abandoned: %w", p.what, ctx.Err())
	}
	if ctx.Err() != nil || isTimeout(err) {
		if ctx.Err() != nil && !errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w (%w)", context.DeadlineExceeded, err)
		}
		return agentErr(KindTimeout, err, "the %s gave no complete answer within %s", p.what, limit.Round(time.Millisecond))
	}
	var refused *models.Error
	if errors.As(err, &refused) {
		// netguard's messages name the host, which is not shown to everyone.
		if netguard.Unresolved(err) {
			return agentErr(KindConnection, err, "could not reach the %s: its host name does not resolve", p.what)
		}
		return agentErr(KindConnection, err, "the %s's address is not public and the SSRF guard refused it; ask an admin to allow-list it with PROCTOR_AGENT_ALLOW_HOSTS", p.what)
	}
	msg := fmt.Sprintf("could not reach the %s: %s", p.what, connReason(err))
	if tries > 1 {
		msg += fmt.Sprintf(" (%d tries)", tries)
	}
	return &Error{Kind: KindConnection, Message: msg, Err: err}
}

// clean makes a quoted body safe to show: valid UTF-8, one line, no secrets.
func (p *poster) clean(s string) string {
	s = strings.ToValidUTF8(s, "")
	return strings.Join(strings.Fields(s), " ")
}

// statusText renders "500 Internal Server Error".
func statusText(resp *http.Response) string {
	if t := http.StatusText(resp.StatusCode); t != "" {
		return fmt.Sprintf("%d %s", resp.StatusCode, t)
	}
	return fmt.Sprint(resp.StatusCode)
}

// isTimeout reports whether err is a deadline passing rather than a refusal.
func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// retryable reports whether err happened before the other side could have
// answered: the dial failed, or the connection was refused, reset or closed
// before any response. Timeouts and SSRF refusals are never retried.
func retryable(err error) bool {
	if isTimeout(err) || errors.Is(err, context.Canceled) {
		return false
	}
	var refused *models.Error
	if errors.As(err, &refused) {
		return false
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// connReason names a connection failure without the address.
func connReason(err error) string {
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var recordErr tls.RecordHeaderError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.As(err, &dnsErr):
		if dnsErr.IsNotFound {
			return "no such host"
		}
		return "the DNS lookup failed"
	case errors.As(err, &certErr):
		return "its TLS certificate could not be verified"
	case errors.As(err, &recordErr):
		return "it does not speak TLS"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the connection closed before any response"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "host unreachable"
	}
	return "connection failed"
}
