package edge

import (
	"context"

	"github.com/valyala/fasthttp"

	"github.com/ankusa/ankusa/dedupe"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/tenant"
	"github.com/ankusa/ankusa/wal"
)

// held is what one request holds between its admission and its answer:
// its cost against the tenant's queue caps and the node's pipeline bound
// (steps 8 and 9), the pooled WAL record its envelope is written into,
// and, until the hook commits, its bytes of the quarantine pen and its
// dedupe key. Each field is set the moment its reservation is made.
// Handle defers finish, so every way out of a request (an answer, a
// refusal, a panic) gives all of it back through release, once.
//
// A held lives on Handle's stack; its strings view the request.
type held struct {
	queues   *tenant.Queues // non-nil: queued bytes are reserved against tenant's caps
	tenant   string
	queued   int64
	pipeline int64 // bytes added to Router.pipeline

	req    *wal.Request      // the record; rec appends the envelope to req.Buf
	rec    envelope.Appender // where the envelope stands in req.Buf
	remote string            // the sender's address, the envelope's last field

	// Given to the committed hook (committed); given back otherwise.
	pen    int64 // bytes reserved of the quarantine pen
	ticket dedupe.Ticket
	keyed  bool // ticket holds the hook's dedupe key

	// answered: the request was a subscription handshake, answered at
	// step 12; nothing is committed.
	answered bool
}

// flag sets verification flag bits of the hook's envelope.
func (h *held) flag(f byte) { h.rec.AddFlags(h.req.Buf, f) }

// end appends the envelope's last fields: its dedupe key, the sender's
// address and the hook's event type.
func (h *held) end(dedupeKey, eventType string) {
	h.req.Buf = h.rec.EndEvent(h.req.Buf, dedupeKey, h.remote, eventType)
}

// committed hands what the hook reserved over to it once it is durable:
// the pen's bytes stay reserved for its pen row, and its dedupe key now
// names its event id. Both are the hook's before Committed is called: a
// panic in it must not give back what a durable hook holds.
func (r *Router) committed(ctx *fasthttp.RequestCtx, h *held) {
	h.pen = 0
	if h.keyed {
		h.keyed = false
		r.o.Dedupe.Committed(context.WithoutCancel(ctx), h.ticket, h.req.ID, h.req.Seq)
	}
}

// release gives back everything h holds. After a panic the record is left
// to the garbage collector instead of the pool: the panic may have come
// from inside the commit, which may still hold it.
func (r *Router) release(ctx *fasthttp.RequestCtx, h *held, panicked bool) {
	if h.keyed {
		// Not ctx: it ends when the server drains, and a key left pending
		// would hold a retry back for a whole lease.
		r.o.Dedupe.Aborted(context.WithoutCancel(ctx), h.ticket)
	}
	if h.pen > 0 {
		r.o.Pen.UnreservePen(h.pen)
	}
	if h.req != nil && !panicked {
		wal.ReleaseRequest(h.req)
	}
	r.pipeline.Add(-h.pipeline)
	if h.queues != nil {
		h.queues.Release(h.tenant, h.queued)
	}
	*h = held{}
}
