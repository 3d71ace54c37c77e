package dispatch

import (
	"errors"
	"path/filepath"
	"strings"

	"go.uber.org/zap"

	"github.com/VictoriaMetrics/metrics"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/segment"
)

// unreadableRebuilt counts hooks the rebuild could not read back from a
// damaged segment: they get no delivery rows.
var unreadableRebuilt = metrics.NewCounter("ankusa_dispatch_rebuild_unreadable_hooks_total")

// scanPastDamage is the rebuild's Scan: a damaged segment (no archived
// copy to read instead) does not stop the node from starting. Its hooks
// are read one by one; those of the damaged blocks are logged, counted
// and skipped (they cannot be delivered from this node; the segment
// store reports them), the others get their rows. Any other error is the
// rebuild's.
func (d *Dispatcher) scanPastDamage(from, to uint64, fn func(*envelope.Envelope) error) error {
	var seen uint64 // last seq passed to fn
	track := func(e *envelope.Envelope) error {
		if err := fn(e); err != nil {
			return err
		}
		seen = e.Seq
		return nil
	}
	for from <= to {
		err := d.o.Hooks.Scan(from, to, track)
		first, last, ok := damagedSegment(err)
		if !ok || last < from {
			return err
		}
		start, end := max(first, from, seen+1), min(last, to)
		var skipped uint64
		for seq := start; seq <= end; seq++ {
			if err := d.o.Hooks.Scan(seq, seq, track); err != nil {
				if _, _, ok := damagedSegment(err); !ok {
					return err
				}
				skipped++
			}
		}
		unreadableRebuilt.Add(int(skipped))
		d.o.Logger.Error("rebuild: hooks in a damaged segment cannot be read back; they get no delivery rows",
			zap.Uint64("first_seq", start), zap.Uint64("last_seq", end), zap.Uint64("unreadable", skipped), zap.Error(err))
		if last >= to {
			return nil
		}
		from = last + 1
	}
	return nil
}

// damagedSegment is the seq range of the segment a scan error says is
// damaged (its file name holds the range).
func damagedSegment(err error) (first, last uint64, ok bool) {
	var ce *segment.CorruptError
	if err == nil || !errors.As(err, &ce) {
		return 0, 0, false
	}
	return segment.ParseStem(strings.TrimSuffix(filepath.Base(ce.File), segment.Suffix))
}
