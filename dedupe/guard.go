package dedupe

import (
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/ankusa/ankusa/envelope"
)

// ErrWaitTimeout: another request held the key for longer than the wait
// bound (its commit is stuck); the caller answers 503 and the provider
// retries.
var ErrWaitTimeout = errors.New("dedupe: another request with this key is still committing")

// guardShards spreads reservations over independent locks.
const guardShards = 64

// Guard closes the race of DESIGN.md §2.1: two requests with one key can
// pass every check together. It reserves a key in memory while its hook
// commits; a concurrent request with the same key waits for the outcome
// (a duplicate if it committed, its own attempt if it failed). A committed
// key stays here until the store has it (Persisted), so nothing can slip
// between the commit and the key's write.
type Guard struct {
	shards [guardShards]guardShard
	// persisted is the seq up to which committed keys are in the store;
	// nil: a key leaves the guard when its hook commits (the store took it
	// synchronously, as the fleet scope does).
	persisted func() uint64
}

type guardShard struct {
	mu sync.Mutex
	m  map[Key]*Reservation
	// held are committed reservations waiting for the store, roughly in
	// seq order.
	held []*Reservation
}

// Reservation is one key held while its hook commits.
type Reservation struct {
	key       Key
	done      chan struct{} // closed when the outcome is known
	committed bool
	id        envelope.ID
	seq       uint64
}

// NewGuard returns a guard; persisted (may be nil) reports the seq up to
// which committed keys are readable from the store.
func NewGuard(persisted func() uint64) *Guard {
	g := &Guard{persisted: persisted}
	for i := range g.shards {
		g.shards[i].m = map[Key]*Reservation{}
	}
	return g
}

func (g *Guard) shard(k Key) *guardShard {
	return &g.shards[k.Hash[0]%guardShards]
}

// Begin reserves k. When a committed hook holds it, Begin returns that
// hook's id and dup true. When another request is committing it, Begin
// waits for that outcome, at most wait.
func (g *Guard) Begin(k Key, wait time.Duration) (r *Reservation, id envelope.ID, dup bool, err error) {
	s := g.shard(k)
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		s.mu.Lock()
		g.trim(s)
		cur := s.m[k]
		if cur == nil {
			// The tenant name may be a view of the request's buffer,
			// which the next request on the connection overwrites: the
			// key outlives the request (until the store has it).
			k.Tenant = strings.Clone(k.Tenant)
			r = &Reservation{key: k, done: make(chan struct{})}
			s.m[k] = r
			s.mu.Unlock()
			return r, id, false, nil
		}
		if cur.committed {
			s.mu.Unlock()
			return nil, cur.id, true, nil
		}
		done := cur.done
		s.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(wait)
		}
		select {
		case <-done:
		case <-timer.C:
			return nil, id, false, ErrWaitTimeout
		}
	}
}

// Committed records that r's hook committed as id at seq; requests waiting
// for it see a duplicate.
func (g *Guard) Committed(r *Reservation, id envelope.ID, seq uint64) {
	s := g.shard(r.key)
	s.mu.Lock()
	r.committed, r.id, r.seq = true, id, seq
	if g.persisted == nil {
		delete(s.m, r.key)
	} else {
		s.held = append(s.held, r)
		g.trim(s)
	}
	s.mu.Unlock()
	close(r.done)
}

// Abort releases r: its hook did not commit (or was a duplicate found in
// the store). A waiting request tries the key itself.
func (g *Guard) Abort(r *Reservation) {
	s := g.shard(r.key)
	s.mu.Lock()
	if s.m[r.key] == r {
		delete(s.m, r.key)
	}
	s.mu.Unlock()
	close(r.done)
}

// trim drops the committed reservations the store has caught up with,
// from the oldest; one committed out of order waits for those before it.
// Under s.mu.
func (g *Guard) trim(s *guardShard) {
	if g.persisted == nil || len(s.held) == 0 {
		return
	}
	p := g.persisted()
	for len(s.held) > 0 && s.held[0].seq <= p {
		r := s.held[0]
		if s.m[r.key] == r {
			delete(s.m, r.key)
		}
		s.held[0] = nil
		s.held = s.held[1:]
	}
}

// Len is the number of keys held (reserved or committed and not yet in the
// store).
func (g *Guard) Len() int {
	n := 0
	for i := range g.shards {
		s := &g.shards[i]
		s.mu.Lock()
		g.trim(s)
		n += len(s.m)
		s.mu.Unlock()
	}
	return n
}
