package segment_test

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/segment"
)

// TestFetchWhileSealing commits hooks from one goroutine while two others
// fetch and scan the latest committed hook over and over, and the sealer
// seals every few hooks on its own: a committed hook must be found
// whether the reader meets it in the open segment, in the middle of its
// seal, or in the catalogue. Reading the sealer's position after the
// catalogue lookup (as read.go did before efa8cec) fails it: ErrNotFound
// for a hook the sealer was sealing, and "sealed but in no catalogued
// segment" from Scan. The race is probabilistic; in a second the test
// runs thousands of reads and the bug showed on every run.
func TestFetchWhileSealing(t *testing.T) {
	fs := vfs.NewMem()
	n := openNode(t, fs, nodeOptions{maxBytes: 600, maxAge: time.Hour, blockSize: 256})
	defer n.close()
	var latest atomic.Pointer[envelope.Envelope]
	stop := make(chan struct{})
	var notFound, scanErrs, reads atomic.Int64
	var firstErr, firstScanErr atomic.Value
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				e := latest.Load()
				if e == nil {
					continue
				}
				reads.Add(1)
				got, err := n.store.Fetch(e.ID)
				switch {
				case errors.Is(err, segment.ErrNotFound):
					notFound.Add(1)
					firstErr.CompareAndSwap(nil, err)
				case err != nil:
					firstErr.CompareAndSwap(nil, err)
				case !sameEnvelope(got, e):
					firstErr.CompareAndSwap(nil, errors.New("fetch: "+describe(got)+" want "+describe(e)))
				}
				var seqs []uint64
				err = n.store.Scan(e.Seq, e.Seq, func(x *envelope.Envelope) error { seqs = append(seqs, x.Seq); return nil })
				if err != nil || len(seqs) != 1 {
					scanErrs.Add(1)
					if err == nil {
						err = fmt.Errorf("scan of seq %d met %v", e.Seq, seqs)
					}
					firstScanErr.CompareAndSwap(nil, err)
				}
			}
		}()
	}
	deadline := time.Now().Add(time.Second)
	i := 0
	for time.Now().Before(deadline) {
		e := n.mustCommit(testHook(i, 200))
		latest.Store(&e)
		i++
		time.Sleep(50 * time.Microsecond) // let the readers in
	}
	close(stop)
	wg.Wait()
	if notFound.Load() > 0 || scanErrs.Load() > 0 || firstErr.Load() != nil {
		t.Fatalf("%d hooks committed, %d reads: %d fetches said not found, %d scans failed; first fetch error: %v; first scan error: %v",
			i, reads.Load(), notFound.Load(), scanErrs.Load(), firstErr.Load(), firstScanErr.Load())
	}
	t.Logf("%d hooks committed, %d reads, %d segments", i, reads.Load(), len(n.catalogue()))
}
