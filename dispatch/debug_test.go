package dispatch_test

import (
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/ankusa/ankusa/dispatch"
	"github.com/ankusa/ankusa/meta"
)

// dumpState logs the dispatcher's memory and the store's row counts, for a
// test that stalls.
func dumpState(t *testing.T, n *node) {
	d := n.disp.Load()
	count := func(p string) int {
		it, _ := n.meta.DB().NewIter(&pebble.IterOptions{LowerBound: []byte(p), UpperBound: meta.PrefixEnd([]byte(p))})
		defer it.Close()
		c := 0
		for ok := it.First(); ok; ok = it.Next() {
			c++
		}
		return c
	}
	t.Log(dispatch.DebugState(d))
	t.Logf("ckpt %d last %d rows %d due %d dead %d ok %d", d.Checkpoint(), n.wal.LastSeq(), count(meta.PrefixRow), count(meta.PrefixDue), count(meta.PrefixDead), n.sinks.ok.Load())
}
