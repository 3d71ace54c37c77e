package source

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/internal/redistest"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/secrets"
)

// fleetNode is one node of a redis store under test: its meta store and
// its Fleet, following the store (Run) until the test ends.
type fleetNode struct {
	*Fleet
	m        *meta.Store
	warnings []string
}

// fleetOpts are the options of a node on the namespace ns of the server
// at u, keeping its mirror in m.
func fleetOpts(t *testing.T, m *meta.Store, u, ns string, kr *secrets.Keyring) FleetOptions {
	t.Helper()
	cfg := testConfig(t)
	opt, err := redis.ParseURL(u)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	return FleetOptions{
		PersistentOptions: PersistentOptions{
			Config:  cfg,
			Context: config.SourceContext{Resolver: cfg.RouteResolver.Type, WALType: cfg.WAL.Type, DedupeScope: cfg.Dedupe.Scope},
			Keyring: kr,
		},
		Redis: rdb, Addr: u, Namespace: ns, Tick: 50 * time.Millisecond, Meta: m,
		Timeout: time.Second,
	}
}

// startNode opens a node over a meta store of its own (dir, or a new one
// when "") and runs it until the test ends.
func startNode(t *testing.T, dir, u, ns string, kr *secrets.Keyring) *fleetNode {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	m := openMeta(t, dir)
	f, warnings, err := OpenFleet(fleetOpts(t, m, u, ns, kr))
	if err != nil {
		m.Close()
		t.Fatal(err)
	}
	f.Run(context.Background())
	n := &fleetNode{Fleet: f, m: m, warnings: warnings}
	t.Cleanup(n.stop)
	return n
}

// stop stops the node and closes its meta store; a second call does
// nothing.
func (n *fleetNode) stop() {
	if n.m == nil {
		return
	}
	n.Close()
	n.m.Close()
	n.m = nil
}

// waitFor polls cond every 10 ms for up to d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func ghDoc(t *testing.T, name, sinkURL string) SourceWrite {
	return SourceWrite{Tenant: "acme", Create: true, Audit: meta.AuditRow{Principal: "ops", Action: "source.create"},
		Doc: doc(t, fmt.Sprintf(`{"name": %q, "verify": {"type": "github", "secret": "ghsecret"}, "sinks": [{"id": "h", "type": "http", "url": %q, "secret": "out"}]}`, name, sinkURL))}
}

func update(w SourceWrite) SourceWrite {
	w.Create = false
	w.Audit.Action = "source.update"
	return w
}

// A write on one node reaches the other with the same version: creates,
// updates, removals and routes with their tokens.
func TestFleetPropagation(t *testing.T) {
	u := redistest.URL(t)
	ns := redistest.Namespace(t, u)
	a := startNode(t, "", u, ns, nil)
	b := startNode(t, "", u, ns, nil)

	src, err := a.PutSource(ghDoc(t, "gh1", "https://example.com/in"))
	if err != nil {
		t.Fatal(err)
	}
	if src.Version == 0 {
		t.Fatal("a write to the redis store has version 0")
	}
	waitFor(t, 2*time.Second, "B does not see A's create", func() bool {
		got := b.Snapshot().Lookup([]byte("gh1"))
		return got != nil && got.Version == src.Version
	})
	got := b.Snapshot().Lookup([]byte("gh1"))
	if got.TenantID != "acme" || got.Spec.Verify.Secret.Value != "ghsecret" || got.Spec.Sinks[0].URL != "https://example.com/in" || got.FromConfig {
		t.Fatalf("B holds %+v", got.Spec)
	}

	upd, err := b.PutSource(update(ghDoc(t, "gh1", "https://example.com/v2")))
	if err != nil {
		t.Fatal(err)
	}
	if upd.Version <= src.Version {
		t.Fatalf("update version %d, create was %d", upd.Version, src.Version)
	}
	waitFor(t, 2*time.Second, "A does not see B's update", func() bool {
		got := a.Snapshot().Lookup([]byte("gh1"))
		return got != nil && got.Version == upd.Version && got.Spec.Sinks[0].URL == "https://example.com/v2"
	})

	r, minted, err := a.PutRoute(RouteWrite{Tenant: "acme", Create: true, ID: "rt1", SourceID: "gh1", Token: TokenAuto, Audit: meta.AuditRow{Principal: "ops", Action: "route.create"}})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, "B does not find A's route by its token", func() bool {
		got := b.Snapshot().RouteByToken([]byte(minted[0]))
		return got != nil && got.ID == "rt1" && got.Version == r.Version
	})
	if b.Snapshot().RouteByToken([]byte(minted[0]+"x")) != nil {
		t.Fatal("B finds a route by a token no route holds")
	}
	if _, err := a.DeleteRoute(RouteDelete{Tenant: "acme", ID: "rt1", Audit: meta.AuditRow{Principal: "ops", Action: "route.delete"}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, "B still finds the removed route's token", func() bool {
		return b.Snapshot().RouteByToken([]byte(minted[0])) == nil && b.Snapshot().Route("acme", "rt1") == nil
	})

	if _, err := a.DeleteSource(SourceDelete{Tenant: "acme", Name: "gh1", Audit: meta.AuditRow{Principal: "ops", Action: "source.delete"}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, "B still serves the removed source", func() bool { return b.Snapshot().Lookup([]byte("gh1")) == nil })
	if d := b.Snapshot().LookupForDelivery([]byte("gh1")); d == nil || d.Version != upd.Version {
		t.Fatalf("B's LookupForDelivery of the removed source: %+v", d)
	}
	// The name is free again, on both nodes.
	if _, err := b.PutSource(ghDoc(t, "gh1", "https://example.com/again")); err != nil {
		t.Fatal(err)
	}
}

// A write checked against a version the entity has moved past is refused
// with the code that says why; never a silent lost update.
func TestFleetCommitStale(t *testing.T) {
	u := redistest.URL(t)
	ns := redistest.Namespace(t, u)
	a := startNode(t, "", u, ns, nil)
	b := startNode(t, "", u, ns, nil)
	v1, err := a.PutSource(ghDoc(t, "gh1", "https://example.com/1"))
	if err != nil {
		t.Fatal(err)
	}
	v2, err := a.PutSource(update(ghDoc(t, "gh1", "https://example.com/2")))
	if err != nil {
		t.Fatal(err)
	}
	rec := encodeSourceRecord(v1, nil)
	audit := meta.AuditRow{Principal: "ops", Action: "source.update", Tenant: "acme", Entity: "source/gh1", Outcome: "ok",
		At: time.Now(), Event: meta.Event{Type: meta.EventType("source", "updated"), Subject: "gh1"}}
	for _, c := range []struct {
		name string
		op   Op
		want string
	}{
		{"stale update", Op{Kind: PutSource, Tenant: "acme", Name: "gh1", Record: rec, Expect: v1.Version}, CodeConflict},
		{"create of an existing name", Op{Kind: PutSource, Tenant: "acme", Name: "gh1", Record: rec}, CodeExists},
		{"update of a missing source", Op{Kind: PutSource, Tenant: "acme", Name: "nope", Record: rec, Expect: v1.Version}, CodeNotFound},
		{"stale delete", Op{Kind: DeleteSource, Tenant: "acme", Name: "gh1", Expect: v1.Version}, CodeConflict},
	} {
		_, err := b.Commit([]Op{c.op}, audit)
		if code(err) != c.want {
			t.Errorf("%s: %v, want %s", c.name, err, c.want)
		}
	}
	// None of them changed anything, nor left a pending change or an
	// audit row on B.
	got := a.Snapshot().Lookup([]byte("gh1"))
	if got.Version != v2.Version || got.Spec.Sinks[0].URL != "https://example.com/2" {
		t.Fatalf("after refused writes: version %d %s, want %d", got.Version, got.Spec.Sinks[0].URL, v2.Version)
	}
	if n := countPending(t, b.m); n != 0 {
		t.Errorf("B holds %d pending changes after refused writes", n)
	}
	if rows := auditRows(t, b.m, "source/gh1"); len(rows) != 0 {
		t.Errorf("B wrote audit rows for refused writes: %+v", rows)
	}
	// Checked against the current version, it goes through.
	if _, err := b.Commit([]Op{{Kind: PutSource, Tenant: "acme", Name: "gh1", Record: rec, Expect: v2.Version}}, audit); err != nil {
		t.Fatal(err)
	}
}

// Many rounds of updates of one source on two nodes at once: each answer
// is a success or a conflict, no two successes share a version, and both
// nodes end on the last success.
func TestFleetConcurrentUpdates(t *testing.T) {
	u := redistest.URL(t)
	ns := redistest.Namespace(t, u)
	nodes := []*fleetNode{startNode(t, "", u, ns, nil), startNode(t, "", u, ns, nil)}
	created, err := nodes[0].PutSource(ghDoc(t, "gh1", "https://example.com/0"))
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		url     string
		version uint64
		checked uint64 // the version the write was checked against
	}
	versions := map[uint64]string{}
	checkedAgainst := map[uint64]uint64{} // success's version → the version it was checked against
	var last result
	conflicts := 0
	for round := 0; round < 50; round++ {
		var wg sync.WaitGroup
		res := make([]result, 2)
		errs := make([]error, 2)
		for i, n := range nodes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				url := fmt.Sprintf("https://example.com/r%d/n%d", round, i)
				w := update(ghDoc(t, "gh1", url))
				var checked uint64
				w.Check = func(old *Source, _ *config.Source) error { checked = old.Version; return nil }
				src, err := n.PutSource(w)
				errs[i] = err
				if err == nil {
					res[i] = result{url, src.Version, checked}
				}
			}()
		}
		wg.Wait()
		ok := 0
		for i := range nodes {
			switch {
			case errs[i] == nil:
				ok++
				if prev, dup := versions[res[i].version]; dup {
					t.Fatalf("round %d: two successes at version %d (%s and %s)", round, res[i].version, prev, res[i].url)
				}
				versions[res[i].version] = res[i].url
				checkedAgainst[res[i].version] = res[i].checked
				if res[i].version > last.version {
					last = res[i]
				}
			case code(errs[i]) == CodeConflict:
				conflicts++
			default:
				t.Fatalf("round %d, node %d: %v, want a success or a conflict", round, i, errs[i])
			}
		}
		if ok == 0 {
			t.Fatalf("round %d: both writes refused: %v", round, errs)
		}
	}
	t.Logf("50 rounds: %d successes, %d conflicts", len(versions), conflicts)
	// No lost update: in version order, each success was checked against
	// the success before it, so it saw what that one wrote.
	prev := created.Version
	for v := prev + 1; v <= last.version; v++ {
		c, ok := checkedAgainst[v]
		if !ok {
			continue
		}
		if c != prev {
			t.Errorf("the write at version %d was checked against version %d, but version %d was written before it: a lost update", v, c, prev)
		}
		prev = v
	}
	for i, n := range nodes {
		waitFor(t, 2*time.Second, fmt.Sprintf("node %d does not end on the last success %+v", i, last), func() bool {
			got := n.Snapshot().Lookup([]byte("gh1"))
			return got.Version == last.version && got.Spec.Sinks[0].URL == last.url
		})
	}
	// Every success has its audit row on the node that made it, and no
	// conflict left one (or a pending change).
	rows := len(auditRows(t, nodes[0].m, "source/gh1")) + len(auditRows(t, nodes[1].m, "source/gh1"))
	if rows != len(versions)+1 {
		t.Errorf("%d audit rows on the two nodes, want %d (the successes and the create)", rows, len(versions)+1)
	}
	for i, n := range nodes {
		if p := countPending(t, n.m); p != 0 {
			t.Errorf("node %d holds %d pending changes", i, p)
		}
	}
}

// Two nodes creating one name at once: one wins, the other is told the
// name exists.
func TestFleetCreateRace(t *testing.T) {
	u := redistest.URL(t)
	ns := redistest.Namespace(t, u)
	nodes := []*fleetNode{startNode(t, "", u, ns, nil), startNode(t, "", u, ns, nil)}
	for round := 0; round < 20; round++ {
		name := fmt.Sprintf("c%d", round)
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i, n := range nodes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = n.PutSource(ghDoc(t, name, fmt.Sprintf("https://example.com/n%d", i)))
			}()
		}
		wg.Wait()
		okN, exists := 0, 0
		for _, err := range errs {
			switch {
			case err == nil:
				okN++
			case code(err) == CodeExists:
				exists++
			}
		}
		if okN != 1 || exists != 1 {
			t.Fatalf("round %d: %v, want one success and one %s", round, errs, CodeExists)
		}
	}
}

// Two routes given one token on two nodes at once: one gets it, the
// other is told it is taken.
func TestFleetTokenUnique(t *testing.T) {
	u := redistest.URL(t)
	ns := redistest.Namespace(t, u)
	nodes := []*fleetNode{startNode(t, "", u, ns, nil), startNode(t, "", u, ns, nil)}
	if _, err := nodes[0].PutSource(ghDoc(t, "gh1", "https://example.com/in")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, "B does not see the source", func() bool { return nodes[1].Snapshot().Lookup([]byte("gh1")) != nil })
	for round := 0; round < 10; round++ {
		token := fmt.Sprintf("shared-token-%d-0123456789abcdef", round)
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i, n := range nodes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _, errs[i] = n.PutRoute(RouteWrite{Tenant: "acme", Create: true, ID: fmt.Sprintf("rt%d-%d", round, i), SourceID: "gh1", Token: token,
					Audit: meta.AuditRow{Principal: "ops", Action: "route.create"}})
			}()
		}
		wg.Wait()
		okN, taken := 0, 0
		for _, err := range errs {
			switch {
			case err == nil:
				okN++
			case code(err) == CodeTokenExists:
				taken++
			}
		}
		if okN != 1 || taken != 1 {
			t.Fatalf("round %d: %v, want one success and one %s", round, errs, CodeTokenExists)
		}
		for i, n := range nodes {
			waitFor(t, 2*time.Second, fmt.Sprintf("round %d: node %d does not find the token's route", round, i), func() bool {
				return n.Snapshot().RouteByToken([]byte(token)) != nil
			})
		}
	}
}

func countPending(t *testing.T, m *meta.Store) int {
	t.Helper()
	n := 0
	if err := m.PendingChanges(func(meta.PendingChange) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

func auditRows(t *testing.T, m *meta.Store, entity string) []meta.AuditRow {
	t.Helper()
	rows, err := m.Audit(time.Time{}, 10000)
	if err != nil {
		t.Fatal(err)
	}
	var out []meta.AuditRow
	for _, r := range rows {
		if r.Entity == entity {
			out = append(out, r)
		}
	}
	return out
}

func eventsOf(t *testing.T, m *meta.Store, subject string) []meta.EventRecord {
	t.Helper()
	var out []meta.EventRecord
	err := m.Events(0, m.EventsDurable(), func(ev *meta.EventRecord) (bool, error) {
		if ev.Subject == subject {
			out = append(out, *ev)
		}
		return false, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A write leaves its audit row and event and no pending change; a
// pending change whose answer was lost is settled by its mark: an audit
// row when the write happened, nothing when it did not, and not before
// settleAfter.
func TestFleetPendingChanges(t *testing.T) {
	u := redistest.URL(t)
	ns := redistest.Namespace(t, u)
	a := startNode(t, "", u, ns, nil)
	if _, err := a.PutSource(ghDoc(t, "gh1", "https://example.com/in")); err != nil {
		t.Fatal(err)
	}
	if n := countPending(t, a.m); n != 0 {
		t.Fatalf("%d pending changes after a write", n)
	}
	if rows := auditRows(t, a.m, "source/gh1"); len(rows) != 1 || rows[0].Action != "source.create" || rows[0].Outcome != "ok" {
		t.Fatalf("audit rows %+v, want one source.create", rows)
	}
	if evs := eventsOf(t, a.m, "gh1"); len(evs) != 1 || evs[0].Type != meta.EventType("source", "created") {
		t.Fatalf("events %+v, want one source created", evs)
	}

	// Three pending changes, as a node that lost Redis's answers leaves
	// them: two old (one whose mark Redis has), one too young to ask.
	a.Close() // no catch-up settles them behind the test's back
	plant := func(id, subject string, at time.Time) {
		row := meta.AuditRow{At: at, Principal: "ops", Action: "source.create", Tenant: "acme", Entity: "source/" + subject, Outcome: "ok",
			Event: meta.Event{Type: meta.EventType("source", "created"), Subject: subject, Data: json.RawMessage(`{"name":"` + subject + `"}`)}}
		b := a.m.NewBatch()
		b.PutPendingChange(meta.NewPendingChange(id, row))
		if err := b.Commit(meta.Sync); err != nil {
			t.Fatal(err)
		}
		b.Close()
	}
	old := time.Now().Add(-2 * settleAfter)
	plant("happened", "p-happened", old)
	plant("lost", "p-lost", old)
	plant("young", "p-young", time.Now())
	rdb := redistest.Client(t, u)
	ctx := context.Background()
	if err := rdb.Set(ctx, ns+"ss:w/happened", "1", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, ns+"ss:w/young", "1", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	a.settlePending(ctx)

	var left []string
	if err := a.m.PendingChanges(func(pc meta.PendingChange) error { left = append(left, pc.ID); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0] != "young" {
		t.Errorf("pending after settling: %v, want [young]", left)
	}
	if rows := auditRows(t, a.m, "source/p-happened"); len(rows) != 1 || !rows[0].At.Equal(old) {
		t.Errorf("audit rows of the change that happened: %+v, want one at %v", rows, old)
	}
	if evs := eventsOf(t, a.m, "p-happened"); len(evs) != 1 {
		t.Errorf("events of the change that happened: %+v, want one", evs)
	}
	for _, s := range []string{"p-lost", "p-young"} {
		if rows := auditRows(t, a.m, "source/"+s); len(rows) != 0 {
			t.Errorf("audit rows of %s: %+v, want none", s, rows)
		}
		if evs := eventsOf(t, a.m, s); len(evs) != 0 {
			t.Errorf("events of %s: %+v, want none", s, evs)
		}
	}
	if !a.reconcile.Load() {
		t.Error("a pending change too young to settle did not keep the node reconciling")
	}
}

// A node that never reached Redis refuses to start, naming
// source_store.url; one that has a mirror serves it, and refuses writes.
func TestFleetBootRedisDown(t *testing.T) {
	u := redistest.URL(t)
	ns := redistest.Namespace(t, u)
	down := "redis://127.0.0.1:1/0"
	openDown := func(dir string) (*meta.Store, *Fleet, []string, error) {
		m := openMeta(t, dir)
		o := fleetOpts(t, m, down, ns, nil)
		o.Timeout = 300 * time.Millisecond
		f, w, err := OpenFleet(o)
		return m, f, w, err
	}

	dir := t.TempDir()
	m, _, _, err := openDown(dir)
	m.Close()
	if err == nil || !strings.Contains(err.Error(), "source_store.url "+down) || !strings.Contains(err.Error(), "first boot") {
		t.Fatalf("first boot with Redis down: %v, want an error naming source_store.url %s", err, down)
	}

	a := startNode(t, dir, u, ns, nil)
	src, err := a.PutSource(ghDoc(t, "gh1", "https://example.com/in"))
	if err != nil {
		t.Fatal(err)
	}
	// The node's own write reaches its mirror at its next catch-up (the
	// pub/sub message of the write).
	waitFor(t, 2*time.Second, "A's mirror does not reach its own write", func() bool { return a.version() >= src.Version })
	a.stop()

	m, f, warnings, err := openDown(dir)
	if err != nil {
		t.Fatalf("a boot with a mirror and Redis down: %v", err)
	}
	defer m.Close()
	if len(warnings) != 1 || !strings.Contains(warnings[0], "serving the local mirror") || !strings.Contains(warnings[0], down) {
		t.Errorf("warnings %q, want one saying the mirror is served", warnings)
	}
	if got := f.Snapshot().Lookup([]byte("gh1")); got == nil || got.Version != src.Version || got.Spec.Verify.Secret.Value != "ghsecret" {
		t.Fatalf("the mirror serves %+v, want gh1 at version %d", got, src.Version)
	}
	if _, err := f.PutSource(update(ghDoc(t, "gh1", "https://example.com/v2"))); code(err) != CodeUnavailable {
		t.Fatalf("a write with Redis down: %v, want %s", err, CodeUnavailable)
	}
	if n := countPending(t, m); n != 0 {
		t.Errorf("a write refused for Redis being down left %d pending changes", n)
	}
}

// A Redis that comes back empty gets the node's mirror back, and a new
// node sees what the first one had written.
func TestFleetRestore(t *testing.T) {
	srv := redistest.StartServer(t)
	ns := "restore:"
	a := startNode(t, "", srv.URL(), ns, nil)
	want := map[string]uint64{}
	for i := 0; i < 3; i++ {
		name := fmt.Sprintf("gh%d", i)
		src, err := a.PutSource(ghDoc(t, name, "https://example.com/in"))
		if err != nil {
			t.Fatal(err)
		}
		want[name] = src.Version
	}
	restored := fleetRestored.Get()
	srv.Stop()
	srv.Start()
	rdb := redistest.Client(t, srv.URL())
	waitFor(t, 5*time.Second, "Redis did not get the mirror's entities back", func() bool {
		n, err := rdb.Exists(context.Background(), ns+"ss:s/gh0", ns+"ss:s/gh1", ns+"ss:s/gh2").Result()
		return err == nil && n == 3
	})
	if got := fleetRestored.Get() - restored; got != 3 {
		t.Errorf("entities restored counter rose by %d, want 3", got)
	}
	if v, err := rdb.Get(context.Background(), ns+"ss:ver").Uint64(); err != nil || v < want["gh2"] {
		t.Errorf("the store's version after the restore: %d (%v), want at least %d", v, err, want["gh2"])
	}
	b := startNode(t, "", srv.URL(), ns, nil)
	for name, v := range want {
		if got := b.Snapshot().Lookup([]byte(name)); got == nil || got.Version != v {
			t.Errorf("a new node holds %s as %+v, want version %d", name, got, v)
		}
	}
	// And the store goes on: a write gets a version past the restored ones.
	src, err := b.PutSource(ghDoc(t, "gh3", "https://example.com/in"))
	if err != nil || src.Version <= want["gh2"] {
		t.Fatalf("a write after the restore: %v, version %d", err, src.Version)
	}
}

// A namespace at another epoch (emptied and written again by a node that
// had no mirror) gets the node's mirror back: the node gives Redis its
// entities, each at a fresh version of the new epoch, keeps the new
// epoch's own, and then holds exactly what Redis holds, in its snapshot
// and in its local mirror, published at once.
func TestFleetEpochChange(t *testing.T) {
	u := redistest.URL(t)
	ns := redistest.Namespace(t, u)
	a := startNode(t, "", u, ns, nil)
	for _, name := range []string{"old1", "old2"} {
		if _, err := a.PutSource(ghDoc(t, name, "https://example.com/in")); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := a.PutRoute(RouteWrite{Tenant: "acme", Create: true, ID: "rt-old", SourceID: "old1", Token: TokenAuto, Audit: meta.AuditRow{Principal: "ops", Action: "route.create"}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, "A's mirror does not reach its writes", func() bool { return a.version() >= 3 })
	newSrc := Build("new1", ghSpec(t, "new1", "https://example.com/new"), 1<<20, false)
	rdb := redistest.Client(t, u)
	ctx := context.Background()
	keys, err := rdb.Keys(ctx, ns+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	k := newFleetKeys(ns)
	_, err = rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, keys...)
		p.Set(ctx, k.epoch, "another-epoch", 0)
		p.Set(ctx, k.ver, 1, 0)
		p.ZAdd(ctx, k.log, redis.Z{Score: 1, Member: "s/new1"})
		p.HSet(ctx, k.prefix+"s/new1", "v", 1, "e", "another-epoch", "t", "acme", "r", string(encodeSourceRecord(newSrc, nil)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, "A did not join the new epoch", func() bool {
		st, _, _ := a.m.Mirror()
		return st.Epoch == "another-epoch"
	})
	// The mirror's state names the epoch before the snapshot that holds
	// it is published (a CI run under -race read the snapshot in
	// between): wait for the snapshot too, then hold it to everything.
	waitFor(t, 2*time.Second, "A's snapshot did not take the new epoch", func() bool {
		return a.Snapshot().Lookup([]byte("new1")) != nil
	})
	s := a.Snapshot()
	for _, name := range []string{"new1", "old1", "old2"} {
		if s.Lookup([]byte(name)) == nil {
			t.Errorf("A does not serve %s after joining the new epoch", name)
		}
	}
	if s.Route("acme", "rt-old") == nil {
		t.Error("A does not serve its route after joining the new epoch")
	}
	if got := s.Lookup([]byte("new1")); got == nil || got.Spec.Sinks[0].URL != "https://example.com/new" {
		t.Errorf("new1 is not the new epoch's: %+v", got)
	}
	// Redis holds A's entities again, each at a version of the new epoch
	// above the new epoch's own.
	for _, m := range []string{"s/old1", "s/old2", "r/acme/rt-old"} {
		v, err := rdb.HGet(ctx, k.prefix+m, "v").Uint64()
		if err != nil || v <= 1 {
			t.Errorf("%s in Redis: version %d (%v), want above 1", m, v, err)
		}
	}
	if n, err := rdb.Keys(ctx, k.prefix+"tok/*").Result(); err != nil || len(n) != 1 {
		t.Errorf("the route's token claim: %v %v, want it claimed again", n, err)
	}
	// The local mirror is Redis's, and so is its state.
	var mirrored []string
	if err := a.m.Mirrored(meta.MirrorSource, func(_, name string, _ uint64, _ []byte) error { mirrored = append(mirrored, name); return nil }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(mirrored, " ") != "new1 old1 old2" {
		t.Errorf("the local mirror holds %v, want [new1 old1 old2]", mirrored)
	}
	ver, _ := rdb.Get(ctx, k.ver).Uint64()
	if st, _, _ := a.m.Mirror(); st.Version != ver {
		t.Errorf("the mirror's state %+v, want Redis's version %d", st, ver)
	}
	if src, err := a.PutSource(ghDoc(t, "new2", "https://example.com/in")); err != nil || src.Version != ver+1 {
		t.Fatalf("a write in the new epoch: %v (version %d, want %d)", err, src.Version, ver+1)
	}
}

// ghSpec is ghDoc's spec as a store holds it.
func ghSpec(t *testing.T, name, sinkURL string) config.Source {
	t.Helper()
	spec := ghDoc(t, name, sinkURL).Doc.Spec
	spec.TenantID = "acme"
	if probs := config.ResolveLiteralSecrets(&spec); len(probs) > 0 {
		t.Fatal(probs)
	}
	config.DefaultSource(&spec, 0)
	return spec
}

// A record this node cannot open (sealed under a key it does not have) is
// refused at runtime: the source keeps its last form, and the refusal is
// counted.
func TestFleetRefusedRecord(t *testing.T) {
	u := redistest.URL(t)
	ns := redistest.Namespace(t, u)
	kr := testKeyring(t, testKey(1), nil)
	a := startNode(t, "", u, ns, kr)
	b := startNode(t, "", u, ns, kr)
	src, err := a.PutSource(ghDoc(t, "gh1", "https://example.com/in"))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, "B does not see gh1", func() bool { return b.Snapshot().Lookup([]byte("gh1")) != nil })
	refused := fleetRefused.Get()

	// Another node, with another kek, updates it.
	other := Build("gh1", ghSpec(t, "gh1", "https://example.com/other-kek"), 1<<20, false)
	audit := meta.AuditRow{At: time.Now(), Principal: "ops", Action: "source.update", Tenant: "acme", Entity: "source/gh1", Outcome: "ok",
		Event: meta.Event{Type: meta.EventType("source", "updated"), Subject: "gh1"}}
	v, err := a.Commit([]Op{{Kind: PutSource, Tenant: "acme", Name: "gh1", Record: encodeSourceRecord(other, testKeyring(t, testKey(2), nil)), Expect: src.Version}}, audit)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, "B did not read the new version", func() bool { return b.version() >= v })
	if got := b.Snapshot().Lookup([]byte("gh1")); got == nil || got.Version != src.Version || got.Spec.Sinks[0].URL != "https://example.com/in" {
		t.Fatalf("B serves %+v, want gh1's last form (version %d)", got, src.Version)
	}
	if got := fleetRefused.Get() - refused; got < 1 {
		t.Fatalf("records refused rose by %d, want at least 1", got)
	}
}

// A node that was stopped while another wrote boots with what changed
// meanwhile: updates, creates and removals.
func TestFleetBootCatchUp(t *testing.T) {
	u := redistest.URL(t)
	ns := redistest.Namespace(t, u)
	a := startNode(t, "", u, ns, nil)
	dir := t.TempDir()
	b := startNode(t, dir, u, ns, nil)
	var last *Source
	for _, name := range []string{"keep", "gone", "changed"} {
		src, err := a.PutSource(ghDoc(t, name, "https://example.com/v1"))
		if err != nil {
			t.Fatal(err)
		}
		last = src
	}
	waitFor(t, 2*time.Second, "B's mirror does not reach A's writes", func() bool { return b.version() >= last.Version })
	b.stop()

	if _, err := a.DeleteSource(SourceDelete{Tenant: "acme", Name: "gone", Audit: meta.AuditRow{Principal: "ops", Action: "source.delete"}}); err != nil {
		t.Fatal(err)
	}
	changed, err := a.PutSource(update(ghDoc(t, "changed", "https://example.com/v2")))
	if err != nil {
		t.Fatal(err)
	}
	born, err := a.PutSource(ghDoc(t, "born", "https://example.com/v1"))
	if err != nil {
		t.Fatal(err)
	}

	b = startNode(t, dir, u, ns, nil)
	s := b.Snapshot() // at boot, before any catch-up of Run could help
	if s.Lookup([]byte("gone")) != nil {
		t.Error("B boots serving a source removed while it was stopped")
	}
	if got := s.Lookup([]byte("changed")); got == nil || got.Version != changed.Version || got.Spec.Sinks[0].URL != "https://example.com/v2" {
		t.Errorf("B boots with changed as %+v, want version %d", got, changed.Version)
	}
	if got := s.Lookup([]byte("born")); got == nil || got.Version != born.Version {
		t.Errorf("B boots with born as %+v, want version %d", got, born.Version)
	}
	if s.Lookup([]byte("keep")) == nil {
		t.Error("B boots without a source nobody touched")
	}
	if st, _, _ := b.m.Mirror(); st.Version != born.Version {
		t.Errorf("B's mirror is at version %d, want %d", st.Version, born.Version)
	}
}

// A new epoch below the version the node was at is a namespace Redis
// lost and a node without a mirror numbered afresh: the node gives the
// new epoch back its mirror (its sources come back in Redis), serves the
// new epoch's sources too, and its next write serves at once, numbered
// above everything it restored.
func TestFleetEpochChangeLowerVersion(t *testing.T) {
	u := redistest.URL(t)
	ns := redistest.Namespace(t, u)
	a := startNode(t, "", u, ns, nil)
	for i := 0; i < 5; i++ {
		if _, err := a.PutSource(ghDoc(t, fmt.Sprintf("old%d", i), "https://example.com/in")); err != nil {
			t.Fatal(err)
		}
	}
	newSrc := Build("new1", ghSpec(t, "new1", "https://example.com/new"), 1<<20, false)
	rdb := redistest.Client(t, u)
	ctx := context.Background()
	keys, err := rdb.Keys(ctx, ns+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	k := newFleetKeys(ns)
	_, err = rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, keys...)
		p.Set(ctx, k.epoch, "low-epoch", 0)
		p.Set(ctx, k.ver, 1, 0)
		p.ZAdd(ctx, k.log, redis.Z{Score: 1, Member: "s/new1"})
		p.HSet(ctx, k.prefix+"s/new1", "v", 1, "t", "acme", "r", string(encodeSourceRecord(newSrc, nil)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, "A did not take the new epoch's source and keep its own", func() bool {
		return a.Snapshot().Lookup([]byte("new1")) != nil && a.Snapshot().Lookup([]byte("old0")) != nil
	})
	for i := 0; i < 5; i++ {
		if n, err := rdb.Exists(ctx, fmt.Sprintf("%ss/old%d", k.prefix, i)).Result(); err != nil || n != 1 {
			t.Errorf("old%d is not back in Redis (%d, %v)", i, n, err)
		}
	}
	// Run's catch-up on the write's own message would publish it too, a
	// moment later: without Run, only the write itself publishes.
	a.Close()
	src, err := a.PutSource(ghDoc(t, "new2", "https://example.com/in"))
	if err != nil {
		t.Fatal(err)
	}
	if src.Version <= 5 {
		t.Fatalf("the write's version %d, want it above the restored 5", src.Version)
	}
	if got := a.Snapshot().Lookup([]byte("new2")); got == nil {
		t.Fatal("a source created in a new epoch below the node's old version is not served when PutSource returns")
	}
}

// Redis restarting empty right after a write was answered (before the
// node's catch-up put the write into its mirror) must not leave the
// writer serving a source the store no longer has: the restore gives
// Redis back the node's acknowledged write too.
func TestFleetRestoreOwnLastWrite(t *testing.T) {
	srv := redistest.StartServer(t)
	ns := "restore-last:"
	a := startNode(t, "", srv.URL(), ns, nil)
	if _, err := a.PutSource(ghDoc(t, "first", "https://example.com/in")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, "A's mirror does not reach its write", func() bool { return a.version() >= 1 })
	a.Close() // no catch-up between the write below and Redis's restart
	last, err := a.PutSource(ghDoc(t, "last", "https://example.com/in"))
	if err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	srv.Start()
	a.catchUp(context.Background())
	if a.Snapshot().Lookup([]byte("last")) == nil {
		t.Fatal("A dropped its own write") // not the failure this test is about
	}
	rdb := redistest.Client(t, srv.URL())
	n, err := rdb.Exists(context.Background(), ns+"ss:s/first", ns+"ss:s/last").Result()
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("after the restore Redis holds %d of A's 2 sources: A serves %q (version %d), which no other node will", n, "last", last.Version)
		_, err := a.DeleteSource(SourceDelete{Tenant: "acme", Name: "last", Audit: meta.AuditRow{Principal: "ops", Action: "source.delete"}})
		t.Errorf("and A cannot remove it: %v; A still serves it: %v", err, a.Snapshot().Lookup([]byte("last")) != nil)
	}
}

// A token a route gives up (revoked by an update, or with the route's
// removal) is free for a route of another node; one it keeps stays its
// own through updates.
func TestFleetTokenFreed(t *testing.T) {
	u := redistest.URL(t)
	ns := redistest.Namespace(t, u)
	a := startNode(t, "", u, ns, nil)
	b := startNode(t, "", u, ns, nil)
	if _, err := a.PutSource(ghDoc(t, "gh1", "https://example.com/in")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, "B does not see the source", func() bool { return b.Snapshot().Lookup([]byte("gh1")) != nil })
	audit := meta.AuditRow{Principal: "ops", Action: "route.write"}
	const tok1, tok2 = "first-token-0123456789abcdef", "second-token-0123456789abcdef"
	if _, _, err := a.PutRoute(RouteWrite{Tenant: "acme", Create: true, ID: "ra", SourceID: "gh1", Token: tok1, Audit: audit}); err != nil {
		t.Fatal(err)
	}
	// An update adding a second token keeps the first.
	if _, _, err := a.PutRoute(RouteWrite{Tenant: "acme", ID: "ra", SourceID: "gh1", Token: tok2, Audit: audit}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, "B does not see ra's tokens", func() bool {
		r := b.Snapshot().RouteByToken([]byte(tok2))
		return r != nil && r.ID == "ra"
	})
	// B's route cannot take either while ra holds them; the store says
	// so, not only B's snapshot.
	for _, tok := range []string{tok1, tok2} {
		if _, err := b.Commit(tokenOps("acme", "rb", nil, &Route{Tokens: []Token{newToken(tok, time.Now())}}), meta.AuditRow{}); code(err) != CodeTokenExists {
			t.Errorf("claiming ra's token %s from B: %v, want %s", tok, err, CodeTokenExists)
		}
	}
	// ra keeps tok2 only: tok1 is free.
	ra := a.Snapshot().Route("acme", "ra")
	var keep []string
	for _, tk := range ra.Tokens {
		if tk.Digest == newToken(tok2, time.Now()).Digest {
			keep = append(keep, tk.ID)
		}
	}
	if _, _, err := a.PutRoute(RouteWrite{Tenant: "acme", ID: "ra", SourceID: "gh1", KeepTokens: keep, Audit: audit}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, "B still finds the revoked token", func() bool { return b.Snapshot().RouteByToken([]byte(tok1)) == nil })
	if _, _, err := b.PutRoute(RouteWrite{Tenant: "acme", Create: true, ID: "rb", SourceID: "gh1", Token: tok1, Audit: audit}); err != nil {
		t.Fatalf("a revoked token is not free: %v", err)
	}
	// ra removed: tok2 is free.
	if _, err := a.DeleteRoute(RouteDelete{Tenant: "acme", ID: "ra", Audit: audit}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, "B still finds the removed route's token", func() bool { return b.Snapshot().RouteByToken([]byte(tok2)) == nil })
	if _, _, err := b.PutRoute(RouteWrite{Tenant: "acme", Create: true, ID: "rc", SourceID: "gh1", Token: tok2, Audit: audit}); err != nil {
		t.Fatalf("a removed route's token is not free: %v", err)
	}
	waitFor(t, 2*time.Second, "A does not find rb and rc by their tokens", func() bool {
		r1, r2 := a.Snapshot().RouteByToken([]byte(tok1)), a.Snapshot().RouteByToken([]byte(tok2))
		return r1 != nil && r1.ID == "rb" && r2 != nil && r2.ID == "rc"
	})
}

// At boot, a stored secret no configured key opens stops the node, naming
// the source and the field; secrets in clear while a kek is set are a
// warning that counts them.
func TestFleetBootSecrets(t *testing.T) {
	u := redistest.URL(t)
	ns := redistest.Namespace(t, u)
	clear := startNode(t, "", u, ns, nil)
	if _, err := clear.PutSource(ghDoc(t, "gh-clear", "https://example.com/in")); err != nil {
		t.Fatal(err)
	}
	clear.stop()

	kr := testKeyring(t, testKey(1), nil)
	a := startNode(t, "", u, ns, kr)
	want := "1 stored sources hold 2 secrets in clear although secrets.kek is set"
	if len(a.warnings) != 1 || !strings.Contains(a.warnings[0], want) {
		t.Errorf("warnings %q, want %q", a.warnings, want)
	}
	if got := a.Snapshot().Lookup([]byte("gh-clear")); got == nil || got.Spec.Verify.Secret.Value != "ghsecret" {
		t.Fatalf("the clear source: %+v", got)
	}
	if _, err := a.PutSource(ghDoc(t, "gh-sealed", "https://example.com/in")); err != nil {
		t.Fatal(err)
	}
	rdb := redistest.Client(t, u)
	rec, err := rdb.HGet(context.Background(), ns+"ss:s/gh-sealed", "r").Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(rec), "ghsecret") || !strings.Contains(string(rec), `"verify.secret"`) {
		t.Fatalf("a write with a kek stored %s", rec)
	}

	m := openMeta(t, t.TempDir())
	defer m.Close()
	_, _, err = OpenFleet(fleetOpts(t, m, u, ns, testKeyring(t, testKey(2), nil)))
	if err == nil || !strings.Contains(err.Error(), `stored source "gh-sealed" of tenant "acme": field `) {
		t.Fatalf("a boot with another kek: %v, want an error naming the source and the field", err)
	}
}

// Redis going away at runtime: the node keeps serving its mirror, answers
// writes 503 source_store_unavailable (leaving no pending change), says
// so in its metrics, and writes again once Redis is back.
func TestFleetRedisDownAtRuntime(t *testing.T) {
	srv := redistest.StartServer(t)
	ns := "down:"
	a := startNode(t, "", srv.URL(), ns, nil)
	src, err := a.PutSource(ghDoc(t, "gh1", "https://example.com/in"))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, "A's mirror does not reach its write", func() bool { return a.version() >= src.Version })
	failures, reconnects := fleetFailures.Get(), fleetUp.Get()
	srv.Stop()
	_, err = a.PutSource(update(ghDoc(t, "gh1", "https://example.com/v2")))
	if code(err) != CodeUnavailable || !strings.Contains(err.Error(), "source_store.url "+srv.URL()) {
		t.Fatalf("a write with Redis down: %v, want %s naming source_store.url", err, CodeUnavailable)
	}
	if got := a.Snapshot().Lookup([]byte("gh1")); got == nil || got.Spec.Sinks[0].URL != "https://example.com/in" {
		t.Fatalf("with Redis down A serves %+v", got)
	}
	if !fleetDown.Load() || fleetFailures.Get() <= failures {
		t.Errorf("redis_up %v, failures %d (were %d)", !fleetDown.Load(), fleetFailures.Get(), failures)
	}
	if n := countPending(t, a.m); n != 0 {
		t.Errorf("%d pending changes after a write refused before it was sent", n)
	}
	srv.Start()
	waitFor(t, 5*time.Second, "A does not see Redis back", func() bool { return !fleetDown.Load() })
	if fleetUp.Get() != reconnects+1 {
		t.Errorf("reconnects %d, want %d", fleetUp.Get(), reconnects+1)
	}
	upd, err := a.PutSource(update(ghDoc(t, "gh1", "https://example.com/v2")))
	if err != nil {
		t.Fatalf("a write once Redis is back: %v", err)
	}
	if upd.Version <= src.Version || a.Snapshot().Lookup([]byte("gh1")).Spec.Sinks[0].URL != "https://example.com/v2" {
		t.Fatalf("the write once Redis is back: version %d (was %d)", upd.Version, src.Version)
	}
}

// A source name removed by one tenant and created again by another while
// a node was behind: the node's mirror holds the new owner only, so that
// the node boots serving the new owner's source, not the removed one.
func TestFleetNameChangesTenant(t *testing.T) {
	u := redistest.URL(t)
	ns := redistest.Namespace(t, u)
	a := startNode(t, "", u, ns, nil)
	dir := t.TempDir()
	b := startNode(t, dir, u, ns, nil)
	zeta := ghDoc(t, "mv", "https://example.com/zeta")
	zeta.Tenant = "zeta"
	old, err := a.PutSource(zeta)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, "B's mirror does not reach the create", func() bool { return b.version() >= old.Version })
	b.Close() // B falls behind
	if _, err := a.DeleteSource(SourceDelete{Tenant: "zeta", Name: "mv", Audit: meta.AuditRow{Principal: "ops", Action: "source.delete"}}); err != nil {
		t.Fatal(err)
	}
	acme, err := a.PutSource(ghDoc(t, "mv", "https://example.com/acme"))
	if err != nil {
		t.Fatal(err)
	}
	b.catchUp(context.Background())
	if got := b.Snapshot().Lookup([]byte("mv")); got == nil || got.TenantID != "acme" || got.Version != acme.Version {
		t.Fatalf("B serves mv as %+v, want acme's at version %d", got, acme.Version)
	}
	var mirrored []string
	if err := b.m.Mirrored(meta.MirrorSource, func(tenant, name string, v uint64, _ []byte) error {
		mirrored = append(mirrored, fmt.Sprintf("%s/%s@%d", tenant, name, v))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("acme/mv@%d", acme.Version); len(mirrored) != 1 || mirrored[0] != want {
		t.Errorf("B's mirror holds %v, want [%s]", mirrored, want)
	}
	b.stop()
	b = startNode(t, dir, u, ns, nil)
	if got := b.Snapshot().Lookup([]byte("mv")); got == nil || got.TenantID != "acme" || got.Spec.Sinks[0].URL != "https://example.com/acme" {
		t.Errorf("B boots serving mv as %+v, want acme's", got)
	}
}

// A write checked in an epoch the namespace left is refused as
// unavailable (the node reloads), and leaves nothing behind.
func TestFleetCommitOtherEpoch(t *testing.T) {
	u := redistest.URL(t)
	ns := redistest.Namespace(t, u)
	a := startNode(t, "", u, ns, nil)
	src, err := a.PutSource(ghDoc(t, "gh1", "https://example.com/in"))
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	rdb := redistest.Client(t, u)
	if err := rdb.Set(context.Background(), ns+"ss:epoch", "moved-on", 0).Err(); err != nil {
		t.Fatal(err)
	}
	audit := meta.AuditRow{At: time.Now(), Principal: "ops", Action: "source.update", Tenant: "acme", Entity: "source/gh1", Outcome: "ok",
		Event: meta.Event{Type: meta.EventType("source", "updated"), Subject: "gh1"}}
	_, err = a.Commit([]Op{{Kind: PutSource, Tenant: "acme", Name: "gh1", Record: encodeSourceRecord(src, nil), Expect: src.Version}}, audit)
	if code(err) != CodeUnavailable || !strings.Contains(err.Error(), "changed epoch") {
		t.Fatalf("a write in a left epoch: %v, want %s saying the epoch changed", err, CodeUnavailable)
	}
	if n := countPending(t, a.m); n != 0 {
		t.Errorf("%d pending changes left", n)
	}
	if rows := auditRows(t, a.m, "source/gh1"); len(rows) != 1 {
		t.Errorf("%d audit rows of gh1, want the create's only", len(rows))
	}
	if v, _ := rdb.HGet(context.Background(), ns+"ss:s/gh1", "v").Uint64(); v != src.Version {
		t.Errorf("Redis holds gh1 at version %d, want %d", v, src.Version)
	}
}

// A node moved to another namespace drops the mirror of the old one: it
// serves the new namespace only.
func TestFleetNamespaceChanged(t *testing.T) {
	u := redistest.URL(t)
	ns1, ns2 := redistest.Namespace(t, u), redistest.Namespace(t, u)
	dir := t.TempDir()
	a := startNode(t, dir, u, ns1, nil)
	src, err := a.PutSource(ghDoc(t, "in-ns1", "https://example.com/in"))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, "A's mirror does not reach its write", func() bool { return a.version() >= src.Version })
	a.stop()
	a = startNode(t, dir, u, ns2, nil)
	if len(a.warnings) != 1 || !strings.Contains(a.warnings[0], fmt.Sprintf("the local mirror is of source_store.namespace %q, not %q", ns1, ns2)) {
		t.Errorf("warnings %q", a.warnings)
	}
	if a.Snapshot().Lookup([]byte("in-ns1")) != nil {
		t.Error("the node serves the old namespace's source")
	}
	rdb := redistest.Client(t, u)
	if n, _ := rdb.Exists(context.Background(), ns2+"ss:s/in-ns1").Result(); n != 0 {
		t.Error("the old namespace's source was given to the new one")
	}
}
