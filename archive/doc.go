// Package archive ships sealed segments off the node and reads them back
// (DESIGN.md §2.6).
//
// A Backend is where archived objects live: an S3-compatible bucket
// (minio-go) or a local directory with the same key layout. Every sealed
// segment is uploaded as
//
//	<prefix>/segments/node=<node>/<yyyy>/<mm>/<dd>/<first_seq>-<last_seq>.seg
//
// with its catalogue entry beside it as a small JSON object (.cat), so
// replay needs no node: listing the .cat objects tells which segments hold
// which seqs, event ids and receipt times. The date is the UTC day of the
// segment's first receipt time; seqs are zero-padded so keys list in seq
// order.
//
// An Uploader follows the node's catalogue: it uploads each sealed segment
// that is not archived yet (the .seg first, then the .cat, both with
// If-None-Match: * so no node can overwrite another's object), checks the
// server's checksum, and only then writes the synced "archived" mark that
// lets retention delete the local file (DESIGN.md §6 item 3). A crash
// between the upload and the mark uploads again: the server refuses the
// write, the uploader finds the same bytes there, and marks.
//
// A Reader serves ranged reads of archived segments, so a hook whose local
// segment is gone is still fetched (one block per read, the block index
// says which range). Replay streams a time range of hooks out of an archive
// with no node running, skipping tenants whose tombstone object says they
// were erased after the hook was received.
//
// A Restorer puts the archived copy of a damaged local segment back in
// place for the segment store's scrubber, checked against the SHA-256 of
// its catalogue object. Verify checks a whole archive against its
// catalogue objects (ankusa verify-archive).
//
// Claims are the claim stores (claims.stores): large bodies that a sink
// delivers by reference (sinks[].claim) are appended to packs, one open
// pack per (store, tenant, source), closed at pack_bytes or pack_delay
// after its first body and uploaded as
//
//	<prefix>/claims/tenant=<t>/source=<s>/<yyyy>/<mm>/<dd>/<node>-<pack id>.pack
//
// (claim_keys.go). A pack is the bodies back to back, nothing else; a
// reference {store, key, offset, length, sha256} names one body, read back
// with one ranged read and checked against its SHA-256. A Claim returns
// only once its pack is uploaded with its SHA-256 checked by the store
// (and a dir store synced the file and its directory), so no message
// names a pack that is not durable. A tenant's packs are deleted by the
// prefix claims/tenant=<t>/; retention deletes the node's own packs
// opened before min(now - retain, the oldest undelivered hook's receipt).
//
// archive imports config, envelope, meta, segment, internal/backoff and
// internal/vfsutil; never dispatch, the edge or the admin API.
package archive
