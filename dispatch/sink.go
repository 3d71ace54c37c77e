package dispatch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ankusa/ankusa/envelope"
)

// Sink delivers hooks to one target (DESIGN.md §2.7). Implementations live
// in dispatch/sink/...; they must be safe for concurrent use: the
// dispatcher calls Deliver from up to the sink's concurrency goroutines.
type Sink interface {
	// Deliver makes one attempt. nil means the target accepted the hook
	// (for a durable sink: it is safe there). An error is retried with
	// backoff unless it is an *Error with Permanent set; the dispatcher
	// reads Status, RetryAfter and the message for the attempt log.
	// Deliver must return when ctx is done.
	Deliver(ctx context.Context, d *Delivery) error
	// Durable reports whether a nil from Deliver means the hook is durable
	// at the target (a broker's publisher confirm), which is what
	// wal.type: none needs.
	Durable() bool
	// Close releases connections; in-flight Deliver calls may fail.
	Close() error
}

// Targeter is implemented by sinks whose target depends on the hook (a
// URL template over the tenant): the circuit breaker is kept per target,
// so one tenant's dead receiver does not open the breaker for the others.
// Without it a sink is one target.
type Targeter interface {
	Target(e *envelope.Envelope) string
}

// Delivery is one attempt to deliver one hook to one sink. The sink must
// not keep it or the envelope after Deliver returns, nor modify the
// envelope.
type Delivery struct {
	// Envelope is the hook: identity, tenant, source, route params,
	// headers, the original body and its verification.
	Envelope *envelope.Envelope
	// Attempt counts from 1.
	Attempt int
	// SinkID is the sink's stable id within its source.
	SinkID string
	// Status is set by the sink to the target's answer (an HTTP status)
	// for the attempt log, on success as on failure; 0 when there was no
	// answer.
	Status int
}

// Error is a failed attempt with what the dispatcher needs to decide what
// comes next.
type Error struct {
	// Status is the target's answer, 0 when there was none (connection
	// refused, timeout, refused by the SSRF guard).
	Status int
	// Permanent dead-letters the hook at once (a 410 from a receiver; a
	// target the SSRF guard refuses).
	Permanent bool
	// RetryAfter, when positive, is the target's own wish (Retry-After);
	// the next attempt is not earlier.
	RetryAfter time.Duration
	// Answered says the target answered though Status is 0 (a broker's
	// return or nack): it is up, so the circuit breaker does not count
	// the failure.
	Answered bool
	Err      error
}

func (e *Error) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("status %d: %v", e.Status, e.Err)
	}
	return e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// AsError returns err as an *Error; any other error is a retryable one
// without a status.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Err: err}
}
