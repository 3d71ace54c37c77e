package main

// Issue 17, acceptance 2: kill -9 of the node 20 times while admin writes
// and publishing run. Every change answered 2xx has exactly its event in
// the outbox, in the order of its entity's writes; a write the node
// refused has none; the lifecycle sink (a real HTTP receiver checking
// Standard Webhooks signatures, and the real RabbitMQ) received every
// event at least once, in order, and nothing else.

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// lcKills is how many times the test kills the node.
const lcKills = 20

// TestLifecycleKill9's two runs are two nodes with their own data, ports
// and receivers: they run side by side, which halves the test's time in
// make test and loads the node as a busy machine would.
func TestLifecycleKill9(t *testing.T) {
	t.Run("http", func(t *testing.T) {
		t.Parallel()
		const name = "lc-kill-http"
		r := newLCReceiver(t, name)
		// One delivery in 25 is answered 503: the publisher sends it
		// again before any later event.
		r.flaky.Store(25)
		testLifecycleKill9(t, name, lcHTTPSink(r.addr, "200ms"), r.eventLog)
		if _, refused, _ := r.snapshot(); refused == 0 {
			t.Errorf("the receiver refused no delivery; the run did not test the publisher's retries")
		}
	})
	t.Run("rabbitmq", func(t *testing.T) {
		t.Parallel()
		const name = "lc-kill-amqp"
		r := newLCRabbit(t, name)
		testLifecycleKill9(t, name, r.sinkSpec(), r.eventLog)
	})
}

// lcKillEntities are the entities the writers change: two sources, two
// routes and the rate limit of each of three tenants, one writer each.
func lcKillEntities() []*lcEntity {
	var out []*lcEntity
	for _, tenant := range []string{"t0", "t1", "t2"} {
		out = append(out,
			&lcEntity{tenant: tenant, kind: "source", name: "src-" + tenant + "-a"},
			&lcEntity{tenant: tenant, kind: "source", name: "src-" + tenant + "-b"},
			&lcEntity{tenant: tenant, kind: "route", name: "rt-a"},
			&lcEntity{tenant: tenant, kind: "route", name: "rt-b"},
			&lcEntity{tenant: tenant, kind: "rate_limit", name: tenant})
	}
	return out
}

func testLifecycleKill9(t *testing.T, name, sink string, got *eventLog) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	n := newLifecycleNode(t, name, sink)
	entities := lcKillEntities()
	p := n.serve(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i, e := range entities {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			for {
				select {
				case <-stop:
					return
				default:
				}
				w := e.next(rng)
				e.send(n, w)
				pause := time.Duration(5+rng.IntN(30)) * time.Millisecond
				if w.err != nil {
					pause = 20 * time.Millisecond // the node is down or restarting
				}
				time.Sleep(pause)
			}
		}()
	}
	rng := rand.New(rand.NewPCG(seed, 1<<32))
	start := time.Now()
	for range lcKills {
		time.Sleep(time.Duration(300+rng.IntN(1200)) * time.Millisecond)
		p.kill9()
		p = n.serve(t)
	}
	time.Sleep(500 * time.Millisecond)
	close(stop)
	wg.Wait()
	ran := time.Since(start)
	waitCaughtUp(t, p, n.admin, 60*time.Second)
	p.stop()

	outbox, published := readOutbox(t, n.testNode)
	if len(outbox) == 0 || published != outbox[len(outbox)-1].Seq {
		t.Fatalf("after a clean stop the publisher's checkpoint is %d, the outbox holds %d events", published, len(outbox))
	}
	checkOutbox(t, entities, outbox)
	if !waitFor(10*time.Second, func() bool { return got.unique() >= len(outbox) }) {
		t.Errorf("the receiver took %d distinct events of the outbox's %d", got.unique(), len(outbox))
	}
	dups := checkReceived(t, name, got, outbox)
	c := countWrites(entities)
	arrivals, refused, _ := got.snapshot()
	t.Logf("%d kills in %s: %d writes answered 2xx, %d answered 4xx/5xx (%d of them 5xx), %d refused while the node was down, %d unknown (cut by a kill); "+
		"%d events in the outbox; %d deliveries taken (%d repeats of an event already taken), %d refused by the receiver",
		lcKills, ran.Round(time.Second), c.ok, c.failed, c.rejected, c.refused, c.unknown, len(outbox), len(arrivals), dups, refused)
	if c.ok < 500 || c.failed < 20 {
		t.Errorf("the run made %d writes answered 2xx and %d refused ones; too few to say much", c.ok, c.failed)
	}
	if c.rejected > 0 {
		t.Errorf("%d writes were answered 5xx", c.rejected)
	}
}
