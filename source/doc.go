// Package source holds webhook sources (DESIGN.md §2.9). It owns:
//
//   - the Source spec as the edge uses it, with its verifier and dedupe
//     extractor built once (source.go);
//   - the compiled routes (route.go);
//   - the immutable snapshot the edge reads per request through an atomic
//     pointer, with no lock and no I/O, and that dispatch and the admin
//     API read too (snapshot.go);
//   - the stores that publish snapshots: Static, the sources and routes of
//     the config file, never written at runtime (source.go);
//     Persistent (source_store: persistent), the config's as seeds plus
//     those written through the admin API, each write durable before its
//     snapshot is published (persistent.go, writes.go, routewrites.go);
//     and Fleet (source_store: redis), a Persistent whose records live in
//     Redis under a namespace, shared by every node of the namespace,
//     each node serving an in-memory mirror it keeps in step (pub/sub and
//     a tick) and keeps in its meta store (fleet.go, fleetredis.go);
//   - the records a writable store keeps, one per source and per route,
//     JSON and versioned, a source's secrets sealed under secrets.kek
//     when it is set (record.go), and the Backend interface that keeps
//     them: MetaBackend over the node's meta store, or the Fleet;
//   - Rewrap, which re-seals every stored secret under the current key
//     (rewrap.go).
//
// Concurrent writes of one entity from two nodes of a redis store are
// check-and-set on the entity's version in Redis: the write checked
// against an older version than Redis holds is refused (409 conflict),
// never applied over the other one silently.
//
// It imports config, envelope, verify and dedupe (to build a source's
// verifier and extractor), secrets (to seal a record's secrets) and meta
// (MetaBackend, through its typed API: keys src/ and rte/, written in one
// synced batch with the audit row; the Fleet's local mirror xs/, xr/ and
// its pending changes).
// It must never import the edge, the admin API, dispatch or another
// storage stage (wal, segment, archive), nor cli: they read snapshots
// from it, and the admin API writes through Writer.
package source
