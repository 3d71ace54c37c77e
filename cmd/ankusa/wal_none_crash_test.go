package main

// The crash test of wal.type: none, once per durable broker (issue 19,
// acceptance 2): a node that holds no log answers 201 only once the broker
// acknowledged the hook, so whatever happens to the node afterwards, every
// id it answered 201 must be in the broker with its exact body.
//
// The run kills the node with SIGKILL 20 times under open-loop load
// (tools/loadgen, which records every 201's id and the SHA-256 of the body
// it sent in its -acked file), restarting it each time on the same data
// directory, then stops the broker in the middle of one more loaded boot
// and starts it again. Afterwards it reads everything the broker holds
// (the sink's envelope format: the JSON form, which carries the event id
// and the body) and requires, for every acknowledged id, one message with
// a body of that SHA-256: lost 0, body mismatches 0. While the broker was
// down the node must have answered 503s; a 201 in that window would be a
// 201 without an ack, and would show as lost.
//
// Hooks answered 503 may be in the broker too (the broker took them but
// its ack did not reach the node in time, or the node died between the
// ack and the answer): the provider's retry makes a new hook of it, so
// they are counted, not failed.

import (
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/ankusa/ankusa/envelope"
)

// walNoneCrashKills is how many SIGKILLs the run makes.
const walNoneCrashKills = 20

// walNoneBroker is a broker under the crash test: the sink entry that
// points a source at it, a way to stop and start it keeping what it
// holds, and a reader of everything it holds.
type walNoneBroker interface {
	// sink is one flow-style sink entry (format envelope).
	sink() string
	stop(t *testing.T)
	start(t *testing.T)
	// messages returns the value of every message the broker holds.
	messages(t *testing.T) [][]byte
}

// walNoneSinkYAML: no WAL, the tenant-in-path resolver, one shared
// source, open, whose only sink is %[5]s (a flow-style sink entry).
const walNoneSinkYAML = `node: {name: %[1]s, data_dir: %[2]s}
listen: %[3]s
admin: {listen: %[4]s}
limits: {max_body_bytes: 256KiB}
route_resolver: {type: tenantpath, prefix: [webhooks]}
rate_limits:
  default: {rate: 1000000, burst: 1000000}
wal: {type: none}
log: {level: warn, format: json}
sources:
  open:
    verify: {type: none}
    trust_url_tenant: true
    sinks:
      - %[5]s
`

// walNoneCrashRun is what one crash run saw.
type walNoneCrashRun struct {
	acks      []acked
	n503      int64
	stopped   int64 // 503s of the boot during which the broker was stopped
	stoppedOK int64 // 201s of that boot
}

// walNoneCrash runs the crash test against b.
func walNoneCrash(t *testing.T, name string, b walNoneBroker) {
	loadgen := buildLoadgen(t)
	n := newConfiguredNode(t, func(n *testNode) string {
		return fmt.Sprintf(walNoneSinkYAML, "wal-none-"+name, n.dataDir, n.listen, n.admin, b.sink())
	})
	var r walNoneCrashRun
	began := time.Now()
	for kill := 1; kill <= walNoneCrashKills; kill++ {
		acked := filepath.Join(n.dir, fmt.Sprintf("acked-%02d", kill))
		p := n.serve(t)
		delay := 300*time.Millisecond + rand.N(500*time.Millisecond)
		lg := startLoadgen(t, n.dir, loadgen, walNoneLoadgenArgs(n.listen, delay+afterKill, acked)...)
		lg.waitFile(acked)
		time.Sleep(delay)
		p.kill9()
		if code := lg.wait(30 * time.Second); code != 0 {
			t.Fatalf("kill %d: loadgen exited with %d:\n%s", kill, code, lg.stderr)
		}
		s := parseSummary(t, lg.stdout.String())
		acks, err := readAcked(acked)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Status["201"]; got != int64(len(acks)) {
			t.Fatalf("kill %d: loadgen counted %d 201s and wrote %d ids", kill, got, len(acks))
		}
		walNoneOnlyCreatedOr503(t, fmt.Sprintf("kill %d", kill), s.Status)
		r.acks = append(r.acks, acks...)
		r.n503 += s.Status["503"]
		t.Logf("kill %2d after %3dms: %4d acknowledged; loadgen %s", kill, delay.Milliseconds(), len(acks), summaryLine(s))
	}
	killed := time.Now()

	// The broker stops in the middle of a loaded boot and comes back.
	acked := filepath.Join(n.dir, "acked-outage")
	p := n.serve(t)
	lg := startLoadgen(t, n.dir, loadgen, walNoneLoadgenArgs(n.listen, 4*time.Second, acked)...)
	lg.waitFile(acked)
	time.Sleep(time.Second)
	b.stop(t)
	time.Sleep(1500 * time.Millisecond)
	b.start(t)
	if code := lg.wait(60 * time.Second); code != 0 {
		t.Fatalf("outage: loadgen exited with %d:\n%s", code, lg.stderr)
	}
	p.stop()
	s := parseSummary(t, lg.stdout.String())
	acks, err := readAcked(acked)
	if err != nil {
		t.Fatal(err)
	}
	walNoneOnlyCreatedOr503(t, "outage", s.Status)
	r.acks = append(r.acks, acks...)
	r.stopped, r.stoppedOK = s.Status["503"], s.Status["201"]
	t.Logf("broker stopped for 1.5s of a 4s boot: %d acknowledged; loadgen %s", len(acks), summaryLine(s))
	if r.stopped == 0 {
		t.Fatalf("the broker was down for 1.5s under load and no hook was answered 503")
	}
	if len(r.acks) < 2000 {
		t.Fatalf("only %d hooks were acknowledged over the run: too few to prove anything", len(r.acks))
	}

	// Everything the broker holds, by event id.
	msgs := b.messages(t)
	held := map[envelope.ID][][sha256.Size]byte{}
	for i, m := range msgs {
		var e envelope.Envelope
		if err := e.UnmarshalJSON(m); err != nil {
			t.Fatalf("message %d is not the envelope JSON form: %v\n%.300s", i, err, m)
		}
		held[e.ID] = append(held[e.ID], sha256.Sum256(e.Body))
	}
	var lost, mismatched, dup int
	seen := map[envelope.ID]bool{}
	for _, a := range r.acks {
		if seen[a.id] {
			t.Fatalf("id %s was answered 201 twice", a.id)
		}
		seen[a.id] = true
		sums, ok := held[a.id]
		switch {
		case !ok:
			lost++
			if lost <= 5 {
				t.Errorf("lost: %s was answered 201 (%s:%d) and is not in the broker", a.id, a.file, a.line)
			}
		case sums[0] != a.hash:
			mismatched++
			if mismatched <= 5 {
				t.Errorf("mismatch: %s is in the broker with another body", a.id)
			}
		}
		if len(sums) > 1 {
			dup++
		}
	}
	extra := 0
	for id := range held {
		if !seen[id] {
			extra++
		}
	}
	t.Logf("%s: %d kills in %v, then a broker outage; %d hooks acknowledged (201), %d answered 503 (%d of them during the outage, which still answered %d 201s around it)",
		name, walNoneCrashKills, killed.Sub(began).Round(time.Millisecond), len(r.acks), r.n503+r.stopped, r.stopped, r.stoppedOK)
	t.Logf("%s: the broker holds %d messages: lost %d, body mismatches %d, acknowledged ids held twice %d, messages of hooks not answered 201 %d (at-least-once: a 503 whose publish landed)",
		name, len(msgs), lost, mismatched, dup, extra)
	if lost > 0 || mismatched > 0 {
		t.Fatalf("%s: lost %d, body mismatches %d of %d acknowledged hooks", name, lost, mismatched, len(r.acks))
	}
}

// walNoneOnlyCreatedOr503 fails on any answer but 201 and 503: without a
// log a node sheds with 503 unavailable when the broker does not ack.
func walNoneOnlyCreatedOr503(t *testing.T, what string, status map[string]int64) {
	t.Helper()
	for code, count := range status {
		if code != "201" && code != "503" {
			t.Errorf("%s: %d answers %s; wal.type: none answers 201 or 503", what, count, code)
		}
	}
}

// walNoneLoadgenArgs is an open-loop load of mixed bodies over 50 tenants
// for d in all (no warm-up: every 201 counts).
func walNoneLoadgenArgs(listen string, d time.Duration, ackedFile string) []string {
	return []string{
		"-url", "http://" + listen + "/webhooks/{tenant}/{source}",
		"-c", "64",
		"-rate", strconv.Itoa(1500),
		"-d", d.String(),
		"-warmup", "0s",
		"-size", "80%1KiB,20%16KiB",
		"-kind", "mixed",
		"-sign", "none",
		"-tenants", "50",
		"-sources", "open",
		"-timeout", "10s",
		"-json",
		"-acked", ackedFile,
	}
}
