package meta

import (
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// SourceRows finds a source's rows across tenants, pending and dead, and
// no row of another source, even one whose name it is a prefix of.
func TestSourceRows(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	commit(t, s, func(b *Batch) {
		b.PutPending(RowID{1, 10, "a"}, &Delivery{Source: "stripe", Due: 1})
		b.PutPending(RowID{1, 10, "b"}, &Delivery{Source: "stripe", Due: 1})
		b.PutPending(RowID{1, 11, "a"}, &Delivery{Source: "stripe-2", Due: 1})
		b.PutPending(RowID{2, 12, "a"}, &Delivery{Source: "stripe", Due: 1, LastError: "x"})
		b.PutDead(RowID{3, 13, "a"}, 0, &Delivery{Source: "stripe"})
		b.PutPending(RowID{3, 14, "a"}, &Delivery{Source: "strip", Due: 1})
		b.PutPending(RowID{3, 15, "a"}, &Delivery{Source: "", Due: 1})
	})
	for _, tc := range []struct{ src, want string }{
		{"stripe", "1/10/a:1 1/10/b:1 2/12/a:1 3/13/a:3 "},
		{"stripe-2", "1/11/a:1 "},
		{"strip", "3/14/a:1 "},
		{"none", ""},
	} {
		got := ""
		err := s.SourceRows(tc.src, func(id RowID, row *Delivery) (bool, error) {
			if row.Source != tc.src {
				t.Errorf("SourceRows(%q) gave a row of %q", tc.src, row.Source)
			}
			got += fmt.Sprintf("%d/%d/%s:%d ", id.Ord, id.Seq, id.Sink, row.State)
			return false, nil
		})
		if err != nil || got != tc.want {
			t.Errorf("SourceRows(%q) = %q, %v; want %q", tc.src, got, err, tc.want)
		}
	}
	n := 0
	if err := s.SourceRows("stripe", func(RowID, *Delivery) (bool, error) { n++; return n == 2, nil }); err != nil || n != 2 {
		t.Fatalf("SourceRows did not stop when told: %d rows, %v", n, err)
	}
}

// rowSourceIs reads the source of an encoded row and refuses what is not
// one.
func TestRowSourceIs(t *testing.T) {
	v := (&Delivery{State: RowPending, Source: "abc"}).AppendTo(nil)
	for _, tc := range []struct {
		v    []byte
		src  string
		want bool
	}{
		{v, "abc", true},
		{v, "ab", false},
		{v, "abcd", false},
		{v[:rowSourceAt+2], "abc", false}, // cut inside the name
		{v[:10], "abc", false},
		{append([]byte{9}, v[1:]...), "abc", false}, // another version
		{nil, "", false},
	} {
		if got := rowSourceIs(tc.v, []byte(tc.src)); got != tc.want {
			t.Errorf("rowSourceIs(%x, %q) = %v, want %v", tc.v, tc.src, got, tc.want)
		}
	}
}
