package wal_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/wal"
)

// TestGroupCommit commits from many goroutines at once and checks that
// commits share fdatasyncs, that each is acknowledged exactly once with its
// own seq, and that the batch metrics agree.
func TestGroupCommit(t *testing.T) {
	batches := metrics.GetOrCreateCounter("ankusa_wal_batches_total")
	records := metrics.GetOrCreateCounter("ankusa_wal_records_total")
	// A slow disk: each fdatasync takes a while, so commits pile up.
	fs := &hookFS{FS: vfs.NewMem(), beforeSync: func(string) error {
		time.Sleep(500 * time.Microsecond)
		return nil
	}}
	w := openWAL(t, wal.Options{FS: fs})
	b0, r0, s0 := batches.Get(), records.Get(), fs.dataSyncs.Load()
	const goroutines, perG = 32, 20
	acks := make([][]ack, goroutines)
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perG; i++ {
				a, err := commit(w, hook{tenant: fmt.Sprintf("t%d", g%3), tag: fmt.Sprintf("g%d-%d", g, i)})
				if err != nil {
					t.Errorf("Commit: %v", err)
					return
				}
				// One goroutine's commits are ordered.
				if i > 0 && a.Seq <= acks[g][i-1].Seq {
					t.Errorf("goroutine %d: seq %d after %d", g, a.Seq, acks[g][i-1].Seq)
				}
				acks[g] = append(acks[g], a)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	const total = goroutines * perG
	syncs := fs.dataSyncs.Load() - s0
	nb, nr := batches.Get()-b0, records.Get()-r0
	t.Logf("%d commits in %d batches", total, syncs)
	if syncs >= total || syncs < 1 {
		t.Fatalf("%d fdatasyncs for %d commits: no group commit", syncs, total)
	}
	if nb != uint64(syncs) || nr != total {
		t.Fatalf("metrics: %d batches and %d records; %d fdatasyncs and %d commits happened", nb, nr, syncs, total)
	}
	seqs := map[uint64]bool{}
	var all []ack
	for g := range acks {
		for _, a := range acks[g] {
			if seqs[a.Seq] {
				t.Fatalf("seq %d acknowledged twice", a.Seq)
			}
			seqs[a.Seq] = true
			all = append(all, a)
		}
	}
	for s := uint64(1); s <= total; s++ {
		if !seqs[s] {
			t.Fatalf("seq %d never acknowledged", s)
		}
	}
	if w.LastSeq() != total || w.QueuedBytes() != 0 {
		t.Fatalf("LastSeq %d QueuedBytes %d", w.LastSeq(), w.QueuedBytes())
	}
	closeWAL(t, w)
	hooks := checkLog(t, mustReadLog(t, fs, dir), 1, nil)
	if len(hooks) != total {
		t.Fatalf("%d hooks in the log", len(hooks))
	}
	checkAcked(t, hooks, all)
}

// TestBatchBytesBound checks that one batch never takes more than
// MaxBatchBytes of records, however many are queued.
func TestBatchBytesBound(t *testing.T) {
	mem := vfs.NewMem()
	so := &syncOffsets{mem: mem, offs: map[string][]int64{}}
	fs := &hookFS{FS: mem, afterSync: so.afterSync, beforeSync: func(string) error {
		time.Sleep(200 * time.Microsecond)
		return nil
	}}
	const maxBatch = 6 << 10
	w := openWAL(t, wal.Options{FS: fs, MaxBatchBytes: maxBatch})
	largest := 0
	for g := 0; g < 16; g++ {
		for i := 0; i < 10; i++ {
			largest = max(largest, recordSize(hook{tenant: "acme", tag: fmt.Sprintf("g%d-%d", g, i)}))
		}
	}
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				if _, err := commit(w, hook{tenant: "acme", tag: fmt.Sprintf("g%d-%d", g, i)}); err != nil {
					t.Errorf("Commit: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	closeWAL(t, w)
	offs := so.offs[wal.FileName(1)]
	grouped := false
	for i := 1; i < len(offs); i++ {
		// One tenant, already known after the first batch: a batch is
		// hook records only.
		if n := offs[i] - offs[i-1]; n > maxBatch && i > 1 {
			t.Fatalf("batch %d wrote %d bytes, max_batch_bytes is %d", i, n, maxBatch)
		} else if n > int64(largest) {
			grouped = true // more than any single record
		}
	}
	if !grouped {
		t.Fatalf("no batch held more than one record: %v", offs)
	}
	if hooks := checkLog(t, mustReadLog(t, mem, dir), 1, nil); len(hooks) != 160 {
		t.Fatalf("%d hooks", len(hooks))
	}
}
