// Package lifecycle owns the node's lifecycle events (DESIGN.md §2.10):
// their CloudEvents 1.0 form, the publisher that delivers the outbox to
// the lifecycle sink, the outbox's retention sweep, its replay, and the
// replacement of an erased tenant's events by one final event.
//
// The events themselves are written by the changes they record: every
// operator change adds its audit row with its event (meta.AuditRow.Event)
// to its own synced batch, and the meta store numbers the events in
// commit order (meta/outbox.go). This package only reads the outbox and
// moves the publisher's checkpoint.
//
// # The event
//
// One structured-mode CloudEvents 1.0 JSON object per change:
//
//	{"specversion":"1.0","id":"evt_...","source":"ankusa://<node.name>",
//	 "type":"io.ankusa.<entity>.<verb>","subject":"<name or id>",
//	 "time":"<RFC 3339>","tenant":"<tenant>",
//	 "datacontenttype":"application/json","data":{...}}
//
// id is unique per node and strictly increasing in commit order (an event
// id whose sequence part has its top bit set, so it is never a hook's);
// id and source together are unique in a fleet. tenant is an extension
// attribute. data is the entity as stored with every secret redacted
// (the field stays, its value reads "redacted").
//
// # Delivery
//
// The publisher sends the outbox in order, one event at a time, to the
// sink lifecycle.sink names (the sink types and keys of a source's
// sinks), at least once: its checkpoint moves only after the sink
// acknowledged, so a crash between the two sends the event again.
// Consumers dedupe by id. A failed attempt is retried for ever, with the
// sink's retry_base and retry_max and full jitter (dispatch's backoff),
// and a Retry-After the target sends; the admin API never waits for it.
// A stored event that does not decode cannot be sent: the publisher
// names it in the log, counts it (ankusa_lifecycle_events_damaged_total)
// and steps over it, rather than hold every later event for good.
//
// Besides config, envelope and meta, lifecycle imports dispatch (the Sink
// it delivers through) and internal/backoff; it never imports admin or
// cli.
package lifecycle
