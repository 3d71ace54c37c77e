// Package throttle lets a repeating log line through at most once per
// interval and counts the ones it held back, so that a failure that
// repeats (a full disk, a background error retried in a loop) cannot grow
// the log without bound, and the line that does get through says how many
// were suppressed.
package throttle

import (
	"sync"
	"time"
)

// Throttle passes one event per Every. Its zero value passes one per
// second. Safe for concurrent use.
type Throttle struct {
	Every time.Duration

	mu         sync.Mutex
	next       time.Time
	suppressed int64
}

// Allow reports whether the event at now may be logged and, when it may,
// how many events it held back since the last one it let through.
func (t *Throttle) Allow(now time.Time) (ok bool, suppressed int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if now.Before(t.next) {
		t.suppressed++
		return false, 0
	}
	every := t.Every
	if every <= 0 {
		every = time.Second
	}
	t.next = now.Add(every)
	suppressed, t.suppressed = t.suppressed, 0
	return true, suppressed
}
