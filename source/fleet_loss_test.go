package source

// Regression tests of a namespace Redis loses, or moves to another epoch,
// under nodes that have mirrors (found by review of the redis store).

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ankusa/ankusa/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// A write made between two nodes' restores of a namespace Redis lost is seen by both, and the second node's own write comes back too: a restored entity gets a fresh version, which every node reads.
func TestFleetLossWriteBetweenRestores(t *testing.T) {
	u := redistest.URL(t)
	ns := redistest.Namespace(t, u)
	a := startNode(t, "", u, ns, nil)
	b := startNode(t, "", u, ns, nil)
	for i := 0; i < 5; i++ {
		if _, err := a.PutSource(ghDoc(t, fmt.Sprintf("old%d", i), "https://a.example.com/in")); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 2*time.Second, "both at 5", func() bool { return a.version() == 5 && b.version() == 5 })
	a.Close()
	if _, err := b.PutSource(ghDoc(t, "bonly", "https://b.example.com/in")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, "B at 6", func() bool { return b.version() == 6 })
	b.Close()
	rdb := redistest.Client(t, u)
	ctx := context.Background()
	keys, _ := rdb.Keys(ctx, ns+"*").Result()
	rdb.Del(ctx, keys...) // Redis restarted empty
	a.Run(context.Background())
	waitFor(t, 2*time.Second, "A restored", func() bool { n, _ := rdb.Exists(ctx, ns+"ss:s/old0").Result(); return n == 1 })
	if _, err := a.PutSource(ghDoc(t, "x", "https://a.example.com/x")); err != nil { // a write between the two restores
		t.Fatal(err)
	}
	b.Run(context.Background())
	time.Sleep(1500 * time.Millisecond)
	n, _ := rdb.Exists(ctx, ns+"ss:s/bonly").Result()
	t.Logf("bonly in redis=%d A=%v B=%v; x: A=%v B=%v", n, a.Snapshot().Lookup([]byte("bonly")) != nil, b.Snapshot().Lookup([]byte("bonly")) != nil,
		a.Snapshot().Lookup([]byte("x")) != nil, b.Snapshot().Lookup([]byte("x")) != nil)
	if n == 0 || b.Snapshot().Lookup([]byte("x")) == nil {
		t.Error("fleet diverged")
	}
}

// A rebuild that fails midway leaves the mirror's state where it was, so the next sync rebuilds again and the node does not keep serving the old epoch's entities.
func TestFleetLossRebuildInterrupted(t *testing.T) {
	u := redistest.URL(t)
	ns := redistest.Namespace(t, u)
	a := startNode(t, "", u, ns, nil)
	for i := 0; i < 5; i++ {
		if _, err := a.PutSource(ghDoc(t, fmt.Sprintf("old%d", i), "https://a.example.com/in")); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 2*time.Second, "A at 5", func() bool { return a.version() == 5 })
	rdb := redistest.Client(t, u)
	ctx := context.Background()
	k := newFleetKeys(ns)
	keys, _ := rdb.Keys(ctx, ns+"*").Result()
	newSrc := Build("new1", ghSpec(t, "new1", "https://example.com/new"), 1<<20, false)
	// another epoch, ahead of A; its log unreadable for a moment
	_, _ = rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, keys...)
		p.Set(ctx, k.epoch, "e2", 0)
		p.Set(ctx, k.ver, 10, 0)
		p.Set(ctx, k.log, "x", 0)
		p.HSet(ctx, k.prefix+"s/new1", "v", 10, "t", "acme", "r", string(encodeSourceRecord(newSrc, nil)))
		return nil
	})
	time.Sleep(300 * time.Millisecond) // A's ticks fail mid-rebuild
	rdb.Del(ctx, k.log)
	rdb.ZAdd(ctx, k.log, redis.Z{Score: 10, Member: "s/new1"})
	waitFor(t, 2*time.Second, "A has new1", func() bool { return a.Snapshot().Lookup([]byte("new1")) != nil })
	time.Sleep(200 * time.Millisecond)
	if a.Snapshot().Lookup([]byte("old0")) != nil {
		t.Errorf("after the epoch change A still serves old0, which the new epoch does not hold (state=%+v)", a.state)
	}
}

// With a KEK, a sink's header values rest sealed like its other secrets (an answer redacts them all).
func TestFleetLossHeadersSealed(t *testing.T) {
	kr := testKeyring(t, bytes.Repeat([]byte{7}, 32), nil)
	spec := ghSpec(t, "h1", "https://user:pw-SECRET@example.com/in")
	spec.Sinks[0].Headers = map[string]string{"Authorization": "Bearer HDR-SECRET"}
	src := Build("h1", spec, 1<<20, false)
	rec := encodeSourceRecord(src, kr)
	t.Logf("%s", rec)
	if bytes.Contains(rec, []byte("HDR-SECRET")) {
		t.Error("a sink header (redacted by the API) rests in clear with secrets.kek set")
	}
}

// A rebuild is published as one snapshot, however many batches it reads: no reader sees a namespace half read.
func TestFleetLossRebuildPublishedOnce(t *testing.T) {
	old := fleetBatchLimit
	fleetBatchLimit = 2
	defer func() { fleetBatchLimit = old }()
	u := redistest.URL(t)
	ns := redistest.Namespace(t, u)
	a := startNode(t, "", u, ns, nil)
	if _, err := a.PutSource(ghDoc(t, "x", "https://a.example.com/in")); err != nil {
		t.Fatal(err)
	}
	// A's catch-up of its own write publishes (the seed and x) before the
	// rebuild begins: only what comes after is watched.
	waitFor(t, 2*time.Second, "A's mirror does not reach its write", func() bool { return a.version() >= 1 })
	var mu sync.Mutex
	var sizes []int
	a.OnPublish(func(s *Snapshot) { mu.Lock(); sizes = append(sizes, s.Len()); mu.Unlock() })
	rdb := redistest.Client(t, u)
	ctx := context.Background()
	k := newFleetKeys(ns)
	keys, _ := rdb.Keys(ctx, ns+"*").Result()
	_, _ = rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, keys...)
		p.Set(ctx, k.epoch, "e2", 0)
		p.Set(ctx, k.ver, 6, 0)
		for i := 1; i <= 6; i++ {
			n := fmt.Sprintf("n%d", i)
			s := Build(n, ghSpec(t, n, "https://example.com/new"), 1<<20, false)
			p.ZAdd(ctx, k.log, redis.Z{Score: float64(i), Member: "s/" + n})
			p.HSet(ctx, k.prefix+"s/"+n, "v", i, "t", "acme", "r", string(encodeSourceRecord(s, nil)))
		}
		return nil
	})
	waitFor(t, 2*time.Second, "A did not join the new epoch", func() bool { return a.version() >= 6 && a.Snapshot().Lookup([]byte("n6")) != nil })
	mu.Lock()
	defer mu.Unlock()
	// Every snapshot published holds the whole new epoch (6 sources, x
	// given back, the seed): none holds a part of it.
	for _, n := range sizes {
		if n < 8 {
			t.Errorf("a snapshot of %d sources was published during the rebuild (all published: %v)", n, sizes)
		}
	}
}

// A restore from a mirror behind the node's own last write still numbers later writes above everything restored.
func TestFleetLossRestoreBelowOwnWrite(t *testing.T) {
	u := redistest.URL(t)
	ns := redistest.Namespace(t, u)
	a := startNode(t, "", u, ns, nil)
	for i := 0; i < 5; i++ {
		if _, err := a.PutSource(ghDoc(t, fmt.Sprintf("old%d", i), "https://a.example.com/in")); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 2*time.Second, "A at 5", func() bool { return a.version() == 5 })
	a.Close()
	x, err := a.PutSource(ghDoc(t, "x", "https://a.example.com/x"))
	if err != nil {
		t.Fatal(err)
	}
	rdb := redistest.Client(t, u)
	ctx := context.Background()
	keys, _ := rdb.Keys(ctx, ns+"*").Result()
	rdb.Del(ctx, keys...) // Redis restarts empty right after the write
	a.Run(context.Background())
	waitFor(t, 2*time.Second, "A restored", func() bool { return a.version() >= x.Version })
	ver, _ := rdb.Get(ctx, ns+"ss:ver").Uint64()
	y, err := a.PutSource(ghDoc(t, "y", "https://a.example.com/y"))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	t.Logf("x at %d, redis ver after restore %d, y written at %d (201); A serves y: %v", x.Version, ver, y.Version, a.Snapshot().Lookup([]byte("y")) != nil)
	if a.Snapshot().Lookup([]byte("y")) == nil {
		t.Error("A answered 201 for y but does not serve it")
	}
}

// As TestFleetLossRestoreBelowOwnWrite, across two nodes: each reads the other's writes after the restore.
func TestFleetLossRestoreBelowOwnWriteTwoNodes(t *testing.T) {
	u := redistest.URL(t)
	ns := redistest.Namespace(t, u)
	a := startNode(t, "", u, ns, nil)
	b := startNode(t, "", u, ns, nil)
	for i := 0; i < 5; i++ {
		if _, err := a.PutSource(ghDoc(t, fmt.Sprintf("old%d", i), "https://a.example.com/in")); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 2*time.Second, "at 5", func() bool { return a.version() == 5 && b.version() == 5 })
	a.Close()
	b.Close()
	x, err := a.PutSource(ghDoc(t, "x", "https://a.example.com/x"))
	if err != nil {
		t.Fatal(err)
	}
	rdb := redistest.Client(t, u)
	ctx := context.Background()
	keys, _ := rdb.Keys(ctx, ns+"*").Result()
	rdb.Del(ctx, keys...) // Redis restarts empty right after the write
	a.Run(context.Background())
	waitFor(t, 2*time.Second, "A restored", func() bool { return a.version() >= x.Version })
	w, err := b.PutSource(ghDoc(t, "w", "https://b.example.com/w"))
	if err != nil {
		t.Fatal(err)
	}
	b.Run(context.Background())
	time.Sleep(time.Second)
	t.Logf("x at %d, w at %d; A serves w: %v, B serves x: %v", x.Version, w.Version, a.Snapshot().Lookup([]byte("w")) != nil, b.Snapshot().Lookup([]byte("x")) != nil)
	if a.Snapshot().Lookup([]byte("w")) == nil || b.Snapshot().Lookup([]byte("x")) == nil {
		t.Error("fleet diverged")
	}
}

// A node without a mirror that numbers a lost namespace afresh and writes first does not hide the other nodes' sources: they give them back into its epoch.
func TestFleetLossFreshNodeWritesFirst(t *testing.T) {
	u := redistest.URL(t)
	ns := redistest.Namespace(t, u)
	a := startNode(t, "", u, ns, nil)
	for i := 0; i < 5; i++ {
		if _, err := a.PutSource(ghDoc(t, fmt.Sprintf("old%d", i), "https://a.example.com/in")); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 2*time.Second, "A at 5", func() bool { return a.version() == 5 })
	a.Close() // A is between ticks
	rdb := redistest.Client(t, u)
	ctx := context.Background()
	keys, _ := rdb.Keys(ctx, ns+"*").Result()
	rdb.Del(ctx, keys...)             // Redis lost the namespace
	c := startNode(t, "", u, ns, nil) // a fresh node: new epoch
	src, err := c.PutSource(ghDoc(t, "old2", "https://c.example.com/in"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("C created old2 at version %d (201)", src.Version)
	waitFor(t, 2*time.Second, "C at 1", func() bool { return c.version() == 1 })
	a.Run(context.Background()) // A's next tick
	waitFor(t, 3*time.Second, "A restored", func() bool {
		return a.version() >= 1 && a.Snapshot().Lookup([]byte("old0")) != nil && a.Snapshot().Lookup([]byte("old4")) != nil
	})
	time.Sleep(time.Second)
	if c.Snapshot().Lookup([]byte("old0")) == nil {
		t.Errorf("C never serves old0 (restored below C's version)")
	}
	if s := c.Snapshot().Lookup([]byte("old2")); s != nil && s.Spec.Sinks[0].URL != "https://c.example.com/in" {
		t.Errorf("C's acknowledged create of old2 was replaced by A's old form: %s", s.Spec.Sinks[0].URL)
	}
	for _, n := range []string{"old0", "old1", "old2", "old3", "old4"} {
		t.Logf("%s: A=%v C=%v", n, a.Snapshot().Lookup([]byte(n)) != nil, c.Snapshot().Lookup([]byte(n)) != nil)
	}
}
