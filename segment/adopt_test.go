package segment_test

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/segment"
	"github.com/ankusa/ankusa/wal"
)

// Seqs of the adoption fixture: 1..40 sealed and catalogued, 41..100 in
// the WAL only; the orphan segment holds 41..80.
const (
	adoptSealed = 40
	adoptTotal  = 100
	orphanFirst = 41
	orphanLast  = 80
)

// sealingOpts seal at 4 KiB and after 20 ms.
var sealingOpts = nodeOptions{maxBytes: 4 << 10, maxAge: 20 * time.Millisecond, blockSize: 1 << 10}

// adoptFixture leaves a node's files as a crash between a seal's rename
// and its catalogue write would: seqs 1..40 catalogued, 41..100 in the
// WAL only, and returns the hooks and the bytes of a whole segment of
// seqs 41..80 built from the WAL's records with Create and Finish (not
// yet written to the segment directory).
func adoptFixture(t *testing.T) (vfs.FS, []envelope.Envelope, []byte) {
	t.Helper()
	fs := vfs.NewMem()
	n := openNode(t, fs, sealingOpts)
	var hooks []envelope.Envelope
	for i := range adoptSealed {
		hooks = append(hooks, n.mustCommit(testHook(i, 500)))
	}
	n.waitSealed(adoptSealed)
	n.close()
	n = openNode(t, fs, nodeOptions{maxBytes: 1 << 30, maxAge: time.Hour})
	for i := adoptSealed; i < adoptTotal; i++ {
		hooks = append(hooks, n.mustCommit(testHook(i, 500)))
	}
	if last := checkCatalogue(t, fs, n.catalogue(), 1); last != adoptSealed {
		t.Fatalf("catalogue ends at %d, want %d", last, adoptSealed)
	}
	n.close()

	if err := fs.MkdirAll("tmp", 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := segment.Create(fs, "tmp/orphan", segment.NewEncoder(), 1<<10)
	if err != nil {
		t.Fatal(err)
	}
	err = wal.ReadDir(fs, walDir, func(r *wal.Record) error {
		if r.Kind != envelope.KindEnvelope || r.Seq < orphanFirst || r.Seq > orphanLast {
			return nil
		}
		return w.Append(r.Payload)
	})
	if err != nil {
		t.Fatal(err)
	}
	foot, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if foot.FirstSeq != orphanFirst || foot.LastSeq != orphanLast {
		t.Fatalf("orphan holds %d..%d", foot.FirstSeq, foot.LastSeq)
	}
	return fs, hooks, readMemFile(t, fs, "tmp/orphan")
}

// checkSealedOnce checks that the catalogue covers 1..last without a gap
// or an overlap, every file verifies, and the directory holds no
// segment the catalogue lacks: no seq is sealed twice.
func checkSealedOnce(t *testing.T, n *node, fs vfs.FS, last uint64) {
	t.Helper()
	entries := n.catalogue()
	if got := checkCatalogue(t, fs, entries, 1); got != last {
		t.Fatalf("catalogue ends at %d, want %d", got, last)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name)
	}
	if files := namesWith(t, fs, segDir, ".seg"); !slices.Equal(files, names) {
		t.Fatalf("segment files %v, catalogue %v", files, names)
	}
}

// TestAdoptOrphanSegment: a whole segment under its final name that the
// catalogue lacks is verified and adopted at boot as it is (same bytes),
// and the sealer goes on after it: nothing is sealed twice. Breaking
// recoverDir (removing the orphan, or ignoring it) fails it.
func TestAdoptOrphanSegment(t *testing.T) {
	fs, hooks, orphan := adoptFixture(t)
	name := segment.FileName(orphanFirst, orphanLast)
	writeSynced(t, fs, fs.PathJoin(segDir, name), orphan)
	adopted, sealed := counter("ankusa_segment_adopted_total"), counter("ankusa_segment_sealed_total")

	n := openNode(t, fs, sealingOpts)
	if got := counter("ankusa_segment_adopted_total") - adopted; got != 1 {
		t.Fatalf("%d segments adopted, want 1", got)
	}
	e, ok, err := n.meta.SegmentBySeq(orphanFirst)
	if err != nil || !ok || e.Name != name {
		t.Fatalf("catalogue entry for seq %d: %+v, %v, %v; want the adopted %s", orphanFirst, e, ok, err, name)
	}
	n.waitSealed(adoptTotal)
	checkSealedOnce(t, n, fs, adoptTotal)
	if !bytes.Equal(readMemFile(t, fs, fs.PathJoin(segDir, name)), orphan) {
		t.Fatalf("the adopted segment was rewritten")
	}
	for i := range hooks {
		checkFetch(t, n.store, &hooks[i])
	}
	checkDense(t, "scan", scanSeqs(t, n.store, 1, adoptTotal), 1, adoptTotal)
	// The seals after the orphan cover 81..100 only.
	for _, e := range n.catalogue() {
		if e.FirstSeq > adoptSealed && e.Name != name && e.FirstSeq <= orphanLast {
			t.Fatalf("%s seals seqs the adopted segment holds", e.Name)
		}
	}
	if counter("ankusa_segment_sealed_total") == sealed {
		t.Fatalf("seqs 81..100 were not sealed")
	}
	n.close()

	// A second boot has nothing to adopt.
	adopted = counter("ankusa_segment_adopted_total")
	n = openNode(t, fs, sealingOpts)
	defer n.close()
	if counter("ankusa_segment_adopted_total") != adopted {
		t.Fatalf("a second boot adopted again")
	}
	checkSealedOnce(t, n, fs, adoptTotal)
}

// TestDamagedOrphanSegment: a segment under its final name that the
// catalogue lacks and that does not verify is set aside as ".corrupt"
// (kept for inspection), and its hooks are sealed again from the WAL.
func TestDamagedOrphanSegment(t *testing.T) {
	name := segment.FileName(orphanFirst, orphanLast)
	for _, tc := range []struct {
		what   string
		name   string
		damage func(t *testing.T, b []byte) []byte
	}{
		{"cut in the footer", name, func(t *testing.T, b []byte) []byte { return b[:len(b)-30] }},
		{"cut in half", name, func(t *testing.T, b []byte) []byte { return b[:len(b)/2] }},
		{"cut to the header", name, func(t *testing.T, b []byte) []byte { return b[:16] }},
		{"empty", name, func(t *testing.T, b []byte) []byte { return nil }},
		{"a flipped byte in a block", name, func(t *testing.T, b []byte) []byte {
			b[16+20] ^= 0x10 // inside the first block's frame
			return b
		}},
		{"a flipped byte in the footer", name, func(t *testing.T, b []byte) []byte {
			b[len(b)-112+40] ^= 0x01 // last seq
			return b
		}},
		{"a name its footer disagrees with", segment.FileName(orphanFirst, orphanLast+1), func(t *testing.T, b []byte) []byte { return b }},
	} {
		t.Run(tc.what, func(t *testing.T) {
			fs, hooks, orphan := adoptFixture(t)
			writeSynced(t, fs, fs.PathJoin(segDir, tc.name), tc.damage(t, orphan))
			corrupt, adopted := counter("ankusa_segment_corrupt_total"), counter("ankusa_segment_adopted_total")
			n := openNode(t, fs, sealingOpts)
			defer n.close()
			if got := counter("ankusa_segment_corrupt_total") - corrupt; got != 1 {
				t.Fatalf("corrupt counter moved by %d, want 1", got)
			}
			if counter("ankusa_segment_adopted_total") != adopted {
				t.Fatalf("the damaged segment was adopted")
			}
			if aside := namesWith(t, fs, segDir, ".corrupt"); !slices.Equal(aside, []string{tc.name + ".corrupt"}) {
				t.Fatalf("set aside: %v, want %s.corrupt", aside, tc.name)
			}
			n.waitSealed(adoptTotal)
			checkSealedOnce(t, n, fs, adoptTotal)
			for i := range hooks {
				checkFetch(t, n.store, &hooks[i])
			}
			checkDense(t, "scan", scanSeqs(t, n.store, 1, adoptTotal), 1, adoptTotal)
		})
	}
}

// TestPartialSegmentAtBoot: a ".partial" file at boot (a crash before a
// seal's rename) is removed, whatever it holds, and its hooks are sealed
// from the WAL.
func TestPartialSegmentAtBoot(t *testing.T) {
	for _, whole := range []bool{true, false} {
		t.Run(fmt.Sprintf("whole=%v", whole), func(t *testing.T) {
			fs, hooks, orphan := adoptFixture(t)
			if !whole {
				orphan = orphan[:len(orphan)/3]
			}
			partial := fmt.Sprintf("%020d.partial", orphanFirst)
			writeSynced(t, fs, fs.PathJoin(segDir, partial), orphan)
			discarded := counter("ankusa_segment_partial_discarded_total")
			n := openNode(t, fs, nodeOptions{maxBytes: 4 << 10, maxAge: time.Hour, blockSize: 1 << 10})
			defer n.close()
			if counter("ankusa_segment_partial_discarded_total") != discarded+1 {
				t.Fatalf("the partial segment was not discarded")
			}
			// Only the open segment's own partial may be there now.
			floor, _, _ := n.meta.CatalogueFloor()
			for _, p := range namesWith(t, fs, segDir, ".partial") {
				if p != fmt.Sprintf("%020d.partial", floor+1) {
					t.Fatalf("partial %s left after boot (catalogue ends at %d)", p, floor)
				}
			}
			for i := range hooks {
				checkFetch(t, n.store, &hooks[i])
			}
			for _, e := range n.catalogue() {
				if strings.Contains(e.Name, "partial") {
					t.Fatalf("catalogue entry %s", e.Name)
				}
			}
			checkCatalogue(t, fs, n.catalogue(), 1)
		})
	}
}

// buildFromWAL writes a whole segment of the WAL's seqs first..last to the
// segment directory under its final name, as a foreign or stale file would
// be, and returns its name.
func buildFromWAL(t *testing.T, fs vfs.FS, first, last uint64) string {
	t.Helper()
	name := segment.FileName(first, last)
	w, err := segment.Create(fs, fs.PathJoin(segDir, name), segment.NewEncoder(), 1<<10)
	if err != nil {
		t.Fatal(err)
	}
	err = wal.ReadDir(fs, walDir, func(r *wal.Record) error {
		if r.Kind != envelope.KindEnvelope || r.Seq < first || r.Seq > last {
			return nil
		}
		return w.Append(r.Payload)
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	return name
}

// TestOrphanNotNextIsSetAside: a whole, valid segment the catalogue lacks
// is adopted only if it is the next one after the catalogue. One that
// overlaps catalogued seqs (adopting it would seal seqs twice and
// overwrite an entry) or leaves seqs before it unsealed (the sealer would
// resume after it and never seal them) is set aside, and the node seals
// from the WAL as usual. Removing the check in adopt fails both cases.
func TestOrphanNotNextIsSetAside(t *testing.T) {
	for _, tc := range []struct {
		what        string
		first, last uint64
	}{
		{"overlapping the catalogue", adoptSealed - 9, adoptSealed + 20},
		{"leaving unsealed seqs before it", orphanFirst + 10, orphanLast},
	} {
		t.Run(tc.what, func(t *testing.T) {
			fs, hooks, _ := adoptFixture(t)
			name := buildFromWAL(t, fs, tc.first, tc.last)
			adopted := counter("ankusa_segment_adopted_total")
			n := openNode(t, fs, sealingOpts)
			defer n.close()
			if counter("ankusa_segment_adopted_total") != adopted {
				t.Fatalf("%s was adopted", name)
			}
			if aside := namesWith(t, fs, segDir, ".corrupt"); !slices.Equal(aside, []string{name + ".corrupt"}) {
				t.Fatalf("set aside: %v, want %s.corrupt", aside, name)
			}
			n.waitSealed(adoptTotal)
			checkSealedOnce(t, n, fs, adoptTotal)
			for i := range hooks {
				checkFetch(t, n.store, &hooks[i])
			}
		})
	}
}
