package meta

import (
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// FirstRows gives each tenant's lowest-seq row, pending or dead, tenant
// by tenant, skipping a row that does not decode, and stops when told.
func TestFirstRows(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	commit(t, s, func(bt *Batch) {
		for _, id := range []RowID{{1, 12, "a"}, {1, 10, "b"}, {1, 10, "a"}, {3, 7, "a"}, {3, 9, "a"}, {0xffffffff, 1, "z"}} {
			bt.PutPending(id, &Delivery{ReceivedAt: int64(id.Seq * 100), Source: "src"})
		}
		bt.PutDead(RowID{2, 5, "a"}, 0, &Delivery{ReceivedAt: 500, Source: "src"})
		bt.set(RowKey(nil, RowID{4, 1, "a"}), []byte{0xee}) // damaged: skipped
		bt.PutPending(RowID{4, 2, "a"}, &Delivery{ReceivedAt: 200, Source: "src"})
	})
	all := func(stopAfter int) string {
		out, n := "", 0
		if err := s.FirstRows(func(id RowID, row *Delivery) bool {
			out += fmt.Sprintf("%d/%d/%s@%d ", id.Ord, id.Seq, id.Sink, row.ReceivedAt)
			n++
			return n == stopAfter
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got, want := all(0), "1/10/a@1000 2/5/a@500 3/7/a@700 4/2/a@200 4294967295/1/z@100 "; got != want {
		t.Fatalf("FirstRows: %s, want %s", got, want)
	}
	if got := all(2); got != "1/10/a@1000 2/5/a@500 " {
		t.Fatalf("FirstRows stopping after 2: %s", got)
	}
}
