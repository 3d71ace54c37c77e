package edge

import (
	"encoding/binary"
	"errors"
	"io"
	"slices"
	"time"
	"unsafe"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/source"
	"github.com/ankusa/ankusa/wal"
)

// readChunk is how much of a chunked body is read per call.
const readChunk = 32 << 10

// ingest runs router steps 11-14 for an admitted request: read the body
// into a pooled WAL record, (verify, dedupe), commit, answer.
func (r *Router) ingest(ctx *fasthttp.RequestCtx, a *admitted) {
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
	// 12. signature over the raw body bytes. (on_verify_failure quarantine
	// and accept_flag, and the token debit, arrive with the quarantine pen
	// and the tenant stage; config refuses them until then.)
	if vf := a.src.Verifier; vf.Name() != "none" {
		if err := vf.Verify(&ctx.Request.Header, buf[lenAt+4:], time.Unix(0, r.o.Now())); err != nil {
			wal.ReleaseRequest(req)
			verifyFailures.Inc()
			reply(ctx, vSignature, false)
			return
		}
		buf[wal.FrameHeaderSize+envelope.OffFlags] |= envelope.FlagVerified
	}
	// 13. dedupe arrives with the dedupe stage.
	buf = envelope.AppendString(buf, "") // dedupe key
	req.Buf = buf
	wal.SealPayload(req.Buf)
	// 14. commit: WAL append + group fsync, then 201.
	// (The commit's wait is measured by the WAL's own batch and fdatasync
	// histograms; timing it here cost two clock reads per request.)
	err := r.o.WAL.Commit(req)
	if err != nil {
		wal.ReleaseRequest(req)
		commitFailures.Inc()
		if r.logThrottler.allow() {
			r.o.Logger.Error("cannot commit hook", zap.Error(err))
		}
		if errors.Is(err, wal.ErrTooLarge) {
			reply(ctx, vTooLarge, false)
			return
		}
		if errors.Is(err, source.ErrNoDurableSink) {
			reply(ctx, vNoDurable, false)
			return
		}
		reply(ctx, vUnavailable, true)
		return
	}
	bodyBytes.Add(bodyLen)
	var out [64]byte
	b := append(out[:0], `{"id":"`...)
	b = req.ID.AppendText(b)
	b = append(b, `"}`...)
	wal.ReleaseRequest(req)
	ctx.Response.SetStatusCode(fasthttp.StatusCreated)
	ctx.Response.Header.SetContentTypeBytes(contentTypeJSON)
	ctx.Response.SetBody(b)
	countStatus(fasthttp.StatusCreated)
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
