package meta

import (
	"sync"

	"github.com/cockroachdb/pebble/v2"
)

// Batch is a set of writes to the store that commit together, atomically:
// a row with its index entries and attempt entry, the keys of a batch of
// hooks, an operator's change with its audit row. Its methods are typed by
// family (rows.go, attempts.go, quarantine.go, dedupe.go, audit.go); each
// spells its keys into the batch's own buffers, so a batch reused with
// Reset writes without allocating.
//
// A Batch is not safe for concurrent use. Get one with Store.NewBatch,
// and Close it when done; it must not be used after Close.
type Batch struct {
	s        *Store
	b        *pebble.Batch
	key, val []byte
	// events are the lifecycle events of the batch's audit rows, numbered
	// when it commits (outbox.go).
	events []pendingEvent
	// dues are the least due times the batch puts, per ordinal, told to
	// the store's due cursors when it commits (duecursor.go).
	dues []dueNote
}

var batches = sync.Pool{New: func() any { return new(Batch) }}

// NewBatch returns an empty batch.
func (s *Store) NewBatch() *Batch {
	b := batches.Get().(*Batch)
	b.s, b.b = s, s.db.NewBatch()
	return b
}

// Commit applies the batch with durability d. A synced commit also makes
// every earlier unsynced one durable (pebble's log is written in commit
// order): that is what the dispatch checkpoint relies on. A batch that
// holds audit rows (an operator's change, with its lifecycle events)
// always commits synced, through the outbox's committer, which numbers
// its events in commit order.
func (b *Batch) Commit(d Durability) error {
	defer b.tellDues()
	if len(b.events) > 0 {
		return b.s.commitEvents(b)
	}
	return b.b.Commit(d.opts())
}

// Reset empties the batch for reuse, keeping its memory.
func (b *Batch) Reset() {
	b.b.Reset()
	b.events, b.dues = b.events[:0], b.dues[:0]
}

// Empty reports whether the batch holds no write.
func (b *Batch) Empty() bool { return b.b.Empty() && len(b.events) == 0 }

// Len is the number of writes in the batch.
func (b *Batch) Len() int { return int(b.b.Count()) }

// Close releases the batch; its writes are dropped if not committed.
func (b *Batch) Close() {
	_ = b.b.Close()
	b.s, b.b, b.events, b.dues = nil, nil, b.events[:0], b.dues[:0]
	batches.Put(b)
}

// set and del add one write. A batch that is not indexed cannot fail to
// take a write (pebble returns an error only from an indexed one), so
// the methods built on them return none.
func (b *Batch) set(key, v []byte) { _ = b.b.Set(key, v, nil) }

func (b *Batch) del(key []byte) { _ = b.b.Delete(key, nil) }

// singleDel deletes a key written once since it was last deleted (or
// ever): the write and its deletion then cancel out when they meet in a
// flush, and neither reaches an sstable, where a Delete's tombstone would
// be written and compacted down. Used only for keys whose every write is
// followed by its own deletion: due entries (the key holds the due time,
// so a row moved to another due time writes another key) and a row its
// first attempt delivered (DeleteFreshPending). Pebble reports a key that
// breaks this (PossibleAPIMisuse, logger.go).
func (b *Batch) singleDel(key []byte) { _ = b.b.SingleDelete(key, nil) }
