package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ankusa/ankusa/internal/redistest"
	"github.com/ankusa/ankusa/meta"
)

// A source written to the redis store gets its audit row and lifecycle
// event on the writing node whatever instant the node dies at: the change
// is pending in the meta store (synced) before Redis sees it, and the next
// boot settles it by the write's mark in Redis. Writers create sources as
// fast as they can; the node is killed with SIGKILL mid-stream, twice, and
// restarted; then every source Redis holds has exactly one
// io.ankusa.source.created event on the node, no event names a source
// Redis does not hold, every create answered 201 is in Redis, and no
// pending change is left.
func TestFleetKill9Outbox(t *testing.T) {
	u := redistest.URL(t)
	ns := redistest.Namespace(t, u)
	rdb := redistest.Client(t, u)
	n := newAPINode(t, "persistent", "", "")
	top := fmt.Sprintf("redis: {url: %q, namespace: %q}\n", u, ns)
	writeConfig(t, n.testNode, n.yaml("redis, tick_ms: 100", top, ""))

	var mu sync.Mutex
	acked := map[string]bool{}
	var seq atomic.Int64
	for round := 0; round < 2; round++ {
		p := n.serve(t)
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					name := fmt.Sprintf("k9-%d", seq.Add(1))
					a, err := n.tryDo("POST", "/v1/tenants/acme/sources", opsToken, `{"name":"`+name+`","verify":{"type":"none"}}`)
					if err == nil && a.status == 201 {
						mu.Lock()
						acked[name] = true
						mu.Unlock()
					}
				}
			}()
		}
		time.Sleep(700 * time.Millisecond)
		p.kill9()
		cancel()
		wg.Wait()
	}
	// The boot after the last kill settles what that kill left pending.
	p := n.serve(t)
	if !waitFor(10*time.Second, func() bool { return pendingChanges(t, n) == 0 }) {
		t.Errorf("pending source store changes left 10 s after the restart")
	}
	p.stop()

	inRedis := map[string]bool{}
	members, err := rdb.ZRange(context.Background(), ns+"ss:log", 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range members {
		if exists, err := rdb.Exists(context.Background(), ns+"ss:"+m).Result(); err != nil {
			t.Fatal(err)
		} else if exists == 1 && strings.HasPrefix(m, "s/") {
			inRedis[strings.TrimPrefix(m, "s/")] = true
		}
	}
	events, _ := readOutbox(t, n.testNode)
	created := map[string]int{}
	for _, ev := range events {
		if ev.Type == meta.EventType("source", "created") {
			created[ev.Subject]++
		}
	}
	for name := range acked {
		if !inRedis[name] {
			t.Errorf("source %s was answered 201 but is not in Redis", name)
		}
	}
	for name := range inRedis {
		if created[name] != 1 {
			t.Errorf("source %s is in Redis with %d source.created events on the node, want 1", name, created[name])
		}
	}
	for name := range created {
		if !inRedis[name] {
			t.Errorf("source %s has a source.created event but Redis does not hold it", name)
		}
	}
	if len(acked) < 20 {
		t.Errorf("only %d creates were answered 201: the test did not exercise the store", len(acked))
	}
	t.Logf("%d creates answered 201, %d sources in Redis, %d source.created events", len(acked), len(inRedis), len(events))
}

// pendingChanges reads the node's ankusa_source_store_pending_changes.
func pendingChanges(t *testing.T, n *apiNode) float64 {
	t.Helper()
	return metric(t, n.admin, "ankusa_source_store_pending_changes")
}
