// Package wal is the write-ahead log: the commit loop that makes a hook
// durable before the edge answers 201, and recovery at boot.
//
// # Commit loop
//
// One goroutine owns the active file. Ingest goroutines encode a record into
// a pooled Request (frame header space, then the envelope, body included),
// compute the payload's CRC themselves, queue it and wait. The loop takes
// everything queued (up to MaxBatchBytes), assigns each hook its seq, event
// id and tenant ordinal (a new tenant's record goes into the same batch as
// its first hook), writes the batch with one writev, fdatasyncs once, and
// wakes every waiter. Batches grow with load; no timer is involved. A failed
// write or sync is fatal: nothing in that batch, nor anything after it, is
// acknowledged, and the node stops (Options.OnFatal). A full disk is not
// (space.go, DESIGN.md §6 item 10): files are allocated to MaxFileBytes
// when made, a preparation that meets ENOSPC refuses commits with
// ErrNoSpace and is retried with backoff, and a write that meets it (a
// file system without fallocate) is cut back, its batch refused with
// ErrNoSpace and its seqs, ordinals and batch number given again, so the
// log stays dense. An fsync error stays fatal whatever it says.
//
// # Files
//
// The log is a sequence of files named by FileName (000000000001.wal, ...),
// rotated before a batch would take the active file past MaxFileBytes.
// Once a file becomes active, a goroutine prepares the next one off the
// loop: created under its .tmp name, its header written, MaxFileBytes
// allocated (fallocate, keeping the length) and fsynced.
// Rotation renames it into the log (waiting only if the preparation has
// not finished), and the rotating batch fsyncs the directory after its
// fdatasync, before it is acknowledged. A failed preparation is fatal,
// like a failed sync, unless it failed for a full disk. Close removes the prepared file if the log never
// used it. Each file starts with a 16-byte header:
//
//	0   8  magic "ANKUSAWL"
//	8   4  version (1), big-endian
//	12  4  reserved, zero
//
// # Record frame
//
// Every record is a 16-byte frame header and a payload:
//
//	0   4  payload length n, big-endian u32
//	4   4  CRC-32C of payload[29:n] (everything but the identity prefix),
//	       computed by the ingest goroutine
//	8   4  batch number: which commit batch of this process run wrote the
//	       record (all records of one writev+fdatasync share it)
//	12  4  CRC-32C of frame bytes 0..11 followed by payload[0:29] (the
//	       length, the payload CRC, the batch number and the identity
//	       prefix), computed by the loop
//	16  n  payload
//
// The payload's first 29 bytes are the identity prefix of package envelope:
// kind (1 = envelope, 2 = tenant), seq, event id, tenant ordinal. A hook's
// payload is an envelope in its binary form. A tenant record (kind 2) has
// seq and id zero, the new ordinal, and the tenant's name as the rest of the
// payload; it always precedes, in the same batch, the first hook of its
// tenant.
//
// # Recovery
//
// At boot every file is scanned; files must be numbered without gaps. Whole
// records are kept; seqs are dense, except that the first hook of a file may
// jump up (a run that resumed above a numbering floor). In the last file, a
// bad record that only the last, unsynced batch can follow is a torn tail (a
// crash may keep some blocks of that batch and lose others): every valid
// frame after it carries one batch number, that of the last good frame or
// the next, and ends within 2 × MaxBatchBytes of it. The file is cut there
// (by rewriting the good prefix and renaming it over the file, then syncing
// the directory). A bad record anywhere else is corruption: Open refuses
// with ErrCorrupt naming the file and offset, and changes no file, unless
// Options.Recovery is RecoverTruncate, which cuts the log there.
//
// A crash tears at most the final batch (DESIGN.md §6 item 10), so the
// synced records outside the log are lower bounds of what it must hold
// (recovery.go, ackBounds): the clean-close record Close writes
// (Meta.WALClosed) and the dispatch checkpoint, while the catalogue says
// which hooks segments hold. A tail whose cut would go below them, or a log
// that ends cleanly below them (a file truncated at a record boundary), is
// damage: Open refuses, naming the file, the offset and how many
// acknowledged hooks cutting would lose. Damage followed by whole records
// of later batches is refused the same way, counting the hooks after it.
// A loss RecoverTruncate accepted spends the bounds, so the next boot does
// not refuse it again. Leftover
// .tmp files (a tail cut, a file preparation or the erasing of a retired
// file that a crash interrupted) are removed once recovery has succeeded.
//
// # Identity
//
// Numbers (numbers.go) allocates seqs, event ids and tenant ordinals
// (DESIGN.md §6 items 1 and 2): the commit loop owns one, and so does the
// direct commit step of wal.type: none, through Reserved (reserved.go),
// which stands the meta store's synced records in for the log's: a floor
// reserved ahead, a new tenant's ordinal written before it is used. Open
// reads where numbering resumes from the meta store (Options.Meta: the
// clean-close checkpoint, the segment catalogue and the dispatch
// checkpoint, and the tenant mirror) and the log's tail, whichever is
// highest; Close records the clean-close checkpoint.
//
// # Deletion
//
// Files whose hooks are all sealed go in two steps (retire.go): Retire
// renames them out of the log and syncs the directory; Erase frees each a
// chunk at a time and removes it, so that freeing a whole file never
// stalls a commit's fdatasync. When a file may go is the segment store's
// rule (segment.Keeper).
//
// # Imports
//
// wal imports envelope, internal/backoff, internal/throttle and
// internal/vfsutil only. It reaches the meta
// store through the small Meta interface, and never imports meta, segment,
// dispatch, the edge or the admin API: they are built on it.
package wal
