package dispatch

import "time"

// Circuit breaker settings: after breakerFailures failures in a row to one
// target, attempts to it fail fast for a cooldown that doubles with each
// reopening (breakerMinOpen..breakerMaxOpen); then one probe goes through.
const (
	breakerFailures = 5
	breakerMinOpen  = time.Second
	breakerMaxOpen  = time.Minute
)

// breaker is one target's circuit breaker; the runner's mutex guards it.
type breaker struct {
	fails   int
	opens   int
	until   time.Time // open until
	probing bool      // a half-open probe is running
}

// allow reports whether an attempt may go to the target now; when it may
// not, until is when to try again.
func (b *breaker) allow(now time.Time) (ok bool, until time.Time) {
	if b.fails < breakerFailures {
		return true, time.Time{}
	}
	if now.Before(b.until) || b.probing {
		return false, b.until
	}
	b.probing = true
	return true, time.Time{}
}

// record takes an attempt's outcome; failure means the target did not
// answer at all (connection refused, timeout), not that it refused the
// hook or asked to slow down.
func (b *breaker) record(now time.Time, failure bool) (opened bool) {
	b.probing = false
	if !failure {
		b.fails, b.opens = 0, 0
		return false
	}
	b.fails++
	if b.fails < breakerFailures {
		return false
	}
	open := breakerMinOpen << min(b.opens, 10)
	b.opens++
	b.until = now.Add(min(open, breakerMaxOpen))
	return true
}

func (r *runner) breaker(target string) *breaker {
	b := r.breakers[target]
	if b == nil {
		b = &breaker{}
		r.breakers[target] = b
	}
	return b
}
