package meta

import (
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// A store belongs to the first node that claims it; another name or
// ordinal is refused, naming both, and the recorded identity stays.
func TestClaimNode(t *testing.T) {
	fs := vfs.NewMem()
	s, err := Open(Options{Dir: "m", FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	first := Node{Name: "edge-1", Ordinal: 7, CreatedAt: time.Unix(1, 0).UTC()}
	if err := s.ClaimNode(first); err != nil {
		t.Fatal(err)
	}
	if err := s.ClaimNode(Node{Name: "edge-1", Ordinal: 7, CreatedAt: time.Now()}); err != nil {
		t.Fatalf("the same node again: %v", err)
	}
	for _, other := range []Node{{Name: "edge-2", Ordinal: 7}, {Name: "edge-1", Ordinal: 8}} {
		err := s.ClaimNode(other)
		if err == nil || !strings.Contains(err.Error(), `belongs to node "edge-1" (ordinal 7)`) {
			t.Fatalf("ClaimNode(%+v) = %v, want a refusal naming edge-1", other, err)
		}
	}
	got, ok, err := s.NodeIdentity()
	if err != nil || !ok || got != first {
		t.Fatalf("identity after refusals: %+v %v %v, want %+v", got, ok, err, first)
	}
}
