package kafkasink

import (
	"context"
	"errors"
	"fmt"

	"github.com/VictoriaMetrics/metrics"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ankusa/ankusa/dispatch"
)

// Errors callers may test for (with errors.Is; Deliver wraps them in a
// *dispatch.Error).
var (
	// ErrClosed: Deliver after Close.
	ErrClosed = errors.New("kafkasink: sink closed")
	// ErrNoAck: the attempt ended (its timeout, the record delivery
	// timeout, or ctx) before the brokers acknowledged the record. It may
	// or may not be in the topic.
	ErrNoAck = errors.New("kafkasink: no acknowledgement")
	// ErrRefused: the cluster will never take this record (too large, an
	// invalid record or topic name). The hook is dead-lettered.
	ErrRefused = errors.New("kafkasink: refused by the cluster")
	// ErrUnauthorized: SASL authentication or an ACL refused the sink.
	// Retried: an operator fixes the credentials or the ACLs and the
	// hooks flow again.
	ErrUnauthorized = errors.New("kafkasink: not authorized")
)

// Counters, without labels (the sink id would be an unbounded set across
// reconfigurations).
var (
	ackedTotal        = metrics.NewCounter("ankusa_kafka_sink_acked_total")
	failedTotal       = metrics.NewCounter("ankusa_kafka_sink_failed_total")
	refusedTotal      = metrics.NewCounter("ankusa_kafka_sink_refused_total")
	noAckTotal        = metrics.NewCounter("ankusa_kafka_sink_no_ack_total")
	unauthorizedTotal = metrics.NewCounter("ankusa_kafka_sink_unauthorized_total")
	soloTotal         = metrics.NewCounter("ankusa_kafka_sink_solo_retries_total")
)

// class is what an error from a produce promise means for the hook.
type class uint8

const (
	classRetry        class = iota // retry; the cluster did not answer (down, unreachable)
	classAnswered                  // retry; a broker answered (it is up)
	classRecord                    // the broker refused the batch the record was in: try it alone
	classRefused                   // permanent
	classUnauthorized              // retry, answered, logged loudly
	classNoAck                     // retry; nothing answered within the attempt
)

// classify maps a produce promise's error.
func classify(err error) class {
	switch {
	case errors.Is(err, kerr.MessageTooLarge), errors.Is(err, kerr.RecordListTooLarge),
		errors.Is(err, kerr.InvalidRecord), errors.Is(err, kerr.InvalidTimestamp):
		return classRecord
	case errors.Is(err, kerr.InvalidTopicException):
		return classRefused
	case errors.Is(err, kerr.TopicAuthorizationFailed), errors.Is(err, kerr.ClusterAuthorizationFailed),
		errors.Is(err, kerr.SaslAuthenticationFailed), errors.Is(err, kerr.IllegalSaslState),
		errors.Is(err, kerr.UnsupportedSaslMechanism):
		return classUnauthorized
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled),
		errors.Is(err, kgo.ErrRecordTimeout), errors.Is(err, kgo.ErrRecordRetries):
		return classNoAck
	}
	if ke := (*kerr.Error)(nil); errors.As(err, &ke) {
		return classAnswered // UnknownTopicOrPartition, NotEnoughReplicas, ...
	}
	return classRetry
}

// wrap turns a produce error of class c into the dispatcher's error.
func wrap(c class, err error) error {
	switch c {
	case classRefused, classRecord:
		refusedTotal.Inc()
		return &dispatch.Error{Permanent: true, Answered: true, Err: fmt.Errorf("%w: %w", ErrRefused, err)}
	case classUnauthorized:
		unauthorizedTotal.Inc()
		failedTotal.Inc()
		return &dispatch.Error{Answered: true, Err: fmt.Errorf("%w: %w", ErrUnauthorized, err)}
	case classAnswered:
		failedTotal.Inc()
		return &dispatch.Error{Answered: true, Err: err}
	case classNoAck:
		noAckTotal.Inc()
	}
	failedTotal.Inc()
	return &dispatch.Error{Err: err}
}

// permanent wraps an error of the hook itself, found before producing.
func permanent(err error) error {
	refusedTotal.Inc()
	return &dispatch.Error{Permanent: true, Err: fmt.Errorf("%w: %w", ErrRefused, err)}
}
