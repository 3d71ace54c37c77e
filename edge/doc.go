// Package edge is the public listener: it takes a webhook from the socket to
// the commit step and gives the sender its answer. It is the hot path: a
// hook from its parsed header to its 201 allocates nothing, and neither does
// a refusal decided from the header (router_alloc_test.go holds it to that).
//
// # What it owns
//
//   - The listener (ListenWith, NewListener) and its fasthttp server
//     (NewServer): the connection bound and each client's share of it
//     (limits.max_connections, max_connections_per_client), the PROXY
//     protocol from trusted balancers (listen_proxy_protocol; a strict
//     parser of v1 and v2, proxyproto.go), the read buffer and timeouts,
//     and the JSON answers to what fasthttp refuses before a request
//     exists. The client's address (the PROXY header's sender, else the
//     peer) is the envelope's remote address.
//   - The header fields as they arrived (rawheaders.go): what the
//     envelope stores is read from fasthttp's raw header block, not its
//     normalised view; obsolete line folding is refused.
//   - The router (Router), which runs the router order of DESIGN.md §2.1:
//     steps 0-5 (method, route guard, resolver, declared length, source and
//     tenant binding, header bounds) from the header alone, in fasthttp's
//     HeaderReceived hook before a body byte is read, and again in Handle
//     against the snapshot it serves from; steps 6-10 (a tenant being
//     erased, Options.Closed; token check, the tenant's queue caps, the
//     node's pipeline bytes, new tenants) in admit; steps 11-14 in ingest: the body read within its bound straight
//     into a pooled WAL record, the signature and on_verify_failure
//     (quarantine pen, flag), dedupe, and the commit through Committer.
//   - Subscription handshakes (handshake.go): a provider's handshake,
//     which its source's preset declares (verify.Handshaker), is answered
//     at the edge and never committed. Step 0 lets a GET through only to
//     a source whose handshake is a GET (Okta, Dropbox, Meta), with no
//     body; any other GET, an unknown URL's among them, is the same 405.
//     A POST handshake (Slack, Zoom, Twitch, Discord, Microsoft Graph,
//     Xero, Asana) is recognised at step 12 with the verdict of its own
//     signature. The unsigned ones (Dropbox's challenge, Graph's
//     validationToken, Asana's X-Hook-Secret) are answered only in the
//     shape their provider sends; anything else is no handshake (a GET's
//     405, a POST verified as a hook). An answered handshake spends the
//     tenant's token when it proved itself, else the source's quarantine
//     bucket, as a hook would, and counts in
//     ankusa_edge_handshakes_total{kind,outcome}.
//   - The hook's event type (verify.EventTyper), read once verification
//     has decided the hook's fate (a flagged or quarantined hook keeps
//     its event type too, for the operator) and stored as the envelope's
//     last field.
//   - The resolvers and their registry (RegisterResolver, NewResolver),
//     Route and Params: path (POST /<prefix>/:source_id, the source's
//     tenant), tenantpath (POST /<prefix>/:tenant_id/:source_id), host
//     (the tenant from the first label of Host before
//     route_resolver.suffix, the source from the path; lower-case hosts
//     only) and token (route_resolver.path with one :token, looked up in
//     the snapshot's route table; the route names source and tenant, a
//     route of the shared tenant leaves the tenant to the source).
//     Every resolver is handed the snapshot the request is served from
//     and does no I/O; every refusal is the one 404.
//   - Its answers: every status code, error body, Retry-After and
//     Connection: close (responses.go), and the ankusa_edge_* metrics.
//
// What one request reserves (queue caps, pipeline bytes, pen bytes, its
// dedupe key) is recorded in one held value and given back through one
// path, whichever way the request ends (held.go).
//
// # Lifetimes
//
// Nothing of fasthttp's request is kept after the handler returns. Route,
// Params and what the router decided for a request hold views into the
// request header, valid only while the request is being handled; whoever
// keeps a name copies it (the tenant stage's buckets and queues and the
// dedupe guard do). The envelope is
// appended into the pooled wal.Request with envelope.Appender, which copies
// the views it is given; the body is read from the socket into that record
// and nowhere else. The handler releases the wal.Request on every way out;
// the commit loop's callee retains it if it keeps it.
//
// # Imports
//
// edge imports only what runs before or at the commit: config, source,
// tenant, verify, dedupe, envelope and wal (for wal.Request and the commit's
// errors). It never imports admin, cli, cmd, dispatch (nor its sinks),
// segment, archive or meta: what follows the commit reaches the edge only
// through the interfaces it declares (Committer, Pen, RateLimiter), which
// the wiring fills in. No package of the storage stages imports edge.
package edge
