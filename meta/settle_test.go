package meta

import (
	"context"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable/block"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// openNoCompactions opens a store in memory whose sstables only flushes
// and the test's own compactions write.
func openNoCompactions(t *testing.T) *Store {
	t.Helper()
	s, err := Open(Options{Dir: "meta", FS: vfs.NewMem(), noCompactions: true})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// dueKeysStored counts the due index's keys in the store, tombstones
// included, as a flush or compaction left them.
func dueKeysStored(t *testing.T, s *Store) (sets, dels int) { return keysStored(t, s, prefixDue) }

// keysStored counts the keys under prefix (two bytes, "x/") in the
// store, tombstones included.
func keysStored(t *testing.T, s *Store, prefix string) (sets, dels int) {
	t.Helper()
	err := s.db.ScanInternal(context.Background(), block.CategoryUnknown, []byte(prefix), []byte{prefix[0], '/' + 1},
		func(k *pebble.InternalKey, _ pebble.LazyValue, _ pebble.IteratorLevel) error {
			switch k.Kind() {
			case pebble.InternalKeyKindSet:
				sets++
			default:
				dels++
			}
			return nil
		}, nil, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return sets, dels
}

// A row settled by its attempt (delivered, retried, dead-lettered) takes
// its due entry out with a single delete: written and deleted in the same
// memtable, the entry reaches no sstable, not even as a tombstone; the
// retry's new entry stays. Pebble reports no misuse of the single deletes
// through any number of flushes and compactions.
func TestSettledDueEntriesLeaveNoTombstones(t *testing.T) {
	s := openNoCompactions(t)
	defer s.Close()
	misuse := apiMisuse.Get()
	const n = 900
	id := func(i int) RowID { return RowID{Ord: 3, Seq: uint64(i), Sink: "a"} }
	for round := 0; round < 3; round++ {
		commit(t, s, func(b *Batch) {
			for i := 0; i < n; i++ {
				b.PutPending(id(round*n+i), &Delivery{Due: int64(1000 + i), Source: "src"})
			}
		})
		commit(t, s, func(b *Batch) {
			for i := 0; i < n; i++ {
				row := Delivery{Due: int64(1000 + i), Source: "src"}
				switch i % 3 {
				case 0:
					b.DeletePending(id(round*n+i), row.Due)
				case 1:
					b.PutDead(id(round*n+i), row.Due, &row)
				default:
					row.Due += 5000
					b.MovePending(id(round*n+i), 1000+int64(i), &row)
				}
			}
		})
		if err := s.db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	sets, dels := dueKeysStored(t, s)
	if want := 3 * (n / 3); sets != want || dels != 0 {
		t.Fatalf("the store holds %d due entries and %d due tombstones; want %d entries (the retries) and no tombstone", sets, dels, want)
	}
	// The retried rows settle in turn, after their entries were flushed.
	commit(t, s, func(b *Batch) {
		for round := 0; round < 3; round++ {
			for i := 2; i < n; i += 3 {
				b.DeletePending(id(round*n+i), int64(6000+i))
			}
		}
	})
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Compact(context.Background(), []byte(prefixDue), []byte("d0"), false); err != nil {
		t.Fatal(err)
	}
	if sets, dels := dueKeysStored(t, s); sets != 0 || dels != 0 {
		t.Fatalf("after every row settled: %d due entries, %d tombstones; want none", sets, dels)
	}
	if got := dueOf(t, s, 3); got != "" {
		t.Fatalf("due index: %s", got)
	}
	if d := apiMisuse.Get() - misuse; d != 0 {
		t.Fatalf("pebble reported %d misuses of the single deletes", d)
	}
}

// A single delete that meets two writes of its key is reported (counted
// and logged): the store's wiring of pebble's misuse events.
func TestSingleDeleteMisuseReported(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	before := apiMisuse.Get()
	id := RowID{Ord: 4, Seq: 1, Sink: "a"}
	commit(t, s, func(b *Batch) {
		b.PutPending(id, &Delivery{Due: 7, Source: "src"})
		b.PutPending(id, &Delivery{Due: 7, Source: "src"}) // the misuse
		b.DeletePending(id, 7)
	})
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	if d := apiMisuse.Get() - before; d != 1 {
		t.Fatalf("ankusa_meta_api_misuse_total moved by %d; want 1", d)
	}
}

// A row its first attempt delivered (written once by PutPending, deleted
// by DeleteFreshPending) leaves neither the row nor its due entry in an
// sstable; a row delivered after a retry leaves the row's tombstone.
func TestFreshRowLeavesNothing(t *testing.T) {
	s := openNoCompactions(t)
	defer s.Close()
	misuse := apiMisuse.Get()
	// A row below, in an sstable whose range covers the rows written next:
	// a flush may drop a tombstone with nothing under it, so without it
	// even plain deletes would leave nothing.
	commit(t, s, func(b *Batch) {
		b.PutPending(RowID{Ord: 5, Seq: 1 << 40, Sink: "a"}, &Delivery{Due: 1 << 40, Source: "src"})
		b.PutPending(RowID{Ord: 5, Seq: 0, Sink: "0"}, &Delivery{Due: 0, Source: "src"})
	})
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	const n = 500
	commit(t, s, func(b *Batch) {
		for i := 0; i < n; i++ {
			b.PutPending(RowID{Ord: 5, Seq: uint64(i), Sink: "a"}, &Delivery{Due: 10, Source: "src"})
		}
	})
	commit(t, s, func(b *Batch) {
		for i := 0; i < n; i++ {
			if i%2 == 0 {
				b.DeleteFreshPending(RowID{Ord: 5, Seq: uint64(i), Sink: "a"}, 10)
				continue
			}
			row := Delivery{Due: 20, Source: "src", Attempts: 1}
			b.MovePending(RowID{Ord: 5, Seq: uint64(i), Sink: "a"}, 10, &row)
		}
	})
	commit(t, s, func(b *Batch) {
		for i := 1; i < n; i += 2 {
			b.DeletePending(RowID{Ord: 5, Seq: uint64(i), Sink: "a"}, 20)
		}
	})
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	if sets, dels := keysStored(t, s, prefixRow); sets != 2 || dels != n/2 {
		t.Fatalf("rows in the store after the flush: %d, tombstones %d; want the 2 below and %d tombstones (the retried rows')", sets, dels, n/2)
	}
	if sets, dels := dueKeysStored(t, s); sets != 2 || dels != 0 {
		t.Fatalf("due entries after the flush: %d, tombstones %d; want the 2 below and no tombstone", sets, dels)
	}
	if d := apiMisuse.Get() - misuse; d != 0 {
		t.Fatalf("pebble reported %d misuses of the single deletes", d)
	}
}
