package meta

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// HoldsLive reports whether any hook with first <= seq <= last still has a
// row that is not dead, or waits in the quarantine pen: retention keeps a
// local segment while it does (DESIGN.md §6 items 3 and 6). It seeks to
// the range in each tenant's rows rather than reading every row.
func (s *Store) HoldsLive(first, last uint64) (bool, error) {
	if held, err := s.penHolds(first, last); held || err != nil {
		return true, err
	}
	lo, hi := prefixRange(prefixRow)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return true, err
	}
	defer it.Close()
	var ord uint32
	for ok := it.SeekGE(hookPrefix(prefixRow, 0, first)); ok; {
		k := it.Key()
		id, kok := parseRowKey(k)
		if !kok {
			return true, fmt.Errorf("malformed delivery row key %x", k)
		}
		if id.Ord != ord {
			// A new tenant: jump to its first seq of the range.
			ord = id.Ord
			ok = it.SeekGE(hookPrefix(prefixRow, ord, first))
			continue
		}
		if id.Seq > last {
			if ord == ^uint32(0) {
				break
			}
			ord++
			ok = it.SeekGE(hookPrefix(prefixRow, ord, first))
			continue
		}
		if RowState(it.Value()) != RowDead {
			return true, nil
		}
		ok = it.Next()
	}
	return false, it.Error()
}

// penHolds reports whether the quarantine pen holds a hook with
// first <= seq <= last (a release needs its bytes).
func (s *Store) penHolds(first, last uint64) (bool, error) {
	lo, hi := prefixRange(prefixPen)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return true, err
	}
	defer it.Close()
	for ok := it.SeekGE(PenKey(nil, 0, first)); ok; {
		ord, seq, kok := parsePenKey(it.Key())
		switch {
		case !kok:
			return true, fmt.Errorf("malformed quarantine row key %x", it.Key())
		case seq < first:
			ok = it.SeekGE(PenKey(nil, ord, first))
		case seq <= last:
			return true, nil
		case ord == ^uint32(0):
			return false, it.Error()
		default:
			ok = it.SeekGE(PenKey(nil, ord+1, first))
		}
	}
	return false, it.Error()
}
