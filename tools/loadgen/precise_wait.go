package main

import (
	"context"
	"time"
)

// The Go runtime wakes its timers through the network poller with
// millisecond resolution when nothing else runs (epoll_wait takes a timeout
// in milliseconds), so time.Sleep(50µs) often returns a millisecond late.
// Open-loop latency counts from the scheduled time, so that lateness would
// be charged to the server. Open-loop workers therefore wait on a
// fineTimer: on Linux a timerfd, which the poller watches like a socket and
// which fires with microsecond precision.

// fineWaitMax bounds one timer wait, so that ctx is re-checked this often.
const fineWaitMax = 20 * time.Millisecond

// maxEarly bounds the learned timer lateness, and so how early a request
// may be released.
const maxEarly = 200 * time.Microsecond

// preciseWaiter waits until due times with microsecond precision. It
// belongs to one goroutine.
//
// A timer still wakes its goroutine some tens of microseconds late
// (interrupt, poller, scheduler), fairly steadily. The waiter learns that
// lateness (a moving average) and arms the timer that much early; it
// returns as soon as the due time is within that lateness, because another
// timer could not land closer and spinning would take a core from the
// server. A request can so be released up to the learned lateness early
// (tens of µs, at most maxEarly); its latency then counts from its actual
// send, never less than the server's answer time.
type preciseWaiter struct {
	fine *fineTimer
	late time.Duration // moving average of how late the timer wakes us
}

func newPreciseWaiter() *preciseWaiter { return &preciseWaiter{fine: newFineTimer()} }

// waitUntil returns true at due, or up to the learned lateness before it,
// or at once when due has passed; false if ctx is cancelled first.
func (p *preciseWaiter) waitUntil(ctx context.Context, due time.Time) bool {
	for {
		now := time.Now()
		wait := due.Sub(now)
		if wait <= p.late {
			return true
		}
		d := min(wait-p.late, fineWaitMax)
		p.fine.sleep(d)
		p.learn(time.Since(now) - d)
		if ctx.Err() != nil {
			return false
		}
	}
}

// learn folds one observed lateness into the estimate.
func (p *preciseWaiter) learn(late time.Duration) {
	p.late += (min(max(late, 0), maxEarly) - p.late) / 16
}

// Close releases the timer.
func (p *preciseWaiter) Close() { p.fine.close() }
