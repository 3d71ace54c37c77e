// Package meta is the node's pebble store: its key schema (this file, the
// one place keys are built) and typed accessors.
//
// Key schema:
//
//	m:node                 node identity: JSON {name, ordinal, created_at}
//	m:wal:checkpoint       16+8 bytes: last event id, then last seq (u64 BE),
//	                       written at clean shutdown (a floor for numbering)
//	t:<tenant>             tenant ordinal, u32 BE (mirror of the WAL's tenant
//	                       records; the WAL is the durable record)
//	c:s:<last seq u64 BE>  segment catalogue entry (see SegmentEntry), keyed by
//	                       the segment's last seq
//	c:i:<last id 16 bytes> the same segment's last seq (u64 BE): the event-id
//	                       index, written in the same synced batch
//	c:g:<first seq u64 BE> last seq (u64 BE) of seqs the log does not hold
//	                       (cut by -wal-recovery=truncate): Scan steps over
//	                       them instead of calling them lost
//
//	m:dispatch:checkpoint  u64 BE: every hook at or below this seq has its
//	                       delivery rows durable (DESIGN.md §6 items 3, 4)
//	r/<ord u32><seq u64><sink id>
//	                       delivery row (see Delivery), one per hook and sink;
//	                       a tenant's rows are one prefix
//	d/<ord u32><due u64 ns><seq u64><sink id>
//	                       due index of pending rows, written in the row's batch
//	x/<ord u32><seq u64><sink id>
//	                       dead-letter index, written in the row's batch
//	a/<ord u32><seq u64><sink id>\x00<n u16>
//	                       attempt log entry n of a row (see AttemptRecord)
//	q/<ord u32><seq u64>   quarantine pen row (see PenRow), written by the
//	                       row writer and rebuilt past the checkpoint like rows
//	dd/<expiry day u32><ord u32><source>\x00<hash 16>
//	                       node-scope dedupe key (see DedupeValue), written
//	                       with the rows; a day's keys are swept with one
//	                       range delete
//	au/<at u64 ns><n u32>  audit row (see AuditRow), JSON
//	m:ratelimit:<tenant>   a tenant's runtime rate-limit override, JSON
//	m:tcount:<ord u32>     a tenant's committed hooks and bytes (u64, u64), up
//	                       to the dispatch checkpoint, written with it
//
// Integers are big-endian so keys sort by them. Sink ids match the name
// pattern, so they hold no 0x00. Later stages add their prefixes here
// (m:erase:, m:erased:).
package meta

import "encoding/binary"

const (
	keyNode          = "m:node"
	keyWALCheckpoint = "m:wal:checkpoint"
	prefixTenant     = "t:"
	prefixSegSeq     = "c:s:"
	prefixSegID      = "c:i:"
	prefixSegGap     = "c:g:"

	keyDispatchCheckpoint = "m:dispatch:checkpoint"
	PrefixRow             = "r/"
	PrefixDue             = "d/"
	PrefixDead            = "x/"
	PrefixAttempt         = "a/"
	PrefixPen             = "q/"
	PrefixDedupe          = "dd/"
	PrefixAudit           = "au/"
)

func tenantKey(name string) []byte { return []byte(prefixTenant + name) }

func segSeqKey(lastSeq uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte(prefixSegSeq), lastSeq)
}

func segGapKey(first uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte(prefixSegGap), first)
}

func segIDKey(lastID []byte) []byte { return append([]byte(prefixSegID), lastID...) }

// upperBound is the smallest key above every key with prefix p.
func upperBound(p string) []byte {
	b := []byte(p)
	b[len(b)-1]++
	return b
}
