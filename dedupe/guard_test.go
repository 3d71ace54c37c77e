package dedupe

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/ankusa/ankusa/envelope"
)

func testID(b byte) envelope.ID { return envelope.ID{15: b} }

// TestGuardConcurrentSameKey: of many requests with one key, one commits
// and every other one waits for it and answers its id.
func TestGuardConcurrentSameKey(t *testing.T) {
	g := NewGuard(nil)
	k := MakeKey("acme", "stripe", []byte("evt_1"))
	var committed, dups atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < 32; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			r, id, dup, err := g.Begin(k, time.Second)
			switch {
			case err != nil:
				t.Error(err)
			case dup:
				if id != testID(7) {
					t.Errorf("duplicate of %s, want the committed id", id)
				}
				dups.Add(1)
			default:
				time.Sleep(5 * time.Millisecond) // the commit
				committed.Add(1)
				g.Committed(r, testID(7), 1)
			}
		}()
	}
	close(start)
	wg.Wait()
	// persisted is nil: the key left the guard at its commit, so requests
	// after it ask the store; those that waited saw the outcome.
	if committed.Load()+dups.Load() != 32 || committed.Load() < 1 {
		t.Fatalf("%d committed, %d duplicates", committed.Load(), dups.Load())
	}
}

// TestGuardAbortLetsTheNextTry: a failed commit must not block its retry:
// the waiter takes the key itself.
func TestGuardAbortLetsTheNextTry(t *testing.T) {
	g := NewGuard(nil)
	k := MakeKey("acme", "s", []byte("x"))
	r, _, _, _ := g.Begin(k, time.Second)
	got := make(chan bool)
	go func() {
		r2, _, dup, err := g.Begin(k, time.Second)
		got <- err == nil && !dup && r2 != nil
	}()
	time.Sleep(20 * time.Millisecond)
	g.Abort(r)
	if !<-got {
		t.Fatal("after the first request's commit failed the waiter did not take the key")
	}
}

func TestGuardWaitTimeout(t *testing.T) {
	g := NewGuard(nil)
	k := MakeKey("acme", "s", []byte("x"))
	g.Begin(k, time.Second)
	start := time.Now()
	if _, _, _, err := g.Begin(k, 30*time.Millisecond); !errors.Is(err, ErrWaitTimeout) {
		t.Fatalf("a key held past the wait: %v", err)
	}
	if d := time.Since(start); d < 30*time.Millisecond || d > time.Second {
		t.Fatalf("waited %v for a 30ms bound", d)
	}
}

// TestGuardHoldsUntilPersisted: a committed key stays a duplicate until
// the store has it, then leaves the guard.
func TestGuardHoldsUntilPersisted(t *testing.T) {
	var persisted atomic.Uint64
	g := NewGuard(persisted.Load)
	k := MakeKey("acme", "s", []byte("x"))
	r, _, _, _ := g.Begin(k, time.Second)
	g.Committed(r, testID(1), 10)
	if _, id, dup, _ := g.Begin(k, time.Second); !dup || id != testID(1) {
		t.Fatal("a committed key not yet in the store is not a duplicate")
	}
	persisted.Store(9)
	if g.Len() != 1 {
		t.Fatal("the key left the guard before the store had it")
	}
	persisted.Store(10)
	if g.Len() != 0 {
		t.Fatalf("%d keys held once the store has them", g.Len())
	}
	// Out of order commits: none leaves before the store has it.
	for i, seq := range []uint64{12, 11, 13} {
		r, _, _, _ := g.Begin(MakeKey("acme", "s", []byte{byte(i)}), time.Second)
		g.Committed(r, testID(byte(i)), seq)
	}
	persisted.Store(11)
	for i, seq := range []uint64{12, 11, 13} {
		r, _, dup, _ := g.Begin(MakeKey("acme", "s", []byte{byte(i)}), time.Second)
		if !dup {
			if seq > 11 {
				t.Fatalf("seq %d left the guard with the store at 11", seq)
			}
			g.Abort(r) // seq 11 is in the store: the new request goes on, and fails here
		}
	}
	persisted.Store(13)
	if g.Len() != 0 {
		t.Fatalf("%d held after all are persisted", g.Len())
	}
}

// TestGuardKeepsItsOwnTenantName: the tenant name of a key may be a view
// of the request's buffer, which the next request on the connection
// overwrites; a key held past the request must not change with it.
func TestGuardKeepsItsOwnTenantName(t *testing.T) {
	var persisted atomic.Uint64
	g := NewGuard(persisted.Load)
	buf := []byte("acme")
	view := unsafe.String(&buf[0], len(buf))
	r, _, _, _ := g.Begin(MakeKey(view, "s", []byte("evt_1")), time.Second)
	g.Committed(r, testID(1), 5)
	copy(buf, "beta") // the next request
	if _, id, dup, _ := g.Begin(MakeKey("acme", "s", []byte("evt_1")), time.Second); !dup || id != testID(1) {
		t.Fatal("a retry of acme's key was not a duplicate once the request's buffer was reused")
	}
	r2, _, dup, _ := g.Begin(MakeKey("beta", "s", []byte("evt_1")), time.Second)
	if dup {
		t.Fatal("beta's new hook was taken for acme's")
	}
	g.Abort(r2)
	persisted.Store(10)
	if n := g.Len(); n != 0 {
		t.Fatalf("%d keys held once the store has them: an entry leaked", n)
	}
}
