// Package dispatch delivers every committed hook to every sink of its
// source at least once (DESIGN.md §2.7), across crashes and sink outages,
// without letting one tenant's backlog starve another's.
//
// A hook's path:
//
//	WAL commit loop ──OnDurable──> intake (bounded, in memory, seq order)
//	  ──> row writer: one pending row per sink (meta store, unsynced batch)
//	        ├─> first attempt straight from memory (DESIGN.md §6 item 10)
//	        └─> checkpoint: a synced write every CheckpointEvery; it covers
//	            every row written before it
//	scheduler: claims due rows round-robin across tenants, reads the hook
//	  back with segment.Store.Fetch (retries, and every hook after a restart)
//	runner per sink: per-tenant queues served round-robin, bounded
//	  concurrency per sink and per tenant, a circuit breaker per target
//
// Rows are keyed under the tenant's ordinal (package meta: r/, d/, x/, a/),
// and every read and write of them goes through meta's typed API: a row,
// its index entries and its attempt entry are written in one meta.Batch.
// A row is pending (with a due time), in flight (an attempt holds it: a
// lease kept in memory, which a crash ends for every row at once, so the
// stored state stays pending), or dead. A delivered row is deleted; its
// attempt log stays for AttemptLogTTL. A due entry, written once, and a
// row its first attempt delivered go with single deletes, which cancel
// their write in the flush (meta.Batch.DeleteFreshPending).
//
// A tenant is active (the scheduler looks at it) when it may have a row
// no one holds: the row writer marks the tenants of rows it does not hand
// to a first attempt, an attempt that retries a row or lets go of it
// unsettled marks its tenant, and so does every operator call that makes
// a row pending. Attempts run on a runner's workers, which take the next
// attempt themselves while the runner has one to start.
//
// A claim pass reads each active tenant's due index through
// meta.Store.DueRows, which starts past the entries earlier passes
// stepped over (deleted ones, and rows held for an attempt): whoever lets
// go of a held row without moving or deleting its due entry (release, not
// unhold) tells the store with meta.Store.NoteDue, and once a second a
// pass starts at the front all the same.
//
// Crash safety: rows are written without fsync; the checkpoint only moves
// after a synced write that follows them, and at boot every hook past it
// is scanned again from the WAL and segments, creating only rows that are
// absent (DESIGN.md §6 item 4). No WAL file or local segment holding a
// hook past the checkpoint is deleted (item 3): the segment store asks
// the meta store (DurableCheckpoint, which Checkpoint also reports, and
// HoldsLive over the rows and pen rows written here).
//
// Sources change at runtime (edits.go): every attempt checks the current
// snapshot, so an edited sink spec is used for the next attempt of every
// pending hook, a runner whose spec changed or whose source or sink is
// gone is retired (its sink closed once idle), and a row whose source or
// sink is gone is a dead letter naming it.
//
// Operator calls are primitives over these rows, each change a synced
// write: dead letters and attempt logs (admin.go), a source's backlog and
// its dead-lettering before a delete (source_rows.go), and the quarantine
// pen (pen.go), whose rows and release primitive are here. The policy around
// them is the caller's (package admin): a release says how the hook goes
// (verified again with its source's current secrets, or forced), and every
// change to the pen comes with the caller's audit row, written in the same
// synced batch, so there is never a change without its row nor a row
// without its change. A pen change waits for the checkpoint to cover the
// pen row (ErrBusy if it does not soon), or the rebuild could undo it.
//
// A tenant's erase (erase.go) closes its ordinal: nothing of dispatch
// writes under it from then on (no row, pen row, dedupe key, counter,
// claim, attempt or attempt outcome, and the operator's calls answer
// ErrTenantErasing); once every write begun before the close has landed
// (WaitTenantIdle), its keys and in-memory traces are erased
// (EraseTenantRows, EraseTenantPen). Options.Erased closes the ordinals of
// erased tenants at boot, before the rebuild.
//
// dispatch must never import edge (the stages under the edge never reach
// up into it), admin (the operator's API is built on dispatch, not the
// other way), or verify (verifying a held hook again is the caller's
// policy; dispatch delivers what it is told is verified or forced).
package dispatch
