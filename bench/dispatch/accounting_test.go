package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func keyOf(body string) bodyKey {
	sum := sha256.Sum256([]byte(body))
	return bodyKey(sum[:16])
}

// TestAccount: every 201 is delivered, cut off or missing by when it
// arrived against the last 201; the ledger is void when the 201s loadgen
// counted are not the sum, or when one is missing.
func TestAccount(t *testing.T) {
	const ms = int64(time.Millisecond)
	base := time.Now().UnixNano()
	lines := []sentLine{
		{key: keyOf("a"), due: base, done: base + 2*ms, status: 201},        // delivered at +1ms
		{key: keyOf("b"), due: base + ms, done: base + 10*ms, status: 201},  // delivered at +10ms: the window's end
		{key: keyOf("c"), due: base + 2*ms, done: base + 5*ms, status: 201}, // cut off: at +30ms
		{key: keyOf("d"), due: base + 3*ms, done: base + 4*ms, status: 502}, // not published
	}
	arrivals := map[bodyKey]int64{keyOf("a"): base + ms, keyOf("b"): base + 10*ms, keyOf("c"): base + 30*ms, keyOf("d"): base + 3*ms}
	arrived := func(k bodyKey) (int64, bool) { t, ok := arrivals[k]; return t, ok }

	a := account(3, lines, arrived)
	if a.Void || a.Published != 3 || a.Delivered != 2 || a.CutOff != 1 || a.Missing != 0 {
		t.Fatalf("balanced run: %+v, want 2 delivered, 1 cut off, not void", a)
	}
	if a.DeliveryUS.Max != 28000 || a.PublishUS.Max != 9000 {
		t.Fatalf("delivery max %d µs, publish max %d µs: want 28000 (c: t3 − t0) and 9000 (b: t2 − t0)", a.DeliveryUS.Max, a.PublishUS.Max)
	}

	// loadgen counted a 201 that has no line: the ledger does not add up.
	if a := account(4, lines, arrived); !a.Void || !strings.Contains(a.Why, "published 4 ≠") {
		t.Fatalf("4 published, 3 accounted: %+v, want void", a)
	}
	// The same body answered 201 twice is one hook: it falls short too.
	if a := account(4, append(lines, lines[0]), arrived); !a.Void {
		t.Fatalf("a repeated body: %+v, want void", a)
	}
	// A published hook that never arrives is missing: void though it adds up.
	delete(arrivals, keyOf("b"))
	if a := account(3, lines, arrived); !a.Void || a.Missing != 1 || a.Delivered+a.CutOff+a.Missing != 3 || !strings.Contains(a.Why, "never reached") {
		t.Fatalf("one missing: %+v, want void with 1 missing", a)
	}
}

func TestReadSent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sent")
	sum := sha256.Sum256([]byte("x"))
	hexSum := hex.EncodeToString(sum[:])
	if err := os.WriteFile(path, []byte(hexSum+" 10 20 201\n"+hexSum+" 11 21 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	lines, err := readSent(path)
	if err != nil || len(lines) != 2 || lines[0] != (sentLine{key: keyOf("x"), due: 10, done: 20, status: 201}) || lines[1].status != 0 {
		t.Fatalf("readSent = %+v, %v", lines, err)
	}
	if err := os.WriteFile(path, []byte(hexSum+" 10 20\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readSent(path); err == nil {
		t.Fatal("a line of 3 fields was read")
	}
}

// TestStamps: the first arrival of a body counts, repeats do not move it.
func TestStamps(t *testing.T) {
	s := newStamps()
	t0 := time.Now()
	s.record([]byte("x"), t0)
	s.record([]byte("x"), t0.Add(time.Second))
	if at, ok := s.arrived(keyOf("x")); !ok || at != t0.UnixNano() || s.total != 2 {
		t.Fatalf("arrived %d %v, total %d: want the first arrival, 2 in all", at, ok, s.total)
	}
	if _, ok := s.arrived(keyOf("y")); ok {
		t.Fatal("a body never recorded has arrived")
	}
}

// TestRelaySustained: the appliance is compared with the rate the relay
// holds open loop: its closed-loop maximum when the check held it, what
// the check made when it did not, the maximum when the check is missing
// or its ledger void.
func TestRelaySustained(t *testing.T) {
	check := func(rate, made float64, issues []string, void bool) *latencyResult {
		c := &latencyResult{Rate: rate, LoadIssues: issues}
		c.Load.ThroughputRPS = made
		c.Ledger.Void = void
		return c
	}
	for _, c := range []struct {
		name      string
		check     *latencyResult
		held      bool
		sustained float64
	}{
		{"held", check(20000, 19990, nil, false), true, 20000},
		{"not held", check(27000, 19500, []string{"unsent"}, false), false, 19500},
		{"void ledger", check(27000, 19500, nil, true), false, 27000},
		{"no check", nil, false, 27000},
	} {
		closed := 27000.0 // the relay's closed-loop maximum, the check's rate
		if c.check != nil {
			closed = c.check.Rate
		}
		r := &relayResult{Max: closed, Check: c.check}
		r.settle()
		if r.Held != c.held || r.Sustained != c.sustained {
			t.Errorf("%s: held %v sustained %v; want %v and %v", c.name, r.Held, r.Sustained, c.held, c.sustained)
		}
	}
}
