package dispatch

import (
	"context"
	"fmt"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/envelope"
)

// Claimer keeps bodies in claim packs (DESIGN.md §2.6); the archive's
// claim stores implement it.
type Claimer interface {
	// Claim stores e's body in a pack of the named store and returns its
	// reference once the pack holding it is uploaded, verified and
	// durable. A second call for the same hook may return the reference
	// the first one made.
	Claim(ctx context.Context, store string, e *envelope.Envelope) (envelope.Claim, error)
}

// WithClaim wraps s so that a hook whose body is larger than c.OverBytes
// is delivered by reference: its body is put in a claim pack of c.Store
// first, and s is given a copy of the envelope with no body and BodyClaim
// set (each sink writes the reference its own way: body_claim in the
// envelope format, a header in the raw one). Smaller hooks pass as they
// are. A nil c returns s.
func WithClaim(s Sink, c *config.Claim, cl Claimer) Sink {
	if c == nil {
		return s
	}
	cs := &claimSink{Sink: s, store: c.Store, over: int64(c.OverBytes), claims: cl}
	if t, ok := s.(Targeter); ok {
		return &claimTargeter{claimSink: cs, t: t}
	}
	return cs
}

type claimSink struct {
	Sink
	store  string
	over   int64
	claims Claimer
}

func (c *claimSink) Deliver(ctx context.Context, d *Delivery) error {
	e := d.Envelope
	if int64(len(e.Body)) <= c.over || e.BodyClaim != nil {
		return c.Sink.Deliver(ctx, d)
	}
	ref, err := c.claims.Claim(ctx, c.store, e)
	if err != nil {
		d.Status = 0
		return &Error{Err: fmt.Errorf("cannot put the body (%d bytes, over claim.over_bytes %d) in claim store %q: %w", len(e.Body), c.over, c.store, err)}
	}
	byRef := *e
	byRef.Body = nil
	byRef.BodyClaim = &ref
	dd := *d
	dd.Envelope = &byRef
	err = c.Sink.Deliver(ctx, &dd)
	d.Status = dd.Status
	return err
}

type claimTargeter struct {
	*claimSink
	t Targeter
}

func (c *claimTargeter) Target(e *envelope.Envelope) string { return c.t.Target(e) }
