package edge

import (
	"github.com/valyala/fasthttp"
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
}

// verdictHeader carries a verdict from HeaderReceived to the handler. It is
// deleted from every incoming request first, so a sender cannot set it.
const verdictHeader = "X-Ankusa-Internal-Verdict"

var verdictValues = [numVerdicts]string{"0", "1", "2", "3", "4", "5", "6", "7", "8"}

func errBody(code, msg string) []byte {
	return []byte(`{"error":"` + code + `","message":"` + msg + `"}`)
}

var (
	contentTypeJSON = []byte("application/json")
	retryAfterOne   = []byte("1")
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
	if closeConn || v == vNotFound {
		ctx.SetConnectionClose()
	}
	ctx.Response.SetBodyRaw(a.body)
	countStatus(a.status)
}
