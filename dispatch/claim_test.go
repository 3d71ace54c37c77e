package dispatch

import (
	"context"
	"errors"
	"testing"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/envelope"
)

type claimTestSink struct {
	got    []envelope.Envelope
	status int
}

func (s *claimTestSink) Deliver(_ context.Context, d *Delivery) error {
	s.got = append(s.got, *d.Envelope)
	d.Status = s.status
	return nil
}
func (s *claimTestSink) Durable() bool                      { return true }
func (s *claimTestSink) Close() error                       { return nil }
func (s *claimTestSink) Target(e *envelope.Envelope) string { return "t/" + e.TenantID }

type claimTestClaimer struct {
	calls int
	err   error
}

func (c *claimTestClaimer) Claim(_ context.Context, store string, e *envelope.Envelope) (envelope.Claim, error) {
	c.calls++
	return envelope.Claim{Store: store, Key: "claims/tenant=" + e.TenantID + "/p", Length: int64(len(e.Body))}, c.err
}

// WithClaim hands the sink a hook over over_bytes by reference, leaves
// the caller's envelope and smaller hooks alone, keeps the sink's
// targets, and turns a claim store's failure into a retryable error.
func TestWithClaim(t *testing.T) {
	inner := &claimTestSink{status: 200}
	cl := &claimTestClaimer{}
	s := WithClaim(inner, &config.Claim{Store: "packs", OverBytes: 8}, cl)
	if WithClaim(inner, nil, cl) != Sink(inner) {
		t.Fatal("a sink without claim must be returned as it is")
	}
	tg, ok := s.(Targeter)
	if !ok || tg.Target(&envelope.Envelope{TenantID: "acme"}) != "t/acme" {
		t.Fatal("the wrapped sink lost its targets")
	}
	small := &envelope.Envelope{TenantID: "acme", Body: []byte("12345678")}
	big := &envelope.Envelope{TenantID: "acme", Body: []byte("123456789")}
	for _, e := range []*envelope.Envelope{small, big} {
		d := &Delivery{Envelope: e, Attempt: 1}
		if err := s.Deliver(context.Background(), d); err != nil || d.Status != 200 {
			t.Fatalf("%d bytes: %v, status %d", len(e.Body), err, d.Status)
		}
	}
	if cl.calls != 1 || len(inner.got) != 2 {
		t.Fatalf("%d claims, %d deliveries; want 1 and 2", cl.calls, len(inner.got))
	}
	if g := inner.got[0]; g.BodyClaim != nil || string(g.Body) != "12345678" {
		t.Fatalf("a body of over_bytes exactly went by reference: %+v", g)
	}
	if g := inner.got[1]; g.BodyClaim == nil || g.Body != nil || g.BodyClaim.Length != 9 || g.BodyClaim.Store != "packs" {
		t.Fatalf("a body over over_bytes: %+v", g)
	}
	if big.BodyClaim != nil || string(big.Body) != "123456789" {
		t.Fatal("the caller's envelope was changed")
	}
	cl.err = errors.New("bucket gone")
	d := &Delivery{Envelope: big, Attempt: 2, Status: 500}
	err := s.Deliver(context.Background(), d)
	var de *Error
	if !errors.As(err, &de) || de.Permanent || d.Status != 0 || len(inner.got) != 2 {
		t.Fatalf("claim store down: %v (status %d, %d deliveries); want a retryable *Error and no delivery", err, d.Status, len(inner.got))
	}
}
