package main

import (
	"os"
	"sync"
	"time"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
)

// sampleEvery is the backlog sampling period.
const sampleEvery = 250 * time.Millisecond

// sample is the node and the target at one moment of a run.
type sample struct {
	T         float64 `json:"t"`         // seconds since the run began
	Records   int64   `json:"records"`   // hooks committed
	Pending   int64   `json:"pending"`   // delivery rows not dead (in flight included)
	InFlight  int64   `json:"in_flight"` // rows an attempt holds
	Dead      int64   `json:"dead"`
	Delivered int64   `json:"delivered"` // hooks the target received at least once
	Overflow  int64   `json:"-"`         // hooks past the intake's memory bound, so far
	Retries   int64   `json:"-"`         // attempts that failed and were rescheduled, so far
	Fetches   int64   `json:"fetches"`   // hooks read back from the store, so far
	Hits      int64   `json:"-"`         // block cache hits and misses of those reads, so far
	Misses    int64   `json:"-"`
	Unsealed  int64   `json:"unsealed"` // hooks in the open segment
	at        time.Time
	nodeCPU   float64 // CPU seconds so far
	selfCPU   float64
	busy      float64 // the machine's busy CPU seconds so far
}

// sampler samples the node's /metrics and the target's tally every
// sampleEvery, and on demand.
type sampler struct {
	n     *node
	t     *tally
	began time.Time
	mu    sync.Mutex
	all   []sample
	stop  chan struct{}
	done  chan struct{}
}

func startSampler(n *node, t *tally, began time.Time) *sampler {
	s := &sampler{n: n, t: t, began: began, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(sampleEvery)
		defer tick.Stop()
		for {
			s.take()
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

// take samples now, keeps the sample in the series and returns it.
func (s *sampler) take() sample {
	p := sample{at: time.Now()}
	p.T = p.at.Sub(s.began).Seconds()
	p.nodeCPU = cpuSeconds(s.n.Pid())
	p.selfCPU = cpuSeconds(os.Getpid())
	p.busy, _ = benchkit.MachineBusy()
	err := s.n.metrics(&p)
	p.Delivered = s.t.unique.Load()
	if err != nil {
		return p // not kept: the node did not answer
	}
	s.mu.Lock()
	s.all = append(s.all, p)
	s.mu.Unlock()
	return p
}

// snapshot is the series so far.
func (s *sampler) snapshot() []sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sample(nil), s.all...)
}

// end stops sampling and returns the series.
func (s *sampler) end() []sample {
	close(s.stop)
	<-s.done
	return s.snapshot()
}

// cpuSeconds is a process's user plus system CPU time so far, 0 where
// /proc does not say.
func cpuSeconds(pid int) float64 {
	c, _ := benchkit.CPUSeconds(pid)
	return c
}

// between is the samples taken from a to b, both included.
func between(all []sample, a, b sample) []sample {
	var out []sample
	for _, p := range all {
		if !p.at.Before(a.at) && !p.at.After(b.at) {
			out = append(out, p)
		}
	}
	return out
}

// cpuShares are the CPU the node, this process (the receiver or the
// consumer) and the rest of the machine used from a to b, in percent of
// one core; client is loadgen's CPU seconds over the same span.
type cpuShares struct {
	Node   float64 `json:"node_percent"`
	Client float64 `json:"loadgen_percent"`
	Target float64 `json:"receiver_percent"` // this process: the HTTP receiver or the RabbitMQ consumer
	Rest   float64 `json:"rest_percent"`     // everything else, RabbitMQ included
}

func shares(a, b sample, client float64) cpuShares {
	d := b.at.Sub(a.at).Seconds()
	if d <= 0 {
		return cpuShares{}
	}
	c := cpuShares{
		Node:   100 * (b.nodeCPU - a.nodeCPU) / d,
		Target: 100 * (b.selfCPU - a.selfCPU) / d,
		Client: 100 * client / d,
	}
	c.Rest = max(0, 100*(b.busy-a.busy)/d-c.Node-c.Target-c.Client)
	return c
}

// slope is the least-squares slope of the pending backlog over ps, in
// rows per second.
func slope(ps []sample) float64 {
	if len(ps) < 3 {
		return 0
	}
	var sx, sy, sxx, sxy float64
	for _, p := range ps {
		x, y := p.T, float64(p.Pending)
		sx += x
		sy += y
		sxx += x * x
		sxy += x * y
	}
	n := float64(len(ps))
	den := n*sxx - sx*sx
	if den == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / den
}

// hitRate is the share of the store's block reads from a to b that the
// block cache served.
func hitRate(a, b sample) float64 {
	hits, misses := b.Hits-a.Hits, b.Misses-a.Misses
	if hits+misses == 0 {
		return 0
	}
	return float64(hits) / float64(hits+misses)
}
