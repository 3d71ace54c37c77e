package dispatch

import "time"

// Circuit breaker settings: after breakerFailures failures in a row to one
// target, attempts to it fail fast for a cooldown; then one probe goes
// through. Each failed probe doubles the cooldown (breakerMinOpen ..
// breakerMaxOpen); a success closes the breaker.
const (
	breakerFailures = 5
	breakerMinOpen  = time.Second
	breakerMaxOpen  = time.Minute
)

// breaker is one target's circuit breaker; the runner's mutex guards it.
type breaker struct {
	fails   int
	open    bool
	opens   int       // cooldowns in a row: the next one is breakerMinOpen << opens
	until   time.Time // open until
	probing bool      // the half-open probe is running
}

// allow reports whether an attempt may go to the target now, and whether
// it is the probe of an open breaker; when it may not, until is when to
// try again.
func (b *breaker) allow(now time.Time) (ok, probe bool, until time.Time) {
	if !b.open {
		return true, false, time.Time{}
	}
	if now.Before(b.until) || b.probing {
		return false, false, b.until
	}
	b.probing = true
	return true, true, time.Time{}
}

// record takes an attempt's outcome. failure means the target did not
// answer at all (connection refused, timeout), not that it refused the
// hook or asked to slow down. Only the probe's failure (or reaching the
// threshold while closed) opens the breaker: attempts that were already
// in flight when it opened do not extend the cooldown. opened reports a
// new cooldown.
func (b *breaker) record(now time.Time, failure, probe bool) (opened bool) {
	if probe {
		b.probing = false
	}
	if !failure {
		*b = breaker{}
		return false
	}
	switch {
	case b.open && !probe:
		return false
	case b.open:
		b.opens++
	default:
		if b.fails++; b.fails < breakerFailures {
			return false
		}
		b.open, b.opens = true, 0
	}
	b.until = now.Add(min(breakerMinOpen<<min(b.opens, 10), breakerMaxOpen))
	return true
}

// idle reports whether the breaker holds nothing worth keeping.
func (b *breaker) idle() bool { return !b.open && b.fails == 0 }

func (r *runner) breaker(target string) *breaker {
	b := r.breakers[target]
	if b == nil {
		b = &breaker{}
		r.breakers[target] = b
	}
	return b
}
