package natssink

import (
	"errors"

	"github.com/VictoriaMetrics/metrics"

	"github.com/ankusa/ankusa/dispatch"
)

// Errors callers may test for (with errors.Is; Deliver wraps them in a
// *dispatch.Error).
var (
	// ErrClosed: Deliver after Close.
	ErrClosed = errors.New("natssink: sink closed")
	// ErrNotConnected: there is no connection to a server right now; the
	// client reconnects in the background.
	ErrNotConnected = errors.New("natssink: not connected")
	// ErrNoStream: the stream is not on the server (and create_stream is
	// not set), or no stream holds the message's subject (no responders).
	ErrNoStream = errors.New("natssink: no stream")
	// ErrNoAck: no PubAck came within the attempt. The message may still
	// be in the stream.
	ErrNoAck = errors.New("natssink: no PubAck")
	// ErrRefused: the server answered the publish with an error (a full
	// stream, a PubAck from another stream...).
	ErrRefused = errors.New("natssink: refused by the server")
	// ErrTooLarge: the message is over the server's max_payload or the
	// stream's max_msg_size; it never will be taken.
	ErrTooLarge = errors.New("natssink: message too large")
)

// Counters, without labels (the sink id would be an unbounded set across
// reconfigurations).
var (
	ackedTotal        = metrics.NewCounter("ankusa_nats_sink_acked_total")
	duplicateTotal    = metrics.NewCounter("ankusa_nats_sink_duplicate_acks_total")
	noAckTotal        = metrics.NewCounter("ankusa_nats_sink_no_ack_total")
	noRespondersTotal = metrics.NewCounter("ankusa_nats_sink_no_responders_total")
	refusedTotal      = metrics.NewCounter("ankusa_nats_sink_refused_total")
	tooLargeTotal     = metrics.NewCounter("ankusa_nats_sink_too_large_total")
	notConnectedTotal = metrics.NewCounter("ankusa_nats_sink_not_connected_total")
	connectsTotal     = metrics.NewCounter("ankusa_nats_sink_connects_total")
	disconnectsTotal  = metrics.NewCounter("ankusa_nats_sink_disconnects_total")
	authErrorsTotal   = metrics.NewCounter("ankusa_nats_sink_authorization_errors_total")
	streamsMadeTotal  = metrics.NewCounter("ankusa_nats_sink_streams_created_total")
)

// retryable wraps err for the dispatcher: retried with backoff. answered
// says the server answered (it is up): the circuit breaker must not take
// a missing stream or a full one for a server that is down.
func retryable(err error, answered bool) error {
	return &dispatch.Error{Err: err, Answered: answered}
}

// permanent wraps err for the dispatcher: dead-lettered at once.
func permanent(err error) error { return &dispatch.Error{Permanent: true, Err: err} }
