package dedupe

import (
	"context"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/meta"
)

func openStore(t *testing.T) *meta.Store {
	t.Helper()
	s, err := meta.Open(meta.Options{Dir: "db", FS: vfs.NewMem(),
		Errorf: func(f string, a ...any) { t.Errorf("pebble: "+f, a...) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// addKeys commits keys added with AddKey in one synced batch.
func addKeys(t *testing.T, s *meta.Store, add func(b *meta.Batch)) {
	t.Helper()
	b := s.NewBatch()
	defer b.Close()
	add(b)
	if err := b.Commit(meta.Sync); err != nil {
		t.Fatal(err)
	}
}

func ordinals(m map[string]uint32) func(string) (uint32, bool) {
	return func(t string) (uint32, bool) { o, ok := m[t]; return o, ok }
}

func TestNodeLookupAndSweep(t *testing.T) {
	store := openStore(t)
	n := NewNode(store, ordinals(map[string]uint32{"acme": 1, "globex": 2}))
	day := int64(24 * time.Hour)
	now := 20000*day + day/2 // noon of some day
	ttl := 72 * time.Hour
	addKeys(t, store, func(b *meta.Batch) {
		AddKey(b, 1, "acme", "stripe", []byte("evt_1"), testID(1), 5, now, ttl)
		AddKey(b, 1, "acme", "stripe", []byte("evt_old"), testID(2), 6, now-70*int64(time.Hour), ttl)
	})
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
	// Sweep 3 days later (the dispatcher's sweep): evt_old (expired 2h
	// after now) goes, evt_1 stays.
	if err := store.SweepDedupe(now + 3*day); err != nil {
		t.Fatal(err)
	}
	keys, err := store.Census()
	if err != nil {
		t.Fatal(err)
	}
	if count := keys["dedupe"]; count != 1 {
		t.Fatalf("%d keys after the sweep, want 1", count)
	}
	if ok, _ := look("acme", "stripe", "evt_1", now); !ok {
		t.Fatal("the sweep removed a live key")
	}
	// A damaged value is not a match (and not an error: never drop a
	// hook): meta's TestLookupDedupeDamaged writes one and looks it up.
}

// TestNodeStage runs Begin/Committed/Aborted over the node scope.
func TestNodeStage(t *testing.T) {
	store := openStore(t)
	var written uint64
	s := NewNodeStage(NewNode(store, ordinals(map[string]uint32{"acme": 1})), func() uint64 { return written }, nil)
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
	addKeys(t, store, func(b *meta.Batch) { AddKey(b, 1, "acme", "src", []byte("k"), testID(3), 1, now, time.Hour) })
	written = 1
	if s.Guard().Len() != 0 {
		t.Fatal("the guard kept a key the store has")
	}
	if _, id, dup, _ := s.Begin(ctx, k, time.Hour, now); !dup || id != testID(3) {
		t.Fatal("committed key (in the store) not a duplicate")
	}
}
