package main

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// refusedBackoff is how long a closed-loop worker waits after a refused
// connection, so a server that is down (restarting under a crash harness)
// does not turn the client into a busy loop.
const refusedBackoff = time.Millisecond

// runClosed runs -c workers, each sending its next request as soon as the
// previous one is answered, through the warm-up and the measured window.
func (rn *runner) runClosed(ctx context.Context) {
	rn.windowStart = time.Now().Add(rn.cfg.Warmup)
	windowEnd := rn.windowStart.Add(rn.cfg.Duration)
	var claimed atomic.Int64
	var wg sync.WaitGroup
	for i := range rn.cfg.Conns {
		w := rn.newWorker(i)
		wg.Go(func() { w.closedLoop(ctx, &claimed, windowEnd) })
	}
	wg.Wait()
}

// closedLoop sends until the window is over: -d elapsed, or -n requests
// claimed by all workers together. A request belongs to the window when
// it starts in it.
func (w *worker) closedLoop(ctx context.Context, claimed *atomic.Int64, windowEnd time.Time) {
	defer w.conn.close()
	cfg := w.run.cfg
	now := time.Now()
	for ctx.Err() == nil {
		measured := !now.Before(w.run.windowStart)
		if measured {
			if cfg.Requests > 0 {
				if claimed.Add(1) > cfg.Requests {
					return
				}
			} else if !now.Before(windowEnd) {
				return
			}
		}
		done, kind, ok := w.send(w.prepare(), measured, time.Time{}, now)
		if !ok && kind == kindRefused {
			time.Sleep(refusedBackoff)
			done = time.Now()
		}
		now = done
	}
}
