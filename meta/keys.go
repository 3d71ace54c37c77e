package meta

import (
	"bytes"
	"encoding/binary"
)

// Key schema: every key of the store, byte by byte. This file is the one
// place keys are spelled: the other files build and split keys only with
// the builders and parsers below; families.go registers each family (its
// prefix, whether it is per tenant, how a tenant's keys are found), and
// keys_test.go pins one example key of each.
//
// Integers are big-endian, so keys sort by them. Tenant and source names
// and sink ids match [a-z0-9][a-z0-9._-]{0,62}: they hold no 0x00.
//
// Node-wide keys:
//
//	m:node                  "m:node"                      → Node, JSON
//	m:wal:checkpoint        "m:wal:checkpoint"            → last event id [16] | last seq u64:
//	                        the numbering floor, written at clean shutdown
//	                        (and reserved ahead with wal.type: none)
//	m:wal:closed            "m:wal:closed"                → seq u64: the last hook of the log
//	                        at its last clean close (wal.type: disk only), a lower
//	                        bound recovery holds damage against (DESIGN.md §6 item 10)
//	m:dispatch:checkpoint   "m:dispatch:checkpoint"       → seq u64: every hook at or
//	                        below it has its delivery rows durable (DESIGN.md §6
//	                        items 3, 4)
//	c:s:                    "c:s:" | last seq u64         → SegmentEntry: the catalogue,
//	                        keyed by a segment's last seq
//	c:i:                    "c:i:" | last id [16]         → last seq u64: the catalogue's
//	                        event-id index, in the entry's synced batch
//	c:g:                    "c:g:" | first seq u64        → last seq u64: seqs the log
//	                        does not hold (cut by -wal-recovery=truncate)
//	au/                     "au/" | at u64 (unix ns) | n u32  → AuditRow, JSON
//	m:admin:bootstrap       "m:admin:bootstrap"           → AdminToken, JSON: the token
//	                        admin.bootstrap_token minted (its digest only)
//	eq/                     "eq/" | seq u64               → at u64 (unix ns) | tenant: the
//	                        lifecycle outbox's order, in the event's batch (outbox.go)
//	m:lifecycle:last        "m:lifecycle:last"            → seq u64 | at u64: the last
//	                        event seq allocated and its time, in every outbox batch (the
//	                        numbering floor a sweep leaves)
//	m:lifecycle:published   "m:lifecycle:published"       → seq u64: the publisher's
//	                        checkpoint (every event up to it was acknowledged)
//
// Per-tenant keys, by ordinal (a tenant's keys under each prefix are one
// range: prefix | ord u32):
//
//	r/                      "r/" | ord u32 | seq u64 | sink id   → Delivery
//	d/                      "d/" | ord u32 | due u64 (unix ns) | seq u64 | sink id → empty:
//	                        the due index of pending rows, in the row's batch
//	x/                      "x/" | ord u32 | seq u64 | sink id   → empty: the dead-letter
//	                        index, in the row's batch
//	a/                      "a/" | ord u32 | seq u64 | sink id | 0x00 | n u16 → AttemptRecord
//	q/                      "q/" | ord u32 | seq u64             → PenRow (the quarantine pen)
//	m:tcount:               "m:tcount:" | ord u32                → hooks u64 | bytes u64, up
//	                        to the dispatch checkpoint, in its synced batch
//
// Per-tenant keys, by name (one key per tenant):
//
//	t:                      "t:" | tenant                 → ordinal u32 | first_seen u64
//	                        (unix ns; a value written before it is the ordinal
//	                        alone): the mirror of the WAL's tenant records (the
//	                        WAL is the durable one)
//	m:ratelimit:            "m:ratelimit:" | tenant       → runtime rate-limit override, JSON
//
// Per-tenant keys, by name then entity (a tenant's keys under each prefix
// are one range: prefix | tenant | 0x00):
//
//	src/                    "src/" | tenant | 0x00 | source name → a source written
//	                        through the admin API (package source's record, JSON)
//	rte/                    "rte/" | tenant | 0x00 | route id    → a route written
//	                        through the admin API (package source's record, JSON)
//	ev/                     "ev/" | tenant | 0x00 | seq u64      → a lifecycle event,
//	                        JSON (outbox.go), in its change's synced batch
//
// Per-tenant keys, by day then ordinal (a day's keys are one range, swept
// with one range delete; a tenant's keys are one range per day):
//
//	dd/                     "dd/" | expiry day u32 | ord u32 | source | 0x00 | hash [16]
//	                        → DedupeValue: node-scope dedupe keys (DESIGN.md §6
//	                        item 5), written with the rows
//
// The redis source store's local copies (mirror.go):
//
//	xs/                     "xs/" | tenant | 0x00 | source name → version u64 | record:
//	                        the local mirror of a source of the shared store
//	xr/                     "xr/" | tenant | 0x00 | route id    → version u64 | record
//	m:ss:mirror             "m:ss:mirror"                 → MirrorState, JSON: the
//	                        namespace, epoch and version the mirror is at, in the
//	                        batch of its entities
//	m:ss:pending:           "m:ss:pending:" | change id   → PendingChange, JSON: a
//	                        change sent to the shared store whose audit row is not
//	                        written yet (synced before it is sent)
//
// The tenant erase (erase.go):
//
//	m:erase:                "m:erase:" | tenant           → the erase job's progress row,
//	                        JSON (package tenant's EraseJob): synced before each stage
//	                        runs on, deleted in the final batch
//	m:erased:               "m:erased:" | tenant          → Tombstone, JSON: the tenant's
//	                        erased ordinals, seq_at_close, erased_at and final counters,
//	                        written in the final batch; never deleted
//
// A new family gets its constant here, named key* (one key) or prefix*
// (a prefix), and an entry in families.go: TestFamiliesRegistered fails
// until it has both.
const (
	keyNode               = "m:node"
	keyWALCheckpoint      = "m:wal:checkpoint"
	keyWALClosed          = "m:wal:closed"
	keyDispatchCheckpoint = "m:dispatch:checkpoint"
	prefixSegSeq          = "c:s:"
	prefixSegID           = "c:i:"
	prefixSegGap          = "c:g:"
	prefixAudit           = "au/"
	keyBootstrapToken     = "m:admin:bootstrap"
	prefixEventSeq        = "eq/"
	keyEventLast          = "m:lifecycle:last"
	keyEventPublished     = "m:lifecycle:published"

	prefixRow         = "r/"
	prefixDue         = "d/"
	prefixDead        = "x/"
	prefixAttempt     = "a/"
	prefixPen         = "q/"
	prefixTenantCount = "m:tcount:"

	prefixTenant    = "t:"
	prefixRateLimit = "m:ratelimit:"

	prefixSource = "src/"
	prefixRoute  = "rte/"
	prefixEvent  = "ev/"

	prefixDedupe = "dd/"

	prefixMirrorSource  = "xs/"
	prefixMirrorRoute   = "xr/"
	keyMirrorState      = "m:ss:mirror"
	prefixPendingChange = "m:ss:pending:"

	prefixErase  = "m:erase:"
	prefixErased = "m:erased:"
)

// The key builders append to dst and return the extended slice. They are
// the byte layout above and nothing more: reading and writing go through
// Store and Batch. They stay exported for tools and fault-injection tests
// that need a key's exact bytes.

// RowKey is the key of the delivery row id.
func RowKey(dst []byte, id RowID) []byte {
	dst = append(dst, prefixRow...)
	return appendOrdSeqSink(dst, id)
}

// DeadKey is the dead-letter index key of the row id.
func DeadKey(dst []byte, id RowID) []byte {
	dst = append(dst, prefixDead...)
	return appendOrdSeqSink(dst, id)
}

// DueKey is the due index key of the pending row id due at due (a due
// time before 1970 is filed at 0).
func DueKey(dst []byte, id RowID, due int64) []byte {
	dst = append(dst, prefixDue...)
	dst = binary.BigEndian.AppendUint32(dst, id.Ord)
	dst = binary.BigEndian.AppendUint64(dst, uint64(max(due, 0)))
	dst = binary.BigEndian.AppendUint64(dst, id.Seq)
	return append(dst, id.Sink...)
}

// AttemptKey is the key of attempt n of the row id.
func AttemptKey(dst []byte, id RowID, n uint16) []byte {
	dst = append(dst, prefixAttempt...)
	dst = appendOrdSeqSink(dst, id)
	dst = append(dst, 0)
	return binary.BigEndian.AppendUint16(dst, n)
}

// PenKey is the key of the pen row of (ordinal, seq).
func PenKey(dst []byte, ord uint32, seq uint64) []byte {
	dst = append(dst, prefixPen...)
	dst = binary.BigEndian.AppendUint32(dst, ord)
	return binary.BigEndian.AppendUint64(dst, seq)
}

// DedupeKey is the node-scope key of a dedupe key hash of a source of
// tenant ord, filed under day (DedupeDay of its expiry).
func DedupeKey(dst []byte, day uint32, ord uint32, source string, hash []byte) []byte {
	dst = append(dst, prefixDedupe...)
	dst = binary.BigEndian.AppendUint32(dst, day)
	dst = binary.BigEndian.AppendUint32(dst, ord)
	dst = append(dst, source...)
	dst = append(dst, 0)
	return append(dst, hash...)
}

// AuditKey is the key of the audit row written at at (unix ns), told
// apart from others of the same nanosecond by n.
func AuditKey(at int64, n uint32) []byte {
	k := binary.BigEndian.AppendUint64([]byte(prefixAudit), uint64(at))
	return binary.BigEndian.AppendUint32(k, n)
}

func tenantKey(name string) []byte { return appendNameKey(nil, prefixTenant, name) }

func rateLimitKey(tenant string) []byte { return appendNameKey(nil, prefixRateLimit, tenant) }

// appendNameKey appends the key of tenant's one key under the by-name
// prefix p (t:, m:ratelimit:).
func appendNameKey(dst []byte, p, tenant string) []byte {
	return append(append(dst, p...), tenant...)
}

// parseNameKey returns the tenant of a key under the by-name prefix p.
func parseNameKey(p string, k []byte) string { return string(k[len(p):]) }

// entityPrefix is the prefix of a tenant's entities under p: one range.
func entityPrefix(p, tenant string) []byte { return []byte(p + tenant + "\x00") }

// entityKey is the key of a tenant's entity (a source, a route) under p.
func entityKey(p, tenant, name string) []byte { return append(entityPrefix(p, tenant), name...) }

// parseEntityKey splits a key under the by-name-then-entity prefix p.
func parseEntityKey(p string, k []byte) (tenant, name string, ok bool) {
	t, n, ok := bytes.Cut(k[len(p):], []byte{0})
	return string(t), string(n), ok
}

func tenantCountKey(ord uint32) []byte {
	return binary.BigEndian.AppendUint32([]byte(prefixTenantCount), ord)
}

// parseOrdinal returns the ordinal of a key under the by-ordinal prefix p
// and what follows it.
func parseOrdinal(p string, k []byte) (ord uint32, rest []byte, ok bool) {
	if len(k) < len(p)+4 {
		return 0, nil, false
	}
	return binary.BigEndian.Uint32(k[len(p):]), k[len(p)+4:], true
}

func segSeqKey(lastSeq uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte(prefixSegSeq), lastSeq)
}

func segIDKey(lastID []byte) []byte { return append([]byte(prefixSegID), lastID...) }

func segGapKey(first uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte(prefixSegGap), first)
}

// dedupeDayPrefix is the prefix of every dedupe key filed under day.
func dedupeDayPrefix(day uint32) []byte {
	return binary.BigEndian.AppendUint32([]byte(prefixDedupe), day)
}

// dedupeTenantPrefix is the prefix of tenant ord's dedupe keys filed
// under day.
func dedupeTenantPrefix(day, ord uint32) []byte {
	return binary.BigEndian.AppendUint32(dedupeDayPrefix(day), ord)
}

// parseDedupeDay returns the day a key under dd/ is filed under.
func parseDedupeDay(k []byte) (day uint32, ok bool) {
	if len(k) < len(prefixDedupe)+4 {
		return 0, false
	}
	return binary.BigEndian.Uint32(k[len(prefixDedupe):]), true
}

// tenantPrefix is the prefix of a tenant's keys under a by-ordinal prefix p.
func tenantPrefix(p string, ord uint32) []byte {
	return binary.BigEndian.AppendUint32([]byte(p), ord)
}

// hookPrefix is the prefix of one hook's keys under p (r/, x/, a/).
func hookPrefix(p string, ord uint32, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(tenantPrefix(p, ord), seq)
}

// prefixEnd is the smallest key above every key starting with p; nil when
// there is none (p is all 0xff).
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// prefixRange is [p, prefixEnd(p)) for a string prefix.
func prefixRange(p string) (lo, hi []byte) { return []byte(p), prefixEnd([]byte(p)) }

func appendOrdSeqSink(dst []byte, id RowID) []byte {
	dst = binary.BigEndian.AppendUint32(dst, id.Ord)
	dst = binary.BigEndian.AppendUint64(dst, id.Seq)
	return append(dst, id.Sink...)
}

// parseRowKey splits a key under r/ or x/ (both prefixes are 2 bytes).
func parseRowKey(k []byte) (id RowID, ok bool) {
	if len(k) < 2+12+1 {
		return id, false
	}
	k = k[2:]
	return RowID{Ord: binary.BigEndian.Uint32(k), Seq: binary.BigEndian.Uint64(k[4:]), Sink: string(k[12:])}, true
}

// parseDueKey splits a key under d/.
func parseDueKey(k []byte) (id RowID, due int64, ok bool) {
	if len(k) < 2+20+1 {
		return id, 0, false
	}
	k = k[2:]
	id = RowID{Ord: binary.BigEndian.Uint32(k), Seq: binary.BigEndian.Uint64(k[12:]), Sink: string(k[20:])}
	return id, int64(binary.BigEndian.Uint64(k[4:])), true
}

// parseAttemptKey splits a key under a/.
func parseAttemptKey(k []byte) (id RowID, n uint16, ok bool) {
	if len(k) < 2+12+1+1+2 || k[len(k)-3] != 0 {
		return id, 0, false
	}
	n = binary.BigEndian.Uint16(k[len(k)-2:])
	id, ok = parseRowKey(k[:len(k)-3])
	return id, n, ok
}

// parsePenKey splits a key under q/.
func parsePenKey(k []byte) (ord uint32, seq uint64, ok bool) {
	if len(k) != len(prefixPen)+12 {
		return 0, 0, false
	}
	k = k[len(prefixPen):]
	return binary.BigEndian.Uint32(k), binary.BigEndian.Uint64(k[4:]), true
}
