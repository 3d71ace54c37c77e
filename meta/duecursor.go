package meta

import (
	"math"
	"sync"
	"time"
)

// dueFullEvery is how often a tenant's scan starts at the front all the
// same: a held row let go of without the note it needed (a bug) waits at
// most this long, not until a restart.
// (A variable: tests lengthen it.)
var dueFullEvery = time.Second

// A tenant's due index is read from its earliest entry on every claim
// pass, and a delivered row's entry is deleted, not moved: under load the
// front of the index is a run of deletions that pebble keeps until the
// memtable is flushed and compacted, and every pass stepped over all of
// them again (a quarter of the node's CPU while it delivered at full
// rate). dueCursors remembers, per tenant ordinal, a due time no entry of
// the tenant is before, so DueRows starts there.
//
// Why it is safe: the only writer of due entries is Batch.PutPending,
// and every batch that put some tells the cursors, after its commit, the
// least due it wrote for each ordinal; that lowers the ordinal's start. A
// scan raises the start only to the due of the first entry it read, and
// only to below anything noted while it ran (a write that committed after
// the scan's snapshot was taken is one the scan could not see). Deletions
// never make an entry appear, so they need no note. The cursors live in
// memory: after a restart every scan starts at the front once.
//
// Held entries (rows their reader has taken for an attempt, skipped by
// the scan) do not hold the start back either: a reader that lets go of
// a row that is still pending calls Store.NoteDue with its due entry,
// after it let go (a scan that then reads the entry sees it free). That
// holds for an entry an outcome moved while the row was held too: the
// batch's own note can be overtaken by a scan that met the new entry
// held and stepped past it.
type dueCursors struct {
	mu sync.Mutex
	m  map[uint32]*dueCursor
}

type dueCursor struct {
	// start: no due entry of the ordinal is before it (0 until a scan
	// has run).
	start int64
	// scans is how many DueRows calls run for the ordinal; epoch counts
	// the calls that began, so a scan can tell that another began since.
	scans int
	epoch uint64
	// lowered is the least due noted since the running scan began
	// (math.MaxInt64: none).
	lowered int64
	// full is when a scan last began at the front.
	full time.Time
}

// begin starts a scan of ord's due index: the due time it may start at
// and the epoch to end it with.
func (c *dueCursors) begin(ord uint32) (start int64, epoch uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[uint32]*dueCursor)
	}
	cur := c.m[ord]
	if cur == nil {
		cur = &dueCursor{}
		c.m[ord] = cur
	}
	if cur.scans == 0 {
		cur.lowered = math.MaxInt64
	}
	cur.scans++
	cur.epoch++
	if now := time.Now(); now.Sub(cur.full) >= dueFullEvery {
		cur.full = now
		return 0, cur.epoch
	}
	return cur.start, cur.epoch
}

// end finishes a scan begun at epoch. first is the due of the first entry
// it read (math.MaxInt64: it read none); ok is false when the scan failed
// or its first entry did not parse, and the start then stays where it was.
// The start moves only when no other scan of the ordinal ran meanwhile.
func (c *dueCursors) end(ord uint32, epoch uint64, first int64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := c.m[ord]
	cur.scans--
	if !ok || cur.scans != 0 || cur.epoch != epoch {
		return
	}
	cur.start = min(first, cur.lowered)
}

// note lowers the start of each note's ordinal to its due, after a batch
// that put those due entries committed (or failed to: lowering is always
// safe). One lock for the whole batch.
func (c *dueCursors) note(notes []dueNote) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range notes {
		cur := c.m[n.ord]
		if cur == nil {
			continue // never scanned: its scans start at the front
		}
		due := max(n.due, 0) // DueKey files a due time before 1970 at 0
		cur.start = min(cur.start, due)
		if cur.scans > 0 {
			cur.lowered = min(cur.lowered, due)
		}
	}
}

// dueNote is the least due a batch put for one ordinal.
type dueNote struct {
	ord uint32
	due int64
}

// noteDue notes that the batch puts a due entry of ord at due. Notes are
// not merged per ordinal: a batch of the row writer can hold rows of
// thousands of tenants, and a search per put would be quadratic; the
// cursors take the whole list under one lock at the commit.
func (b *Batch) noteDue(ord uint32, due int64) {
	b.dues = append(b.dues, dueNote{ord: ord, due: due})
}

// tellDues hands the batch's notes to the store's cursors.
func (b *Batch) tellDues() {
	if len(b.dues) > 0 {
		b.s.due.note(b.dues)
		b.dues = b.dues[:0]
	}
}
