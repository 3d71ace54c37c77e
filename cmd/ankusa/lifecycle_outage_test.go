package main

// Issue 17, acceptance 4: the lifecycle sink down for 30 s under a steady
// stream of admin writes. The writes keep answering (2xx, quickly), the
// publisher's lag grows and /metrics shows it, and once the sink is back
// the lag drains and the sink has every event.

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

const (
	lcOutage     = 30 * time.Second
	lcWriteEvery = 50 * time.Millisecond // 20 writes a second
	// lcDrainBound is how soon after the sink returns the lag must be 0:
	// the publisher waits at most retry_max (2s) before its next attempt,
	// then sends the backlog of some 600 events.
	lcDrainBound = 10 * time.Second
)

// lcSample is the lifecycle metrics at one moment of the outage.
type lcSample struct {
	at time.Duration // since the outage began
	m  lcMetrics
}

// lcSteadyWriter makes one write every lcWriteEvery, round robin over
// its entities, each cycling through writes that all succeed; it records
// each write's latency.
type lcSteadyWriter struct {
	n        *apiNode
	entities []*lcEntity
	rng      *rand.Rand
	latency  []time.Duration
	stop     chan struct{}
	done     chan struct{}
}

// lcOutageEntities: the rate limit and one source of each of four
// tenants.
func lcOutageEntities() []*lcEntity {
	var out []*lcEntity
	for i := range 4 {
		tenant := fmt.Sprintf("o%d", i)
		out = append(out, &lcEntity{tenant: tenant, kind: "rate_limit", name: tenant},
			&lcEntity{tenant: tenant, kind: "source", name: "src-" + tenant})
	}
	return out
}

func (w *lcSteadyWriter) run() {
	defer close(w.done)
	tick := time.NewTicker(lcWriteEvery)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-w.stop:
			return
		case <-tick.C:
		}
		e := w.entities[i%len(w.entities)]
		// A source is created, updated twice, deleted; a rate limit set
		// twice and cleared: every write is one the node accepts.
		ops := []string{"create", "update", "update", "delete"}
		if e.kind == "rate_limit" {
			ops = []string{"update", "update", "delete"}
		}
		wr := e.write(ops[len(e.writes)%len(ops)], w.rng)
		start := time.Now()
		e.send(w.n, wr)
		w.latency = append(w.latency, time.Since(start))
	}
}

func TestLifecycleSinkOutage(t *testing.T) {
	const name = "lc-outage"
	r := newLCReceiver(t, name)
	n := newLifecycleNode(t, name, lcHTTPSink(r.addr, "2s"))
	p := n.serve(t)
	w := &lcSteadyWriter{n: n, entities: lcOutageEntities(), rng: rand.New(rand.NewPCG(1, 2)), stop: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	stopWriter := func() {
		select {
		case <-w.stop:
		default:
			close(w.stop)
			<-w.done
		}
	}
	defer stopWriter()

	time.Sleep(3 * time.Second)
	before := readLCMetrics(t, n.admin)
	if before.lagEvents > 20 || before.published == 0 {
		t.Fatalf("before the outage the publisher lags %v events and published %v", before.lagEvents, before.published)
	}
	r.down.Store(true)
	began := time.Now()
	var samples []lcSample
	for time.Since(began) < lcOutage {
		time.Sleep(time.Second)
		samples = append(samples, lcSample{at: time.Since(began), m: readLCMetrics(t, n.admin)})
	}
	r.down.Store(false)
	back := time.Now()
	checkOutageSamples(t, before, samples)
	for readLCMetrics(t, n.admin).lagEvents > 0 {
		if time.Since(back) > lcDrainBound {
			t.Fatalf("%s after the sink came back the publisher still lags %v events", lcDrainBound, readLCMetrics(t, n.admin).lagEvents)
		}
		time.Sleep(50 * time.Millisecond)
	}
	drained := time.Since(back)
	time.Sleep(2 * time.Second)
	stopWriter()
	waitCaughtUp(t, p, n.admin, lcDrainBound)
	after := readLCMetrics(t, n.admin)
	p.stop()

	outbox, _ := readOutbox(t, n.testNode)
	checkOutbox(t, w.entities, outbox)
	c := countWrites(w.entities)
	if c.ok != len(w.latency) {
		t.Errorf("%d of %d writes were answered 2xx, want all (%d 4xx/5xx, %d connection errors)", c.ok, len(w.latency), c.failed, c.refused+c.unknown)
	}
	dups := checkReceived(t, name, r.eventLog, outbox)
	_, refused, _ := r.snapshot()
	if dups != 0 {
		t.Errorf("the receiver took %d events twice; without a crash the publisher sends each once it is acknowledged", dups)
	}
	if after.written != float64(len(outbox)) || after.published != after.written {
		t.Errorf("events written %v, published %v; the outbox holds %d", after.written, after.published, len(outbox))
	}
	if after.failures != float64(refused) {
		t.Errorf("ankusa_lifecycle_publish_failures_total is %v, the receiver refused %d deliveries", after.failures, refused)
	}
	lat := slices.Clone(w.latency)
	slices.Sort(lat)
	p50, p99, worst := lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1]
	if p99 > 500*time.Millisecond {
		t.Errorf("admin write latency p99 %s (p50 %s, max %s) while the sink was down, want well under a second", p99, p50, worst)
	}
	last := samples[len(samples)-1].m
	t.Logf("%d writes in %d s (%d during the %s outage), latency p50 %s p99 %s max %s; at the outage's end lag %v events, %.1f s, %v publish failures; "+
		"drained %s after the sink came back; %d events, all received once",
		len(lat), int(time.Since(began.Add(-3*time.Second)).Seconds()), int(last.written-before.written), lcOutage, p50, p99, worst,
		last.lagEvents, last.lagSeconds, last.failures-before.failures, drained.Round(10*time.Millisecond), len(outbox))
}

// checkOutageSamples holds the metrics sampled every second of the outage
// to what an outage must show: the lag in events grows with the writes
// (nothing is published), the lag in seconds grows with the outage, and
// publish failures keep being counted.
func checkOutageSamples(t *testing.T, before lcMetrics, samples []lcSample) {
	t.Helper()
	// The first sample is the outage's baseline: a delivery the receiver
	// took just before it went down, or one in flight as it did, may be
	// counted after before was read; none may be after the first second.
	base := samples[0].m
	prev := before
	for i, s := range samples {
		m := s.m
		pending := m.written - base.written
		switch {
		case m.published != base.published:
			t.Errorf("%s into the outage %v events were published, %v a second into it", s.at.Round(time.Second), m.published, base.published)
		case i > 0 && m.lagEvents < prev.lagEvents || m.lagEvents < pending:
			t.Errorf("%s into the outage the lag is %v events (%v before), %v were written since its first second", s.at.Round(time.Second), m.lagEvents, prev.lagEvents, pending)
		case i > 0 && (m.lagSeconds <= prev.lagSeconds || m.lagSeconds < s.at.Seconds()-2):
			t.Errorf("%s into the outage the lag is %.2f s (%.2f s a second before)", s.at.Round(time.Second), m.lagSeconds, prev.lagSeconds)
		case m.failures < prev.failures:
			t.Errorf("%s into the outage publish failures went from %v to %v", s.at.Round(time.Second), prev.failures, m.failures)
		}
		prev = m
	}
	last := samples[len(samples)-1].m
	mid := samples[len(samples)/2].m
	if last.lagEvents < 400 || !(before.failures < mid.failures && mid.failures < last.failures) || last.failures-before.failures < 10 {
		t.Errorf("at the outage's end: lag %v events, publish failures %v → %v → %v; want hundreds of events and failures rising throughout",
			last.lagEvents, before.failures, mid.failures, last.failures)
	}
}
