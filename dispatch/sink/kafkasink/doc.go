// Package kafkasink is the Kafka sink of the dispatch stage (DESIGN.md
// §2.7): it produces each hook as one record with acks=all and the
// idempotent producer, and answers ok only once the partition's leader
// has acknowledged it on behalf of every in-sync replica, so the sink is
// durable (a nil from Deliver means the hook is in the topic, on as many
// brokers as the topic's min.insync.replicas asks for at least).
//
// # What it owns
//
// A Sink owns one franz-go client (kgo.Client), built by New; it connects
// on the first Deliver and reconnects by itself. It creates no topics:
// they are the operator's, and a record for a missing topic fails (see
// below). The client's settings are fixed here, not configurable:
//
//	acks               all (kgo.AllISRAcks)
//	idempotence        on (franz-go's default; never disabled): a batch
//	                   the client retries after a lost answer is written
//	                   once per producer session
//	compression        the compression key (zstd by default), per batch
//	linger             franz-go's default (10 ms)
//	batch max bytes    franz-go's default (1,000,012 bytes)
//	request timeout    the timeout key, as the produce request's
//	                   acks timeout; the record delivery timeout is a
//	                   tenth less (at least 1 s, franz-go's floor), so
//	                   that franz-go fails a record it could not send
//	                   with its last error before the attempt ends
//	dial timeout       the connect_timeout key
//	client id          "ankusa/<node>/<source>/<sink id>"
//	tls, sasl          the tls and sasl keys (plain, scram-sha-256,
//	                   scram-sha-512); config.TLS.ClientConfig reads tls
//
// # Batching
//
// Deliver hands its record to the client (Produce with a callback) and
// waits for the callback, the attempt's timeout or ctx. The record is
// produced without Deliver's context: franz-go fails every record of a
// partition's buffer when the first record of a batch it retries has a
// done context, which would end other hooks' attempts with this one's
// timeout; an abandoned record ends by the record delivery timeout.
//
// The dispatcher runs up to the sink's concurrency Deliver calls at
// once; their records
// collect per partition while a produce request is in flight and go out
// together as one batch, so many hooks are in flight per partition and
// no hook waits for another's round trip. Order: records of one key (by
// default one tenant) go to one partition in the order they are produced,
// but the dispatcher retries failed hooks later, so a retried hook lands
// after hooks produced since.
//
// # Record
//
//	topic      the topic key expanded over the envelope (dispatch/tmpl);
//	           a name Kafka refuses ([a-zA-Z0-9._-], 1 to 249 bytes) is
//	           refused before producing, permanently
//	key        the key key expanded over the envelope (default
//	           "{tenant_id}": a tenant's hooks share a partition); an
//	           empty expansion is a null key (the partitioner spreads
//	           such records)
//	value      format envelope: the JSON form of DESIGN.md §2.3
//	           (envelope.AppendJSON), exactly, body_claim included for a
//	           body delivered by reference; format raw: the body as
//	           received, or empty (never null: a null value is a
//	           tombstone on a compacted topic) for a body delivered by
//	           reference
//	timestamp  when the sink produced it (CreateTime, stamped by
//	           franz-go, which times records out from it); the hook's
//	           received time is the envelope's received_at
//	headers, values as bytes:
//	  ankusa-event-id               the event id, evt_...
//	  ankusa-tenant                 the tenant id
//	  ankusa-source                 the source id
//	  ankusa-attempt                the attempt, decimal, from 1
//	  content-type                  format envelope: application/json;
//	                                format raw: the hook's own
//	                                Content-Type (absent when it had none)
//	  ankusa-verification-flagged   "true", only for flagged hooks
//	  ankusa-event-type             the hook's event type, only for a
//	                                hook that has one
//	  ankusa-body-claim             format raw, a body delivered by
//	                                reference only: the claim's JSON,
//	                                {"store":...,"key":...,"offset":N,
//	                                "length":N,"sha256":"..."}
//	                                (envelope.Claim.AppendJSON)
//	  ankusa-param-NAME             one per route parameter, its value
//
// A record's key, value and header values live in one pooled buffer from
// Deliver until the record's callback has run and Deliver no longer
// needs it; a Deliver that gives up (timeout) leaves the buffer to the
// callback. Nothing of the Delivery is kept.
//
// # Errors
//
// Every error is a *dispatch.Error. The dispatcher retries an error with
// backoff unless it is permanent; Answered keeps the circuit breaker out
// of failures a broker answered (the cluster is up).
//
//	no acknowledgement within the timeout,   retryable, not answered:
//	  ctx done, record delivery timeout      the record may still be in
//	                                         the topic (at-least-once)
//	cluster unreachable (dial, TLS)          retryable, not answered
//	  (a broker that drops the connection
//	  on a failed SASL authentication
//	  instead of answering, as kfake does,
//	  reads as unreachable)
//	MESSAGE_TOO_LARGE, RECORD_LIST_TOO_      permanent, answered; see
//	  LARGE, INVALID_RECORD,                 "A refused batch"
//	  INVALID_TIMESTAMP
//	INVALID_TOPIC_EXCEPTION, a topic name    permanent
//	  that cannot be valid, a record over
//	  franz-go's batch max
//	TOPIC_ / CLUSTER_AUTHORIZATION_FAILED,   retryable, answered, logged
//	  SASL authentication failures           at error level (at most once
//	                                         per 10 s): an operator fixes
//	                                         the ACLs or the credentials
//	                                         and the hooks flow; until
//	                                         then they wait in their rows
//	                                         and dead-letter after
//	                                         max_attempts / max_age
//	UNKNOWN_TOPIC_OR_PARTITION (after        retryable, answered
//	  franz-go's own retries) and any other
//	  error code a broker answers
//
// Authorization failures are retryable rather than permanent because a
// missing ACL is the operator's mistake, not the hook's: dead-lettering
// every hook while the ACL is fixed would make the operator retry them by
// hand. They are Answered, so the breaker stays closed: with it open the
// hooks would wait longer after the fix. The breaker-facing difference
// is tested with a broker that answers SASL_AUTHENTICATION_FAILED as
// Kafka does (a kfake control) and with an ACL that denies the write
// (CLUSTER_AUTHORIZATION_FAILED for the idempotent producer).
//
// # A refused batch
//
// A broker checks max.message.bytes (and validates records) per batch,
// and a batch holds the records of many hooks. A hook whose batch is
// refused is therefore produced once more, alone, through a second client
// that holds one record at a time (made on first need, counted by
// ankusa_kafka_sink_solo_retries_total; records wait their turn until
// their attempt's deadline): the answer to that record alone decides.
// Refused again, it is permanent (dead-lettered at once); taken, it is
// ok. A record larger than franz-go's batch max on its own is refused by
// the client before it is sent, with MESSAGE_TOO_LARGE, and takes the
// same path. Bodies that large belong in a claim store (the claim key).
//
// # Circuit breaker
//
// The sink is one target for the breaker (it does not implement
// dispatch.Targeter), even with a topic template per tenant: the failures
// the breaker counts (no connection, no acknowledgement) are the
// cluster's, and one breaker per topic would have each tenant's hooks
// find a dead cluster five times before its own breaker opened.
//
// # Metrics
//
// ankusa_kafka_sink_acked_total, _failed_total (retryable failures),
// _refused_total (permanent), _no_ack_total (timeouts),
// _unauthorized_total, _solo_retries_total; no labels.
//
// A sink knows nothing of storage: it imports config, envelope, dispatch
// (the Sink contract) and dispatch/tmpl, and never meta, wal, segment,
// the edge or the admin API.
package kafkasink
