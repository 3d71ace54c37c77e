// Package sinktest is what the broker sinks' tests share (amqpsink,
// kafkasink, natssink): a sample hook with an id of its own, and one
// attempt of it. Only tests import it.
package sinktest

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/ankusa/ankusa/dispatch"
	"github.com/ankusa/ankusa/envelope"
)

var seq atomic.Uint64

// Envelope is a Stripe-like hook of tenant acme and source stripe, with a
// route parameter (app_id=a1), a JSON Content-Type and a signature
// header, verified; its seq, id and body are its own.
func Envelope() *envelope.Envelope {
	n := seq.Add(1)
	now := time.Now()
	return &envelope.Envelope{
		Seq:         n,
		ID:          envelope.MakeID(uint64(now.UnixMilli()), 7, n),
		TenantID:    "acme",
		SourceID:    "stripe",
		ReceivedAt:  now.UnixNano(),
		RouteParams: []envelope.Param{{Key: "app_id", Value: "a1"}},
		Headers: []envelope.Header{
			{Name: "Content-Type", Value: "application/json; charset=utf-8"},
			{Name: "Stripe-Signature", Value: "t=1,v1=abc"},
		},
		Body:         []byte(`{"id":"evt_1","n":` + fmt.Sprint(n) + `}`),
		Verification: envelope.Verification{Verifier: "stripe", Verified: true},
		DedupeKey:    "evt_1",
	}
}

// Deliver makes attempt number attempt of e on s as sink sinkID, within
// the given time.
func Deliver(s dispatch.Sink, e *envelope.Envelope, attempt int, sinkID string, within time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	return s.Deliver(ctx, &dispatch.Delivery{Envelope: e, Attempt: attempt, SinkID: sinkID})
}
