// Package envelope defines the Envelope, the unit every stage of Ankusa passes
// on (wal, segment, dispatch, archive), its binary codec and its event ids.
// Every stage imports it, so it imports nothing of this module.
//
// # Binary form (version 2)
//
// One codec serves every stage. It appends into a caller's buffer and uses no
// reflection. All integers are big-endian unless they are uvarints.
//
//	offset size  field
//	0      1     kind: 1 = envelope (2 is a WAL tenant record, see package wal)
//	1      8     seq (assigned by the commit loop)
//	9      16    event id (assigned by the commit loop, see ID)
//	25     4     tenant ordinal (assigned by the commit loop)
//	29     8     received_at, unix nanoseconds (int64)
//	37     1     flags: bit 0 verified, bit 1 flagged, bit 2 quarantined,
//	             bit 3 the remote address follows the dedupe key,
//	             bits 4..6 the failure reason of a flagged or quarantined hook,
//	             bit 7 the event type follows (version 2)
//	38     ...   tenant id      uvarint length + bytes
//	             source id      uvarint length + bytes
//	             verifier name  uvarint length + bytes
//	             route params   uvarint count, then count × (key, value), each uvarint length + bytes
//	             headers        uvarint count, then count × (name, value), each uvarint length + bytes
//	             body           u32 length + bytes
//	             dedupe key     uvarint length + bytes
//	             remote addr    uvarint length + bytes, only with flag bit 3
//	             event type     uvarint length + bytes, only with flag bit 7
//
// Headers are the request's header fields as they arrived: names in the
// case sent, values as sent with the whitespace around them (which is not
// part of a field value, RFC 9110 §5.5) removed, in the order received,
// a repeated name being several fields. The remote address is the
// sender's, "ip:port" (IPv6 in brackets): the PROXY header's sender behind
// a trusted balancer, else the TCP peer. Records written before it was
// recorded lack flag bit 3 and decode with an empty one; bit 3 adds a
// trailing field, so the layout of every earlier field is unchanged.
//
// Version 2 added the event type (the provider's name for what happened,
// "push" or "invoice.paid", read where the source's preset says). It is
// versioned by flag bit 7, not by the kind byte: a record of version 1 has
// bit 7 clear (it was always zero) and decodes with an empty event type, a
// record of version 2 without an event type is byte for byte a version 1
// record, and bit 7 adds a trailing field, so every earlier field keeps its
// place and the stages that read the fixed prefix or the names in place
// (Names, the WAL, segment indexes) are unchanged. testdata/envelope_v1.golden pins version 1 and
// envelope_v2.golden a record with an event type.
//
// The identity fields (bytes 1..28) sit at fixed offsets so the commit loop can
// fill them in after the ingest goroutine has encoded the rest; the body's
// length is a fixed u32 so ingest can read the body straight into the record
// and patch its length afterwards (one copy from the socket to the WAL). The
// dedupe key follows the body because it is usually taken from it.
//
// The layout is written in one place, Appender: AppendTo is built on it,
// and the edge appends each hook with it from views of the request it is
// serving, building no Envelope. Decode and Names read it; the offset
// constants (OffSeq, OffFlags, ...) are for stages that read or patch the
// fixed prefix of a record in place. A golden file (testdata) pins the
// encoded bytes.
package envelope
