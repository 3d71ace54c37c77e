package throttle

import (
	"testing"
	"time"
)

func TestAllow(t *testing.T) {
	th := Throttle{Every: 10 * time.Second}
	t0 := time.Unix(1000, 0)
	for _, tc := range []struct {
		at         time.Duration
		ok         bool
		suppressed int64
	}{
		{0, true, 0},
		{time.Second, false, 0},
		{9 * time.Second, false, 0},
		{10 * time.Second, true, 2},
		{11 * time.Second, false, 0},
		{30 * time.Second, true, 1},
		{41 * time.Second, true, 0},
	} {
		ok, n := th.Allow(t0.Add(tc.at))
		if ok != tc.ok || n != tc.suppressed {
			t.Fatalf("Allow at +%v = %v, %d; want %v, %d", tc.at, ok, n, tc.ok, tc.suppressed)
		}
	}
}

func TestZeroValueIsOnePerSecond(t *testing.T) {
	var th Throttle
	t0 := time.Unix(1000, 0)
	if ok, _ := th.Allow(t0); !ok {
		t.Fatal("first event held back")
	}
	if ok, _ := th.Allow(t0.Add(999 * time.Millisecond)); ok {
		t.Fatal("second event within a second let through")
	}
	if ok, n := th.Allow(t0.Add(time.Second)); !ok || n != 1 {
		t.Fatalf("event a second later: %v, %d", ok, n)
	}
}
