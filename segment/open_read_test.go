package segment_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/segment"
)

// TestOpenSegmentReads reads hooks that are committed but not sealed
// (segment.max_bytes and max_age far away): each is fetchable the moment
// its Commit returns and shows in a scan, from the blocks the open
// segment has written to its partial file and from the block it is still
// filling. Then some are sealed and the rest are not: a scan goes from
// the catalogue into the open segment without a gap, and a restart finds
// the unsealed ones again (from the WAL).
func TestOpenSegmentReads(t *testing.T) {
	fs := vfs.NewMem()
	open := nodeOptions{maxBytes: 1 << 30, maxAge: time.Hour, blockSize: 1 << 10}
	n := openNode(t, fs, open)
	var hooks []envelope.Envelope
	for i := range 150 {
		e := n.mustCommit(testHook(i, 700))
		hooks = append(hooks, e)
		checkFetch(t, n.store, &e)
		checkDense(t, "scan of the hook just committed", scanSeqs(t, n.store, e.Seq, e.Seq), e.Seq, e.Seq)
	}
	if got := len(n.catalogue()); got != 0 {
		t.Fatalf("%d segments sealed; the test reads the open segment", got)
	}
	if p := namesWith(t, fs, segDir, ".partial"); len(p) != 1 {
		t.Fatalf("partial files %v, want the open segment's", p)
	}
	checkOpenReads(t, n, hooks)
	n.close()

	// Seal the first part: a node that seals at 16 KiB and leaves the rest
	// open.
	n = openNode(t, fs, nodeOptions{maxBytes: 16 << 10, maxAge: time.Hour, blockSize: 1 << 10})
	n.sync()
	entries := n.catalogue()
	if len(entries) == 0 || entries[len(entries)-1].LastSeq >= uint64(len(hooks)) {
		t.Fatalf("catalogue of %d segments: the test needs some hooks sealed and some not", len(entries))
	}
	checkOpenReads(t, n, hooks)
	for i := range 20 {
		e := n.mustCommit(testHook(1000+i, 700))
		hooks = append(hooks, e)
		checkFetch(t, n.store, &e)
	}
	checkOpenReads(t, n, hooks)
	n.close()

	n = openNode(t, fs, open)
	defer n.close()
	checkOpenReads(t, n, hooks)
}

// checkOpenReads fetches every hook, scans them all and a range around
// the last sealed seq, and asks for ids that are not there: between two
// hooks of the open segment, and above the last.
func checkOpenReads(t *testing.T, n *node, hooks []envelope.Envelope) {
	t.Helper()
	for i := range hooks {
		checkFetch(t, n.store, &hooks[i])
	}
	last := uint64(len(hooks))
	checkDense(t, "scan 1..max", scanSeqs(t, n.store, 1, math.MaxUint64), 1, last)
	sealed, _, err := n.meta.CatalogueFloor()
	if err != nil {
		t.Fatal(err)
	}
	from, to := max(sealed, 3)-2, min(sealed+40, last)
	checkDense(t, "scan across the sealed end", scanSeqs(t, n.store, from, to), from, to)
	from, to = max(sealed+1, last-30), last-2
	checkDense(t, "scan inside the open segment", scanSeqs(t, n.store, from, to), from, to)

	above := hooks[len(hooks)-1].ID
	above[6]++ // a millisecond later
	if _, err := n.store.Fetch(above); !errors.Is(err, segment.ErrNotFound) {
		t.Fatalf("fetch of an id above the last hook: %v, want ErrNotFound", err)
	}
	for i := len(hooks) - 1; i > 0 && hooks[i-1].Seq > sealed; i-- {
		a, b := hooks[i-1].ID, hooks[i].ID
		if a.Millis() == b.Millis() {
			continue
		}
		mid := envelope.MakeID(a.Millis(), a.Node()+1, 0)
		if !idBetween(a, mid, b) {
			t.Fatalf("BUG: test: %s is not between %s and %s", mid, a, b)
		}
		if _, err := n.store.Fetch(mid); !errors.Is(err, segment.ErrNotFound) {
			t.Fatalf("fetch of an id between two open hooks: %v, want ErrNotFound", err)
		}
		break
	}
}
