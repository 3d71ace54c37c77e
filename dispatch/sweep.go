package dispatch

import (
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"go.uber.org/zap"

	"github.com/ankusa/ankusa/dedupe"
	"github.com/ankusa/ankusa/meta"
)

// sweepEvery is how often the attempt log is swept.
const sweepEvery = 10 * time.Minute

func (d *Dispatcher) sweepLoop() {
	defer d.wg.Done()
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	var sweptDay uint32
	for {
		select {
		case <-d.stop:
			return
		case <-t.C:
			if day := meta.DedupeDay(d.o.Now().UnixNano()); d.in.o.DedupeNode && day != sweptDay {
				// Keys are filed by day: one range delete a day is enough.
				if err := dedupe.Sweep(d.db, d.o.Now().UnixNano()); err != nil {
					d.o.Logger.Error("cannot sweep expired dedupe keys", zap.Error(err))
				} else {
					sweptDay = day
				}
			}
			if n, err := d.sweepAttempts(); err != nil {
				d.o.Logger.Error("cannot sweep the attempt log", zap.Error(err))
			} else if n > 0 {
				d.o.Logger.Info("swept the attempt log", zap.Int("entries", n), zap.Duration("older_than", d.o.AttemptLogTTL))
			}
		}
	}
}

// sweepAttempts deletes attempt log entries older than AttemptLogTTL.
// Entries are in seq order per tenant, and seqs follow receipt, so for
// each tenant it deletes from the start up to the first entry still young
// (a later retry of an old hook waits for the sweep after it ages).
func (d *Dispatcher) sweepAttempts() (int, error) {
	cutoff := d.o.Now().Add(-d.o.AttemptLogTTL).UnixNano()
	lo := []byte(meta.PrefixAttempt)
	it, err := d.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: meta.PrefixEnd(lo)})
	if err != nil {
		return 0, err
	}
	defer it.Close()
	b := d.db.NewBatch()
	defer b.Close()
	n := 0
	for ok := it.First(); ok; {
		ord, _, _, _, kok := meta.ParseAttemptKey(it.Key())
		var a meta.AttemptRecord
		if kok && meta.DecodeAttempt(it.Value(), &a) == nil && a.At >= cutoff {
			// The tenant's young part starts here: go to the next tenant.
			ok = it.SeekGE(meta.TenantPrefix(meta.PrefixAttempt, ord+1))
			if ord == ^uint32(0) {
				break
			}
			continue
		}
		_ = b.Delete(append([]byte(nil), it.Key()...), nil)
		n++
		if b.Count() >= 4096 {
			if err := b.Commit(pebble.NoSync); err != nil {
				return n, err
			}
			b.Reset()
		}
		ok = it.Next()
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return n, err
	}
	sweptAttempts.Add(n)
	return n, it.Error()
}

// HoldsLive reports whether any hook with first <= seq <= last still has a
// row that is not dead, or waits in the quarantine pen: retention keeps a
// local segment while it does (DESIGN.md §6 items 3 and 6).
func (d *Dispatcher) HoldsLive(first, last uint64) (bool, error) {
	if held, err := d.penHolds(first, last); held || err != nil {
		return true, err
	}
	lo := []byte(meta.PrefixRow)
	it, err := d.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: meta.PrefixEnd(lo)})
	if err != nil {
		return true, err
	}
	defer it.Close()
	var ord uint32
	for ok := it.SeekGE(meta.HookPrefix(meta.PrefixRow, 0, first)); ok; {
		k := it.Key()
		o, seq, _, kok := meta.ParseRowKey(k)
		if !kok {
			return true, fmt.Errorf("malformed delivery row key %x", k)
		}
		if o != ord {
			// A new tenant: jump to its first seq of the range.
			ord = o
			ok = it.SeekGE(meta.HookPrefix(meta.PrefixRow, ord, first))
			continue
		}
		if seq > last {
			if ord == ^uint32(0) {
				break
			}
			ord++
			ok = it.SeekGE(meta.HookPrefix(meta.PrefixRow, ord, first))
			continue
		}
		if meta.RowState(it.Value()) != meta.RowDead {
			return true, nil
		}
		ok = it.Next()
	}
	return false, it.Error()
}

// penHolds reports whether the quarantine pen holds a hook with
// first <= seq <= last (a release needs its bytes).
func (d *Dispatcher) penHolds(first, last uint64) (bool, error) {
	lo := []byte(meta.PrefixPen)
	it, err := d.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: meta.PrefixEnd(lo)})
	if err != nil {
		return true, err
	}
	defer it.Close()
	for ok := it.SeekGE(meta.PenKey(nil, 0, first)); ok; {
		ord, seq, kok := meta.ParsePenKey(it.Key())
		switch {
		case !kok:
			return true, fmt.Errorf("malformed quarantine row key %x", it.Key())
		case seq < first:
			ok = it.SeekGE(meta.PenKey(nil, ord, first))
		case seq <= last:
			return true, nil
		case ord == ^uint32(0):
			return false, it.Error()
		default:
			ok = it.SeekGE(meta.PenKey(nil, ord+1, first))
		}
	}
	return false, it.Error()
}
