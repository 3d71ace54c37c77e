package httpsink

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"time"

	"github.com/ankusa/ankusa/internal/backoff"

	"github.com/valyala/fasthttp"

	"github.com/ankusa/ankusa/dispatch"
)

// maxRetryAfter caps a receiver's Retry-After.
const maxRetryAfter = 24 * time.Hour

// retryable reports whether an answer's status is worth another attempt:
// 408, 429 and 5xx.
func retryable(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500
}

// answerError maps the receiver's answer to the attempt's result: nil
// for 2xx, else a *dispatch.Error that says what the receiver did.
func answerError(a *attempt) error {
	st := a.status
	switch {
	case st >= 200 && st < 300:
		return nil
	case st == http.StatusGone:
		return &dispatch.Error{Status: st, Permanent: true, Err: a.bodyError("the receiver says the endpoint is gone; the hook is not retried")}
	case retryable(st):
		return &dispatch.Error{Status: st, RetryAfter: a.retryAfter, Err: a.bodyError(retryMessage(st, a.retryAfter))}
	case st >= 300 && st < 400:
		msg := "the receiver redirected; redirects are not followed: fix the sink's url"
		if len(a.location) > 0 {
			msg = fmt.Sprintf("the receiver redirected to %s; redirects are not followed: fix the sink's url", strconv.Quote(string(a.location)))
		}
		return &dispatch.Error{Status: st, Permanent: true, Err: errors.New(msg)}
	}
	return &dispatch.Error{Status: st, Permanent: true, Err: a.bodyError("the receiver refused the hook")}
}

func retryMessage(status int, after time.Duration) string {
	var msg string
	switch status {
	case http.StatusRequestTimeout:
		msg = "the receiver timed out reading the request"
	case http.StatusTooManyRequests:
		msg = "the receiver is rate limiting"
	default:
		msg = "the receiver failed"
	}
	if after > 0 {
		msg += fmt.Sprintf(" (Retry-After: %v)", after)
	}
	return msg
}

// bodyError is msg followed by the start of the answer's body, quoted.
func (a *attempt) bodyError(msg string) error {
	head := bytes.TrimSpace(a.head)
	if len(head) == 0 {
		return errors.New(msg)
	}
	more := ""
	if a.more {
		more = "..."
	}
	return fmt.Errorf("%s; body: %s%s", msg, strconv.Quote(string(head)), more)
}

// parseRetryAfter reads a Retry-After value: delta-seconds or an
// HTTP-date. Garbage, and a date in the past, give 0; the result is at
// most maxRetryAfter.
func parseRetryAfter(v []byte, now time.Time) time.Duration {
	d, _ := backoff.RetryAfter(v, now, maxRetryAfter)
	return d
}

// transportError maps an attempt that got no answer to a retryable
// *dispatch.Error without a status, unless the dial already made one
// (the SSRF guard's refusal, a connection refused).
func (s *Sink) transportError(a *attempt, budget time.Duration, byCtx bool) error {
	var de *dispatch.Error
	if errors.As(a.err, &de) {
		return de
	}
	host := string(a.req.URI().Host())
	var ne net.Error
	var err error
	switch {
	case errors.Is(a.err, fasthttp.ErrTimeout) || errors.As(a.err, &ne) && ne.Timeout():
		err = timeoutError(host, budget, byCtx)
	case errors.Is(a.err, fasthttp.ErrNoFreeConns):
		err = fmt.Errorf("all %d connections to %s are busy (concurrency)", s.opts.Spec.Concurrency, host)
	case staleConn(a.err):
		err = fmt.Errorf("%s closed the connection before answering", host)
	default:
		err = fmt.Errorf("cannot deliver to %s: %w", host, a.err)
	}
	return &dispatch.Error{Err: err}
}

func timeoutError(host string, budget time.Duration, byCtx bool) error {
	what := "the sink's timeout"
	if byCtx {
		what = "the dispatcher's deadline"
	}
	return fmt.Errorf("timeout after %v waiting for %s (%s)", budget.Round(time.Millisecond), host, what)
}

// staleConn reports whether err is the peer closing the connection: a
// kept-alive connection the receiver closed while it was idle.
func staleConn(err error) bool {
	return errors.Is(err, fasthttp.ErrConnectionClosed) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)
}

// retryStaleConn is the client's RetryIfErr: an attempt whose connection
// the receiver closed is made once more, on a new connection, within the
// same deadline. Retrying a POST can deliver a hook twice; delivery is
// at least once, and the dispatcher would retry the attempt anyway.
func retryStaleConn(_ *fasthttp.Request, _ int, err error) (resetTimeout, retry bool) {
	return false, staleConn(err)
}
