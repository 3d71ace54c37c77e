package dedupe

import (
	"context"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/meta"
)

func openDB(t *testing.T) *pebble.DB {
	t.Helper()
	db, err := pebble.Open("db", &pebble.Options{FS: vfs.NewMem(), Logger: quiet{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// quiet keeps pebble's informational lines out of the test output.
type quiet struct{ t *testing.T }

func (quiet) Infof(string, ...any)        {}
func (q quiet) Errorf(f string, a ...any) { q.t.Errorf("pebble: "+f, a...) }
func (q quiet) Fatalf(f string, a ...any) { q.t.Fatalf("pebble: "+f, a...) }

func ordinals(m map[string]uint32) func(string) (uint32, bool) {
	return func(t string) (uint32, bool) { o, ok := m[t]; return o, ok }
}

func TestNodeLookupAndSweep(t *testing.T) {
	db := openDB(t)
	n := NewNode(db, ordinals(map[string]uint32{"acme": 1, "globex": 2}))
	day := int64(24 * time.Hour)
	now := 20000*day + day/2 // noon of some day
	ttl := 72 * time.Hour
	b := db.NewBatch()
	if err := AddKey(b, 1, "acme", "stripe", []byte("evt_1"), testID(1), 5, now, ttl); err != nil {
		t.Fatal(err)
	}
	if err := AddKey(b, 1, "acme", "stripe", []byte("evt_old"), testID(2), 6, now-70*int64(time.Hour), ttl); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		t.Fatal(err)
	}
	look := func(tenant, source, key string, at int64) (bool, string) {
		id, ok, err := n.Lookup(MakeKey(tenant, source, []byte(key)), ttl, at)
		if err != nil {
			t.Fatal(err)
		}
		return ok, id.String()
	}
	if ok, id := look("acme", "stripe", "evt_1", now); !ok || id != testID(1).String() {
		t.Fatal("a key just written is not found")
	}
	if ok, _ := look("globex", "stripe", "evt_1", now); ok {
		t.Fatal("another tenant's key matched")
	}
	if ok, _ := look("acme", "github", "evt_1", now); ok {
		t.Fatal("another source's key matched")
	}
	if ok, _ := look("nobody", "stripe", "evt_1", now); ok {
		t.Fatal("a tenant without an ordinal matched")
	}
	if ok, _ := look("acme", "stripe", "evt_1", now+int64(ttl)); ok {
		t.Fatal("a key matched at its expiry")
	}
	if ok, _ := look("acme", "stripe", "evt_1", now+int64(ttl)-1); !ok {
		t.Fatal("a key did not match 1ns before its expiry")
	}
	if ok, _ := look("acme", "stripe", "evt_old", now); !ok {
		t.Fatal("a key received 70h ago with a 72h ttl is not found")
	}
	// Sweep 3 days later: evt_old (expired 2h after now) goes, evt_1 stays.
	if err := Sweep(db, now+3*day); err != nil {
		t.Fatal(err)
	}
	it, _ := db.NewIter(&pebble.IterOptions{LowerBound: []byte(meta.PrefixDedupe), UpperBound: meta.PrefixEnd([]byte(meta.PrefixDedupe))})
	count := 0
	for ok := it.First(); ok; ok = it.Next() {
		count++
	}
	it.Close()
	if count != 1 {
		t.Fatalf("%d keys after the sweep, want 1", count)
	}
	if ok, _ := look("acme", "stripe", "evt_1", now); !ok {
		t.Fatal("the sweep removed a live key")
	}
	// A damaged value is not a match (and not an error: never drop a hook).
	k := MakeKey("acme", "stripe", []byte("evt_1"))
	exp := now + int64(ttl)
	if err := db.Set(meta.DedupeKey(nil, meta.DedupeDay(exp), 1, "stripe", k.Hash[:]), []byte("junk"), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if ok, _ := look("acme", "stripe", "evt_1", now); ok {
		t.Fatal("a damaged value matched")
	}
}

// TestNodeStage runs Begin/Committed/Aborted over the node scope.
func TestNodeStage(t *testing.T) {
	db := openDB(t)
	var written uint64
	s := NewNodeStage(NewNode(db, ordinals(map[string]uint32{"acme": 1})), func() uint64 { return written }, nil)
	ctx := context.Background()
	k := MakeKey("acme", "src", []byte("k"))
	now := time.Now().UnixNano()
	tk, _, dup, err := s.Begin(ctx, k, time.Hour, now)
	if err != nil || dup {
		t.Fatalf("first: dup %v err %v", dup, err)
	}
	s.Aborted(ctx, tk)
	tk, _, dup, _ = s.Begin(ctx, k, time.Hour, now)
	if dup {
		t.Fatal("a key whose commit failed blocks its retry")
	}
	s.Committed(ctx, tk, testID(3), 1)
	if _, id, dup, _ := s.Begin(ctx, k, time.Hour, now); !dup || id != testID(3) {
		t.Fatal("committed key (in the guard) not a duplicate")
	}
	// The writer stores it, then the guard lets go: the store answers.
	b := db.NewBatch()
	_ = AddKey(b, 1, "acme", "src", []byte("k"), testID(3), 1, now, time.Hour)
	_ = b.Commit(pebble.NoSync)
	written = 1
	if s.Guard().Len() != 0 {
		t.Fatal("the guard kept a key the store has")
	}
	if _, id, dup, _ := s.Begin(ctx, k, time.Hour, now); !dup || id != testID(3) {
		t.Fatal("committed key (in the store) not a duplicate")
	}
}
