package amqpsink

import (
	"errors"

	"github.com/VictoriaMetrics/metrics"

	"github.com/ankusa/ankusa/dispatch"
)

// Errors callers may test for (with errors.Is; Deliver wraps them in a
// *dispatch.Error).
var (
	// ErrClosed: Deliver after Close.
	ErrClosed = errors.New("amqpsink: sink closed")
	// ErrUnroutable: the broker returned a mandatory message: no queue
	// is bound for its routing key, so it was not stored anywhere.
	ErrUnroutable = errors.New("amqpsink: unroutable")
	// ErrNacked: the broker refused the message (basic.nack).
	ErrNacked = errors.New("amqpsink: nacked by the broker")
	// ErrNoConfirm: the channel or connection closed, or the attempt
	// timed out, before the broker confirmed the message. It may or may
	// not be at the broker.
	ErrNoConfirm = errors.New("amqpsink: no publisher confirm")
	// ErrNotConnected: there is no open connection or channel to the
	// broker right now; the sink reconnects in the background.
	ErrNotConnected = errors.New("amqpsink: not connected")
)

// Counters, without labels (the sink id would be an unbounded set across
// reconfigurations).
var (
	publishedTotal   = metrics.NewCounter("ankusa_amqp_sink_confirmed_total")
	returnedTotal    = metrics.NewCounter("ankusa_amqp_sink_returned_total")
	nackedTotal      = metrics.NewCounter("ankusa_amqp_sink_nacked_total")
	noConfirmTotal   = metrics.NewCounter("ankusa_amqp_sink_no_confirm_total")
	connectsTotal    = metrics.NewCounter("ankusa_amqp_sink_connects_total")
	connLossTotal    = metrics.NewCounter("ankusa_amqp_sink_connection_losses_total")
	channelLossTotal = metrics.NewCounter("ankusa_amqp_sink_channel_closes_total")
)

// retryable wraps err for the dispatcher: retried with backoff. A return
// or a nack is the broker's answer: it is up, and the circuit breaker
// must not take a routing mistake for a broker that is down.
func retryable(err error) error {
	return &dispatch.Error{Err: err, Answered: errors.Is(err, ErrUnroutable) || errors.Is(err, ErrNacked)}
}

// permanent wraps err for the dispatcher: dead-lettered at once.
func permanent(err error) error { return &dispatch.Error{Permanent: true, Err: err} }
