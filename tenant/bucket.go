package tenant

import (
	"math"
	"sync"
	"time"
)

// Bucket is a token bucket: it holds at most Burst tokens and gains Rate
// tokens a second. It keeps the time at which it will be full again (GCRA's
// theoretical arrival time), so it is refilled when it is asked, from the
// time elapsed, with no timer: an idle bucket costs nothing. The arithmetic
// is on that one time, relative to the bucket's creation, so refills are
// exact rather than a sum of rounded increments. Safe for concurrent use.
type Bucket struct {
	mu       sync.Mutex
	base     int64   // monotonic ns the times below are relative to
	interval float64 // ns per token; 0 when the bucket never refills
	burst    float64
	tat      float64 // ns after base at which the bucket is full again
	left     int     // tokens left when interval is 0
}

// NewBucket returns a full bucket at now (monotonic ns). rate is tokens per
// second; a rate of 0 never refills; burst below 1 is 1 (a bucket that can
// never hold a token would refuse everything).
func NewBucket(rate float64, burst int, now int64) *Bucket {
	b := &Bucket{base: now}
	b.set(rate, burst)
	b.tat = 0
	b.left = int(b.burst)
	return b
}

func (b *Bucket) set(rate float64, burst int) {
	b.interval = 0
	if rate > 0 {
		b.interval = 1e9 / rate
	}
	b.burst = float64(max(burst, 1))
}

// tokens is what the bucket holds at t (ns after base); under mu.
func (b *Bucket) tokens(t float64) float64 {
	if b.interval == 0 {
		return float64(b.left)
	}
	return b.burst - max(b.tat-t, 0)/b.interval
}

// Reconfigure changes rate and burst, keeping the tokens held (capped by
// the new burst).
func (b *Bucket) Reconfigure(rate float64, burst int, now int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := float64(now - b.base)
	held := b.tokens(t)
	b.set(rate, burst)
	held = min(held, b.burst)
	b.left = int(held)
	b.tat = t + (b.burst-held)*b.interval
}

// Take takes one token at now. When the bucket is empty it takes none and
// says how long until one is there (math.MaxInt64 when it never refills).
func (b *Bucket) Take(now int64) (ok bool, wait time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.interval == 0 {
		if b.left > 0 {
			b.left--
			return true, 0
		}
		return false, math.MaxInt64
	}
	t := float64(now - b.base)
	next := max(b.tat, t) + b.interval
	if over := next - t - b.burst*b.interval; over > 0 {
		return false, time.Duration(math.Ceil(over))
	}
	b.tat = next
	return true, 0
}

// Peek reports whether a token is there at now, without taking it, and if
// not how long until one is.
func (b *Bucket) Peek(now int64) (ok bool, wait time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.interval == 0 {
		if b.left > 0 {
			return true, 0
		}
		return false, math.MaxInt64
	}
	t := float64(now - b.base)
	if over := max(b.tat, t) + b.interval - t - b.burst*b.interval; over > 0 {
		return false, time.Duration(math.Ceil(over))
	}
	return true, 0
}

// Full reports whether the bucket holds its whole burst at now: it is then
// the same as a new one, and can be forgotten.
func (b *Bucket) Full(now int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.interval == 0 {
		return b.left >= int(b.burst)
	}
	return b.tat <= float64(now-b.base)
}

// RetryAfterSeconds is a Retry-After value for wait: whole seconds, at
// least 1, capped at a day.
func RetryAfterSeconds(wait time.Duration) int {
	s := int(math.Ceil(wait.Seconds()))
	return min(max(s, 1), 86400)
}
