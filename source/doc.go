// Package source holds webhook sources (DESIGN.md §2.9). It owns:
//
//   - the Source spec as the edge uses it, with its verifier and dedupe
//     extractor built once (source.go);
//   - the compiled routes (route.go);
//   - the immutable snapshot the edge reads per request through an atomic
//     pointer, with no lock and no I/O, and that dispatch and the admin
//     API read too (snapshot.go);
//   - the stores that publish snapshots: Static, the sources and routes of
//     the config file, never written at runtime (source.go), and
//     Persistent (source_store: persistent), the config's as seeds plus
//     those written through the admin API, each write durable before its
//     snapshot is published (persistent.go, writes.go, routewrites.go);
//   - the records a writable store keeps, one per source and per route,
//     JSON and versioned (record.go), and the Backend interface that keeps
//     them: MetaBackend over the node's meta store today, and the
//     interface a Redis store will plug into.
//
// It imports config, envelope, verify and dedupe (to build a source's
// verifier and extractor) and meta (MetaBackend, through its typed API:
// keys src/ and rte/, written in one synced batch with the audit row).
// It must never import the edge, the admin API, dispatch or another
// storage stage (wal, segment, archive), nor cli: they read snapshots
// from it, and the admin API writes through Writer.
package source
