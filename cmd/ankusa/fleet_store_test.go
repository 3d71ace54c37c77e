package main

// Issue 18, acceptance 1, 2 and 5, and the wal.type: none durable-sink
// rule, against two built appliance processes sharing one Redis
// namespace (source_store: redis): how fast a write on one node serves on
// the other, with and without pub/sub; what an outage of Redis does to
// hooks and to writes, and to a node's first and later boots; what two
// nodes writing one source at the same time get (check-and-set: one
// wins, the other is told 409 conflict, never a silent lost update).

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/ankusa/ankusa/internal/redistest"
)

// Acceptance 1: a source created on node A answers 201 on node B within
// one pub/sub round trip, measured over 1,000 writes, each from A's 201
// to B's first 201 to a hook to it.
func TestFleetPropagation(t *testing.T) {
	u := redistest.URL(t)
	ns := redistest.Namespace(t, u)
	const tick = time.Second
	a := fsNewNode(t, u, ns, tick, "", "")
	b := fsNewNode(t, u, ns, tick, "", "")
	pa, pb := a.serve(t), b.serve(t)
	const writes = 1000
	lat := make([]time.Duration, 0, writes)   // from A's 201
	total := make([]time.Duration, 0, writes) // from the POST to A
	for i := range writes {
		name := fmt.Sprintf("fs-prop-%04d", i)
		sent := time.Now()
		fsCreate(t, a, name, `"verify":{"type":"none"}`)
		d, ok := fsHookUntil(b, time.Now(), name, http.StatusCreated, 5*time.Second)
		if !ok {
			t.Fatalf("write %d: source %s created on A does not answer 201 on B after %s", i, name, d)
		}
		lat = append(lat, d)
		total = append(total, time.Since(sent))
	}
	p50, p99, top := fsPercentiles(lat)
	t.Logf("propagation over %d writes: p50 %s p99 %s max %s (tick_ms %d)", writes, p50, p99, top, tick.Milliseconds())
	w50, w99, wtop := fsPercentiles(total)
	t.Logf("from the POST to A to B's 201: p50 %s p99 %s max %s", w50, w99, wtop)
	if p99 >= tick {
		t.Errorf("propagation p99 %s is not below tick_ms %s: the nodes wait for the tick, not for pub/sub", p99, tick)
	}
	pa.stop()
	pb.stop()
}

// Acceptance 1, messages dropped: the (private) Redis refuses SUBSCRIBE
// (ACL SETUSER default -subscribe: PUBLISH still works) and CLIENT KILL
// TYPE pubsub cuts both nodes' subscriptions, so every message of the
// writes that follow is lost; B still serves each source created on A
// within tick_ms (and slack). Once SUBSCRIBE is allowed again the nodes
// subscribe again and pub/sub beats the tick.
func TestFleetPropagationWithoutPubSub(t *testing.T) {
	srv := redistest.StartServer(t)
	u := srv.URL()
	ns := redistest.Namespace(t, u)
	const tick, slack = 300 * time.Millisecond, 500 * time.Millisecond
	a := fsNewNode(t, u, ns, tick, "", "")
	b := fsNewNode(t, u, ns, tick, "", "")
	pa, pb := a.serve(t), b.serve(t)
	rc := redistest.Client(t, u)
	ctx := context.Background()
	if err := rc.Do(ctx, "ACL", "SETUSER", "default", "-subscribe").Err(); err != nil {
		t.Fatalf("ACL SETUSER default -subscribe: %v", err)
	}
	killed, err := rc.ClientKillByFilter(ctx, "TYPE", "pubsub").Result()
	if err != nil || killed < 2 {
		t.Fatalf("CLIENT KILL TYPE pubsub killed %d subscribers (%v), want both nodes' (2)", killed, err)
	}
	prop := func(prefix string, within time.Duration) []time.Duration {
		t.Helper()
		var ds []time.Duration
		for i := range 10 {
			name := fmt.Sprintf("%s-%02d", prefix, i)
			fsCreate(t, a, name, `"verify":{"type":"none"}`)
			d, ok := fsHookUntil(b, time.Now(), name, http.StatusCreated, within)
			if !ok {
				t.Fatalf("%s created on A does not answer 201 on B within %s", name, within)
			}
			ds = append(ds, d)
		}
		return ds
	}
	p50, _, worst := fsPercentiles(prop("fs-nopubsub", tick+slack))
	t.Logf("without pub/sub over 10 writes: p50 %s max %s (tick_ms %d)", p50, worst, tick.Milliseconds())
	// Ten writes all served within a sixth of the tick would mean the
	// messages still arrived: the test would not test the tick.
	if worst < tick/6 {
		t.Fatalf("without pub/sub the worst propagation is %s, under tick_ms/6: the messages were not dropped", worst)
	}

	// SUBSCRIBE allowed again, and the nodes' connections cut once more
	// (go-redis keeps a connection whose SUBSCRIBE was refused, and never
	// subscribes on it): they subscribe on the new ones, and pub/sub
	// carries the writes. Ten writes all within a third of the tick would
	// be a rare accident of ticks alone.
	if err := rc.Do(ctx, "ACL", "SETUSER", "default", "+subscribe").Err(); err != nil {
		t.Fatalf("ACL SETUSER default +subscribe: %v", err)
	}
	if n, err := rc.ClientKillByFilter(ctx, "TYPE", "normal", "SKIPME", "yes").Result(); err != nil || n < 2 {
		t.Fatalf("CLIENT KILL TYPE normal killed %d connections (%v), want the nodes' (2 or more)", n, err)
	}
	time.Sleep(500 * time.Millisecond)
	if _, _, worst := fsPercentiles(prop("fs-pubsub-back", 5*time.Second)); worst >= tick/3 {
		t.Errorf("once SUBSCRIBE is allowed again, propagation is up to %s (tick_ms %s): the nodes did not subscribe again", worst, tick)
	}
	pa.stop()
	pb.stop()
}
