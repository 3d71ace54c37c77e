package wal_test

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/wal"
)

// The tenant erase (issue 20): an erased tenant's ordinal is never given
// again, even once every WAL file holding it is gone, and its name is
// free: the next hook of the name is a new tenant.

// mirrorCalls records the tenant mirror writes of a testMeta.
type mirrorCalls struct {
	mu    sync.Mutex
	calls []string
}

func (c *mirrorCalls) add(name string, ord uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, fmt.Sprintf("%s=%d", name, ord))
}

func (c *mirrorCalls) list() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.calls...)
}

// TestFloorAboveErasedOrdinals: ReadFloor puts the next ordinal above
// every ordinal a tombstone names, the highest given included (its mirror
// record went with the erase), and drops a mirror record of an erased
// ordinal; a log with no file left numbers the next tenant above them.
func TestFloorAboveErasedOrdinals(t *testing.T) {
	m := &testMeta{tenants: map[string]uint32{"acme": 1, "gone": 3}, erased: map[uint32]string{3: "gone", 7: "old"}}
	f, err := wal.ReadFloor(m)
	if err != nil {
		t.Fatal(err)
	}
	if f.NextOrdinal != 8 {
		t.Fatalf("NextOrdinal = %d, want 8 (above erased ordinal 7)", f.NextOrdinal)
	}
	if _, ok := f.Tenants["gone"]; ok || f.Tenants["acme"] != 1 || len(f.Tenants) != 1 {
		t.Fatalf("floor tenants %v, want only acme=1 (gone's ordinal 3 is erased)", f.Tenants)
	}
	n := wal.NewNumbers(testNode, f, 0)
	if o, isNew, err := n.Tenant([]byte("gone")); err != nil || !isNew || o != 8 {
		t.Fatalf("Numbers: erased name gone offered %d new=%v err=%v, want a new ordinal 8", o, isNew, err)
	}
	if got := n.TenantCount(); got != 7 {
		t.Fatalf("Numbers.TenantCount = %d, want 7 (every ordinal given, erased ones too)", got)
	}

	w := openWAL(t, wal.Options{FS: vfs.NewMem(), Meta: m})
	a := mustCommit(t, w, hook{tenant: "fresh", tag: "x"})
	if a.Ordinal != 8 {
		t.Fatalf("a new tenant got ordinal %d after erased ordinals 3 and 7, want 8", a.Ordinal)
	}
	if o, ok := w.Ordinal("gone"); ok {
		t.Fatalf("erased tenant gone still maps to %d", o)
	}
	closeWAL(t, w)
}

// TestReopenSkipsErasedTenantRecord: the log still holds the tenant record
// of a tenant erased since (its WAL file is not sealed yet); Open neither
// maps the name to it nor mirrors it back, and the name's next hook gets a
// fresh ordinal, above every erased one, with its own tenant record.
func TestReopenSkipsErasedTenantRecord(t *testing.T) {
	fs := vfs.NewMem()
	var mirrored mirrorCalls
	m := &testMeta{onTenant: mirrored.add}
	w := openWAL(t, wal.Options{FS: fs, Meta: m})
	if a := mustCommit(t, w, hook{tenant: "acme", tag: "a1"}); a.Ordinal != 1 {
		t.Fatalf("acme got %d, want 1", a.Ordinal)
	}
	if a := mustCommit(t, w, hook{tenant: "beta", tag: "b1"}); a.Ordinal != 2 {
		t.Fatalf("beta got %d, want 2", a.Ordinal)
	}
	closeWAL(t, w)

	// acme is erased: the tombstone names ordinal 1, and its mirror record
	// went in the same batch (m.tenants holds none here).
	m.erased = map[uint32]string{1: "acme"}
	mirrored = mirrorCalls{}
	w = openWAL(t, wal.Options{FS: fs, Meta: m})
	if o, ok := w.Ordinal("acme"); ok {
		t.Fatalf("the erased tenant acme maps to %d after a reopen", o)
	}
	if o, ok := w.Ordinal("beta"); !ok || o != 2 {
		t.Fatalf("beta maps to %d %v, want 2", o, ok)
	}
	for _, c := range mirrored.list() {
		if c == "acme=1" {
			t.Fatal("Open mirrored the erased tenant acme=1 back into the meta store")
		}
	}
	a := mustCommit(t, w, hook{tenant: "acme", tag: "a2"})
	if a.Ordinal != 3 {
		t.Fatalf("acme, sending again, got ordinal %d, want a fresh 3", a.Ordinal)
	}
	if got := w.TenantCount(); got != 3 {
		t.Fatalf("TenantCount = %d, want 3", got)
	}
	closeWAL(t, w)
	var recs []string
	for _, r := range mustReadLog(t, fs, dir) {
		if r.Kind == envelope.KindTenant {
			recs = append(recs, fmt.Sprintf("%s=%d", r.Tenant, r.Ordinal))
		}
	}
	if want := []string{"acme=1", "beta=2", "acme=3"}; !slices.Equal(recs, want) {
		t.Fatalf("tenant records in the log %v, want %v", recs, want)
	}
}

// TestForgetTenantThenCommit: ForgetTenant frees the name, its next hook
// is a new tenant (a new ordinal, a tenant record in its batch, a mirror
// write), a ForgetTenant that names another ordinal changes nothing, and
// with both records in the log the name maps to the new one at Open
// whether or not the tombstone of the old one is written yet.
func TestForgetTenantThenCommit(t *testing.T) {
	fs := vfs.NewMem()
	var mirrored mirrorCalls
	m := &testMeta{onTenant: mirrored.add}
	w := openWAL(t, wal.Options{FS: fs, Meta: m})
	mustCommit(t, w, hook{tenant: "acme", tag: "a1"})
	mustCommit(t, w, hook{tenant: "beta", tag: "b1"})
	w.ForgetTenant("acme", 2) // not acme's ordinal: nothing happens
	if o, ok := w.Ordinal("acme"); !ok || o != 1 {
		t.Fatalf("ForgetTenant with another ordinal: acme maps to %d %v, want 1", o, ok)
	}
	w.ForgetTenant("acme", 1)
	if o, ok := w.Ordinal("acme"); ok {
		t.Fatalf("after ForgetTenant acme still maps to %d", o)
	}
	a := mustCommit(t, w, hook{tenant: "acme", tag: "a2"})
	if a.Ordinal != 3 {
		t.Fatalf("acme after ForgetTenant got %d, want the new ordinal 3", a.Ordinal)
	}
	if calls := mirrored.list(); calls[len(calls)-1] != "acme=3" {
		t.Fatalf("mirror writes %v, want acme=3 last", calls)
	}
	closeWAL(t, w)
	recs := mustReadLog(t, fs, dir)
	var sawNew bool
	for i, r := range recs {
		if r.Kind == envelope.KindTenant && r.Tenant == "acme" && r.Ordinal == 3 {
			sawNew = i+1 < len(recs) && recs[i+1].Kind == envelope.KindEnvelope && recs[i+1].Env.DedupeKey == "a2"
		}
	}
	if !sawNew {
		t.Fatal("the log holds no tenant record acme=3 right before acme's new hook")
	}

	for _, tc := range []struct {
		name   string
		erased map[uint32]string
	}{{"tombstone written", map[uint32]string{1: "acme"}}, {"erase not finished", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			m := &testMeta{erased: tc.erased}
			w := openWAL(t, wal.Options{FS: copyFS(t, fs, dir), Meta: m})
			defer closeWAL(t, w)
			if o, ok := w.Ordinal("acme"); !ok || o != 3 {
				t.Fatalf("the log holds acme=1 and acme=3: acme maps to %d %v, want 3", o, ok)
			}
			if a := mustCommit(t, w, hook{tenant: "gamma", tag: "g"}); a.Ordinal != 4 {
				t.Fatalf("a new tenant got %d, want 4", a.Ordinal)
			}
		})
	}
}

// TestMaxTenantsCountsErased: tenants.max counts every ordinal given: an
// erased tenant's still counts, in the running log (ForgetTenant) and
// after a reopen whose log holds nothing of it (only the tombstone).
func TestMaxTenantsCountsErased(t *testing.T) {
	m := &testMeta{}
	w := openWAL(t, wal.Options{FS: vfs.NewMem(), Meta: m, MaxTenants: 2})
	mustCommit(t, w, hook{tenant: "a", tag: "a1"})
	mustCommit(t, w, hook{tenant: "b", tag: "b1"})
	w.ForgetTenant("a", 1)
	if !w.TenantsFull() || w.TenantCount() != 2 {
		t.Fatalf("after a's erase: full=%v count=%d, want full with 2 (ordinals are never reused)", w.TenantsFull(), w.TenantCount())
	}
	if _, err := commit(w, hook{tenant: "a", tag: "a2"}); !errors.Is(err, wal.ErrTenantLimit) {
		t.Fatalf("the erased tenant sending again past tenants.max 2: %v, want ErrTenantLimit", err)
	}
	closeWAL(t, w)

	// A fresh log (every file sealed and gone): only the mirror and the
	// tombstone say what was given.
	m2 := &testMeta{tenants: map[string]uint32{"b": 2}, erased: map[uint32]string{1: "a"}}
	w = openWAL(t, wal.Options{FS: vfs.NewMem(), Meta: m2, MaxTenants: 2})
	defer closeWAL(t, w)
	if got := w.TenantCount(); got != 2 || !w.TenantsFull() {
		t.Fatalf("after a reopen: TenantCount %d full=%v, want 2 and full", got, w.TenantsFull())
	}
	if _, err := commit(w, hook{tenant: "c", tag: "c1"}); !errors.Is(err, wal.ErrTenantLimit) {
		t.Fatalf("a new tenant with 1 live and 1 erased of tenants.max 2: %v, want ErrTenantLimit", err)
	}
}

// TestReservedErasedOrdinals: wal.type: none numbers above the erased
// ordinals too, and ForgetTenant gives the name a new ordinal, recorded
// synced before it is given.
func TestReservedErasedOrdinals(t *testing.T) {
	var mirrored mirrorCalls
	m := &testMeta{tenants: map[string]uint32{"live": 1}, erased: map[uint32]string{4: "gone"}, onTenant: mirrored.add}
	r, err := wal.OpenReserved(m, testNode, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _, ord, err := r.Assign("gone", startMs)
	if err != nil || ord != 5 {
		t.Fatalf("the erased name gone got %d (%v), want a fresh 5", ord, err)
	}
	r.ForgetTenant("gone", 5)
	_, _, ord, err = r.Assign("gone", startMs+1)
	if err != nil || ord != 6 {
		t.Fatalf("after ForgetTenant gone got %d (%v), want 6", ord, err)
	}
	if got, want := mirrored.list(), []string{"gone=5", "gone=6"}; !slices.Equal(got, want) {
		t.Fatalf("mirror writes %v, want %v", got, want)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
}
