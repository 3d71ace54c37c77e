package edge

import (
	"errors"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ankusa/ankusa/tenant"
)

// Error codes of the public listener (DESIGN.md §2.1).
const (
	codeMethodNotAllowed = "method_not_allowed"
	codeNotFound         = "not_found"
	codePayloadTooLarge  = "payload_too_large"
	codeInvalidHeader    = "invalid_header"
	codeInvalidBody      = "invalid_body"
	codeOverloaded       = "overloaded"
	codeUnavailable      = "unavailable"
	codeSignature        = "signature_invalid"
	codeRequestTimeout   = "request_timeout"
	codeNoDurableSink    = "no_durable_sink"
	codeRateLimited      = "rate_limited"
	codeQuarantineFull   = "quarantine_full"
	codeTenantErasing    = "tenant_erasing"
	codeTenantOverload   = "tenant_overload"
	codeTenantLimit      = "tenant_limit"
)

// verdict is an answer decided before the body is read.
type verdict uint8

const (
	vOK verdict = iota
	vMethod
	vNotFound
	vTooLarge
	vInvalidHeader
	vInvalidBody
	vOverloaded
	vUnavailable
	vSignature
	vHeaderTooBig // past the transport's read buffer (fasthttp's 431)
	vTimeout      // the request did not arrive within limits.read_timeout
	vNoDurable    // wal.type none and the source has no durable sink
	// vQuarantineLimited: a hook failed verification and its source's
	// quarantine bucket is empty.
	vQuarantineLimited
	vPenFull       // the quarantine pen is at limits.max_quarantine_bytes
	vTenantErasing // the tenant is being erased
	vRateLimited   // the tenant's token bucket is empty
	// vTenantOverload: the tenant holds its max_queue or max_queue_bytes
	// (or, near the node's bound, its share of it) in the pipeline.
	vTenantOverload
	vTenantLimit       // a new tenant past tenants.max
	vNewTenantsLimited // the node creates tenants no faster than tenants.create_rate
	numVerdicts
)

type answer struct {
	status     int
	body       []byte
	retryAfter bool
}

var answers = [numVerdicts]answer{
	vMethod:        {fasthttp.StatusMethodNotAllowed, errBody(codeMethodNotAllowed, "webhooks are delivered with POST"), false},
	vNotFound:      {fasthttp.StatusNotFound, errBody(codeNotFound, "no webhook endpoint at this URL"), false},
	vTooLarge:      {fasthttp.StatusRequestEntityTooLarge, errBody(codePayloadTooLarge, "the request body is larger than this endpoint accepts"), false},
	vInvalidHeader: {fasthttp.StatusBadRequest, errBody(codeInvalidHeader, "the request headers are too large, too many or malformed"), false},
	vInvalidBody:   {fasthttp.StatusBadRequest, errBody(codeInvalidBody, "the request body ended before its declared length or is malformed"), false},
	vOverloaded:    {fasthttp.StatusServiceUnavailable, errBody(codeOverloaded, "the node is at its ingest capacity; retry later"), true},
	vUnavailable:   {fasthttp.StatusServiceUnavailable, errBody(codeUnavailable, "the node cannot store hooks right now; retry later"), true},
	vSignature:     {fasthttp.StatusUnauthorized, errBody(codeSignature, "the webhook signature does not verify"), false},
	vHeaderTooBig:  {fasthttp.StatusRequestHeaderFieldsTooLarge, errBody(codeInvalidHeader, "the request headers are too large, too many or malformed"), false},
	vTimeout:       {fasthttp.StatusRequestTimeout, errBody(codeRequestTimeout, "the request did not arrive in time"), false},
	vNoDurable:     {fasthttp.StatusServiceUnavailable, errBody(codeNoDurableSink, "this node runs without a WAL and this source has no durable sink; its owner must add one"), true},
	vQuarantineLimited: {fasthttp.StatusTooManyRequests, errBody(codeRateLimited,
		"too many hooks to this source failed signature verification: its quarantine bucket is empty; retry later"), true},
	vPenFull:       {fasthttp.StatusTooManyRequests, errBody(codeQuarantineFull, "the quarantine pen is full: hooks that failed verification wait for an operator; retry later"), true},
	vTenantErasing: {fasthttp.StatusServiceUnavailable, errBody(codeTenantErasing, "this tenant is being erased"), false},
	vRateLimited:   {fasthttp.StatusTooManyRequests, errBody(codeRateLimited, "this tenant is sending faster than its rate limit; retry after Retry-After seconds"), true},
	vTenantOverload: {fasthttp.StatusTooManyRequests, errBody(codeTenantOverload,
		"this tenant has as many hooks waiting to be stored as it may; retry later"), true},
	vTenantLimit: {fasthttp.StatusForbidden, errBody(codeTenantLimit, "this node holds as many tenants as it may (tenants.max)"), false},
	vNewTenantsLimited: {fasthttp.StatusTooManyRequests, errBody(codeRateLimited,
		"the node is creating new tenants as fast as it may; retry later"), true},
}

// penRetry is the Retry-After of a full pen: it empties only when an
// operator releases or drops hooks.
const penRetry = 60 * time.Second

// verdictHeader carries a verdict from HeaderReceived to the handler. It is
// deleted from every incoming request first, so a sender cannot set it.
const verdictHeader = "X-Ankusa-Internal-Verdict"

var verdictValues = [numVerdicts]string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", ":", ";", "<", "=", ">", "?", "@", "A", "B"}

func errBody(code, msg string) []byte {
	return []byte(`{"error":"` + code + `","message":"` + msg + `"}`)
}

var (
	contentTypeJSON = []byte("application/json")
	retryAfterOne   = []byte("1")
	allowPost       = []byte("POST")
)

// reply writes a pre-rendered error answer. closeConn must be true when the
// body was not read to its end: the unread bytes would otherwise be parsed
// as the next request. Every 404 closes, so that every 404 is byte-for-byte
// the same response.
func reply(ctx *fasthttp.RequestCtx, v verdict, closeConn bool) {
	a := &answers[v]
	ctx.Response.SetStatusCode(a.status)
	ctx.Response.Header.SetContentTypeBytes(contentTypeJSON)
	if a.retryAfter {
		ctx.Response.Header.SetBytesV("Retry-After", retryAfterOne)
	}
	if v == vMethod {
		ctx.Response.Header.SetBytesV("Allow", allowPost) // RFC 9110 §15.5.6
	}
	if closeConn || v == vNotFound {
		ctx.SetConnectionClose()
	}
	ctx.Response.SetBodyRaw(a.body)
	countStatus(a.status)
}

// replyWait is reply with a Retry-After of wait (rounded up to whole
// seconds) when wait is set.
func replyWait(ctx *fasthttp.RequestCtx, v verdict, wait time.Duration, closeConn bool) {
	reply(ctx, v, closeConn)
	if wait > 0 && answers[v].retryAfter {
		var b [8]byte
		ctx.Response.Header.SetBytesV("Retry-After", strconv.AppendInt(b[:0], int64(tenant.RetryAfterSeconds(wait)), 10))
	}
}

// transportError is the server's ErrorHandler. It answers what fasthttp
// refuses before the router sees a request (a malformed request line or
// header field, a header block past the read buffer, a body that ends
// inside fasthttp's prefetch of its first 8KiB, a read timeout) with the
// edge's JSON answers instead of fasthttp's text/plain ones; fasthttp
// closes the connection after it. The answer depends on the error only,
// never on the URL, so it tells a probe nothing about which sources exist.
func transportError(ctx *fasthttp.RequestCtx, err error) {
	var small *fasthttp.ErrSmallBuffer
	var broken fasthttp.ErrBrokenChunk
	switch {
	case errors.As(err, &small):
		reply(ctx, vHeaderTooBig, true)
	case isTimeout(err):
		reply(ctx, vTimeout, true)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.As(err, &broken):
		reply(ctx, vInvalidBody, true)
	default:
		reply(ctx, vInvalidHeader, true)
	}
}

// bodyReadVerdict is the answer to a body read that failed: a read past
// limits.read_timeout is 408, as it is when fasthttp's own prefetch times
// out; a body that ended early or broke its chunked framing is 400.
func bodyReadVerdict(err error) verdict {
	if isTimeout(err) {
		return vTimeout
	}
	return vInvalidBody
}

func isTimeout(err error) bool {
	var nerr net.Error
	return errors.Is(err, fasthttp.ErrTimeout) || errors.As(err, &nerr) && nerr.Timeout()
}
