package segment_test

import (
	"math"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/wal"
)

// segmentsFull answers ENOSPC to every write into the segment directory
// (creating a file, a block, a footer) while full is set.
type segmentsFull struct {
	full atomic.Bool
	hits atomic.Int64
}

func (d *segmentsFull) String() string { return "segments full" }

func (d *segmentsFull) MaybeError(op errorfs.Op) error {
	if !d.full.Load() || !strings.Contains(op.Path, "segments/") {
		return nil
	}
	switch op.Kind {
	case errorfs.OpCreate, errorfs.OpFileWrite, errorfs.OpFilePreallocate:
		d.hits.Add(1)
		return &os.PathError{Op: "write", Path: op.Path, Err: syscall.ENOSPC}
	}
	return nil
}

// TestSealNoSpace fills the disk under the sealer: it is not fatal, no
// WAL file goes while its hooks are in no catalogued segment, and once
// space returns every hook is sealed, once, in dense segments, and reads
// back whole.
func TestSealNoSpace(t *testing.T) {
	retries := metrics.GetOrCreateCounter("ankusa_segment_seal_retries_total")
	retries0 := retries.Get()
	mem := vfs.NewMem()
	inj := &segmentsFull{}
	opts := nodeOptions{
		maxBytes: 4 << 10, maxAge: 20 * time.Millisecond, blockSize: 1 << 10, walFile: 4 << 10,
		dispatch: func() uint64 { return math.MaxUint64 },
	}
	n := openNode(t, errorfs.Wrap(mem, inj), opts)
	var hooks []envelope.Envelope
	for i := range 20 {
		hooks = append(hooks, n.mustCommit(testHook(i, 600)))
	}
	n.waitSealed(hooks[len(hooks)-1].Seq)
	sealed := n.catalogue()[len(n.catalogue())-1].LastSeq

	inj.full.Store(true)
	for i := 20; i < 80; i++ {
		hooks = append(hooks, n.mustCommit(testHook(i, 600)))
	}
	deadline := time.Now().Add(5 * time.Second)
	for inj.hits.Load() < 3 || retries.Get()-retries0 < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the sealer met the full disk %d times, retried %d", inj.hits.Load(), retries.Get()-retries0)
		}
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case err := <-n.fatal:
		t.Fatalf("a full disk was fatal to the segment store: %v", err)
	default:
	}
	if last := n.catalogue()[len(n.catalogue())-1].LastSeq; last != sealed {
		t.Fatalf("the catalogue moved from %d to %d on a full disk", sealed, last)
	}
	// The WAL still holds every hook past the catalogue (§6 item 3).
	walHooks := map[uint64]bool{}
	if err := readWAL(mem, func(seq uint64) { walHooks[seq] = true }); err != nil {
		t.Fatal(err)
	}
	for _, h := range hooks[sealed:] {
		if !walHooks[h.Seq] {
			t.Fatalf("seq %d is in no catalogued segment and its WAL file is gone", h.Seq)
		}
	}

	inj.full.Store(false)
	n.waitSealed(hooks[len(hooks)-1].Seq)
	next := uint64(1)
	for _, e := range n.catalogue() {
		if e.FirstSeq != next {
			t.Fatalf("catalogue: segment %s starts at %d, want %d", e.Name, e.FirstSeq, next)
		}
		next = e.LastSeq + 1
	}
	for i := range hooks {
		got, err := n.store.Fetch(hooks[i].ID)
		if err != nil || !sameEnvelope(got, &hooks[i]) {
			t.Fatalf("fetch seq %d after the disk was full: %v", hooks[i].Seq, err)
		}
	}
	names, err := mem.List("data/segments")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if strings.HasSuffix(name, ".partial") {
			t.Fatalf("partial segment %s left after sealing resumed", name)
		}
	}
	n.close()
}

// readWAL calls fn with the seq of every hook the WAL in data/wal holds.
func readWAL(fs vfs.FS, fn func(seq uint64)) error {
	return wal.ReadDir(fs, "data/wal", func(r *wal.Record) error {
		if r.Kind == envelope.KindEnvelope {
			fn(r.Seq)
		}
		return nil
	})
}
