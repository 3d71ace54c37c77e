// Package meta owns the node's pebble store: every key in it, and every
// read and write of it. It is the only package of the node that talks to
// pebble (others use pebble's vfs, the file-system interface of DESIGN.md
// §6 item 7, and nothing else of it); no other package opens a pebble
// iterator or batch on the store (meta's own Batch, typed by family, is
// how they write several keys together).
//
// What it holds, one file per family (the byte layout of every key is in
// keys.go, the registry of families in families.go):
//
//	node.go         node identity, the WAL's numbering floor, the digest of
//	                the admin token admin.bootstrap_token minted
//	tenants.go      the tenant mirror (name → ordinal)
//	checkpoint.go   the dispatch checkpoint, synced; its last synced value
//	                is kept in memory (DurableCheckpoint)
//	counters.go     per-tenant counters, written with the checkpoint
//	catalogue.go    the segment catalogue and the seqs the log lost
//	deliveries.go   a delivery row's value (Delivery)
//	rows.go         delivery rows with their due and dead-letter indexes
//	attempts.go     the attempt log of each row
//	quarantine.go   the quarantine pen's rows
//	dedupe.go       node-scope dedupe keys, filed by expiry day
//	audit.go        audit rows
//	ratelimit.go    runtime rate-limit overrides
//	entities.go     sources and routes written through the admin API
//	                (src/, rte/; package source owns their records)
//	source_rows.go  SourceRows: the delivery rows of one source
//	holds.go        HoldsLive: whether a seq range still has live hooks
//	tenant_ranges.go  TenantRanges: every key range of one tenant (erase)
//	erase.go        the tenant erase: its progress rows (m:erase:), the
//	                tombstones (m:erased:), the deletion of a tenant's
//	                families and events, and the final synced batch
//
// store.go opens the store and holds the read helpers every family uses;
// Census (families.go) counts the keys of each family.
//
// Writes of several keys that must land together go through a Batch
// (batch.go), with methods typed by family. Whether a write is synced is
// the caller's decision and stays visible at the call (Commit(Sync),
// Commit(NoSync)): delivery rows, dedupe keys and pen rows are written
// without a sync and made durable by the next synced checkpoint; operator
// changes, the catalogue, the checkpoint and node identity are synced
// (DESIGN.md §6 items 3-5).
//
// pebble's Errorf lines and background errors (a flush or compaction that
// failed, which pebble retries; on a full disk, in a loop) reach the log
// through a throttle, one line per 10s with the count held back, and are
// counted in ankusa_meta_background_errors_total (logger.go); its Fatalf
// still stops the node (DESIGN.md §6 item 8).
//
// meta imports envelope (ids, string framing), config (rate-limit
// values) and internal/throttle and nothing else of this module; it must never import dispatch,
// edge, admin, or any stage built on it.
package meta
