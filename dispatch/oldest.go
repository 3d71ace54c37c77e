package dispatch

import (
	"time"

	"go.uber.org/zap"

	"github.com/ankusa/ankusa/meta"
)

// OldestUndelivered is the receipt time of the oldest hook with a row
// still in the store: pending, in flight or dead (an operator may retry a
// dead letter, so it counts); ok is false when there is none. The claim
// stores' retention keeps every pack written since (a pack is written
// after the hooks in it were received).
//
// A tenant's rows are keyed by seq, and seqs follow receipt, so its first
// row is its oldest: the meta store seeks from tenant to tenant
// (meta.FirstRows) instead of reading every row, and takes no lock of the
// dispatcher. A store error is logged and answered with ok true and the
// zero time, which keeps every pack.
func (d *Dispatcher) OldestUndelivered() (time.Time, bool) {
	oldest, found := int64(0), false
	err := d.meta.FirstRows(func(_ meta.RowID, row *meta.Delivery) bool {
		if !found || row.ReceivedAt < oldest {
			oldest, found = row.ReceivedAt, true
		}
		return false
	})
	if err != nil {
		d.o.Logger.Error("dispatch: cannot find the oldest undelivered hook; claim packs are kept", zap.Error(err))
		return time.Time{}, true
	}
	if !found {
		return time.Time{}, false
	}
	return time.Unix(0, oldest), true
}
