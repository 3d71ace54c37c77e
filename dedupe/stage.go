package dedupe

import (
	"context"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/ankusa/ankusa/envelope"
)

var (
	badValues    = metrics.NewCounter("ankusa_dedupe_bad_values_total")
	lookupErrors = metrics.NewCounter("ankusa_dedupe_lookup_errors_total")
)

// DefaultWait bounds how long a request waits for another request with the
// same key to commit.
const DefaultWait = 10 * time.Second

// Stage is router step 13 (DESIGN.md §2.1) for one node: the guard that
// orders concurrent requests with one key, and the scope's memory of
// committed keys (Node or Fleet).
type Stage struct {
	guard *Guard
	node  *Node
	fleet *Fleet
	wait  time.Duration
	log   *zap.Logger
}

// NewNodeStage is the node scope: committed keys are read from n; they
// leave the guard once persisted reports their seq written.
func NewNodeStage(n *Node, persisted func() uint64, log *zap.Logger) *Stage {
	return &Stage{guard: NewGuard(persisted), node: n, wait: DefaultWait, log: orNop(log)}
}

// NewFleetStage is the fleet scope: keys live in Redis.
func NewFleetStage(f *Fleet, log *zap.Logger) *Stage {
	return &Stage{guard: NewGuard(nil), fleet: f, wait: DefaultWait, log: orNop(log)}
}

func orNop(l *zap.Logger) *zap.Logger {
	if l == nil {
		return zap.NewNop()
	}
	return l
}

// Guard is the stage's guard (for tests and gauges).
func (s *Stage) Guard() *Guard { return s.guard }

// Ticket is a key held for a hook being committed; Committed or Aborted
// ends it.
type Ticket struct {
	r     *Reservation
	claim Claim
	ttl   time.Duration
}

// Begin looks k up for a hook received at now and kept for ttl. dup: a
// committed hook holds k, id is its event id, and nothing is held.
// Otherwise the key is held for the caller's commit. err (the wait for
// another request timed out, the store could not be read) means the hook
// cannot be told apart from a duplicate right now: answer 503, the
// provider retries.
func (s *Stage) Begin(ctx context.Context, k Key, ttl time.Duration, now int64) (t Ticket, id envelope.ID, dup bool, err error) {
	r, id, dup, err := s.guard.Begin(k, s.wait)
	if err != nil || dup {
		return t, id, dup, err
	}
	t = Ticket{r: r, ttl: ttl}
	switch {
	case s.node != nil:
		id, found, err := s.node.Lookup(k, ttl, now)
		if err != nil {
			lookupErrors.Inc()
			s.guard.Abort(r)
			return Ticket{}, id, false, err
		}
		if found {
			s.guard.Abort(r)
			return Ticket{}, id, true, nil
		}
	case s.fleet != nil:
		c, o, id, err := s.fleet.Claim(ctx, k)
		switch o {
		case Duplicate:
			s.guard.Abort(r)
			return Ticket{}, id, true, nil
		case Unavailable:
			// Never drop a hook: it goes on as a new one (Claim logged
			// and counted why).
			_ = err
		}
		t.claim = c
	}
	return t, id, false, nil
}

// Committed records that the ticket's hook committed as id at seq.
func (s *Stage) Committed(ctx context.Context, t Ticket, id envelope.ID, seq uint64) {
	if t.r == nil {
		return
	}
	if s.fleet != nil {
		// The hook is committed whatever Redis says; an error leaves the
		// lease to expire (Commit counted and logged it).
		_ = s.fleet.Commit(ctx, t.claim, id, t.ttl)
	}
	s.guard.Committed(t.r, id, seq)
}

// Aborted releases the ticket's key: its hook did not commit, so a retry
// must not be taken for a duplicate.
func (s *Stage) Aborted(ctx context.Context, t Ticket) {
	if t.r == nil {
		return
	}
	if s.fleet != nil {
		_ = s.fleet.Abort(ctx, t.claim)
	}
	s.guard.Abort(t.r)
}
