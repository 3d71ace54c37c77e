package main

// Acceptance 1 and 3 of the tenant erase (issue 20) against the built
// binary: an erased tenant leaves nothing in the meta store, the claim
// stores or the Redis namespace but its tombstone, its audit rows and its
// one io.ankusa.tenant.deleted event, while another tenant's data stays
// and is still delivered; and an attempt in flight when the erase starts
// cannot write its row back after the rows are deleted.

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/ankusa/ankusa/internal/redistest"
	"github.com/ankusa/ankusa/internal/s3test"
)

// TestEraseLeavesNoTrace: acme and globex get the same data, acme is
// erased; then the stopped node's per-tenant keys, claim stores (dir and
// S3) and, with the Redis store and fleet rate limits, the Redis
// namespace and a second node's mirror hold nothing of acme but what
// stays; globex's keys are the same as before and it is still delivered;
// acme sending again is a new tenant with a higher ordinal.
func TestEraseLeavesNoTrace(t *testing.T) {
	t.Run("persistent-dir-s3", func(t *testing.T) {
		s3 := s3test.Start(t)
		erNoTrace(t, newErNode(t, erWithS3(s3)), nil)
	})
	t.Run("redis-fleet", func(t *testing.T) {
		u := redistest.URL(t)
		ns := redistest.Namespace(t, u)
		n := newErNode(t, erWithRedis(u, ns), erWithFleetRate(), erWithName("erase-a"))
		peer := newErNode(t, erWithRedis(u, ns), erWithFleetRate(), erWithName("erase-b"))
		erNoTrace(t, n, peer)
	})
}

// erNoTrace runs TestEraseLeavesNoTrace on n; peer, when not nil, is a
// second node of n's Redis store whose mirror must lose acme too.
func erNoTrace(t *testing.T, n, peer *erNode) {
	p := n.serve(t)
	var pp *proc
	if peer != nil {
		pp = peer.serve(t)
	}
	acme := erPopulate(t, n, "acme")
	erPopulate(t, n, "globex")
	acmeOrd, ok := erTenantOrdinal(t, n, "acme")
	if !ok {
		t.Fatal("GET /v1/tenants/acme: 404 after acme's hooks")
	}
	if peer != nil {
		erWaitSources(t, peer, "acme", len(acme.Sources))
		if !erRedisHas(t, n, "rl:acme") {
			t.Fatal("with rate_limits.scope fleet, acme's hooks left no bucket rl:acme in Redis")
		}
	}
	p.stop()
	before := n.trace(t, "acme")
	erCheckPopulated(t, "acme before the erase", before, n)
	gxBefore := n.trace(t, "globex")
	erCheckPopulated(t, "globex before the erase", gxBefore, n)

	p = n.serve(t)
	st := erErase(t, n, "acme")
	if !slices.Equal(st.Ordinals, []uint32{acmeOrd}) {
		t.Errorf("the erase covers ordinals %v, want [%d]", st.Ordinals, acmeOrd)
	}
	for _, stage := range []string{"sources", "rate_limit", "deliveries", "quarantine", "claims", "dedupe", "events"} {
		if st.Removed[stage] == 0 {
			t.Errorf("the erase removed %v: nothing at stage %s", st.Removed, stage)
		}
	}
	erWaitEvents(t, n, "acme", acme)
	// What stays in the archive: the tombstone object replay reads.
	stone := filepath.Join(n.archive, "tombstones", "tenant=acme.json")
	if !waitFor(15*time.Second, func() bool { _, err := os.Stat(stone); return err == nil }) {
		t.Errorf("the archive has no %s after the erase", stone)
	}
	if peer != nil {
		erWaitSources(t, peer, "acme", 0)
		if erRedisHas(t, n, "rl:acme") {
			t.Error("acme's fleet bucket rl:acme is still in Redis after the erase")
		}
		pp.stop()
		pr := peer.trace(t, "acme")
		if pr.KeyCount() != 0 || len(pr.Events) != 0 {
			t.Errorf("the peer node still holds acme's keys %v and %d events", pr.Keys, len(pr.Events))
		}
	}
	p.stop()

	after := n.trace(t, "acme")
	erCheckErased(t, "acme after the erase", after, acmeOrd)
	if after.HasLive {
		t.Errorf("the tenant map still names acme (ordinal %d)", after.Live)
	}
	for _, m := range append(after.RedisMarkers, after.MirrorMarkers...) {
		t.Logf("kept: the deletion marker %s", m)
	}
	// Each removed source and route leaves its record without "r" and its
	// member of the store's log in Redis, and its version in the mirror.
	if entities := len(acme.Sources) + len(acme.Routes); peer != nil && (len(after.RedisMarkers) != 2*entities || len(after.MirrorMarkers) != entities) {
		t.Errorf("%d deletion markers in Redis and %d in the node's mirror, want %d and %d (one record and log member, one mirror key per source and route): %v %v",
			len(after.RedisMarkers), len(after.MirrorMarkers), 2*entities, entities, after.RedisMarkers, after.MirrorMarkers)
	}
	gxAfter := n.trace(t, "globex")
	erCheckSame(t, gxBefore, gxAfter)

	// Both tenants still take hooks: globex as itself, acme as a new tenant.
	p = n.serve(t)
	defer p.stop()
	gx := hookID(t, "a new globex hook", n.hook("globex", erSource("globex", erSrcDedupe), `{"after":"erase"}`, "X-Id", "globex-after"))
	n.erAddSource("acme", "acme-fresh", fmt.Sprintf(`{"name": "acme-fresh", "verify": {"type": "none"}, "sinks": [{"id": "out", "type": "http", "url": "%s/good/fresh", "allow_private": true}]}`, n.recv.url))
	ac := hookID(t, "a new acme hook", n.hook("acme", "acme-fresh", `{"after":"erase"}`))
	if !waitFor(15*time.Second, func() bool { d := n.recv.delivered(); return d[gx] > 0 && d[ac] > 0 }) {
		t.Fatalf("after the erase: globex's %s delivered %d times, acme's %s %d times, want both", gx, n.recv.delivered()[gx], ac, n.recv.delivered()[ac])
	}
	if ord, ok := erTenantOrdinal(t, n, "acme"); !ok || ord <= acmeOrd {
		t.Errorf("acme sending again has ordinal %d (found %v), want a new one above %d", ord, ok, acmeOrd)
	}
	if a := n.do("GET", hookPath("acme", acme.Claimed[0]), erAdminToken, ""); a.status != http.StatusGone {
		t.Errorf("GET an erased hook of acme: %d %s, want 410", a.status, a.body)
	}
}

// erCheckPopulated fails the test unless r holds every kind of data
// erPopulate makes.
func erCheckPopulated(t *testing.T, what string, r erTraceReport, n *erNode) {
	t.Helper()
	families := []string{"rows", "dead", "attempts", "pen", "dedupe", "rate-limit", "tenant-counts"}
	if n.o.redisURL != "" {
		families = append(families, "mirror-source", "mirror-route")
	} else {
		families = append(families, "source", "route")
	}
	for _, f := range families {
		if len(r.Keys[f]) == 0 {
			t.Errorf("%s: no key of family %s (%v): the test did not make what the erase must delete", what, f, r.Keys)
		}
	}
	if len(r.Events) == 0 || r.Tombstone != nil {
		t.Errorf("%s: %d lifecycle events, tombstone %+v", what, len(r.Events), r.Tombstone)
	}
	for store, objs := range r.Claims {
		if len(objs) == 0 {
			t.Errorf("%s: claim store %s holds nothing of the tenant", what, store)
		}
	}
	if n.o.redisURL != "" && len(r.Redis) == 0 {
		t.Errorf("%s: nothing of the tenant in the Redis namespace", what)
	}
}

// erCheckSame fails the test unless globex's trace after acme's erase is
// the one before: the same keys but for the attempt log and due index of
// its pending rows (retried all along), the same claims, events, audit
// rows and Redis keys.
func erCheckSame(t *testing.T, before, after erTraceReport) {
	t.Helper()
	for f, keys := range before.Keys {
		if f == "attempts" || f == "due" {
			if len(after.Keys[f]) == 0 {
				t.Errorf("globex lost its %s keys in acme's erase", f)
			}
			continue
		}
		if !slices.Equal(keys, after.Keys[f]) {
			t.Errorf("globex's %s keys changed in acme's erase: %d before, %d after\nbefore %v\nafter  %v", f, len(keys), len(after.Keys[f]), keys, after.Keys[f])
		}
	}
	for f := range after.Keys {
		if _, ok := before.Keys[f]; !ok {
			t.Errorf("globex has %s keys after acme's erase that it did not have before: %v", f, after.Keys[f])
		}
	}
	for store, objs := range before.Claims {
		if !slices.Equal(objs, after.Claims[store]) {
			t.Errorf("globex's claims in %s changed: %v, then %v", store, objs, after.Claims[store])
		}
	}
	if len(before.Events) != len(after.Events) || before.Audit != after.Audit || after.Tombstone != nil {
		t.Errorf("globex: %d events and %d audit rows before, %d and %d after, tombstone %+v", len(before.Events), before.Audit, len(after.Events), after.Audit, after.Tombstone)
	}
	if len(before.Redis) != len(after.Redis) {
		t.Errorf("globex's Redis keys changed: %v, then %v", before.Redis, after.Redis)
	}
}

// erWaitSources waits until n lists want sources of tenant.
func erWaitSources(t *testing.T, n *erNode, tenant string, want int) {
	t.Helper()
	var got int
	if !waitFor(15*time.Second, func() bool {
		var v struct {
			Sources []struct {
				Name string `json:"name"`
			} `json:"sources"`
		}
		a := n.do("GET", sourcesOf(tenant), erAdminToken, "")
		wantStatus(t, "GET sources of "+tenant, a, http.StatusOK)
		decode(t, "GET sources of "+tenant, a, &v)
		got = len(v.Sources)
		return got == want
	}) {
		t.Fatalf("node %s lists %d sources of %s, want %d", n.name, got, tenant, want)
	}
}

// erRedisHas reports whether n's Redis namespace holds key.
func erRedisHas(t *testing.T, n *erNode, key string) bool {
	t.Helper()
	c := redistest.Client(t, n.o.redisURL)
	k, err := c.Exists(context.Background(), n.o.redisNS+key).Result()
	if err != nil {
		t.Fatal(err)
	}
	return k == 1
}

// erWaitEvents waits until n's lifecycle receiver has taken the deleted
// event of each of acme's sources and routes and the io.ankusa.tenant.deleted
// event.
func erWaitEvents(t *testing.T, n *erNode, tenant string, p erPopulated) {
	t.Helper()
	var want []string
	for _, s := range p.Sources {
		want = append(want, "io.ankusa.source.deleted "+s)
	}
	for _, r := range p.Routes {
		want = append(want, "io.ankusa.route.deleted "+r)
	}
	want = append(want, "io.ankusa.tenant.deleted "+tenant)
	sort.Strings(want)
	var missing []string
	if !waitFor(20*time.Second, func() bool {
		got, _, _ := n.lc.snapshot()
		have := map[string]bool{}
		for _, a := range got {
			if a.ev.Tenant == tenant {
				have[a.ev.Type+" "+a.ev.Subject] = true
			}
		}
		missing = missing[:0]
		for _, w := range want {
			if !have[w] {
				missing = append(missing, w)
			}
		}
		return len(missing) == 0
	}) {
		t.Fatalf("the lifecycle receiver did not get %v of %s", missing, tenant)
	}
	if _, _, bad := n.lc.snapshot(); len(bad) > 0 {
		t.Errorf("the lifecycle receiver found: %v", bad)
	}
}

// erSlowReceiver holds each request hold, then answers 200; it counts the
// requests by event id, from the moment each arrives.
type erSlowReceiver struct {
	url  string
	hold time.Duration
	mu   sync.Mutex
	got  map[string]int
}

func newErSlowReceiver(t *testing.T, hold time.Duration) *erSlowReceiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &erSlowReceiver{url: "http://" + ln.Addr().String(), hold: hold, got: map[string]int{}}
	srv := &http.Server{Handler: r, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return r
}

func (r *erSlowReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	io.Copy(io.Discard, req.Body)
	r.mu.Lock()
	r.got[req.Header.Get("X-Ankusa-Event-Id")]++
	r.mu.Unlock()
	select {
	case <-time.After(r.hold):
	case <-req.Context().Done():
	}
	w.WriteHeader(http.StatusOK)
}

func (r *erSlowReceiver) count(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.got[id]
}

// TestEraseRunningAttempt: acme's sink holds each request 3s; with one
// attempt in flight, the erase stays at started or closed while the
// attempt runs (the close waits for it), and once it is done no key of
// acme's ordinal is left, nor is the hook delivered again after a restart.
func TestEraseRunningAttempt(t *testing.T) {
	const hold = 3 * time.Second
	slow := newErSlowReceiver(t, hold)
	n := newErNode(t)
	p := n.serve(t)
	n.erAddSource("acme", "slow", fmt.Sprintf(`{"name": "slow", "verify": {"type": "none"}, "sinks": [{"id": "out", "type": "http", "url": "%s/slow", "allow_private": true, "timeout": "10s"}]}`, slow.url))
	id := hookID(t, "acme's hook", n.hook("acme", "slow", `{"slow":true}`))
	ord, ok := erTenantOrdinal(t, n, "acme")
	if !ok {
		t.Fatal("GET /v1/tenants/acme: 404 after acme's hook")
	}
	if !waitFor(10*time.Second, func() bool { return slow.count(id) == 1 }) {
		t.Fatalf("the slow receiver did not get %s", id)
	}
	sent := time.Now()
	erStart(t, n, "acme", http.StatusAccepted)
	// While the attempt runs the job is closed at most; it must not pass
	// the close before the attempt has landed.
	var st erStatus
	var closedFor time.Duration
	for {
		st = erGetStatus(t, n, "acme")
		if st.State != "running" || (st.Stage != "started" && st.Stage != "closed") {
			break
		}
		closedFor = time.Since(sent)
		if closedFor > 30*time.Second {
			t.Fatalf("the erase is still at %s after 30s: %+v", st.Stage, st)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The attempt had at most hold left when the DELETE went out; the
	// close waits for all of it, less the time the receiver had it already.
	if closedFor < hold-time.Second {
		t.Errorf("the erase passed the close %v after the DELETE, with an attempt holding %v: it did not wait for the attempt", closedFor, hold)
	}
	t.Logf("the erase stayed at started or closed for %v after the DELETE", closedFor)
	final := erWaitErased(t, n, "acme")
	if !slices.Equal(final.Ordinals, []uint32{ord}) {
		t.Errorf("the erase covers ordinals %v, want [%d]", final.Ordinals, ord)
	}
	p.stop()
	r := erTrace(t, n.dataDir, "acme")
	erCheckErased(t, "acme after the erase", r, ord)
	for _, f := range []string{"rows", "due", "dead", "attempts"} {
		if len(r.Keys[f]) != 0 {
			t.Errorf("acme's ordinal %d keeps %s keys after the erase: %v", ord, f, r.Keys[f])
		}
	}

	// A restart rebuilds dispatch's queues from the log: the erased
	// tenant's hook is not among them.
	p = n.serve(t)
	defer p.stop()
	time.Sleep(2 * time.Second)
	if c := slow.count(id); c != 1 {
		t.Errorf("the receiver got %s %d times, want once (not again after the erase and a restart)", id, c)
	}
}
