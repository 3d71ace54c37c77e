package dispatch_test

import (
	"testing"

	"github.com/ankusa/ankusa/dispatch"
)

// dumpState logs the dispatcher's memory and the store's row counts, for a
// test that stalls.
func dumpState(t *testing.T, n *node) {
	d := n.disp.Load()
	keys, err := n.meta.Census()
	if err != nil {
		t.Logf("cannot count the store's keys: %v", err)
	}
	t.Log(dispatch.DebugState(d))
	t.Logf("ckpt %d last %d rows %d due %d dead %d ok %d", d.Checkpoint(), n.wal.LastSeq(), keys["rows"], keys["due"], keys["dead"], n.sinks.ok.Load())
}
