package meta

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// KeyRange is the keys k of one family with Lo <= k < Hi.
type KeyRange struct {
	Family string
	Lo, Hi []byte
}

// TenantRanges returns every key range that holds data of the tenant with
// ordinal ord and name name, one or more per family that is per tenant
// (families.go), and nothing of another tenant: what the tenant erase
// deletes. Families that are not per tenant (node identity, checkpoints,
// the catalogue, audit rows) are left out; Family.Why says why.
//
// The dedupe keys are filed by day first, so they get one range per day
// that holds dedupe keys at the time of the call (one seek per day): an
// erase that runs after the tenant is closed and its last hooks are
// written finds them all.
func (s *Store) TenantRanges(ord uint32, name string) ([]KeyRange, error) {
	var out []KeyRange
	for _, f := range families {
		switch f.Scope {
		case ByOrdinal:
			p := tenantPrefix(f.Prefix, ord)
			out = append(out, KeyRange{Family: f.Name, Lo: p, Hi: prefixEnd(p)})
		case ByName:
			k := appendNameKey(nil, f.Prefix, name)
			out = append(out, KeyRange{Family: f.Name, Lo: k, Hi: append(append([]byte(nil), k...), 0)})
		case ByNameEntity:
			p := entityPrefix(f.Prefix, name)
			out = append(out, KeyRange{Family: f.Name, Lo: p, Hi: prefixEnd(p)})
		case ByDayOrdinal:
			days, err := s.dedupeDays()
			if err != nil {
				return nil, err
			}
			for _, day := range days {
				p := dedupeTenantPrefix(day, ord)
				out = append(out, KeyRange{Family: f.Name, Lo: p, Hi: prefixEnd(p)})
			}
		}
	}
	return out, nil
}

// dedupeDays lists the days that hold dedupe keys, skipping from one day
// to the next with a seek.
func (s *Store) dedupeDays() ([]uint32, error) {
	lo, hi := prefixRange(prefixDedupe)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return nil, fmt.Errorf("cannot list the days of dedupe keys: %w", err)
	}
	defer it.Close()
	var days []uint32
	for ok := it.First(); ok; {
		day, isDay := parseDedupeDay(it.Key())
		if !isDay {
			ok = it.Next() // not a dedupe key of any day
			continue
		}
		days = append(days, day)
		if day == ^uint32(0) {
			break
		}
		ok = it.SeekGE(dedupeDayPrefix(day + 1))
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("cannot list the days of dedupe keys: %w", err)
	}
	return days, nil
}
