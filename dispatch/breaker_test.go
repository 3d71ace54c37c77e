package dispatch

import (
	"testing"
	"time"
)

func TestBreaker(t *testing.T) {
	var b breaker
	t0 := time.Unix(1000, 0)
	for i := range breakerFailures - 1 {
		if b.record(t0, true, false) {
			t.Fatalf("opened after %d failures", i+1)
		}
	}
	if !b.record(t0, true, false) {
		t.Fatal("did not open at the threshold")
	}
	// Attempts in flight when it opened fail too: they must not extend it.
	for range 20 {
		if b.record(t0, true, false) {
			t.Fatal("an in-flight failure reopened the breaker")
		}
	}
	if ok, _, until := b.allow(t0.Add(500 * time.Millisecond)); ok || !until.Equal(t0.Add(breakerMinOpen)) {
		t.Fatalf("open breaker allowed an attempt or said until %v", until)
	}
	ok, probe, _ := b.allow(t0.Add(breakerMinOpen))
	if !ok || !probe {
		t.Fatal("no probe after the cooldown")
	}
	if ok, _, _ := b.allow(t0.Add(breakerMinOpen)); ok {
		t.Fatal("a second attempt went through while the probe runs")
	}
	// A failed probe doubles the cooldown, up to the cap.
	now := t0.Add(breakerMinOpen)
	want := 2 * breakerMinOpen
	for range 12 {
		if !b.record(now, true, true) {
			t.Fatal("a failed probe did not reopen")
		}
		if got := b.until.Sub(now); got != min(want, breakerMaxOpen) {
			t.Fatalf("cooldown %v, want %v", got, min(want, breakerMaxOpen))
		}
		now = b.until
		if ok, probe, _ := b.allow(now); !ok || !probe {
			t.Fatal("no probe after the cooldown")
		}
		want *= 2
	}
	if b.record(now, false, true); !b.idle() {
		t.Fatal("a successful probe did not close the breaker")
	}
	if ok, probe, _ := b.allow(now); !ok || probe {
		t.Fatal("a closed breaker must allow without probing")
	}
	// Answers that are errors (5xx, 429) never count: only no answer does.
	for range 3 * breakerFailures {
		if b.record(now, false, false) {
			t.Fatal("a success opened the breaker")
		}
	}
}
