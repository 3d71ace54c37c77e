package backoff

import (
	"net/http"
	"testing"
	"time"
)

func TestCeiling(t *testing.T) {
	for _, tc := range []struct {
		n         int
		base, lim time.Duration
		want      time.Duration
	}{
		{0, 100 * time.Millisecond, 30 * time.Second, 100 * time.Millisecond},
		{3, 100 * time.Millisecond, 30 * time.Second, 800 * time.Millisecond},
		{9, 100 * time.Millisecond, 30 * time.Second, 30 * time.Second},
		{63, time.Second, time.Minute, time.Minute},
		{1 << 20, time.Second, time.Minute, time.Minute},
		{-1, time.Second, time.Minute, time.Second},
		{4, 0, time.Minute, 0},
	} {
		if got := Ceiling(tc.n, tc.base, tc.lim); got != tc.want {
			t.Errorf("Ceiling(%d, %v, %v) = %v, want %v", tc.n, tc.base, tc.lim, got, tc.want)
		}
	}
}

// Full jitter: uniform over [0, ceiling), so the mean is half of it and
// the draws cover most of the range.
func TestFull(t *testing.T) {
	const base, lim = 100 * time.Millisecond, 5 * time.Second
	for n := range 10 {
		ceil := Ceiling(n, base, lim)
		var sum time.Duration
		lo, hi := ceil, time.Duration(0)
		const samples = 4000
		for range samples {
			d := Full(n, base, lim)
			if d < 0 || d >= ceil {
				t.Fatalf("Full(%d) = %v, want [0, %v)", n, d, ceil)
			}
			sum += d
			lo, hi = min(lo, d), max(hi, d)
		}
		if mean := sum / samples; mean < ceil*4/10 || mean > ceil*6/10 {
			t.Fatalf("Full(%d): mean %v, want about %v", n, mean, ceil/2)
		}
		if lo > ceil/10 || hi < ceil*9/10 {
			t.Fatalf("Full(%d): draws span [%v, %v] of [0, %v)", n, lo, hi, ceil)
		}
	}
	if d := Full(3, 0, time.Second); d != 0 {
		t.Fatalf("Full with no base = %v, want 0", d)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	const day = 24 * time.Hour
	for _, tc := range []struct {
		v    string
		want time.Duration
		ok   bool
	}{
		{"", 0, false},
		{"  ", 0, false},
		{"0", 0, true},
		{"5", 5 * time.Second, true},
		{" 7 ", 7 * time.Second, true},
		{"86401", day, true},
		{"18446744073709551616", day, true},
		{"-1", 0, false},
		{"1.5", 0, false},
		{"30s", 0, false},
		{now.Add(time.Hour).Format(http.TimeFormat), time.Hour, true},
		{now.Add(time.Hour).Format(time.RFC850), time.Hour, true},
		{now.Add(time.Hour).Format(time.ANSIC), time.Hour, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
		{now.Add(48 * time.Hour).Format(http.TimeFormat), day, true},
		{"Sun, 06 Nov 1994 08:49:37", 0, false},
	} {
		got, ok := RetryAfter([]byte(tc.v), now, day)
		if got != tc.want || ok != tc.ok {
			t.Errorf("RetryAfter(%q) = %v, %v; want %v, %v", tc.v, got, ok, tc.want, tc.ok)
		}
	}
}
