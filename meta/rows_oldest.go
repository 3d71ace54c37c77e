package meta

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// FirstRows calls fn with the first row of every tenant that has rows
// (its lowest seq, the earliest committed of its hooks still pending, in
// flight or dead), tenant by tenant, until fn says stop. It seeks past
// each tenant's other rows: one step per tenant, not a scan of every row.
// It holds no lock the writers need (a pebble iterator reads a consistent
// view of its own).
func (s *Store) FirstRows(fn func(id RowID, row *Delivery) (stop bool)) error {
	lo, hi := prefixRange(prefixRow)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return fmt.Errorf("cannot read delivery rows: %w", err)
	}
	for ok := it.First(); ok; {
		id, parsed := parseRowKey(it.Key())
		var row Delivery
		if !parsed || DecodeDelivery(it.Value(), &row) != nil {
			ok = it.Next() // a damaged row: the tenant's next one
			continue
		}
		if fn(id, &row) {
			break
		}
		next := prefixEnd(tenantPrefix(prefixRow, id.Ord))
		if next == nil {
			break
		}
		ok = it.SeekGE(next)
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return fmt.Errorf("cannot read delivery rows: %w", err)
	}
	return nil
}
