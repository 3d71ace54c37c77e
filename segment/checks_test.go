package segment_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/segment"
	"github.com/ankusa/ankusa/wal"
)

// Where the test node keeps its files (see tryOpenNode).
const (
	segDir = "data/segments"
	walDir = "data/wal"
)

// catalogue returns the node's catalogue, in seq order.
func (n *node) catalogue() []meta.SegmentEntry {
	n.t.Helper()
	return readCatalogue(n.t, n.meta)
}

func readCatalogue(t testing.TB, m *meta.Store) []meta.SegmentEntry {
	t.Helper()
	var out []meta.SegmentEntry
	if err := m.Segments(0, func(e meta.SegmentEntry) bool { out = append(out, e); return true }); err != nil {
		t.Fatalf("cannot read the catalogue: %v", err)
	}
	return out
}

// waitSealed waits until the catalogue holds seq, and then until the
// sealer is out of the seal that put it there (its WAL deletions done):
// a Scan past the durable end takes the store's lock.
func (n *node) waitSealed(seq uint64) {
	n.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		last, _, err := n.meta.CatalogueFloor()
		if err != nil {
			n.t.Fatal(err)
		}
		if last >= seq {
			break
		}
		select {
		case err := <-n.fatal:
			n.t.Fatalf("segment store failed while waiting for seq %d: %v", seq, err)
		default:
		}
		if time.Now().After(deadline) {
			n.t.Fatalf("seq %d not sealed after 20s (catalogue ends at %d)", seq, last)
		}
		time.Sleep(time.Millisecond)
	}
	n.sync()
}

// sync returns once the sealer is out of its critical section.
func (n *node) sync() {
	n.t.Helper()
	end := n.wal.LastSeq() + 1
	if err := n.store.Scan(end, end, func(*envelope.Envelope) error { return nil }); err != nil {
		n.t.Fatalf("scan past the end: %v", err)
	}
}

// mustCommit commits e and fails the test on error.
func (n *node) mustCommit(e envelope.Envelope) envelope.Envelope {
	n.t.Helper()
	got, err := n.commit(e)
	if err != nil {
		n.t.Fatalf("commit: %v", err)
	}
	return got
}

// checkCatalogue checks the catalogue of the store on fs: entries are
// dense and do not overlap, from firstSeq on; every entry not removed has
// its file, which opens, verifies and says what the entry says. It
// returns the last catalogued seq (firstSeq-1 for an empty catalogue).
func checkCatalogue(t testing.TB, fs vfs.FS, entries []meta.SegmentEntry, firstSeq uint64) uint64 {
	t.Helper()
	dec := segment.NewDecoder()
	next := firstSeq
	for _, e := range entries {
		if e.FirstSeq != next {
			t.Fatalf("catalogue: %s starts at seq %d, want %d (a gap or an overlap)", e.Name, e.FirstSeq, next)
		}
		if e.Name != segment.FileName(e.FirstSeq, e.LastSeq) {
			t.Fatalf("catalogue: entry %d..%d is named %q", e.FirstSeq, e.LastSeq, e.Name)
		}
		next = e.LastSeq + 1
		path := fs.PathJoin(segDir, e.Name)
		if e.Removed {
			if _, err := fs.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("catalogue: %s is marked removed but its file is there (%v)", e.Name, err)
			}
			continue
		}
		f, err := segment.OpenFile(fs, path)
		if err != nil {
			t.Fatalf("catalogue: %s: %v", e.Name, err)
		}
		err = f.Verify(dec)
		ft := f.Footer
		size := f.Size
		f.Close()
		if err != nil {
			t.Fatalf("catalogue: %s does not verify: %v", e.Name, err)
		}
		if size != e.Size || ft.FirstSeq != e.FirstSeq || ft.LastSeq != e.LastSeq || ft.FirstID != e.FirstID ||
			ft.LastID != e.LastID || ft.Count != e.Count || ft.RawBytes != e.RawBytes ||
			ft.MinReceivedAt != e.MinReceivedAt || ft.MaxReceivedAt != e.MaxReceivedAt {
			t.Fatalf("catalogue: entry %+v differs from its file (size %d, footer %+v)", e, size, ft)
		}
	}
	return next - 1
}

// listDir returns the names in dir, sorted; a missing dir is empty.
func listDir(t testing.TB, fs vfs.FS, dir string) []string {
	t.Helper()
	names, err := fs.List(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	return names
}

// namesWith returns the names in dir that end with suffix.
func namesWith(t testing.TB, fs vfs.FS, dir, suffix string) []string {
	t.Helper()
	var out []string
	for _, n := range listDir(t, fs, dir) {
		if strings.HasSuffix(n, suffix) {
			out = append(out, n)
		}
	}
	return out
}

// walFiles returns the numbers of the WAL files on fs.
func walFiles(t testing.TB, fs vfs.FS) []uint64 {
	t.Helper()
	nums, err := wal.ListFiles(fs, walDir)
	if err != nil {
		t.Fatal(err)
	}
	return nums
}

// walHooks maps each WAL file to the seqs of the hooks in it.
func walHooks(t testing.TB, fs vfs.FS) map[uint64][]uint64 {
	t.Helper()
	out := map[uint64][]uint64{}
	err := wal.ReadDir(fs, walDir, func(r *wal.Record) error {
		num, ok := wal.ParseFileName(fs.PathBase(r.File))
		if !ok {
			return fmt.Errorf("record in %q", r.File)
		}
		if _, seen := out[num]; !seen {
			out[num] = nil
		}
		if r.Kind == envelope.KindEnvelope {
			out[num] = append(out[num], r.Seq)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("cannot read the wal: %v", err)
	}
	return out
}

// sameEnvelope compares what was read back with what was committed; an
// empty slice and nil are the same.
func sameEnvelope(got, want *envelope.Envelope) bool {
	g, w := *got, *want
	for _, e := range []*envelope.Envelope{&g, &w} {
		if len(e.Body) == 0 {
			e.Body = nil
		}
		if len(e.Headers) == 0 {
			e.Headers = nil
		}
		if len(e.RouteParams) == 0 {
			e.RouteParams = nil
		}
	}
	return reflect.DeepEqual(g, w)
}

// describe is a short form of an envelope for failure messages.
func describe(e *envelope.Envelope) string {
	return fmt.Sprintf("seq %d id %s ord %d tenant %q recv %d verif %+v dedupe %q params %v headers %d body %d bytes (crc %x)",
		e.Seq, e.ID, e.TenantOrdinal, e.TenantID, e.ReceivedAt, e.Verification, e.DedupeKey,
		e.RouteParams, len(e.Headers), len(e.Body), bodySum(e.Body))
}

func bodySum(b []byte) uint32 {
	var h uint32 = 2166136261
	for _, c := range b {
		h = (h ^ uint32(c)) * 16777619
	}
	return h
}

// checkFetch fetches want by id and compares it.
func checkFetch(t testing.TB, s *segment.Store, want *envelope.Envelope) {
	t.Helper()
	got, err := s.Fetch(want.ID)
	if err != nil {
		t.Fatalf("fetch of seq %d (id %s): %v", want.Seq, want.ID, err)
	}
	if !sameEnvelope(got, want) {
		t.Fatalf("fetch of seq %d:\n got %s\nwant %s", want.Seq, describe(got), describe(want))
	}
}

// scanSeqs scans [from, to] and returns the seqs met, failing on a
// decode error or an error from Scan.
func scanSeqs(t testing.TB, s *segment.Store, from, to uint64) []uint64 {
	t.Helper()
	var seqs []uint64
	err := s.Scan(from, to, func(e *envelope.Envelope) error {
		seqs = append(seqs, e.Seq)
		return nil
	})
	if err != nil {
		t.Fatalf("scan %d..%d: %v", from, to, err)
	}
	return seqs
}

// checkDense fails unless seqs is exactly from..to.
func checkDense(t testing.TB, what string, seqs []uint64, from, to uint64) {
	t.Helper()
	if from > to {
		if len(seqs) != 0 {
			t.Fatalf("%s: %d hooks (%d..), want none", what, len(seqs), seqs[0])
		}
		return
	}
	if uint64(len(seqs)) != to-from+1 {
		first, last := uint64(0), uint64(0)
		if len(seqs) > 0 {
			first, last = seqs[0], seqs[len(seqs)-1]
		}
		t.Fatalf("%s: %d hooks (%d..%d), want %d..%d", what, len(seqs), first, last, from, to)
	}
	for i, s := range seqs {
		if s != from+uint64(i) {
			t.Fatalf("%s: position %d holds seq %d, want %d", what, i, s, from+uint64(i))
		}
	}
}

// counter reads one of the package's counters.
func counter(name string) uint64 { return metrics.GetOrCreateCounter(name).Get() }

// readMemFile and writeSynced read and replace a whole file (synced, with
// its directory, so crash clones keep it).
func readMemFile(t testing.TB, fs vfs.FS, path string) []byte {
	t.Helper()
	f, err := fs.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, st.Size())
	if _, err := f.ReadAt(b, 0); err != nil && len(b) > 0 {
		t.Fatal(err)
	}
	return b
}

func writeSynced(t testing.TB, fs vfs.FS, path string, data []byte) {
	t.Helper()
	f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	// A copy: with pebble's invariants on (race builds) MemFS scribbles
	// over what it was given to write.
	if _, err := f.Write(append([]byte(nil), data...)); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	d, err := fs.OpenDir(fs.PathDir(path))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
}

// idBetween reports whether a < x < b.
func idBetween(a, x, b envelope.ID) bool {
	return bytes.Compare(a[:], x[:]) < 0 && bytes.Compare(x[:], b[:]) < 0
}
