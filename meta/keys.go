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
//
// Later stages add their prefixes here (r/ delivery rows, dd/ dedupe keys,
// m:erase:, m:erased:, the segment catalogue).
package meta

const (
	keyNode          = "m:node"
	keyWALCheckpoint = "m:wal:checkpoint"
	prefixTenant     = "t:"
)

func tenantKey(name string) []byte { return []byte(prefixTenant + name) }
