package dispatch_test

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/dispatch"
	"github.com/ankusa/ankusa/envelope"
)

// A crash (only what was synced survives: DESIGN.md §6 item 7) with
// thousands of pending and in-flight deliveries loses none: after the
// restart every acknowledged hook reaches every sink at least once.
func TestCrashKeepsEveryAcknowledgedDelivery(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	mem := vfs.NewCrashableMem()
	var fs vfs.FS = mem
	var acked []envelope.Envelope
	total := map[string]int{} // sink/event id -> deliveries over every run
	for round := range 4 {
		var slow atomic.Bool
		slow.Store(true)
		fk := newFakeSinks(func(sink string, d *dispatch.Delivery) error {
			if slow.Load() && rand.IntN(3) == 0 { // the global source: sinks run concurrently
				time.Sleep(2 * time.Millisecond)
			}
			return nil
		})
		n := openNode(t, fs, fk, nodeOptions{sinks: twoSinks(nil)})
		hooks := n.commitMany(1500, 8, func(i int) string { return fmt.Sprintf("t%d", i%7) })
		acked = append(acked, hooks...)
		// Let some deliveries and a checkpoint or two happen, then crash
		// with the rest pending or in flight.
		time.Sleep(time.Duration(rng.IntN(40)) * time.Millisecond)
		clone := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: rng.IntN(101), RNG: rng})
		fk.mu.Lock()
		for k, v := range fk.got {
			total[k] += v
		}
		before := len(fk.got)
		fk.got = map[string]int{} // what the crashed node delivers from now on does not count
		fk.mu.Unlock()
		slow.Store(false)
		n.close()
		t.Logf("round %d: crashed with %d of %d deliveries done", round, before, 2*len(hooks))
		mem = clone
		fs = mem
	}
	fk := newFakeSinks(nil)
	n := openNode(t, fs, fk, nodeOptions{sinks: twoSinks(nil)})
	defer n.close()
	missing := func() int {
		fk.mu.Lock()
		defer fk.mu.Unlock()
		m := 0
		for _, e := range acked {
			for _, s := range []string{"a", "b"} {
				k := s + "/" + e.ID.String()
				if total[k]+fk.got[k] == 0 {
					m++
				}
			}
		}
		return m
	}
	deadline := time.Now().Add(30 * time.Second)
	for missing() > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if m := missing(); m > 0 {
		t.Fatalf("%d acknowledged deliveries of %d never happened after the crashes", m, 2*len(acked))
	}
	dups := 0
	fk.mu.Lock()
	for k, v := range fk.got {
		dups += v + total[k] - 1
	}
	fk.mu.Unlock()
	t.Logf("%d hooks over 4 crashes: every delivery happened; %d duplicates (at least once)", len(acked), dups)
}
