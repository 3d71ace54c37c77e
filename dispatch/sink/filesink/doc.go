// Package filesink is the file sink of the dispatch stage (DESIGN.md
// §2.7): it appends each hook it is given to one local file, one line per
// delivery, so that a person can watch hooks arrive (tail -f) and a
// script can read them back. It is the embedded default config's demo
// sink.
//
// # The file
//
// Each successful Deliver has appended exactly this line and fsynced the
// file before it returns nil:
//
//	<the hook's JSON form (DESIGN.md §2.3, envelope.AppendJSON)>\n
//
// which is what format envelope sends to the brokers, byte for byte: the
// file is NDJSON (one JSON object a line), each object with the hook's
// "id". A retried hook (an attempt whose fsync failed, or timed out) may
// be in the file twice: the sink is at-least-once, as every sink, and a
// reader de-duplicates by id.
//
// The file is opened by the first Deliver (New touches nothing, so
// check-config and a node that never delivers create no file), with
// O_WRONLY|O_APPEND|O_CREATE and mode 0600 (a hook's headers and body may
// be secrets), its parent directory made first (0750) and fsynced once
// after the open, so that a file just created survives a crash. A line a
// crash cut short (never acknowledged) is ended with a newline when the
// file is opened, so the lines after it are whole. The file stays open
// until Close; a file moved away meanwhile keeps receiving the lines
// (restart the node to start a new one). The sink must be the file's only
// writer.
//
// # Concurrency and the group fsync
//
// Deliver is safe for concurrent use. Each call writes its whole line
// with one write(2) under the sink's mutex, so concurrent deliveries
// never interleave within a line. Then it waits for an fsync that began
// after its write: one goroutine at a time syncs, and every line written
// while a sync runs waits for the next one, so N concurrent deliveries
// cost about two fsyncs, not N.
//
// # Errors
//
// Every error is a retryable *dispatch.Error naming the path:
//
//	open: the directory or the file cannot be made or opened (asked
//	  again by the next Deliver);
//	write: a short or failed write (a full disk); the partial line is cut
//	  off again (ftruncate to the length before it), so lines stay whole;
//	fsync: the lines of that fsync are all failed, the file is closed and
//	  opened again by the next Deliver (after a failed fsync the kernel
//	  may have dropped the pages: only a new write and a new fsync make a
//	  line safe);
//	timeout: no fsync within Spec.Timeout ("the line may be in the
//	  file");
//	closed (ErrClosed): Deliver after Close.
//
// A file sink is not durable in the sense of wal.type: none
// (config.DurableSinkTypes): its fsync makes the line safe on the node's
// own disk, and a wal.type: none node must hold no state of its own.
// Sources written through the admin API cannot have one (config refuses
// it: the path would be the caller's choice of a file on the node).
//
// A sink knows nothing of storage: it imports config and dispatch (the
// Sink contract; the hook's JSON form is the envelope's own method),
// never meta, wal, segment, the edge or the admin API.
package filesink
