package dispatch

import (
	"sync"
	"sync/atomic"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/source"
	"github.com/ankusa/ankusa/wal"
)

// Intake carries committed records from the commit loop to the row
// writer, in seq order, without copying them. It holds at most MaxBytes
// of records (counted until their first attempts end); a record past that
// is passed on as its seq alone and read back from the store.
//
// It exists before the dispatcher that drains it: the WAL opens first,
// with Handoff as its OnDurable, and dispatch opens once the segment
// store it reads back from is open. What is handed off meanwhile waits
// here (bounded as above).
type Intake struct {
	o      IntakeOptions
	mu     sync.Mutex
	items  []item
	spare  []item
	mem    int64 // bytes held: queued records and the hooks of first attempts
	signal chan struct{}
	closed atomic.Bool // the dispatcher closed: keep nothing more in memory
	// handed is the last seq handed off (rows up to it are on their way).
	handed atomic.Uint64
}

// IntakeOptions configure an Intake.
type IntakeOptions struct {
	// Sources is the current source snapshot: a hook whose source has no
	// sinks costs dispatch nothing but its seq.
	Sources source.Store
	// MaxBytes bounds the hooks held in memory for first attempts
	// (default 64 MiB); past it, hooks get rows only and are read back
	// from the store when their turn comes.
	MaxBytes int64
	// DedupeNode: node-scope dedupe keys are written with the rows
	// (dedupe.scope: node), so a hook of a deduplicating source needs the
	// row writer even without sinks.
	DedupeNode bool
}

// NewIntake returns an empty intake.
func NewIntake(o IntakeOptions) *Intake {
	if o.MaxBytes == 0 {
		o.MaxBytes = 64 << 20
	}
	return &Intake{o: o, signal: make(chan struct{}, 1)}
}

// item is a retained record, or (req nil) a range of seqs: to read back,
// or (skip) with nothing to deliver. A skip range carries the per-tenant
// counts of its hooks (they are never read back).
type item struct {
	req      *wal.Request
	from, to uint64
	skip     bool
	tally    []tally
}

// tally is one tenant's hooks and bytes in a skip range.
type tally struct {
	ord          uint32
	hooks, bytes uint64
}

// maxTallies bounds the tenants one skip range counts; a hook of another
// tenant starts a new range.
const maxTallies = 16

// Handoff is the WAL's OnDurable: it takes a durable batch's records in
// seq order. It runs on the commit loop and never blocks.
func (in *Intake) Handoff(batch []*wal.Request) {
	snap := in.o.Sources.Snapshot()
	in.mu.Lock()
	for _, r := range batch {
		switch in.needs(snap, r.Buf[wal.FrameHeaderSize:]) {
		case needNothing:
			in.addSkip(r.Seq, r.Ordinal, uint64(len(r.Buf)-wal.FrameHeaderSize))
			continue
		case needPenRow:
			// Rare (the quarantine bucket bounds them): read back.
			in.addReadBack(r.Seq)
			continue
		}
		n := int64(len(r.Buf))
		if in.mem+n <= in.o.MaxBytes && !in.closed.Load() {
			r.Retain()
			in.mem += n
			in.items = append(in.items, item{req: r})
			continue
		}
		intakeOverflow.Inc()
		in.addReadBack(r.Seq)
	}
	if len(batch) > 0 {
		in.handed.Store(batch[len(batch)-1].Seq)
	}
	in.mu.Unlock()
	select {
	case in.signal <- struct{}{}:
	default:
	}
}

// addSkip adds seq to the last skip range when it follows it (and the
// range has room for its tenant), counting the hook for its tenant.
// Under in.mu.
func (in *Intake) addSkip(seq uint64, ord uint32, size uint64) {
	if k := len(in.items) - 1; k >= 0 && in.items[k].req == nil && in.items[k].skip && in.items[k].to+1 == seq {
		it := &in.items[k]
		for i := range it.tally {
			if it.tally[i].ord == ord {
				it.to = seq
				it.tally[i].hooks++
				it.tally[i].bytes += size
				return
			}
		}
		if len(it.tally) < maxTallies {
			it.to = seq
			it.tally = append(it.tally, tally{ord: ord, hooks: 1, bytes: size})
			return
		}
	}
	in.items = append(in.items, item{from: seq, to: seq, skip: true, tally: []tally{{ord: ord, hooks: 1, bytes: size}}})
}

// addReadBack appends seq to the last range to read back when it follows
// it. Under in.mu.
func (in *Intake) addReadBack(seq uint64) {
	if k := len(in.items) - 1; k >= 0 && in.items[k].req == nil && !in.items[k].skip && in.items[k].to+1 == seq {
		in.items[k].to = seq
		return
	}
	in.items = append(in.items, item{from: seq, to: seq})
}

// What the row writer has to do for a committed record.
const (
	needNothing = iota // no sinks, no dedupe key to keep
	needRows           // delivery rows (or a node-scope dedupe key)
	needPenRow         // held in the quarantine pen
)

// needs reports what a committed record needs from the row writer. It
// reads the record in place, without decoding or allocating: hooks of
// sources without sinks cost dispatch nothing but their seq.
func (in *Intake) needs(snap *source.Snapshot, payload []byte) int {
	_, name, ok := envelope.Names(payload)
	if !ok {
		return needNothing
	}
	if payload[envelope.OffFlags]&envelope.FlagQuarantined != 0 {
		return needPenRow
	}
	src := snap.LookupForDelivery(name)
	if src == nil {
		unknownSource.Inc()
		return needNothing
	}
	if len(src.Spec.Sinks) > 0 || in.o.DedupeNode && src.Dedupe != nil && payload[envelope.OffFlags]&envelope.FlagFlagged == 0 {
		return needRows
	}
	return needNothing
}

// take returns everything queued; the caller gives the slice back with
// giveBack.
func (in *Intake) take() []item {
	in.mu.Lock()
	defer in.mu.Unlock()
	items := in.items
	in.items = in.spare[:0]
	in.spare = nil
	return items
}

func (in *Intake) giveBack(items []item) {
	clear(items)
	in.mu.Lock()
	if in.spare == nil {
		in.spare = items[:0]
	}
	in.mu.Unlock()
}

// release returns n bytes of the memory bound.
func (in *Intake) release(n int64) {
	in.mu.Lock()
	in.mem -= n
	in.mu.Unlock()
}

// close makes the intake keep no more records in memory and releases
// every record still queued (at Close: their rows come from the rebuild
// at the next boot).
func (in *Intake) close() {
	in.closed.Store(true)
	in.drain()
}

func (in *Intake) drain() {
	for _, it := range in.take() {
		if it.req != nil {
			wal.ReleaseRequest(it.req)
		}
	}
}
