// Package natssink is the NATS JetStream sink of the dispatch stage
// (DESIGN.md §2.7): it publishes each hook as one message to a subject
// that a JetStream stream holds and answers ok only for the stream's
// PubAck, so the sink is durable (a nil from Deliver means the hook is
// stored in Spec.Stream, replicated as the stream is).
//
// # What it owns
//
// A Sink owns one nats.go connection, named
// "ankusa/<node>/<source>/<sink id>" at the server, made by the first
// Deliver (New connects nothing: a server that is down at boot does not
// stop the node). The client reconnects by itself, forever
// (MaxReconnects(-1), RetryOnFailedConnect, IgnoreAuthErrorAbort), every
// Options.ReconnectWait (1 s) plus jitter, and pings the server every
// 10 s. It has no reconnect buffer: a Deliver while disconnected fails at
// once and the dispatcher retries it, instead of the client sending it
// later behind the dispatcher's back.
//
// Many Deliver calls are in flight at once on the connection (one
// request-reply each over the client's shared reply subscription): none
// waits for another's PubAck.
//
// Credentials: auth.username with auth.password (user and password),
// auth.token, or auth.creds_file (a JWT and NKey seed file) — one of
// them. A url with user info (nats://user:pass@host, nats://token@host)
// is refused: credentials live under auth, sealed at rest in a stored
// source and never shown by the admin API. TLS: tls (the CA file, a client certificate, server_name),
// with a tls:// url or a server that requires it. Messages and logs never
// show a password or a token.
//
// # The stream
//
// The stream is the operator's. The first Deliver after the connection is
// up asks the server for it (STREAM.INFO: the credentials need that
// permission besides publishing to the subject). A missing stream is a
// retryable error naming the stream and the url, and is asked again at
// most once a second. With create_stream the sink creates a missing
// stream — only a missing one: an existing stream is never updated, its
// config is the operator's — with
//
//	subjects          create_stream.subjects, default the subject template
//	                  with each token holding a field replaced by "*"
//	                  ("ankusa.{tenant_id}.{source_id}" → "ankusa.*.*")
//	storage           file (default) or memory
//	replicas          default 1
//	max_bytes         default unlimited (discard old: the stream's default)
//	max_age           default unlimited
//	duplicate_window  default 2m (config.DefaultDuplicateWindow)
//
// Once checked, the stream is not asked again: a stream deleted later
// shows as "no responders" (below).
//
// # Message
//
//	subject         Spec.Subject expanded over the envelope (default
//	                "ankusa.{tenant_id}.{source_id}"); a hook whose subject
//	                is not a valid literal subject (empty, white space, an
//	                empty token, a '*' or '>' token — a route parameter's
//	                value can make one) is refused, permanently
//	data            format envelope: the JSON form of DESIGN.md §2.3
//	                (envelope.AppendJSON), exactly; format raw: the body
//	                as received
//	headers:
//	  Nats-Msg-Id                    the event id, evt_... (JetStream's
//	                                 de-duplication, below)
//	  ankusa-event-id                the event id
//	  ankusa-tenant                  the tenant id
//	  ankusa-source                  the source id
//	  ankusa-attempt                 the attempt, decimal, from 1
//	  ankusa-verification-flagged    "true", only for flagged hooks
//	  ankusa-event-type              the hook's event type, only for a
//	                                 hook that has one
//	  ankusa-param-NAME              one per route parameter
//	  Content-Type                   application/json (format envelope),
//	                                 or the hook's own Content-Type
//	                                 (format raw; absent when the hook had
//	                                 none)
//	  ankusa-body-claim              format raw, a body delivered by
//	                                 reference only (claim: the sink was
//	                                 given envelope.BodyClaim): the
//	                                 claim's JSON form,
//	                                 {"store":...,"key":...,"offset":...,
//	                                 "length":...,"sha256":...}; the data
//	                                 is then empty, and Content-Type is
//	                                 still the claimed body's
//
// In format envelope a claimed body is the JSON's body_claim field (and
// an empty body), as envelope.AppendJSON writes it; no header.
// Header names are case-sensitive in NATS and sent as written here.
//
// # PubAck and the duplicate window
//
// Deliver answers nil only for a PubAck whose stream is Spec.Stream. A
// PubAck from another stream (the subject is bound to it, not to
// Spec.Stream) is a retryable error naming that stream, logged as an
// error: the message is stored, but not where the operator said. A PubAck
// with Duplicate set is ok: the stream already holds a message with that
// Nats-Msg-Id, stored by an earlier attempt whose answer was lost. So a
// retry within the stream's duplicate window (2 minutes by default) is
// stored once; a retry after it is stored again (at-least-once, as every
// sink: consumers de-duplicate by ankusa-event-id). The window is per
// stream and the id is the hook's: two sinks of one source that publish
// to the same stream (under different subjects) store the hook once, the
// second sink's publish acked as a duplicate. Give each its own stream.
//
// # Errors
//
// Every error is a *dispatch.Error. Retryable unless said; "answered"
// (dispatch.Error.Answered) means the server is up and answered, so the
// circuit breaker does not count the failure against it.
//
//	not connected (ErrNotConnected): no server answers, or the
//	  connection is down; the message names the client's last error
//	  (an authorization violation says "fix auth"). Fails at once.
//	authorization violation: the connection is refused, so Deliver fails
//	  as not connected; the client keeps retrying, and the sink logs an
//	  error "refuses the sink's credentials" (the 1st, 2nd, 4th... time).
//	  The operator fixes auth; nothing is dead-lettered meanwhile but by
//	  max_attempts/max_age.
//	no permission to publish to the subject: the server drops the
//	  message and reports a permissions violation on the connection, which
//	  the sink logs as the authorization error above; Deliver sees no
//	  PubAck (below), and once the violation has arrived its error names
//	  it.
//	missing stream (ErrNoStream), answered: the stream check found no
//	  stream Spec.Stream (and create_stream is not set or cannot make it).
//	no responders (ErrNoStream), answered: no stream holds the subject.
//	no PubAck within Spec.Timeout (ErrNoAck): "the message may still be
//	  in the stream"; the retry is dropped by the duplicate window if so.
//	stream full (ErrRefused), answered: "maximum bytes exceeded" or
//	  "maximum messages exceeded" from a stream with discard new.
//	another JetStream API error (ErrRefused), answered.
//	PubAck from another stream (ErrRefused), answered.
//	too large (ErrTooLarge), permanent: over the server's max_payload
//	  (the client refuses it before sending; headers count) or over the
//	  stream's max_msg_size (error 10054). A claim store (claim) is the
//	  way to deliver larger bodies.
//	invalid subject or header, permanent: see Message.
//
// Counters (no labels): ankusa_nats_sink_acked_total,
// ..._duplicate_acks_total, ..._no_ack_total, ..._no_responders_total,
// ..._refused_total, ..._too_large_total, ..._not_connected_total,
// ..._connects_total, ..._disconnects_total,
// ..._authorization_errors_total, ..._streams_created_total.
//
// A sink knows nothing of storage: it imports config, envelope, dispatch
// (the Sink contract) and dispatch/tmpl, and never meta, wal, segment,
// the edge or the admin API.
package natssink
