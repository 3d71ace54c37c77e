package dispatch_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/segment"
)

// waitCatalogued waits until the catalogue holds seq.
func waitCatalogued(t *testing.T, n *node, seq uint64) {
	t.Helper()
	waitFor(t, 10*time.Second, fmt.Sprintf("seq %d sealed", seq), func() bool {
		last, ok, err := n.meta.LastSegment()
		return err == nil && ok && last.LastSeq >= seq
	})
}

// TestRebuildPastDamagedSegment: after a crash the rows past the dispatch
// checkpoint are rebuilt from the segments; one of them is damaged (no
// archive). The dispatcher opens all the same: the damaged segment's
// hooks are counted and skipped, every other hook is delivered.
func TestRebuildPastDamagedSegment(t *testing.T) {
	mem := vfs.NewMem()
	fk := newFakeSinks(nil)
	n := openNode(t, mem, fk, nodeOptions{sinks: twoSinks(nil), noDispatch: true})
	tenant := func(i int) string { return fmt.Sprintf("t%d", i%3) }
	first := n.commitMany(300, 4, tenant)
	waitCatalogued(t, n, 300)
	second := n.commitMany(300, 4, tenant)
	waitCatalogued(t, n, 600)
	n.close()

	names, err := mem.List("data/segments")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	victim := "data/segments/" + names[0]
	if !strings.HasSuffix(victim, segment.Suffix) || !strings.HasPrefix(names[0], "00000000000000000001-") {
		t.Fatalf("segment files %v, want the first at seq 1", names)
	}
	flipMemByte(t, mem, victim, 16+20)

	before := metrics.GetOrCreateCounter("ankusa_dispatch_rebuild_unreadable_hooks_total").Get()
	n = openNode(t, mem, fk, nodeOptions{sinks: twoSinks(nil)})
	defer n.close()
	_, vLast, _ := segment.ParseStem(strings.TrimSuffix(names[0], segment.Suffix))
	inVictim := func(e envelope.Envelope) bool { return e.Seq <= vLast }
	var lost []envelope.Envelope
	for _, e := range append(first, second...) {
		if inVictim(e) {
			lost = append(lost, e)
			continue
		}
		waitFor(t, 10*time.Second, fmt.Sprintf("delivery of seq %d", e.Seq), func() bool { return fk.delivered("a", e.ID) > 0 && fk.delivered("b", e.ID) > 0 })
	}
	if got := metrics.GetOrCreateCounter("ankusa_dispatch_rebuild_unreadable_hooks_total").Get() - before; got == 0 || got > uint64(len(lost)) {
		t.Fatalf("%d unreadable hooks counted, want some of the %d in the damaged segment", got, len(lost))
	}
	for _, e := range lost {
		if _, err := n.store.Fetch(e.ID); err == nil {
			waitFor(t, 10*time.Second, fmt.Sprintf("delivery of readable seq %d", e.Seq), func() bool { return fk.delivered("a", e.ID) > 0 })
		} else if fk.delivered("a", e.ID) != 0 {
			t.Fatalf("seq %d cannot be read but was delivered", e.Seq)
		}
	}
}

// flipMemByte flips one byte of a file on a MemFS, synced.
func flipMemByte(t *testing.T, fs vfs.FS, path string, off int64) {
	t.Helper()
	f, err := fs.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, st.Size())
	if _, err := f.ReadAt(data, 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	data[off] ^= 0x5a
	w, err := fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	w.Close()
}
