// Package backoff is how every stage that retries waits: an exponential
// ceiling with full jitter, and the target's own Retry-After. It owns no
// state and imports nothing of this module.
package backoff

import (
	"bytes"
	"math/rand/v2"
	"net/http"
	"time"
)

// Ceiling is min(limit, base·2^n) for n >= 0, without overflowing.
func Ceiling(n int, base, limit time.Duration) time.Duration {
	if n < 0 || base <= 0 {
		return max(min(base, limit), 0)
	}
	if n >= 62 || base > limit>>n {
		return limit
	}
	return base << n
}

// Full is a wait drawn uniformly from [0, Ceiling(n, base, limit)): full
// jitter, so that many clients retrying at once spread out.
func Full(n int, base, limit time.Duration) time.Duration {
	d := Ceiling(n, base, limit)
	if d <= 0 {
		return 0
	}
	return rand.N(d)
}

// RetryAfter reads a Retry-After value (RFC 9110 §10.2.3): delta-seconds
// or an HTTP-date, relative to now, at most limit. A date in the past is
// 0. ok is false when v is empty or neither form.
func RetryAfter(v []byte, now time.Time, limit time.Duration) (d time.Duration, ok bool) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return 0, false
	}
	if secs, ok := seconds(v, limit); ok {
		return min(secs, limit), true
	}
	t, err := http.ParseTime(string(v))
	if err != nil {
		return 0, false
	}
	return min(max(t.Sub(now), 0), limit), true
}

// seconds parses delta-seconds (digits only), saturating past limit.
func seconds(v []byte, limit time.Duration) (time.Duration, bool) {
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		if n <= int64(limit/time.Second) {
			n = n*10 + int64(c-'0')
		}
	}
	return time.Duration(n) * time.Second, true
}
