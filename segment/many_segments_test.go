package segment_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/segment"
)

// nextID is id + 1, as a 128-bit number.
func nextID(id envelope.ID) envelope.ID {
	for i := len(id) - 1; i >= 0; i-- {
		id[i]++
		if id[i] != 0 {
			break
		}
	}
	return id
}

// TestThousandsOfSegments seals more than 3000 segments of one to a few
// hooks each (segment.max_bytes 260) and fetches random hooks: the
// catalogue's id index must find the right segment among them, through
// the open-file cache's evictions. Ids that no hook has must answer
// ErrNotFound: between two segments' id ranges, between two hooks of one
// segment, below the first hook and above the last.
func TestThousandsOfSegments(t *testing.T) {
	const count = 6000
	fs := vfs.NewMem()
	n := openNode(t, fs, nodeOptions{maxBytes: 260, maxAge: 20 * time.Millisecond, blockSize: 256})
	defer n.close()
	hooks := make([]envelope.Envelope, 0, count)
	for i := range count {
		hooks = append(hooks, n.mustCommit(testHook(i, 300)))
		if i%500 == 0 {
			time.Sleep(2 * time.Millisecond) // ids of a later millisecond
		}
	}
	n.waitSealed(uint64(count))
	entries := n.catalogue()
	if len(entries) < 3000 {
		t.Fatalf("%d segments, the test needs at least 3000", len(entries))
	}
	checkCatalogue(t, fs, entries, 1)

	rng := rand.New(rand.NewPCG(7, 11))
	for range 4000 {
		checkFetch(t, n.store, &hooks[rng.IntN(len(hooks))])
	}
	checkDense(t, "scan 1..max", scanSeqs(t, n.store, 1, math.MaxUint64), 1, uint64(count))

	notFound := func(what string, id envelope.ID) {
		t.Helper()
		if e, err := n.store.Fetch(id); !errors.Is(err, segment.ErrNotFound) {
			t.Fatalf("fetch of an id %s (%s): %v, %v; want ErrNotFound", what, id, e, err)
		}
	}
	between := 0
	for k := 0; k+1 < len(entries); k++ {
		a, b := entries[k].LastID, entries[k+1].FirstID
		if x := nextID(a); idBetween(a, x, b) {
			notFound("just above a segment's last", x)
			between++
		}
		if a.Millis() < b.Millis() {
			// Another node's id of the same millisecond sorts between.
			notFound("of another node between two segments", envelope.MakeID(a.Millis(), a.Node()+1, a.Seq()))
			between++
		}
	}
	if between == 0 {
		t.Fatalf("no id fell between two segments: the test did not test it")
	}
	inside := 0
	for k := 1; k < len(hooks); k++ {
		a, b := hooks[k-1].ID, hooks[k].ID
		if x := nextID(a); idBetween(a, x, b) {
			notFound("between two hooks", x)
			inside++
		}
	}
	if inside == 0 {
		t.Fatalf("no id fell between two hooks")
	}
	notFound("of zero", envelope.ID{})
	notFound("below the first", envelope.MakeID(hooks[0].ID.Millis()-1, 3, 1))
	first := hooks[0].ID
	first[15]--
	notFound("just below the first", first)
	last := hooks[len(hooks)-1].ID
	notFound("just above the last", nextID(last))
	notFound("a day above the last", envelope.MakeID(last.Millis()+86_400_000, 3, last.Seq()+1))
	var top envelope.ID
	for i := range top {
		top[i] = 0xff
	}
	notFound("at the top", top)
	t.Logf("%d segments; %d ids between segments, %d between hooks", len(entries), between, inside)
}

// TestOpenFileCacheEviction fetches hooks of more segments than the
// open-file cache holds (64), with readers on two goroutines so that a
// segment is evicted while another reader holds it: every fetch must
// still return its hook.
func TestOpenFileCacheEviction(t *testing.T) {
	fs := vfs.NewMem()
	n := openNode(t, fs, nodeOptions{maxBytes: 2 << 10, maxAge: 20 * time.Millisecond, blockSize: 512})
	defer n.close()
	var hooks []envelope.Envelope
	for i := range 1500 {
		hooks = append(hooks, n.mustCommit(testHook(i, 600)))
	}
	n.waitSealed(uint64(len(hooks)))
	if k := len(n.catalogue()); k < 200 {
		t.Fatalf("%d segments; the test needs more than the cache holds", k)
	}
	errs := make(chan error, 2)
	for g := range 2 {
		go func() {
			rng := rand.New(rand.NewPCG(uint64(g), 3))
			for range 3000 {
				w := &hooks[rng.IntN(len(hooks))]
				got, err := n.store.Fetch(w.ID)
				if err == nil && !sameEnvelope(got, w) {
					err = errors.New("fetch of " + describe(w) + " returned " + describe(got))
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
