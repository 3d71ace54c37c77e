package main

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// unsentGrace is how long after the measured window workers may still
// send requests scheduled in it that no worker was free to send on time.
// What remains after it counts as errors of kind "unsent": the schedule
// wanted them, the server never got them.
const unsentGrace = time.Second

// schedule is the open-loop timetable: request i is due at start + i/rate.
// Requests [0, warm) are the warm-up, [warm, total) the measured window.
type schedule struct {
	start       time.Time
	interval    float64 // nanoseconds between requests
	warm, total int64
	sendBy      time.Time // nothing is sent after this
}

func (s *schedule) due(i int64) time.Time {
	return s.start.Add(time.Duration(float64(i) * s.interval))
}

// newSchedule lays out the open-loop run cfg describes: -warmup then -d
// (or -n requests) at -rate. It returns the number of measured requests.
func newSchedule(cfg *Config) (s *schedule, measured int64) {
	measured = cfg.Requests
	if measured == 0 {
		measured = max(1, int64(math.Round(cfg.Duration.Seconds()*cfg.Rate)))
	}
	s = &schedule{interval: float64(time.Second) / cfg.Rate}
	s.warm = int64(math.Ceil(cfg.Warmup.Seconds() * cfg.Rate))
	s.total = s.warm + measured
	return s, measured
}

// startSchedule starts s at start: request 0 is due then.
func (rn *runner) startSchedule(s *schedule, start time.Time) {
	s.start = start
	rn.windowStart = s.due(s.warm)
	s.sendBy = s.due(s.total).Add(unsentGrace)
}

// runOpen sends requests on the fixed schedule through a pool of -c
// workers. One free worker at a time holds the turn: it claims the next
// request in schedule order, waits (precisely) for its due time, passes
// the turn to the next free worker and sends. The other free workers wait
// on the turn, not on timers, so a request costs one timer wake-up however
// large the pool. When every worker is busy, due requests wait for one,
// and their latency still counts from the due time (no coordinated
// omission).
func (rn *runner) runOpen(ctx context.Context) {
	cfg := rn.cfg
	s, measured := newSchedule(cfg)
	workers := make([]*worker, cfg.Conns)
	for i := range workers {
		workers[i] = rn.newWorker(i)
	}
	rn.startSchedule(s, time.Now())

	var next, sent atomic.Int64
	turn := make(chan struct{}, 1)
	turn <- struct{}{}
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Go(func() { w.openLoop(ctx, s, turn, &next, &sent) })
	}
	wg.Wait()
	if ctx.Err() == nil {
		rn.unsent = measured - sent.Load()
	}
}

// openLoop takes the turn, claims the next scheduled request, waits for
// its due time, passes the turn on and sends the request; it does so until
// the schedule is done, the send deadline passes or ctx is cancelled.
// sent counts the measured requests sent.
func (w *worker) openLoop(ctx context.Context, s *schedule, turn chan struct{}, next, sent *atomic.Int64) {
	defer w.conn.close()
	var pw *preciseWaiter // made on first use: most workers never wait on a timer
	defer func() {
		if pw != nil {
			pw.Close()
		}
	}()
	// Build each request before its slot comes, so that only signing (which
	// needs the send time) lies between the due time and the send.
	pb := w.prepare()
	for {
		select {
		case <-turn:
		case <-ctx.Done():
			return
		}
		i := next.Add(1) - 1
		if i >= s.total {
			turn <- struct{}{} // let the others see the end too
			return
		}
		due := s.due(i)
		if pw == nil && time.Until(due) > 0 {
			pw = newPreciseWaiter()
		}
		if pw != nil && !pw.waitUntil(ctx, due) {
			turn <- struct{}{}
			return
		}
		now := time.Now()
		if now.After(s.sendBy) {
			next.Store(s.total) // stop the other workers too
			turn <- struct{}{}
			return
		}
		turn <- struct{}{}
		measured := i >= s.warm
		if measured {
			sent.Add(1)
		}
		w.send(pb, measured, due, now)
		pb = w.prepare()
	}
}
