package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
	"github.com/ankusa/ankusa/tools/loadgen/result"
)

// sinkSecret signs the HTTP deliveries (Standard Webhooks), as a real
// source would; the receiver does not verify (that CPU would come out of
// the node's share).
const sinkSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// nodeConfig is the node's config: the tenantpath resolver (the tenant
// comes from the URL, loadgen spreads hooks over -tenants; it requires a
// finite rate limit, set far above any rate here), one source
// without verification and one sink, the WAL on disk, sealing and
// everything else at its default. %[4]s is the sink.
const nodeConfig = `node: {name: bench-dispatch, data_dir: %[1]s}
listen: %[2]s
admin: {listen: %[3]s}
log: {level: error}
rate_limits:
  default: {rate: 1000000, burst: 1000000}
route_resolver: {type: tenantpath, prefix: [webhooks]}
wal: {type: disk}
source_store: {type: static}
sources:
  demo:
    verify: {type: none}
    trust_url_tenant: true
    sinks:
      - %[4]s
`

// loadPath is loadgen's URL path: the tenant from -tenants, the demo
// source. gcref answers any path.
const loadPath = "/webhooks/{tenant}/demo"

// node is a started `ankusa serve` on a data directory of its own.
type node struct{ *benchkit.Node }

// startNode starts a node delivering to sink (a YAML flow mapping), with
// filter as the sink's filter unless it is empty.
func startNode(ctx context.Context, o *options, sink, filter string) (*node, error) {
	if filter != "" {
		// A JSON string is a YAML double-quoted scalar.
		q, _ := json.Marshal(filter)
		sink = strings.TrimSuffix(sink, "}") + ", filter: " + string(q) + "}"
	}
	n, err := benchkit.StartNode(ctx, o.bin, o.tmp, func(n *benchkit.Node) string {
		return fmt.Sprintf(nodeConfig, n.Data(), n.Listen, n.Admin, sink)
	})
	return &node{n}, err
}

// stop sends SIGTERM and waits for the drain (SIGKILL after 30s), removes
// the data directory, and returns an error unless the node exited 0.
func (n *node) stop() error { return n.Shut(30 * time.Second) }

// loggedErrors counts the node's error log lines by message (the node
// logs at level error only).
func (n *node) loggedErrors() map[string]int {
	out := map[string]int{}
	for _, line := range strings.Split(n.Output(), "\n") {
		var l struct {
			Level string `json:"level"`
			Msg   string `json:"msg"`
		}
		if json.Unmarshal([]byte(line), &l) != nil || l.Level != "error" {
			continue
		}
		out[l.Msg]++
	}
	return out
}

var client = &http.Client{Timeout: 10 * time.Second}

// metrics reads the node's figures from /metrics into p.
func (n *node) metrics(p *sample) error {
	url := "http://" + n.Admin + "/metrics"
	gauges := map[string]*int64{
		"ankusa_wal_records_total":                   &p.Records,
		`ankusa_dispatch_backlog{state="pending"}`:   &p.Pending,
		`ankusa_dispatch_backlog{state="in_flight"}`: &p.InFlight,
		`ankusa_dispatch_backlog{state="dead"}`:      &p.Dead,
		"ankusa_dispatch_intake_overflow_total":      &p.Overflow,
		"ankusa_segment_fetch_total":                 &p.Fetches,
		"ankusa_segment_block_cache_hits_total":      &p.Hits,
		"ankusa_segment_block_cache_misses_total":    &p.Misses,
		"ankusa_segment_unsealed_hooks":              &p.Unsealed,
	}
	found := 0
	err := benchkit.Metrics(client, url, func(name string, v float64) {
		if g, ok := gauges[name]; ok {
			*g = int64(v)
			if g == &p.Records || g == &p.Pending {
				found++
			}
		} else if strings.HasPrefix(name, "ankusa_dispatch_attempts_total{") && strings.Contains(name, `outcome="retry"`) {
			p.Retries += int64(v)
		}
	})
	if err == nil && found != 2 {
		err = fmt.Errorf("GET %s: no ankusa_wal_records_total or ankusa_dispatch_backlog{state=\"pending\"}", url)
	}
	return err
}

// nodeRun is one node with its target, sampler and the bookkeeping every
// run shares.
type nodeRun struct {
	o      *options
	t      target
	n      *node
	s      *sampler
	began  time.Time
	series []sample
	errors map[string]int // the node's error log lines by message
}

// startRun starts a target of kind and a node delivering to it through
// filter ("": none).
func startRun(ctx context.Context, o *options, kind, filter string) (*nodeRun, error) {
	var t target
	var err error
	switch kind {
	case targetAMQP:
		t, err = openBroker(o.amqpURL, o.amqpAck)
	case targetKafka:
		t, err = openKafka()
	case targetNATS:
		t, err = openNATS(o.natsURL)
	default:
		t, err = startReceiver(nil, o.httpConc)
	}
	if err != nil {
		return nil, err
	}
	n, err := startNode(ctx, o, t.sink(), filter)
	if err != nil {
		t.close()
		return nil, err
	}
	r := &nodeRun{o: o, t: t, n: n, began: time.Now()}
	r.s = startSampler(n, t.tallied(), r.began)
	return r, nil
}

// endSampling stops the sampler and keeps every sample of the run.
func (r *nodeRun) endSampling() {
	if r.series == nil {
		r.series = r.s.end()
	}
}

// finish stops sampling, the node and the target; what went wrong is
// returned as problems.
func (r *nodeRun) finish() []string {
	var problems []string
	r.endSampling()
	if err := r.n.stop(); err != nil {
		problems = append(problems, err.Error())
	}
	r.errors = r.n.loggedErrors()
	if err := r.t.close(); err != nil {
		problems = append(problems, err.Error())
	}
	return problems
}

// waitDelivered waits until the target has received want hooks and the
// node's backlog is empty, at most limit; it returns the time of the last
// first delivery and whether everything arrived.
func (r *nodeRun) waitDelivered(ctx context.Context, want int64, limit time.Duration) (time.Time, bool) {
	deadline := time.Now().Add(limit)
	for r.t.tallied().unique.Load() < want {
		if time.Now().After(deadline) || !r.n.Alive() || ctx.Err() != nil {
			return r.t.tallied().lastDelivery(), false
		}
		time.Sleep(5 * time.Millisecond)
	}
	last := r.t.tallied().lastDelivery()
	for time.Now().Before(deadline) {
		if p := (sample{}); r.n.metrics(&p) == nil && p.Pending <= 0 {
			return last, true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return last, false
}

// anomalies are what the node's own figures got wrong during the run:
// its error log, and backlog gauges that cannot be (pending below zero,
// more dead letters than hooks).
func (r *nodeRun) anomalies() []string {
	var out []string
	for msg, n := range r.errors {
		out = append(out, fmt.Sprintf("the node logged %d× error %q", n, msg))
	}
	slices.Sort(out)
	var minPending, maxDead, records int64
	for _, p := range r.series {
		minPending, maxDead, records = min(minPending, p.Pending), max(maxDead, p.Dead), max(records, p.Records)
	}
	if minPending < 0 {
		out = append(out, fmt.Sprintf("the pending backlog gauge went down to %d", minPending))
	}
	if maxDead > records {
		out = append(out, fmt.Sprintf("the dead-letter gauge reached %d for %d hooks", maxDead, records))
	}
	return out
}

// startWindow starts loadgen with args (a run of d after the warm-up)
// against the run's node and waits out the warm-up: it returns loadgen
// with the sample and loadgen's CPU seconds at the start of the measured
// window. On an error the run is finished.
func (r *nodeRun) startWindow(ctx context.Context, args []string, d time.Duration) (*benchkit.Loadgen, sample, float64, error) {
	l, err := benchkit.StartLoadgen(ctx, r.o.bin, args, d+r.o.warmup)
	if err != nil {
		r.finish()
		return nil, sample{}, 0, err
	}
	if err := benchkit.Sleep(ctx, r.o.warmup); err != nil {
		l.Wait()
		r.finish()
		return nil, sample{}, 0, err
	}
	a := r.s.take()
	return l, a, cpuSeconds(l.Pid()), nil
}

// outcome is what every kind of run reports beside its figures.
type outcome struct {
	Samples   []sample `json:"samples"`
	Anomalies []string `json:"anomalies,omitempty"`
	Problems  []string `json:"problems,omitempty"`
}

func (out *outcome) problem(p ...string) { out.Problems = append(out.Problems, p...) }

// wait waits for loadgen l and returns its result; a non-zero exit beside
// it is a problem of out. On an error the run is finished.
func (r *nodeRun) wait(l *benchkit.Loadgen, out *outcome) (result.Summary, error) {
	lr, _, exited, err := l.Wait()
	if err != nil {
		r.finish()
		return lr, err
	}
	out.problem(exited...)
	return lr, nil
}

// close finishes the run (see finish) into out, with its samples and
// anomalies.
func (r *nodeRun) close(out *outcome) {
	out.problem(r.finish()...)
	out.Samples, out.Anomalies = r.series, r.anomalies()
}

// loadShape is the request every run sends, gcref's included: 1 KiB
// Stripe-like bodies over o.tenants tenants.
func loadShape(o *options, addr string) []string {
	return []string{
		"-url", "http://" + addr + loadPath,
		"-tenants", strconv.Itoa(o.tenants),
		"-c", strconv.Itoa(o.conns),
		"-size", "1KiB",
		"-kind", "stripe",
		"-json",
	}
}

// closedArgs is a closed-loop run of d after warmup.
func closedArgs(o *options, addr string, d, warmup time.Duration) []string {
	return append(loadShape(o, addr), "-d", d.String(), "-warmup", warmup.String())
}

// openArgs is an open-loop run at rate.
func openArgs(o *options, addr string, rate float64, d, warmup time.Duration) []string {
	return append(loadShape(o, addr), "-rate", strconv.FormatFloat(rate, 'f', 0, 64), "-d", d.String(), "-warmup", warmup.String())
}

// commandLine is how the report shows a loadgen run: the port replaced.
func commandLine(args []string, addr string) string {
	return "loadgen " + strings.ReplaceAll(strings.Join(args, " "), addr, "127.0.0.1:PORT")
}
