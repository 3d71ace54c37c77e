// Package amqpsink is the RabbitMQ sink of the dispatch stage (DESIGN.md
// §2.7): it publishes each hook as one persistent AMQP 0-9-1 message and
// answers ok only once the broker has confirmed it, so the sink is
// durable (a nil from Deliver means the hook is safe at the broker).
//
// # What it owns
//
// A Sink owns one AMQP connection, opened lazily by the first Deliver and
// again in the background after a loss (exponential backoff with full
// jitter, capped at 30 s), and a pool of Options.Spec.Channels channels
// on it, each in confirm mode. It declares nothing: exchanges, queues and
// bindings are the operator's.
//
// # Confirms, returns and the channel pool
//
// A channel carries many publishes at once. Publishes on one channel are
// serialized for the few microseconds of the write, so the delivery tag a
// publish gets (the channel's next publish sequence number) is known
// before its frames leave; the publish registers a waiter under that tag
// first. One goroutine per channel reads the channel's confirms (in tag
// order) and its returns and completes the waiters:
//
//   - basic.ack: ok, unless the message was returned first;
//   - basic.nack: a retryable failure ("nacked by the broker");
//   - basic.return (mandatory publish that no queue took): a retryable
//     failure "unroutable: no queue bound ...", whatever the ack that
//     follows says: RabbitMQ acks an unroutable message because it has
//     decided to drop it.
//
// The broker sends a message's basic.return before its basic.ack, and the
// client library hands both over from one reader goroutine in frame
// order; the channel goroutine drains pending returns before it applies
// each confirm, so a return is always seen before the ack of its message.
// A return carries no delivery tag: it is matched to the unconfirmed
// publishes of its channel with the same message id, exchange and routing
// key, and all of them are failed (two attempts of one hook in flight on
// one channel at once is the only ambiguity, and failing both is safe).
//
// A channel or connection that closes before a publish's confirm fails
// that publish with the broker's reason (for instance 404 NOT_FOUND for a
// missing exchange). A closed channel is reopened after a backoff; a lost
// connection is redialled. No publish is ever reported ok without its
// confirm: every path that does not see basic.ack answers an error, and
// the dispatcher retries (at-least-once).
//
// # Message
//
//	exchange         Spec.Exchange ("" is the default exchange)
//	routing key      Spec.RoutingKey expanded over the envelope
//	                 (default "ankusa.{source_id}")
//	mandatory        true
//	delivery-mode    2 (persistent)
//	content-type     application/json (format envelope), or the hook's
//	                 own Content-Type header (format raw; absent when the
//	                 hook had none)
//	message-id       the event id, evt_...
//	timestamp        the hook's received time (AMQP: whole seconds)
//	app-id           "ankusa"
//	body             format envelope: the JSON form of DESIGN.md §2.3
//	                 (envelope.AppendJSON), exactly; format raw: the body
//	                 as received
//	headers:
//	  x-ankusa-event-id               string, the event id
//	  x-ankusa-tenant                 string
//	  x-ankusa-source                 string
//	  x-ankusa-attempt                long (int64), from 1
//	  x-ankusa-verification-flagged   bool true, only for flagged hooks
//	  x-ankusa-event-type             string, the hook's event type, only
//	                                  for a hook that has one
//	  x-ankusa-param-NAME             string, one per route parameter
//	  x-ankusa-body-claim             string, format raw only, for a hook
//	                                  delivered by reference (claim:
//	                                  {store, over_bytes}): the claim's
//	                                  JSON form {"store","key","offset",
//	                                  "length","sha256"}; the body is then
//	                                  empty. format envelope carries it
//	                                  as the JSON's body_claim instead.
//
// AMQP short strings (routing key, content type, header names) hold at
// most 255 bytes; a hook that would exceed that is refused with a
// permanent error before anything is written.
//
// A sink knows nothing of storage: it imports config, envelope, dispatch
// (the Sink contract) and internal/backoff, and never meta, wal, segment,
// the edge or the admin API.
package amqpsink
