package edge

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"slices"
	"time"
	"unsafe"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/ankusa/ankusa/dedupe"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/source"
	"github.com/ankusa/ankusa/verify"
	"github.com/ankusa/ankusa/wal"
)

// readChunk is how much of a chunked body is read per call.
const readChunk = 32 << 10

// ingest runs router steps 11-14 for an admitted request: read the body
// into a pooled WAL record, (verify, dedupe), commit, answer.
func (r *Router) ingest(ctx *fasthttp.RequestCtx, a *admitted, newTenant bool) {
	req := wal.AcquireRequest()
	buf := r.encodeHead(req.Buf, &ctx.Request.Header, a)
	lenAt := len(buf)
	buf = append(buf, 0, 0, 0, 0)
	// 11. body, within the bound
	buf, v := readBody(ctx, buf, a.limit)
	req.Buf = buf
	if v != vOK {
		wal.ReleaseRequest(req)
		reply(ctx, v, true)
		return
	}
	bodyLen := len(buf) - lenAt - 4
	binary.BigEndian.PutUint32(buf[lenAt:], uint32(bodyLen))
	body := buf[lenAt+4:]
	flags := &buf[wal.FrameHeaderSize+envelope.OffFlags]
	src := a.src
	// What this hook holds until it is committed or refused: a dedupe key
	// and a share of the quarantine pen. Given back on every way out,
	// a panic included (Handle recovers it).
	var ticket dedupe.Ticket
	var key []byte
	var penReserved int64
	committed := false
	defer func() {
		if committed {
			return
		}
		if key != nil {
			// Not ctx: it ends when the server drains, and a key left
			// pending would hold a retry back for a whole lease.
			r.o.Dedupe.Aborted(context.WithoutCancel(ctx), ticket)
		}
		if penReserved > 0 {
			r.o.Pen.Unreserve(penReserved)
		}
	}()
	// 12. signature over the raw body bytes, then the token: a hook that
	// failed spends the source's quarantine bucket, never the tenant's.
	failed := false
	if vf := src.Verifier; vf.Name() != "none" {
		err := vf.Verify(&ctx.Request.Header, body, time.Unix(0, r.o.Now()))
		reason := verify.Failure(err)
		src.Counters.Verified[reason].Inc()
		if err == nil {
			*flags |= envelope.FlagVerified
		} else {
			verifyFailures.Inc()
			if newTenant {
				// A hook that failed verification never creates a tenant:
				// invented names on a shared source must not use up
				// tenants.max. Quarantine and accept_flag apply to
				// tenants that exist.
				wal.ReleaseRequest(req)
				reply(ctx, vSignature, false)
				return
			}
			if v, wait := r.onFailure(src, a.tenant, flags, reason, int64(bodyLen)); v != vOK {
				wal.ReleaseRequest(req)
				replyWait(ctx, v, wait, false)
				return
			}
			if *flags&envelope.FlagQuarantined != 0 {
				penReserved = int64(bodyLen)
			}
			failed = true
		}
	}
	// Only a hook that passed verification spends the tenant's token.
	if !failed && r.o.Tenants != nil {
		if ok, wait := r.o.Tenants.Take(a.tenant); !ok {
			wal.ReleaseRequest(req)
			replyWait(ctx, vRateLimited, wait, false)
			return
		}
	}
	// 13. dedupe: only hooks that passed (a forged request must not claim
	// a real hook's key, nor match one).
	if src.Dedupe != nil && !failed && r.o.Dedupe != nil {
		// (Declared here: a JSON key escapes to the heap, and only hooks
		// of a deduping source should pay for it.)
		var kbuf [dedupe.MaxKeyBytes]byte
		var ok bool
		if key, ok = src.Dedupe.Key(kbuf[:0], &ctx.Request.Header, body); ok {
			k := dedupe.MakeKey(a.tenant, src.Name, key)
			t, orig, dup, err := r.o.Dedupe.Begin(ctx, k, src.DedupeTTL, r.o.Now())
			if err != nil {
				wal.ReleaseRequest(req)
				r.logError("cannot tell a hook from a duplicate", err)
				reply(ctx, vUnavailable, false)
				return
			}
			if dup {
				wal.ReleaseRequest(req)
				src.Counters.Duplicates.Inc()
				replyID(ctx, fasthttp.StatusOK, orig, `,"duplicate":true}`)
				return
			}
			ticket = t
		} else {
			key = nil
		}
	}
	buf = envelope.AppendString(buf, key)
	req.Buf = buf
	if newTenant && r.o.NewTenants != nil {
		if ok, wait := r.o.NewTenants.Take(r.o.Mono()); !ok {
			wal.ReleaseRequest(req)
			replyWait(ctx, vNewTenantsLimited, wait, false)
			return
		}
	}
	quarantined := buf[wal.FrameHeaderSize+envelope.OffFlags]&envelope.FlagQuarantined != 0
	wal.SealPayload(req.Buf)
	// 14. commit: WAL append + group fsync, then 201 (202 quarantined).
	// (The commit's wait is measured by the WAL's own batch and fdatasync
	// histograms; timing it here cost two clock reads per request.)
	err := r.o.WAL.Commit(req)
	if err != nil {
		wal.ReleaseRequest(req)
		commitFailures.Inc()
		r.logError("cannot commit hook", err)
		if errors.Is(err, wal.ErrTooLarge) {
			reply(ctx, vTooLarge, false)
			return
		}
		if errors.Is(err, wal.ErrTenantLimit) {
			reply(ctx, vTenantLimit, false)
			return
		}
		if errors.Is(err, source.ErrNoDurableSink) {
			reply(ctx, vNoDurable, false)
			return
		}
		reply(ctx, vUnavailable, true)
		return
	}
	committed = true
	bodyBytes.Add(bodyLen)
	if key != nil {
		r.o.Dedupe.Committed(context.WithoutCancel(ctx), ticket, req.ID, req.Seq)
	}
	id := req.ID
	wal.ReleaseRequest(req)
	if quarantined {
		replyID(ctx, fasthttp.StatusAccepted, id, `,"quarantined":true}`)
		return
	}
	replyID(ctx, fasthttp.StatusCreated, id, `}`)
}

// onFailure applies the source's on_verify_failure to a hook that failed
// verification for reason: reject, or mark it quarantined or flagged
// after spending a token of the source's quarantine bucket (and, for the
// pen, reserving its body's size). A verdict other than vOK is the answer, with
// wait the Retry-After of a 429.
func (r *Router) onFailure(src *source.Source, tenant string, flags *byte, reason uint8, size int64) (verdict, time.Duration) {
	mode := src.Spec.OnVerifyFailure
	if mode != "quarantine" && mode != "accept_flag" {
		return vSignature, 0
	}
	if ok, wait := r.quarantineBucket(src).Take(r.o.Mono()); !ok {
		quarantineLimited.Inc()
		return vQuarantineLimited, wait
	}
	*flags |= envelope.FailureBits(reason)
	if mode == "accept_flag" {
		*flags |= envelope.FlagFlagged
		src.Counters.Flagged.Inc()
		return vOK, 0
	}
	if r.o.Pen == nil {
		return vUnavailable, 0
	}
	switch r.o.Pen.Reserve(tenant, size) {
	case PenFull:
		penFull.Inc()
		return vPenFull, penRetry
	case PenClosed:
		return vTenantErasing, 0
	}
	*flags |= envelope.FlagQuarantined
	src.Counters.Quarantined.Inc()
	return vOK, 0
}

// replyID answers a committed (or duplicate) hook: {"id":"<id>"+tail.
func replyID(ctx *fasthttp.RequestCtx, status int, id envelope.ID, tail string) {
	var out [96]byte
	b := append(out[:0], `{"id":"`...)
	b = id.AppendText(b)
	b = append(b, '"')
	b = append(b, tail...)
	ctx.Response.SetStatusCode(status)
	ctx.Response.Header.SetContentTypeBytes(contentTypeJSON)
	ctx.Response.SetBody(b)
	countStatus(status)
}

func (r *Router) logError(msg string, err error) {
	if r.logThrottler.allow() {
		r.o.Logger.Error(msg, zap.Error(err))
	}
}

// encodeHead appends the envelope up to the body (see package envelope).
func (r *Router) encodeHead(buf []byte, h *fasthttp.RequestHeader, a *admitted) []byte {
	buf = envelope.AppendFixed(buf, r.o.Now(), 0)
	buf = envelope.AppendString(buf, a.tenant)
	buf = envelope.AppendString(buf, a.src.Name)
	buf = envelope.AppendString(buf, a.src.Spec.Verify.Type)
	p := &a.route.Params
	buf = binary.AppendUvarint(buf, uint64(p.Len()))
	for i := 0; i < p.Len(); i++ {
		k, v := p.At(i)
		buf = envelope.AppendString(buf, k)
		buf = envelope.AppendString(buf, v)
	}
	n := 0
	for range h.All() {
		n++
	}
	buf = binary.AppendUvarint(buf, uint64(n))
	for k, v := range h.All() {
		buf = envelope.AppendString(buf, k)
		buf = envelope.AppendString(buf, v)
	}
	return buf
}

// readBody appends the request body to buf, reading at most limit bytes: a
// declared length is read exactly (a shorter body is invalid_body), a
// chunked body is read to its end and refused once it passes limit. Memory
// never exceeds limit plus one read.
func readBody(ctx *fasthttp.RequestCtx, buf []byte, limit int64) ([]byte, verdict) {
	stream := ctx.RequestBodyStream()
	cl := ctx.Request.Header.ContentLength()
	if stream == nil {
		body := ctx.PostBody()
		if int64(len(body)) > limit {
			return buf, vTooLarge
		}
		return append(buf, body...), vOK
	}
	if cl >= 0 {
		if int64(cl) > limit {
			return buf, vTooLarge
		}
		start := len(buf)
		buf = slices.Grow(buf, cl)[:start+cl]
		if _, err := io.ReadFull(stream, buf[start:]); err != nil {
			return buf[:start], bodyReadVerdict(err)
		}
		return buf, vOK
	}
	// Chunked: read until EOF, never holding more than limit+1 bytes.
	start := len(buf)
	for {
		room := int64(readChunk)
		if left := limit + 1 - int64(len(buf)-start); left < room {
			room = left
		}
		buf = slices.Grow(buf, int(room))
		n, err := stream.Read(buf[len(buf) : len(buf)+int(room)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)-start) > limit {
			return buf[:start], vTooLarge
		}
		if err == io.EOF {
			return buf, vOK
		}
		if err != nil {
			if errors.Is(err, fasthttp.ErrBodyTooLarge) {
				return buf[:start], vTooLarge
			}
			return buf[:start], bodyReadVerdict(err)
		}
	}
}

// s2b views s as bytes; the caller must not modify them.
func s2b(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
