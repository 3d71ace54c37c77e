package wal_test

// The numbering of wal.type: none (wal.Reserved) over the node's real meta
// store, on pebble's crashable file system: a crash keeps only what was
// synced, which is what these tests hold Reserved to (DESIGN.md §6 items 1
// and 2 without a log).

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/wal"
)

const reservedNode = 7

// reservedRig is a meta store on fs and a Reserved on it.
type reservedRig struct {
	t   *testing.T
	fs  vfs.FS
	max int // tenants.max
	m   *meta.Store
	r   *wal.Reserved
}

func openReserved(t *testing.T, fs vfs.FS, maxTenants int) *reservedRig {
	t.Helper()
	m, err := meta.Open(meta.Options{Dir: "meta", FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	r, err := wal.OpenReserved(m, reservedNode, maxTenants)
	if err != nil {
		m.Close()
		t.Fatal(err)
	}
	return &reservedRig{t: t, fs: fs, max: maxTenants, m: m, r: r}
}

// stop is a clean stop: the floor is recorded, the store closed.
func (g *reservedRig) stop() {
	g.t.Helper()
	if err := g.r.Close(); err != nil {
		g.t.Fatal(err)
	}
	if err := g.m.Close(); err != nil {
		g.t.Fatal(err)
	}
}

// assign numbers a hook of tenant at the clock nowMs and checks the id
// holds the seq and the node.
func (g *reservedRig) assign(tenant string, nowMs uint64) (uint64, envelope.ID, uint32) {
	g.t.Helper()
	seq, id, ord, err := g.r.Assign(tenant, nowMs)
	if err != nil {
		g.t.Fatalf("Assign(%s): %v", tenant, err)
	}
	if seq == 0 || id.Seq() != seq || id.Node() != reservedNode || ord == 0 {
		g.t.Fatalf("Assign(%s) = seq %d id %v ordinal %d: want a seq, an id holding it and node %d, an ordinal", tenant, seq, id, ord, reservedNode)
	}
	return seq, id, ord
}

// ordinals checks that tenants keep one ordinal and never share one.
type ordinals map[string]uint32

func (o ordinals) check(t *testing.T, tenant string, ord uint32) {
	t.Helper()
	if prev, ok := o[tenant]; ok && prev != ord {
		t.Fatalf("tenant %s has ordinal %d, earlier %d", tenant, ord, prev)
	}
	for other, x := range o {
		if other != tenant && x == ord {
			t.Fatalf("tenants %s and %s share ordinal %d", tenant, other, ord)
		}
	}
	o[tenant] = ord
}

// Seqs and ids increase in assignment order, sequentially and from many
// goroutines; each tenant keeps one ordinal and a new tenant gets a new
// one; after a stop and a reopen numbering continues above the floor and
// the ordinals are the same; a new tenant's ordinal is on disk at once.
func TestReservedNumberingAndOrdinals(t *testing.T) {
	mem := vfs.NewCrashableMem()
	g := openReserved(t, mem, 0)
	ords := ordinals{}
	now := uint64(1_764_445_200_000)

	var lastSeq uint64
	var lastID envelope.ID
	for i := range 30 {
		tenant := []string{"a", "b", "c"}[i%3]
		seq, id, ord := g.assign(tenant, now)
		if seq != lastSeq+1 || bytes.Compare(id[:], lastID[:]) <= 0 {
			t.Fatalf("hook %d: seq %d id %v after seq %d id %v, want the next seq and a greater id", i, seq, id, lastSeq, lastID)
		}
		lastSeq, lastID = seq, id
		ords.check(t, tenant, ord)
	}

	// Concurrent assignments: seqs are unique and dense, and ids sort as
	// seqs do.
	const workers, each = 16, 50
	type res struct {
		seq uint64
		id  envelope.ID
	}
	out := make([][]res, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range each {
				seq, id, _, err := g.r.Assign(fmt.Sprintf("w%d", w%4), now)
				if err != nil {
					t.Error(err)
					return
				}
				out[w] = append(out[w], res{seq, id})
			}
		})
	}
	wg.Wait()
	all := slices.Concat(out...)
	slices.SortFunc(all, func(x, y res) int { return int(x.seq) - int(y.seq) })
	for i, x := range all {
		if x.seq != lastSeq+1+uint64(i) {
			t.Fatalf("concurrent assignments: seq %d at place %d, want %d (seqs must be unique and dense)", x.seq, i, lastSeq+1+uint64(i))
		}
		if i > 0 && bytes.Compare(x.id[:], all[i-1].id[:]) <= 0 {
			t.Fatalf("concurrent assignments: seq %d has id %v, not above seq %d's %v", x.seq, x.id, all[i-1].seq, all[i-1].id)
		}
	}
	for w := range 4 {
		tenant := fmt.Sprintf("w%d", w)
		o, ok := g.r.Ordinal(tenant)
		if !ok {
			t.Fatalf("Ordinal(%s) is unknown after its hooks", tenant)
		}
		ords.check(t, tenant, o)
	}
	lastSeq, lastID = all[len(all)-1].seq, all[len(all)-1].id

	// Stop (the floor is written) and reopen: numbering continues, old
	// tenants keep their ordinals, a new tenant gets a new one.
	g.stop()
	g = openReserved(t, mem, 0)
	seq, id, ord := g.assign("a", now)
	if seq != lastSeq+1 || bytes.Compare(id[:], lastID[:]) <= 0 {
		t.Fatalf("after a stop and reopen: seq %d id %v, want seq %d and an id above %v", seq, id, lastSeq+1, lastID)
	}
	ords.check(t, "a", ord)
	_, _, dOrd := g.assign("d", now)
	ords.check(t, "d", dOrd)

	// The new tenant's ordinal is synced at once, not only at the stop:
	// crash without Close.
	g = openReserved(t, mem.CrashClone(vfs.CrashCloneCfg{}), 0)
	defer g.stop()
	stored, err := g.m.Tenants()
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(stored, map[string]uint32(ords)) {
		t.Fatalf("after a crash the meta store holds tenants %v, Reserved handed out %v", stored, ords)
	}
	_, _, ord = g.assign("d", now)
	ords.check(t, "d", ord)
	_, _, eOrd := g.assign("e", now)
	ords.check(t, "e", eOrd)
	t.Logf("%d numbers in order, %d from %d goroutines, then after a reopen and a crash; ordinals %v", 30, len(all), workers, ords)
}

// After a crash no seq or id is given twice, even with the clock stepped
// back: numbers are reserved ahead with a synced floor.
func TestReservedSurvivesCrash(t *testing.T) {
	mem := vfs.NewCrashableMem()
	g := openReserved(t, mem, 0)
	now := uint64(1_764_445_200_000)
	g.assign("acme", now)
	seq, id, ord := g.assign("globex", now+5)
	crashed := mem.CrashClone(vfs.CrashCloneCfg{})
	g.stop()

	c := openReserved(t, crashed, 0)
	defer c.stop()
	stored, err := c.m.Tenants()
	if err != nil {
		t.Fatal(err)
	}
	if stored["globex"] != ord || len(stored) != 2 {
		t.Fatalf("after a crash the meta store holds tenants %v, want globex = %d among 2", stored, ord)
	}
	seq2, id2, got := c.assign("globex", now-60_000) // the clock stepped back a minute
	_, _, newOrd := c.assign("initech", now-60_000)
	if got != ord || newOrd == stored["acme"] || newOrd == ord {
		t.Fatalf("after a crash: globex has ordinal %d (was %d), new tenant initech %d (taken: %v)", got, ord, newOrd, stored)
	}
	if seq2 <= seq || bytes.Compare(id2[:], id[:]) <= 0 {
		t.Fatalf("after a crash: seq %d id %v, not above the last before it (seq %d id %v)", seq2, id2, seq, id)
	}
}

// tenants.max holds: a new tenant past it is ErrTenantLimit, and the cap
// counts the tenants recorded before a restart.
func TestReservedTenantLimit(t *testing.T) {
	mem := vfs.NewCrashableMem()
	g := openReserved(t, mem, 2)
	g.assign("acme", 1)
	g.assign("globex", 1)
	if !g.r.TenantsFull() {
		t.Fatal("TenantsFull is false with tenants.max tenants")
	}
	if _, _, _, err := g.r.Assign("initech", 1); !errors.Is(err, wal.ErrTenantLimit) {
		t.Fatalf("a third tenant under tenants.max 2: %v, want wal.ErrTenantLimit", err)
	}
	g.assign("acme", 1)
	g.stop()
	g = openReserved(t, mem, 2)
	defer g.stop()
	if _, _, _, err := g.r.Assign("initech", 1); !errors.Is(err, wal.ErrTenantLimit) {
		t.Fatalf("after a restart, a third tenant: %v, want wal.ErrTenantLimit", err)
	}
	if o, ok := g.r.Ordinal("globex"); !ok || o == 0 {
		t.Fatalf("Ordinal(globex) after a restart = %d, %v", o, ok)
	}
}

// countingMeta counts the synced floors Reserved writes and fails them on
// demand.
type countingMeta struct {
	*meta.Store
	floors int
	fail   error
}

func (c *countingMeta) SetWALCheckpoint(seq uint64, id envelope.ID) error {
	if c.fail != nil {
		return c.fail
	}
	c.floors++
	return c.Store.SetWALCheckpoint(seq, id)
}

// A floor is written once per reservation (thousands of hooks, or a
// second of the clock), not per hook; a floor that cannot be written
// gives no number, and numbering goes on densely once it can.
func TestReservedFloorWrites(t *testing.T) {
	m, err := meta.Open(meta.Options{Dir: "meta", FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	cm := &countingMeta{Store: m}
	r, err := wal.OpenReserved(cm, reservedNode, 0)
	if err != nil {
		t.Fatal(err)
	}
	now := uint64(1_764_445_200_000)
	for range 5000 {
		if _, _, _, err := r.Assign("acme", now); err != nil {
			t.Fatal(err)
		}
	}
	if cm.floors != 2 {
		t.Fatalf("5000 hooks at one instant wrote %d floors, want 2 (one per 4096 seqs)", cm.floors)
	}
	if _, _, _, err := r.Assign("acme", now+1000); err != nil || cm.floors != 3 {
		t.Fatalf("a second later: %v, %d floors; want a third", err, cm.floors)
	}
	cm.fail = errors.New("disk gone")
	if seq, _, _, err := r.Assign("acme", now+2000); !errors.Is(err, cm.fail) || seq != 0 {
		t.Fatalf("Assign with a failing floor = seq %d, %v; want no number and the error", seq, err)
	}
	cm.fail = nil
	if seq, _, _, err := r.Assign("acme", now+2000); err != nil || seq != 5002 {
		t.Fatalf("Assign once the floor writes again = seq %d, %v; want 5002", seq, err)
	}
}

// Ids that run ahead of the clock (the clock stepped back after the last
// clean stop) stay unique and increasing across a crash: the reserved
// floor is taken ahead of the last id given, not only of the clock.
func TestReservedFloorAheadOfTheClock(t *testing.T) {
	mem := vfs.NewCrashableMem()
	now := uint64(1_764_445_200_000)
	g := openReserved(t, mem, 0)
	g.assign("acme", now+10*60_000) // the clock ten minutes ahead
	g.stop()

	g = openReserved(t, mem, 0) // the clock stepped back
	var last envelope.ID
	for range 3 {
		_, last, _ = g.assign("acme", now)
	}
	crashed := mem.CrashClone(vfs.CrashCloneCfg{})
	g.stop()

	c := openReserved(t, crashed, 0)
	defer c.stop()
	_, id, _ := c.assign("acme", now)
	if bytes.Compare(id[:], last[:]) <= 0 {
		t.Fatalf("after a crash: id %v, not above %v, the last given before it", id, last)
	}
}
