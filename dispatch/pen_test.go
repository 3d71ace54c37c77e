package dispatch_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dedupe"
	"github.com/ankusa/ankusa/dispatch"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/meta"
)

const penSecret = "pen-test-secret"

// githubSource gives source "src" a GitHub verifier with penSecret.
func githubSource(s *config.Source) {
	s.Verify = config.Verify{Type: "github", Secret: config.Secret{Value: penSecret}}
	s.OnVerifyFailure = "quarantine"
}

// githubSig is the X-Hub-Signature-256 value of body under secret.
func githubSig(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// commitQuarantined commits a hook held in the pen, as the edge does after
// reserving its bytes, signed with secret.
func (n *node) commitQuarantined(tenant string, i int, secret string) envelope.Envelope {
	n.t.Helper()
	body := fmt.Appendf(nil, `{"held":%d}`, i)
	if ok, closed := n.disp.Load().ReservePen(tenant, int64(len(body))); !ok || closed {
		n.t.Fatalf("the pen refused hook %d (closed %v)", i, closed)
	}
	e, err := commitEnvelope(n.wal.Commit, envelope.Envelope{
		TenantID: tenant, SourceID: "src", ReceivedAt: time.Now().UnixNano(),
		Headers:      []envelope.Header{{Name: "X-Hub-Signature-256", Value: githubSig(secret, body)}},
		Body:         body,
		Verification: envelope.Verification{Verifier: "github", Quarantined: true, Failure: envelope.FailMismatch},
	})
	if err != nil {
		n.t.Fatal(err)
	}
	return e
}

// opsAudit is the audit row a caller hands the pen with a change, with
// the change's lifecycle event: the pen writes both as given.
func opsAudit(action, tenant string) meta.AuditRow {
	return meta.AuditRow{At: time.Now().UTC(), Principal: "ops", Action: action, Tenant: tenant, Detail: "as given",
		Event: meta.Event{Type: meta.EventType("quarantine", penEventVerbs[action]), Subject: tenant, Data: json.RawMessage(`{"as":"given"}`)}}
}

// penEventVerbs is the verb of the event of each pen action (admin's).
var penEventVerbs = map[string]string{
	"quarantine.release": "released", "quarantine.release_forced": "released",
	"quarantine.drop": "dropped", "quarantine.drop_all": "bulk_dropped",
}

func penList(t *testing.T, d *dispatch.Dispatcher, tenant string) map[envelope.ID]dispatch.PenItem {
	t.Helper()
	out := map[envelope.ID]dispatch.PenItem{}
	cursor := ""
	for {
		items, next, err := d.Quarantined(context.Background(), tenant, dispatch.Filter{}, cursor, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			out[it.ID] = it
		}
		if next == "" {
			return out
		}
		cursor = next
	}
}

// flagsSeen records how each delivery described its verification.
type flagsSeen struct {
	mu sync.Mutex
	v  map[string]envelope.Verification // "<sink>/<id>"
}

func (f *flagsSeen) behave(sink string, d *dispatch.Delivery) error {
	f.mu.Lock()
	f.v[sink+"/"+d.Envelope.ID.String()] = d.Envelope.Verification
	f.mu.Unlock()
	return nil
}

func (f *flagsSeen) get(sink string, id envelope.ID) (envelope.Verification, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.v[sink+"/"+id.String()]
	return v, ok
}

func TestPenHoldsUntilReleased(t *testing.T) {
	seen := &flagsSeen{v: map[string]envelope.Verification{}}
	fk := newFakeSinks(seen.behave)
	n := openNode(t, vfs.NewMem(), fk, nodeOptions{sinks: twoSinks(nil), source: githubSource})
	defer n.close()
	d := n.disp.Load()
	// Whether a hook verifies again is the caller's to find out (package
	// admin); here good is released as verified, bad is forced out.
	good := n.commitQuarantined("acme", 1, penSecret)
	bad := n.commitQuarantined("acme", 2, "other-secret")
	drop := n.commitQuarantined("acme", 3, "other-secret")
	other := n.commitQuarantined("globex", 4, "other-secret")
	plain := n.commit("acme", 5)
	waitFor(t, 5*time.Second, "the plain hook's deliveries", func() bool { return fk.delivered("a", plain.ID) == 1 && fk.delivered("b", plain.ID) == 1 })
	time.Sleep(100 * time.Millisecond) // rows and first attempts of the same batches are long done
	for _, e := range []envelope.Envelope{good, bad, drop, other} {
		if fk.attemptsOf("a", e.ID)+fk.attemptsOf("b", e.ID) != 0 {
			t.Fatalf("quarantined hook %s was attempted before its release", e.ID)
		}
	}
	pen := penList(t, d, "acme")
	if len(pen) != 3 || pen[good.ID].Failure != "mismatch" || pen[good.ID].Bytes != len(good.Body) || pen[good.ID].Source != "src" {
		t.Fatalf("acme's pen: %+v", pen)
	}
	if g := penList(t, d, "globex"); len(g) != 1 {
		t.Fatalf("globex's pen: %+v", g)
	}
	ctx := context.Background()
	// Another tenant's hook is not found through this one.
	if _, err := d.QuarantinedHook(ctx, "globex", good.ID); !errors.Is(err, dispatch.ErrNotQuarantined) {
		t.Errorf("lookup through another tenant: %v", err)
	}
	if _, err := d.Release(ctx, "globex", good.ID, dispatch.ReleaseForced, opsAudit("quarantine.release_forced", "globex")); !errors.Is(err, dispatch.ErrNotQuarantined) {
		t.Errorf("release through another tenant: %v", err)
	}
	if it, err := d.QuarantinedHook(ctx, "acme", bad.ID); err != nil || it != pen[bad.ID] {
		t.Errorf("lookup of a held hook: %+v %v, want %+v", it, err, pen[bad.ID])
	}
	// No change goes without its audit row (nor with a bad mode); the
	// hook stays held.
	if _, err := d.Release(ctx, "acme", bad.ID, dispatch.ReleaseForced, meta.AuditRow{}); err == nil {
		t.Error("a release without its audit row went through")
	}
	if err := d.DropQuarantined(ctx, "acme", bad.ID, meta.AuditRow{Principal: "ops", Tenant: "acme"}); err == nil {
		t.Error("a drop without its audit row went through")
	}
	noEvent := opsAudit("quarantine.release_forced", "acme")
	noEvent.Event = meta.Event{}
	if _, err := d.Release(ctx, "acme", bad.ID, dispatch.ReleaseForced, noEvent); err == nil {
		t.Error("a release whose audit row has no event went through")
	}
	noEvent.Action = "quarantine.drop"
	if err := d.DropQuarantined(ctx, "acme", bad.ID, noEvent); err == nil {
		t.Error("a drop whose audit row has no event went through")
	}
	if _, err := d.Release(ctx, "acme", bad.ID, 0, opsAudit("quarantine.release", "acme")); err == nil {
		t.Error("a release without a mode went through")
	}
	if _, ok := penList(t, d, "acme")[bad.ID]; !ok {
		t.Fatal("a refused change let the hook go")
	}
	r, err := d.Release(ctx, "acme", good.ID, dispatch.ReleaseVerified, opsAudit("quarantine.release", "acme"))
	if err != nil || !r.Verified || r.Rows != 2 {
		t.Fatalf("release of a hook that verifies: %+v %v", r, err)
	}
	r, err = d.Release(ctx, "acme", bad.ID, dispatch.ReleaseForced, opsAudit("quarantine.release_forced", "acme"))
	if err != nil || r.Verified || r.Rows != 2 {
		t.Fatalf("forced release: %+v %v", r, err)
	}
	if _, err := d.Release(ctx, "acme", good.ID, dispatch.ReleaseVerified, opsAudit("quarantine.release", "acme")); !errors.Is(err, dispatch.ErrNotQuarantined) {
		t.Errorf("second release: %v, want ErrNotQuarantined", err)
	}
	if err := d.DropQuarantined(ctx, "acme", drop.ID, opsAudit("quarantine.drop", "acme")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the released hooks' deliveries", func() bool {
		return fk.delivered("a", good.ID) == 1 && fk.delivered("b", good.ID) == 1 && fk.delivered("a", bad.ID) == 1 && fk.delivered("b", bad.ID) == 1
	})
	for _, sink := range []string{"a", "b"} {
		if v, _ := seen.get(sink, good.ID); !v.Verified || v.Flagged || v.Quarantined {
			t.Errorf("sink %s got the re-verified hook as %+v, want verified", sink, v)
		}
		if v, _ := seen.get(sink, bad.ID); v.Verified || !v.Flagged || v.Quarantined {
			t.Errorf("sink %s got the forced hook as %+v, want flagged", sink, v)
		}
	}
	time.Sleep(50 * time.Millisecond)
	if fk.attemptsOf("a", drop.ID) != 0 {
		t.Error("the dropped hook was attempted")
	}
	if pen := penList(t, d, "acme"); len(pen) != 0 {
		t.Errorf("acme's pen after release and drop: %+v", pen)
	}
	batches := 0
	dropAll := func(n int) meta.AuditRow {
		batches++
		return opsAudit("quarantine.drop_all", "globex")
	}
	if n, err := d.DropAllQuarantined(ctx, "globex", dispatch.Filter{}, dropAll); n != 1 || err != nil || batches != 1 {
		t.Errorf("drop all of globex: %d %v, %d audit rows", n, err, batches)
	}
	audit, err := n.meta.Audit(time.Time{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	actions := map[string]int{}
	for _, a := range audit {
		if a.Principal != "ops" || a.Detail != "as given" {
			t.Errorf("audit row not as given: %+v", a)
		}
		actions[a.Action]++
	}
	if len(audit) != 4 {
		t.Errorf("%d audit rows, want 4 (one per change): %+v", len(audit), audit)
	}
	if actions["quarantine.release"] != 1 || actions["quarantine.release_forced"] != 1 || actions["quarantine.drop"] != 1 || actions["quarantine.drop_all"] != 1 {
		t.Errorf("audit actions %v", actions)
	}
	// Each change's event, as given, in the order of the changes; none
	// of the refused ones.
	want := []string{
		`acme io.ankusa.quarantine.released acme {"as":"given"}`,
		`acme io.ankusa.quarantine.released acme {"as":"given"}`,
		`acme io.ankusa.quarantine.dropped acme {"as":"given"}`,
		`globex io.ankusa.quarantine.bulk_dropped globex {"as":"given"}`,
	}
	if got := outboxEvents(t, n.meta); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestPenCapAndClosedTenant(t *testing.T) {
	n := openNode(t, vfs.NewMem(), newFakeSinks(nil), nodeOptions{sinks: twoSinks(nil), source: githubSource, maxPenBytes: 100})
	defer n.close()
	d := n.disp.Load()
	if ok, _ := d.ReservePen("acme", 60); !ok {
		t.Fatal("60 of 100 refused")
	}
	if ok, closed := d.ReservePen("acme", 41); ok || closed {
		t.Fatalf("past the cap: ok %v closed %v, want refused as full", ok, closed)
	}
	d.UnreservePen(60)
	if ok, _ := d.ReservePen("acme", 100); !ok {
		t.Fatal("the whole cap after giving a reservation back was refused")
	}
	d.UnreservePen(100)
	d.ClosePen("acme")
	if ok, closed := d.ReservePen("acme", 1); ok || !closed {
		t.Fatalf("a closed tenant: ok %v closed %v", ok, closed)
	}
	if ok, _ := d.ReservePen("globex", 1); !ok {
		t.Fatal("closing acme closed globex")
	}
	d.UnreservePen(1)
	d.OpenPen("acme")
	if ok, _ := d.ReservePen("acme", 1); !ok {
		t.Fatal("a reopened tenant is refused")
	}
	d.UnreservePen(1)
}

// TestPenSurvivesCrashes: quarantined hooks stay held across crashes (the
// rebuild recreates their rows past the checkpoint), the pen's byte count
// is found again, and a dropped one does not come back.
func TestPenSurvivesCrashes(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	mem := vfs.NewCrashableMem()
	held := map[envelope.ID]int{}
	var dropped []envelope.ID
	for round := range 4 {
		n := openNode(t, mem, newFakeSinks(nil), nodeOptions{sinks: twoSinks(nil), source: githubSource})
		d := n.disp.Load()
		if got := penList(t, d, "acme"); len(got) != len(held) {
			t.Fatalf("round %d: the pen holds %d hooks after the crash, want %d", round, len(got), len(held))
		}
		for id := range held {
			if _, ok := penList(t, d, "acme")[id]; !ok {
				t.Fatalf("round %d: held hook %s is gone after the crash", round, id)
			}
		}
		for _, id := range dropped {
			if _, ok := penList(t, d, "acme")[id]; ok {
				t.Fatalf("round %d: dropped hook %s came back", round, id)
			}
		}
		for i := range 20 {
			e := n.commitQuarantined("acme", round*100+i, "x")
			held[e.ID] = len(e.Body)
		}
		// Drop one: a synced write that waits for the checkpoint to
		// cover its row, so the rebuild cannot bring it back.
		for id := range held {
			waitFor(t, 5*time.Second, "the pen row", func() bool { _, ok := penList(t, d, "acme")[id]; return ok })
			if err := d.DropQuarantined(context.Background(), "acme", id, opsAudit("quarantine.drop", "acme")); err != nil {
				t.Fatal(err)
			}
			delete(held, id)
			dropped = append(dropped, id)
			break
		}
		time.Sleep(time.Duration(rng.IntN(30)) * time.Millisecond)
		clone := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: rng.IntN(101), RNG: rng})
		n.close()
		mem = clone
	}
	n := openNode(t, mem, newFakeSinks(nil), nodeOptions{sinks: twoSinks(nil), source: githubSource, maxPenBytes: 1 << 20})
	defer n.close()
	want := 0
	for _, b := range held {
		want += b
	}
	// The byte count is found again: exactly what is left of the cap.
	d := n.disp.Load()
	if ok, _ := d.ReservePen("acme", int64(1<<20-want)); !ok {
		t.Fatalf("after the crashes %d bytes of the cap should be free", 1<<20-want)
	}
	if ok, _ := d.ReservePen("acme", 1); ok {
		t.Fatalf("after the crashes the pen counts fewer than the %d bytes it holds", want)
	}
}

// TestDedupeKeysWrittenWithRows: node-scope dedupe keys are written with
// the rows of every hook of a deduping source (with sinks or without),
// Written covers them, and they are rebuilt after a crash.
func TestDedupeKeysWrittenWithRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	mem := vfs.NewCrashableMem()
	withDedupe := func(s *config.Source) {
		s.Dedupe = &config.SourceDedupe{Key: "header:X-Id", TTL: config.Duration(time.Hour)}
	}
	keys := map[string]envelope.ID{}
	for round := range 3 {
		n := openNode(t, mem, newFakeSinks(nil), nodeOptions{source: withDedupe, dedupeNode: true}) // no sinks
		d := n.disp.Load()
		node := dedupe.NewNode(n.meta, n.wal.Ordinal)
		check := func(phase string) {
			for k, id := range keys {
				got, ok, err := node.Lookup(dedupe.MakeKey("acme", "src", []byte(k)), time.Hour, time.Now().UnixNano())
				if err != nil || !ok || got != id {
					t.Fatalf("round %d %s: key %s: %s %v %v, want %s", round, phase, k, got, ok, err, id)
				}
			}
		}
		check("after the crash")
		var last uint64
		for i := range 50 {
			k := fmt.Sprintf("k-%d-%d", round, i)
			e, err := commitEnvelope(n.wal.Commit, envelope.Envelope{TenantID: "acme", SourceID: "src", ReceivedAt: time.Now().UnixNano(),
				Body: []byte("{}"), DedupeKey: k, Verification: envelope.Verification{Verifier: "none"}})
			if err != nil {
				t.Fatal(err)
			}
			keys[k], last = e.ID, e.Seq
		}
		waitFor(t, 5*time.Second, "Written to cover the hooks", func() bool { return d.Written() >= last })
		check("once written")
		// A flagged hook's key is not kept: a forged request must not
		// claim a real hook's key.
		e, err := commitEnvelope(n.wal.Commit, envelope.Envelope{TenantID: "acme", SourceID: "src", ReceivedAt: time.Now().UnixNano(),
			Body: []byte("{}"), DedupeKey: "forged", Verification: envelope.Verification{Verifier: "none", Flagged: true}})
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, 5*time.Second, "Written", func() bool { return d.Written() >= e.Seq })
		if _, ok, _ := node.Lookup(dedupe.MakeKey("acme", "src", []byte("forged")), time.Hour, time.Now().UnixNano()); ok {
			t.Fatal("a flagged hook's dedupe key was kept")
		}
		// Expired keys are not matches.
		if _, ok, _ := node.Lookup(dedupe.MakeKey("acme", "src", []byte("k-0-0")), time.Hour, time.Now().Add(2*time.Hour).UnixNano()); ok {
			t.Fatal("a key matched after its ttl")
		}
		time.Sleep(time.Duration(rng.IntN(20)) * time.Millisecond)
		clone := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: rng.IntN(101), RNG: rng})
		n.close()
		mem = clone
	}
}

// TestPenKeepsSegmentsAndSerialises: retention keeps the segment of a
// quarantined hook (a release needs its bytes), and a release and a drop
// of one hook racing each other cannot both act on it.
func TestPenKeepsSegmentsAndSerialises(t *testing.T) {
	n := openNode(t, vfs.NewMem(), newFakeSinks(nil), nodeOptions{sinks: twoSinks(nil), source: githubSource})
	defer n.close()
	d := n.disp.Load()
	e := n.commitQuarantined("acme", 1, "x")
	waitFor(t, 5*time.Second, "the pen row", func() bool { return len(penList(t, d, "acme")) == 1 })
	if live, err := n.meta.HoldsLive(e.Seq, e.Seq); err != nil || !live {
		t.Fatalf("HoldsLive over a quarantined hook: %v %v, want true: its segment must stay", live, err)
	}
	if live, _ := n.meta.HoldsLive(e.Seq+1, e.Seq+100); live {
		t.Fatal("HoldsLive past the quarantined hook is true")
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	wg.Add(2)
	go func() {
		defer wg.Done()
		_, errs[0] = d.Release(context.Background(), "acme", e.ID, dispatch.ReleaseForced, opsAudit("quarantine.release_forced", "acme"))
	}()
	go func() {
		defer wg.Done()
		errs[1] = d.DropQuarantined(context.Background(), "acme", e.ID, opsAudit("quarantine.drop", "acme"))
	}()
	wg.Wait()
	if (errs[0] == nil) == (errs[1] == nil) {
		t.Fatalf("release and drop of one hook: %v, %v; want exactly one to act", errs[0], errs[1])
	}
	for _, err := range errs {
		if err != nil && !errors.Is(err, dispatch.ErrNotQuarantined) {
			t.Fatalf("the loser: %v, want ErrNotQuarantined", err)
		}
	}
	// The pen is empty again: exactly its cap fits, a byte more does not
	// (a row given back twice would leave room past the cap).
	if ok, _ := d.ReservePen("acme", 256<<20); !ok {
		t.Fatal("the whole cap does not fit in the empty pen")
	}
	if ok, _ := d.ReservePen("acme", 1); ok {
		t.Fatal("the pen's byte count went below zero: a row was given back twice")
	}
	d.UnreservePen(256 << 20)
}
