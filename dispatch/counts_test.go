package dispatch_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/meta"
)

// TestTenantCountsExactAcrossCrashes: every tenant's counters equal, hook
// for hook and byte for byte, what the log holds of it, across crashes
// that drop unsynced data: they are persisted with the checkpoint and the
// rebuild past it adds each hook once. Both paths are counted: hooks with
// sinks (decoded for their rows) and hooks without (passed as seq ranges).
func TestTenantCountsExactAcrossCrashes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sinks []config.Sink
	}{{"with sinks", twoSinks(nil)}, {"without sinks", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(5, 8))
			mem := vfs.NewCrashableMem()
			for round := range 4 {
				n := openNode(t, mem, newFakeSinks(nil), nodeOptions{sinks: tc.sinks})
				checkCounts(t, n, fmt.Sprintf("round %d after the crash", round))
				n.commitMany(400, 8, func(i int) string { return fmt.Sprintf("t%d", i%5) })
				time.Sleep(time.Duration(rng.IntN(30)) * time.Millisecond)
				clone := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: rng.IntN(101), RNG: rng})
				n.close()
				mem = clone
			}
			n := openNode(t, mem, newFakeSinks(nil), nodeOptions{sinks: tc.sinks})
			defer n.close()
			checkCounts(t, n, "at the end")
		})
	}
}

// checkCounts compares the dispatcher's counters with the log.
func checkCounts(t *testing.T, n *node, phase string) {
	t.Helper()
	want := map[uint32]meta.TenantCounts{}
	if last := n.wal.LastSeq(); last > 0 {
		err := n.store.Scan(1, last, func(e *envelope.Envelope) error {
			c := want[e.TenantOrdinal]
			c.Hooks++
			c.Bytes += uint64(e.EncodedLen())
			want[e.TenantOrdinal] = c
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	d := n.disp.Load()
	for ord, w := range want {
		if got := d.TenantCounts(ord); got != w {
			t.Fatalf("%s: tenant %d counts %+v, the log holds %+v", phase, ord, got, w)
		}
	}
}
