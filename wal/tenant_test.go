package wal_test

import (
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/wal"
)

// tenantCalls records OnTenant calls.
type tenantCalls struct {
	mu    sync.Mutex
	calls map[string][]uint32
}

func (c *tenantCalls) OnTenant(name string, ord uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.calls == nil {
		c.calls = map[string][]uint32{}
	}
	c.calls[name] = append(c.calls[name], ord)
}

func (c *tenantCalls) snapshot() map[string][]uint32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := make(map[string][]uint32, len(c.calls))
	for k, v := range c.calls {
		m[k] = append([]uint32(nil), v...)
	}
	return m
}

// syncOffsets records the size of the active file at every fdatasync, so a
// test can tell which records shared one.
type syncOffsets struct {
	mu   sync.Mutex
	mem  vfs.FS
	offs map[string][]int64
}

func (s *syncOffsets) afterSync(path string) {
	if !strings.HasSuffix(path, ".wal") {
		return
	}
	st, err := s.mem.Stat(path)
	if err != nil {
		panic(err)
	}
	s.mu.Lock()
	s.offs[s.mem.PathBase(path)] = append(s.offs[s.mem.PathBase(path)], st.Size())
	s.mu.Unlock()
}

// batchOf returns the index of the fdatasync that made the byte at off in
// file durable.
func (s *syncOffsets) batchOf(file string, off int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	offs := s.offs[file]
	return sort.Search(len(offs), func(i int) bool { return offs[i] > off })
}

// TestTenantOrdinals commits hooks of many tenants from many goroutines and
// checks how ordinals are allocated and recorded.
func TestTenantOrdinals(t *testing.T) {
	mem := vfs.NewCrashableMem()
	so := &syncOffsets{mem: mem, offs: map[string][]int64{}}
	fs := &hookFS{FS: mem, afterSync: so.afterSync}
	var calls tenantCalls
	// OnTenant runs after the batch's sync: the tenant record must already
	// survive a crash when it is called.
	onTenant := func(name string, ord uint32) {
		calls.OnTenant(name, ord)
		crashed := mem.CrashClone(vfs.CrashCloneCfg{})
		recs, err := readLog(crashed, dir)
		if err != nil {
			t.Errorf("OnTenant(%q): reading a crash clone: %v", name, err)
			return
		}
		for _, r := range recs {
			if r.Kind == envelope.KindTenant && r.Tenant == name && r.Ordinal == ord {
				return
			}
		}
		t.Errorf("OnTenant(%q, %d) called before its record was durable", name, ord)
	}
	w := openWAL(t, wal.Options{FS: fs, Meta: &testMeta{onTenant: onTenant}})
	const tenants, goroutines, perG = 24, 8, 30
	var wg sync.WaitGroup
	acks := make([][]ack, goroutines)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perG; i++ {
				tenant := fmt.Sprintf("tenant-%02d", (g*7+i*5)%tenants)
				a, err := commit(w, hook{tenant: tenant, tag: fmt.Sprintf("g%d-%d", g, i)})
				if err != nil {
					t.Errorf("Commit: %v", err)
					return
				}
				acks[g] = append(acks[g], a)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if w.TenantCount() != tenants {
		t.Fatalf("TenantCount = %d, want %d", w.TenantCount(), tenants)
	}
	// Ordinals are dense from 1, one per tenant, reported once each.
	got := calls.snapshot()
	if len(got) != tenants {
		t.Fatalf("OnTenant called for %d tenants, want %d", len(got), tenants)
	}
	seen := map[uint32]string{}
	for name, ords := range got {
		if len(ords) != 1 {
			t.Fatalf("OnTenant(%q) called %d times: %v", name, len(ords), ords)
		}
		if o, ok := w.Ordinal(name); !ok || o != ords[0] {
			t.Fatalf("Ordinal(%q) = %d, %v; OnTenant said %d", name, o, ok, ords[0])
		}
		if other, dup := seen[ords[0]]; dup {
			t.Fatalf("ordinal %d given to %q and %q", ords[0], other, name)
		}
		seen[ords[0]] = name
	}
	for o := uint32(1); o <= tenants; o++ {
		if _, ok := seen[o]; !ok {
			t.Fatalf("ordinal %d not allocated: ordinals are not dense (%v)", o, seen)
		}
	}
	if _, ok := w.Ordinal("never-seen"); ok {
		t.Fatalf("Ordinal of an unknown tenant")
	}
	// Every acknowledged hook carries its tenant's ordinal.
	var all []ack
	for g := range acks {
		all = append(all, acks[g]...)
	}
	closeWAL(t, w)

	recs := mustReadLog(t, mem, dir)
	hooks := checkLog(t, recs, 1, nil)
	if len(hooks) != goroutines*perG {
		t.Fatalf("%d hooks in the log, want %d", len(hooks), goroutines*perG)
	}
	checkAcked(t, hooks, all)
	// A tenant's record and its first hook went out under the same
	// fdatasync, tenant record first; ordinals follow first appearance.
	tenantRec := map[string]logRec{}
	first := map[string]logRec{}
	var order []string
	for _, r := range recs {
		switch r.Kind {
		case envelope.KindTenant:
			tenantRec[r.Tenant] = r
			order = append(order, r.Tenant)
		case envelope.KindEnvelope:
			if _, ok := first[r.Env.TenantID]; !ok {
				first[r.Env.TenantID] = r
			}
		}
	}
	for i, name := range order {
		tr, h := tenantRec[name], first[name]
		if tr.Ordinal != uint32(i+1) {
			t.Fatalf("tenant record %d is %q with ordinal %d", i, name, tr.Ordinal)
		}
		if tr.File != h.File || tr.Offset > h.Offset {
			t.Fatalf("tenant %q: record at %s@%d, first hook at %s@%d", name, tr.File, tr.Offset, h.File, h.Offset)
		}
		base := mem.PathBase(tr.File)
		if a, b := so.batchOf(base, tr.Offset), so.batchOf(base, h.Offset); a != b {
			t.Fatalf("tenant %q: record made durable by sync %d, its first hook by sync %d", name, a, b)
		}
	}

	// After a reopen with the mirror OnTenant built, known tenants keep
	// their ordinals, write no new record and are not reported again; a new
	// tenant gets the next one.
	mirror := map[string]uint32{}
	for name, ords := range got {
		mirror[name] = ords[0]
	}
	var calls2 tenantCalls
	w = openWAL(t, wal.Options{FS: mem, Meta: &testMeta{tenants: mirror, onTenant: calls2.OnTenant}})
	if w.TenantCount() != tenants {
		t.Fatalf("reopened TenantCount = %d", w.TenantCount())
	}
	for name, ords := range got {
		if o, ok := w.Ordinal(name); !ok || o != ords[0] {
			t.Fatalf("reopened Ordinal(%q) = %d, %v; want %d", name, o, ok, ords[0])
		}
		if a := mustCommit(t, w, hook{tenant: name, tag: "again-" + name}); a.Ordinal != ords[0] {
			t.Fatalf("hook of %q after reopen has ordinal %d, want %d", name, a.Ordinal, ords[0])
		}
	}
	if a := mustCommit(t, w, hook{tenant: "newcomer", tag: "n1"}); a.Ordinal != tenants+1 {
		t.Fatalf("new tenant after reopen got ordinal %d, want %d", a.Ordinal, tenants+1)
	}
	if a := mustCommit(t, w, hook{tenant: "newcomer", tag: "n2"}); a.Ordinal != tenants+1 {
		t.Fatalf("second hook of the new tenant got ordinal %d", a.Ordinal)
	}
	closeWAL(t, w)
	if c := calls2.snapshot(); len(c) != 1 || len(c["newcomer"]) != 1 || c["newcomer"][0] != tenants+1 {
		t.Fatalf("OnTenant after reopen: %v", c)
	}
	recs = mustReadLog(t, mem, dir)
	checkLog(t, recs, 1, nil)
	n := 0
	for _, r := range recs {
		if r.Kind == envelope.KindTenant {
			n++
		}
	}
	if n != tenants+1 {
		t.Fatalf("%d tenant records, want %d", n, tenants+1)
	}
}

// TestTenantBatch checks a batch that brings several new tenants at once:
// every tenant record precedes the batch's hooks.
func TestTenantBatch(t *testing.T) {
	mem := vfs.NewCrashableMem()
	release := make(chan struct{})
	entered := make(chan struct{})
	var once sync.Once
	armed := false
	var mu sync.Mutex
	fs := &hookFS{FS: mem, beforeSync: func(path string) error {
		mu.Lock()
		a := armed
		mu.Unlock()
		if a && strings.HasSuffix(path, ".wal") {
			once.Do(func() { close(entered); <-release })
		}
		return nil
	}}
	var calls tenantCalls
	w := openWAL(t, wal.Options{FS: fs, Meta: &testMeta{onTenant: calls.OnTenant}})
	mu.Lock()
	armed = true
	mu.Unlock()
	done := make(chan error, 8)
	go func() { _, err := commit(w, hook{tenant: "zero", tag: "z"}); done <- err }()
	<-entered
	// These queue behind the held sync and go out as one batch.
	names := []string{"alpha", "beta", "alpha", "gamma", "beta", "delta"}
	for i, name := range names {
		go func() { _, err := commit(w, hook{tenant: name, tag: fmt.Sprintf("%s-%d", name, i)}); done <- err }()
	}
	var total int64
	for i, name := range names {
		total += int64(recordSize(hook{tenant: name, tag: fmt.Sprintf("%s-%d", name, i)}))
	}
	waitFor(t, "commits to queue", func() bool { return w.QueuedBytes() == total })
	close(release)
	for range len(names) + 1 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	closeWAL(t, w)
	recs := mustReadLog(t, mem, dir)
	checkLog(t, recs, 1, nil)
	// zero's record and hook, then the second batch: four tenant records,
	// then six hooks.
	var kinds strings.Builder
	for _, r := range recs {
		kinds.WriteByte("?HT"[r.Kind])
	}
	if kinds.String() != "THTTTTHHHHHH" {
		t.Fatalf("record kinds %s, want THTTTTHHHHHH", kinds.String())
	}
	if c := calls.snapshot(); len(c) != 5 {
		t.Fatalf("OnTenant calls %v", c)
	}
}

// TestTenantSeeds checks that Options.Tenants seeds known ordinals: no
// record, no callback, and new ordinals above the seeds.
func TestTenantSeeds(t *testing.T) {
	fs := vfs.NewMem()
	seeds := map[string]uint32{"acme": 7, "beta": 3}
	var calls tenantCalls
	w := openWAL(t, wal.Options{FS: fs, Meta: &testMeta{tenants: seeds, onTenant: calls.OnTenant}})
	// Ordinals up to 7 were given (those below it not seeded went to
	// tenants erased since): TenantCount counts them all.
	if w.TenantCount() != 7 {
		t.Fatalf("TenantCount = %d, want 7", w.TenantCount())
	}
	if a := mustCommit(t, w, hook{tenant: "acme", tag: "a"}); a.Ordinal != 7 {
		t.Fatalf("seeded tenant got ordinal %d", a.Ordinal)
	}
	if a := mustCommit(t, w, hook{tenant: "beta", tag: "b"}); a.Ordinal != 3 {
		t.Fatalf("seeded tenant got ordinal %d", a.Ordinal)
	}
	if a := mustCommit(t, w, hook{tenant: "gamma", tag: "c"}); a.Ordinal != 8 {
		t.Fatalf("new tenant got ordinal %d, want 8 (above the seeds)", a.Ordinal)
	}
	closeWAL(t, w)
	if c := calls.snapshot(); len(c) != 1 || len(c["gamma"]) != 1 || c["gamma"][0] != 8 {
		t.Fatalf("OnTenant calls %v, want only gamma=8", c)
	}
	recs := mustReadLog(t, fs, dir)
	checkLog(t, recs, 1, seeds)
	for _, r := range recs {
		if r.Kind == envelope.KindTenant && r.Tenant != "gamma" {
			t.Fatalf("tenant record written for seeded tenant %q", r.Tenant)
		}
	}
	// Reopened with the same seeds (the meta store mirror), everything
	// stays put; a seed and the log agree on gamma.
	w = openWAL(t, wal.Options{FS: fs, Meta: &testMeta{tenants: map[string]uint32{"acme": 7, "beta": 3, "gamma": 8}}})
	for name, want := range map[string]uint32{"acme": 7, "beta": 3, "gamma": 8} {
		if o, ok := w.Ordinal(name); !ok || o != want {
			t.Fatalf("Ordinal(%q) = %d, %v", name, o, ok)
		}
	}
	if a := mustCommit(t, w, hook{tenant: "delta", tag: "d"}); a.Ordinal != 9 {
		t.Fatalf("new tenant got ordinal %d, want 9", a.Ordinal)
	}
	closeWAL(t, w)
}

// TestTenantMirrorAfterCrash crashes between a batch's fdatasync and its
// OnTenant: the tenant's record is durable, the mirror the caller keeps
// (and passes back as Options.Tenants) never heard of it. The next Open
// must report it, or the mirror never learns the ordinal at all.
func TestTenantMirrorAfterCrash(t *testing.T) {
	mem := vfs.NewCrashableMem()
	var mu sync.Mutex
	mirror := map[string]uint32{}
	var crashed *vfs.MemFS
	var mirrorAtCrash map[string]uint32
	onTenant := func(name string, ord uint32) {
		mu.Lock()
		defer mu.Unlock()
		if name == "late" && crashed == nil {
			crashed = mem.CrashClone(vfs.CrashCloneCfg{})
			mirrorAtCrash = maps.Clone(mirror)
		}
		mirror[name] = ord
	}
	w := openWAL(t, wal.Options{FS: mem, Meta: &testMeta{onTenant: onTenant}})
	for _, name := range []string{"acme", "beta", "late"} {
		mustCommit(t, w, hook{tenant: name, tag: name})
	}
	closeWAL(t, w)
	if len(mirrorAtCrash) != 2 {
		t.Fatalf("mirror at the crash: %v", mirrorAtCrash)
	}

	var calls tenantCalls
	w = openWAL(t, wal.Options{FS: crashed, Meta: &testMeta{tenants: mirrorAtCrash, onTenant: calls.OnTenant}})
	if got := calls.snapshot(); len(got) != 1 || len(got["late"]) != 1 || got["late"][0] != 3 {
		t.Fatalf("Open reported %v; want the one tenant the mirror lacks, late=3", got)
	}
	if a := mustCommit(t, w, hook{tenant: "late", tag: "late-2"}); a.Ordinal != 3 {
		t.Fatalf("late got ordinal %d after the crash, want 3", a.Ordinal)
	}
	if a := mustCommit(t, w, hook{tenant: "next", tag: "next"}); a.Ordinal != 4 {
		t.Fatalf("a new tenant got ordinal %d, want 4", a.Ordinal)
	}
	closeWAL(t, w)
	if got := calls.snapshot(); len(got) != 2 || len(got["late"]) != 1 || len(got["next"]) != 1 {
		t.Fatalf("OnTenant calls %v", got)
	}
	// With the mirror complete, Open has nothing to report.
	full := maps.Clone(mirrorAtCrash)
	full["late"], full["next"] = 3, 4
	var calls2 tenantCalls
	w = openWAL(t, wal.Options{FS: crashed, Meta: &testMeta{tenants: full, onTenant: calls2.OnTenant}})
	closeWAL(t, w)
	if got := calls2.snapshot(); len(got) != 0 {
		t.Fatalf("Open with a complete mirror reported %v", got)
	}
}
