package edge

import (
	"errors"
	"io"
	"slices"
	"strings"
	"time"

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
// into a pooled WAL record, (verify, dedupe), commit, answer. A refusal is
// answered at once and ends the request; what a step reserves is recorded
// in hold, which Handle releases.
func (r *Router) ingest(ctx *fasthttp.RequestCtx, a *admitted, hold *held) {
	req := wal.AcquireRequest()
	hold.req = req
	hold.remote = clientAddr(ctx)
	req.Buf = r.encodeHead(&hold.rec, req.Buf, &ctx.Request.Header, a)
	// 11. body, within the bound, straight into the record
	buf, v := readBody(ctx, hold.rec.BeginBody(req.Buf), a.limit)
	req.Buf = buf
	if v != vOK {
		reply(ctx, v, true)
		return
	}
	body := hold.rec.EndBody(req.Buf)
	failed, v, wait := r.verifyHook(ctx, a, hold, body)
	if v != vOK {
		replyWait(ctx, v, wait, false)
		return
	}
	if hold.answered {
		return // a subscription handshake: answered, nothing to commit
	}
	if !r.dedupe(ctx, a, hold, body, failed) {
		return
	}
	if a.newTenant && r.o.NewTenants != nil {
		if ok, wait := r.o.NewTenants.Take(r.o.Mono()); !ok {
			replyWait(ctx, vNewTenantsLimited, wait, false)
			return
		}
	}
	r.commit(ctx, hold, len(body))
}

var redacted = []byte(verify.Redacted)

// encodeHead appends the hook's envelope up to its body to buf, from views
// of the request that e copies.
func (r *Router) encodeHead(e *envelope.Appender, buf []byte, h *fasthttp.RequestHeader, a *admitted) []byte {
	buf = e.Begin(buf, r.o.Now(), 0, a.tenant, a.src.Name, a.src.Spec.Verify.Type)
	p := &a.route.Params
	buf = e.Params(buf, p.Len())
	for i := range p.Len() {
		k, v := p.At(i)
		buf = e.Pair(buf, k, v)
	}
	// The fields as they arrived (rawFields), not fasthttp's view of them.
	raw := h.RawHeaders()
	n := 0
	for rest := raw; ; n++ {
		var ok bool
		if _, _, rest, ok = nextField(rest); !ok {
			break
		}
	}
	buf = e.Headers(buf, n)
	cred := a.src.CredentialHeader
	for rest := raw; ; {
		k, v, next, ok := nextField(rest)
		if !ok {
			return buf
		}
		if cred != "" && strings.EqualFold(b2s(k), cred) {
			// The source's shared credential itself: never stored.
			v = redacted
		}
		buf = e.Pair(buf, b2s(k), b2s(v))
		rest = next
	}
}

// clientAddr is the sender's address as the listener knows it (the
// PROXY header's sender, else the peer), or "" for a connection that did
// not come through it.
func clientAddr(ctx *fasthttp.RequestCtx) string {
	if c, ok := ctx.Conn().(interface{ ClientAddr() string }); ok {
		return c.ClientAddr()
	}
	return ""
}

// verifyHook runs router step 12: the signature over the raw body bytes,
// then the token. A hook that failed spends the source's quarantine
// bucket, never the tenant's token, and goes on (failed) only flagged or
// quarantined. A verdict other than vOK is the answer, with wait its
// Retry-After.
func (r *Router) verifyHook(ctx *fasthttp.RequestCtx, a *admitted, hold *held, body []byte) (failed bool, v verdict, wait time.Duration) {
	src := a.src
	if vf := src.Verifier; vf.Name() != "none" {
		err := vf.Verify(&ctx.Request.Header, body, time.Unix(0, r.o.Now()))
		// A preset's subscription handshake is answered here, with the
		// verdict it was checked by, and never committed.
		if hs, ok := vf.(verify.Handshaker); ok {
			if ans, ok := hs.Handshake(&ctx.Request.Header, body, err); ok {
				hold.answered = true
				r.answerHandshake(ctx, a, ans)
				return false, vOK, 0
			}
		}
		reason := verify.Failure(err)
		src.Counters.Verified[reason].Inc()
		if err == nil {
			hold.flag(envelope.FlagVerified)
		} else {
			verifyFailures.Inc()
			if a.newTenant {
				// A hook that failed verification never creates a tenant:
				// invented names on a shared source must not use up
				// tenants.max. Quarantine and accept_flag apply to
				// tenants that exist.
				return true, vSignature, 0
			}
			v, wait := r.onFailure(a, hold, reason, int64(len(body)))
			return true, v, wait
		}
	}
	// Only a hook that passed verification spends the tenant's token.
	if r.o.Tenants != nil {
		if ok, wait := r.o.Tenants.Take(a.tenant); !ok {
			return false, vRateLimited, wait
		}
	}
	return false, vOK, 0
}

// dedupe runs router step 13 and ends the envelope with its last field,
// the hook's dedupe key. Only hooks that passed verification are keyed (a
// forged request must not claim a real hook's key, nor match one); the key
// is held in hold until the commit. It reports false when it answered: a
// duplicate, or no way to tell one right now.
func (r *Router) dedupe(ctx *fasthttp.RequestCtx, a *admitted, hold *held, body []byte, failed bool) bool {
	src := a.src
	if src.Dedupe == nil || failed || r.o.Dedupe == nil {
		r.end(ctx, a, hold, body, "")
		return true
	}
	// (Declared here: a JSON key escapes to the heap, and only hooks of a
	// deduping source should pay for it.)
	var kbuf [dedupe.MaxKeyBytes]byte
	key, ok := src.Dedupe.Key(kbuf[:0], &ctx.Request.Header, body)
	if !ok {
		r.end(ctx, a, hold, body, "")
		return true
	}
	t, orig, dup, err := r.o.Dedupe.Begin(ctx, dedupe.MakeKey(a.tenant, src.Name, key), src.DedupeTTL, r.o.Now())
	switch {
	case err != nil:
		r.logError("cannot tell a hook from a duplicate", err)
		reply(ctx, vUnavailable, false)
		return false
	case dup:
		src.Counters.Duplicates.Inc()
		replyID(ctx, fasthttp.StatusOK, orig, `,"duplicate":true}`)
		return false
	}
	hold.ticket, hold.keyed = t, true
	r.end(ctx, a, hold, body, b2s(key))
	return true
}

// commit runs router step 14: WAL append + group fsync, then 201 (202
// quarantined). (The commit's wait is measured by the WAL's own batch and
// fdatasync histograms; timing it here cost two clock reads per request.)
func (r *Router) commit(ctx *fasthttp.RequestCtx, hold *held, bodyLen int) {
	req := hold.req
	quarantined := hold.rec.Flags(req.Buf)&envelope.FlagQuarantined != 0
	wal.SealPayload(req.Buf)
	if err := r.o.WAL.Commit(req); err != nil {
		commitFailures.Inc()
		if !errors.Is(err, wal.ErrNoSpace) { // the WAL logs a full disk itself, throttled
			r.logError("cannot commit hook", err)
		}
		v, closeConn := commitVerdict(err)
		reply(ctx, v, closeConn)
		return
	}
	r.committed(ctx, hold)
	bodyBytes.Add(bodyLen)
	if quarantined {
		replyID(ctx, fasthttp.StatusAccepted, req.ID, `,"quarantined":true}`)
		return
	}
	replyID(ctx, fasthttp.StatusCreated, req.ID, `}`)
}

// commitVerdict is the answer to a commit that failed. Only a failure of
// the node itself closes the connection.
func commitVerdict(err error) (v verdict, closeConn bool) {
	switch {
	case errors.Is(err, wal.ErrTooLarge):
		return vTooLarge, false
	case errors.Is(err, wal.ErrTenantLimit):
		return vTenantLimit, false
	case errors.Is(err, source.ErrNoDurableSink):
		return vNoDurable, false
	case errors.Is(err, wal.ErrNoSpace):
		// The disk is full: 503 with Retry-After until space returns
		// (DESIGN.md §6 item 10); the connection is sound.
		return vUnavailable, false
	}
	return vUnavailable, true
}

// onFailure applies the source's on_verify_failure to a hook that failed
// verification for reason: reject, or mark it quarantined or flagged
// after spending a token of the source's quarantine bucket (and, for the
// pen, reserving its body's size in hold). A verdict other than vOK is the
// answer, with wait the Retry-After of a 429.
func (r *Router) onFailure(a *admitted, hold *held, reason uint8, size int64) (verdict, time.Duration) {
	src := a.src
	mode := src.Spec.OnVerifyFailure
	if mode != "quarantine" && mode != "accept_flag" {
		return vSignature, 0
	}
	if ok, wait := r.quarantineBucket(src).Take(r.o.Mono()); !ok {
		quarantineLimited.Inc()
		return vQuarantineLimited, wait
	}
	hold.flag(envelope.FailureBits(reason))
	if mode == "accept_flag" {
		hold.flag(envelope.FlagFlagged)
		src.Counters.Flagged.Inc()
		return vOK, 0
	}
	if r.o.Pen == nil {
		return vUnavailable, 0
	}
	switch ok, closed := r.o.Pen.ReservePen(a.tenant, size); {
	case closed:
		// Closed since step 6 let it through: the pen refuses it too.
		tenantErasing.Inc()
		return vTenantErasing, 0
	case !ok:
		penFull.Inc()
		return vPenFull, penRetry
	}
	hold.pen = size
	hold.flag(envelope.FlagQuarantined)
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
