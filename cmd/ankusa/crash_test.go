package main

import (
	"math/rand/v2"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestCrashKill9 is the appliance's promise under its worst case: a 201
// means durable. Many senders post hooks while the node is killed with
// SIGKILL at random moments and restarted on the same data directory; at
// the end every acknowledged hook must be in the WAL exactly once, with the
// exact body, tenant and source it was sent with, and the numbering must
// have carried on across every restart.
func TestCrashKill9(t *testing.T) {
	const (
		kills   = 6
		senders = 32
		maxBody = 16 << 10
	)
	n := newNode(t)
	l := startLoad(t, n.listen, senders, maxBody)
	defer func() {
		select {
		case <-l.stopCh:
		default:
			l.stop()
		}
	}()
	start := time.Now()
	for i := range kills {
		p := n.serve(t)
		before := l.ackCount()
		time.Sleep(time.Duration(100+rand.IntN(601)) * time.Millisecond)
		// On a crowded machine, give the boot time to take some load: a
		// crash proves nothing without it.
		for wait := time.Now(); l.ackCount() == before && time.Since(wait) < 10*time.Second; {
			time.Sleep(10 * time.Millisecond)
		}
		p.kill9()
		got := l.ackCount() - before
		t.Logf("boot %d: %d hooks acknowledged before SIGKILL", i+1, got)
		if got == 0 {
			t.Fatalf("boot %d acknowledged nothing in 10s under load:\n%s", i+1, p.stderr)
		}
	}
	// A last boot under load, then a clean stop.
	p := n.serve(t)
	time.Sleep(200 * time.Millisecond)
	p.stop()
	acks := l.stop()
	t.Logf("%d boots in %s: %d requests, %d acknowledged, %d 404s for the wrong tenant, %d network errors",
		kills+1, time.Since(start).Round(time.Millisecond), l.sent.Load(), len(acks), l.notFound.Load(), l.netErrs.Load())
	if l.notFound.Load() == 0 {
		t.Errorf("no request to the tenant-owned source under another tenant was answered 404")
	}

	c := readWAL(t, n.walDir())
	checkNumbering(t, c.hooks)
	checkAcked(t, acks, c.hooks)
	checkBinding(t, c.hooks)
	checkInspect(t, n.walDir(), c)
	if len(c.hooks) < len(acks) {
		t.Fatalf("the WAL holds %d hooks, fewer than the %d acknowledged", len(c.hooks), len(acks))
	}
	files, err := os.ReadDir(n.walDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("WAL: %d hooks (%d committed without an answer reaching the sender), %d tenants, %d files",
		len(c.hooks), len(c.hooks)-len(acks), len(c.tenants), len(files))
}

// TestSIGTERMDrain: SIGTERM under load stops the node cleanly (exit 0) and
// every hook answered 201, up to the last, is durable.
func TestSIGTERMDrain(t *testing.T) {
	n := newNode(t)
	p := n.serve(t)
	l := startLoad(t, n.listen, 32, 16<<10)
	time.Sleep(700 * time.Millisecond)
	signalled := time.Now()
	p.signal(syscall.SIGTERM)
	code := p.wait(30 * time.Second)
	exited := time.Now()
	acks := l.stop()
	if code != 0 {
		t.Fatalf("exit code %d after SIGTERM, want 0:\n%s", code, p.stderr)
	}
	if len(acks) == 0 {
		t.Fatal("nothing was acknowledged: no load to drain")
	}
	late := 0
	for _, a := range acks {
		if a.at.After(signalled) {
			late++
		}
		if a.at.After(exited) {
			t.Errorf("hook %s was acknowledged at %s, after the process exited at %s", a.id, a.at.Format(time.StampMicro), exited.Format(time.StampMicro))
		}
	}
	t.Logf("%d acknowledged, %d of them after SIGTERM was sent; drained in %s", len(acks), late, exited.Sub(signalled).Round(time.Millisecond))
	c := readWAL(t, n.walDir())
	checkNumbering(t, c.hooks)
	checkAcked(t, acks, c.hooks)
	checkBinding(t, c.hooks)
	checkInspect(t, n.walDir(), c)

	// The clean stop recorded where numbering resumes: the next boot carries
	// on above the last hook.
	p = n.serve(t)
	a := postOne(t, n.listen, "t9", "open", []byte("after the drain"))
	p.stop()
	c2 := readWAL(t, n.walDir())
	if len(c2.hooks) != len(c.hooks)+1 {
		t.Fatalf("after one more hook the WAL has %d hooks, want %d", len(c2.hooks), len(c.hooks)+1)
	}
	checkNumbering(t, c2.hooks)
	checkAcked(t, []ack{a}, c2.hooks)
}
