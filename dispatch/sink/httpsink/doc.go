// Package httpsink is the HTTP sink (DESIGN.md §2.7): it POSTs each hook to
// the receiver its url names, signed with Standard Webhooks headers when the
// sink has a secret, and maps the receiver's answer to what the dispatcher
// does next. It owns one fasthttp client per sink and that client's
// connections; the dispatcher owns retries, backoff, the circuit breaker,
// metrics and logs, and calls Deliver once per attempt.
//
// # The request
//
// The url, the header values and the secret are templates over the
// envelope (package dispatch/tmpl): {tenant_id}, {source_id}, {event_id},
// {params.NAME}. For a sink
//
//	url: http://receiver.example.com/hooks/{tenant_id}?x=1
//	headers: {Authorization: "Bearer {params.app}"}
//	secret: whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
//
// the third attempt of a flagged hook of tenant acme, source stripe, route
// parameter app=a1, received with Content-Type: application/json and the
// body {"id":"evt_1"}, signed at unix time 1764445200, is these bytes (one
// line each, every line ending in CR LF; the test TestWireFormat pins them):
//
//	POST /hooks/acme?x=1 HTTP/1.1
//	User-Agent: ankusa
//	Host: receiver.example.com
//	Content-Type: application/json
//	Content-Length: 14
//	Authorization: Bearer a1
//	x-ankusa-event-id: evt_01KB8J27QV000G00000000001A
//	x-ankusa-tenant: acme
//	x-ankusa-source: stripe
//	x-ankusa-attempt: 3
//	x-ankusa-verification-flagged: true
//	webhook-id: evt_01KB8J27QV000G00000000001A
//	webhook-timestamp: 1764445200
//	webhook-signature: v1,YSJlhea+W1A5Xi/bk2fVS9mCDsyTAynFgDWnP8v1pnQ=
//	(empty line)
//	{"id":"evt_1"}
//
// In order:
//
//   - The request line: POST, the expanded url's path and query as they
//     are (not normalized), HTTP/1.1. Redirects are not followed.
//   - User-Agent, Host (the url's host[:port]), Content-Type and
//     Content-Length, in that order, written by fasthttp.
//   - The sink's headers, sorted by name, each name as configured (not
//     case-normalized), each value expanded for the hook; CR and LF in an
//     expansion become spaces. A Content-Type here replaces the one below.
//     The names the sink sets itself (x-ankusa-*, webhook-*) and the
//     framing headers (Content-Length, Transfer-Encoding, Connection) are
//     refused by New.
//   - x-ankusa-event-id: the event id's text form (evt_ + 26 Crockford
//     base32 characters); x-ankusa-tenant and x-ankusa-source: the hook's
//     tenant and source; x-ankusa-attempt: the attempt's number, from 1;
//     x-ankusa-verification-flagged: true, only for a hook whose signature
//     failed verification and was kept flagged (on_verify_failure: accept_flag).
//   - x-ankusa-event-type: the hook's event type ("push", "invoice.paid"),
//     only for a hook that has one (read where its source's preset or
//     verify.event_type says; printable ASCII, at most 256 bytes).
//   - x-ankusa-body-claim, format raw only, for a hook delivered by
//     reference (the sink's claim: {store, over_bytes}, its body larger
//     than over_bytes): the claim's JSON form, one line,
//     {"store":"packs","key":"claims/tenant=acme/source=stripe/2026/12/05/edge-1-<id>.pack","offset":0,"length":1048576,"sha256":"<64 hex>"}
//     and the body is empty (Content-Length: 0) while Content-Type stays
//     the hook's. format: envelope carries the same reference in the
//     JSON's body_claim field (body "", body_encoding "claim") instead.
//   - With a secret, the Standard Webhooks headers: webhook-id (the event
//     id again, the same on every attempt), webhook-timestamp (unix
//     seconds of the attempt, Options.Now) and webhook-signature:
//     "v1," + base64(HMAC-SHA256(key, id + "." + timestamp + "." + body)),
//     body being exactly the bytes sent. The key is the expanded secret
//     base64-decoded after its "whsec_" prefix when it has one (as the
//     Standard Webhooks libraries take it), else the expanded secret's
//     bytes as they are. A whsec_ secret that does not decode is an error
//     of New (or, for a templated secret, a permanent error of the attempt).
//   - The body. format: raw (the default) sends the body as received, with
//     the Content-Type it came with (the first of that name in any case;
//     application/octet-stream when it had none). format: envelope sends
//     the envelope's JSON form, envelope.AppendJSON, byte for byte, with
//     Content-Type: application/json.
//
// # The answer
//
//	2xx                  delivered; nil
//	410                  permanent: the receiver says the endpoint is gone
//	408, 429, 5xx        retryable, with Retry-After (delta-seconds or an
//	                     HTTP-date; garbage ignored; at most 24h) as RetryAfter
//	3xx                  permanent: redirects are not followed
//	other 1xx, 4xx       permanent: the receiver refused the hook
//	no answer            retryable, Status 0: timeout, connection refused,
//	                     DNS failure, connection closed before the answer
//	SSRF guard refusal   permanent, Status 0, wraps ErrPrivateTarget
//
// Every error is a *dispatch.Error; d.Status is the receiver's status when
// there was an answer. A message quotes the start of the receiver's body
// (256 bytes) and never the secret, the url's path, query or userinfo.
// At most 64 KiB of an answer's body is read, so the connection can be used
// again; a longer body closes the connection instead.
//
// # Connections and time
//
// Connections are kept alive and pooled, at most concurrency per
// receiver (host:port); a request waiting for a connection waits within its
// timeout. An attempt ends at the earlier of the sink's timeout and ctx's
// deadline, connecting included; connecting (DNS and TCP) takes at most
// connect_timeout of it. Deliver returns as soon as ctx is done; the
// request then finishes or times out on its own goroutine and is dropped.
// A request whose kept-alive connection the receiver had closed is made
// once more on a new connection within the same deadline, so a receiver's
// idle timeout does not cost an attempt (a hook may then arrive twice, as
// at-least-once delivery allows).
//
// # SSRF guard
//
// Unless the sink says allow_private: true, the sink does not connect to
// a host named localhost, *.localhost or a cloud metadata name
// (metadata.google.internal, ...), nor to a host that is or resolves to a
// loopback, private (RFC 1918, fc00::/7), link-local (169.254/16 with the
// 169.254.169.254 metadata address, fe80::/10), unspecified, multicast,
// carrier-grade NAT (100.64/10) or reserved address, in IPv4 or IPv6
// form, IPv4-mapped, NAT64 or 6to4. The check runs in the client's dial
// function: it resolves the host with Options.LookupIP, checks every
// address, and connects to a checked address itself, never resolving the
// name again for that connection (DNS rebinding).
//
// # Ownership
//
// A Sink is safe for concurrent use. Deliver does not keep the Delivery
// or its envelope: the request's url, headers and body are copied into a
// pooled attempt, which is released when the answer is read.
//
// A sink knows nothing of storage: it imports config, envelope, dispatch
// (the Sink contract) and internal/backoff, and never meta, wal, segment,
// the edge or the admin API.
package httpsink
