package dispatch

import (
	"fmt"
	"time"

	"github.com/ankusa/ankusa/config"
)

// DebugState describes the dispatcher's memory, for test failures.
func DebugState(d *Dispatcher) string {
	d.hmu.Lock()
	held := len(d.held)
	d.hmu.Unlock()
	d.tmu.Lock()
	active := fmt.Sprint(d.active)
	d.tmu.Unlock()
	s := fmt.Sprintf("held %d active %s mem %d written %d", held, active, d.in.mem, d.written)
	d.rmu.Lock()
	for k, r := range d.runners {
		r.mu.Lock()
		s += fmt.Sprintf("; runner %s queued %d inflight %d ring %d", k, r.queued, r.inflight, len(r.ring))
		r.mu.Unlock()
	}
	d.rmu.Unlock()
	return s
}

// Backoff exposes the wait before attempt n+1 of a sink.
func Backoff(spec config.Sink, n int, retryAfter time.Duration) time.Duration {
	return backoff(&runner{spec: spec}, n, retryAfter)
}

// SweepAttempts runs one sweep of the attempt log now.
func SweepAttempts(d *Dispatcher) (int, error) { return d.sweepAttempts() }

// BacklogGauges are the dispatcher's counts of pending rows and dead
// letters behind the backlog gauges.
func BacklogGauges(d *Dispatcher) (pending, dead int64) { return d.pending.Load(), d.dead.Load() }

// WorkersStarted counts the attempt workers the runners have started.
func WorkersStarted(d *Dispatcher) int64 { return d.workers.Load() }

// RowsFlushed is the seq up to which the row writer has committed rows
// and offered first attempts.
func RowsFlushed(d *Dispatcher) uint64 { return d.flushed.Load() }
