package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
)

// shared is said in every report.
const shared = "loadgen, the node or the relay, this process (the HTTP receiver and the RabbitMQ consumer) and RabbitMQ share the machine's %d cores, unpinned"

// report is everything one run measured; -json writes it whole.
type report struct {
	Machine       benchkit.Machine `json:"machine"`
	Quick         bool             `json:"quick"`
	Conns         int              `json:"connections"`
	Tenants       int              `json:"tenants"`
	Duration      string           `json:"duration"`
	Warmup        string           `json:"warmup"`
	OpenDuration  string           `json:"open_duration"`
	AMQPConsumer  string           `json:"amqp_consumer"`    // "no-ack" or "ack"
	HTTPConc      int              `json:"http_concurrency"` // the HTTP sink's concurrency; 0: its default
	Gcref         gcrefResult      `json:"gcref"`
	Live          []*liveResult    `json:"live"`
	Open          []*openResult    `json:"open_loop"`
	SustainedFrac float64          `json:"sustained_fraction_of_gcref"` // 0: no rate stayed bounded
	Relay         *relayResult     `json:"relay,omitempty"`
	VsRelay       float64          `json:"sustained_vs_relay"` // the sustained rate over the relay's (relayResult.Sustained); 0: either is missing
	Latency       []*latencyResult `json:"latency_at_half,omitempty"`
	Notes         []string         `json:"notes,omitempty"`
	Failures      []string         `json:"failures"`
	WallSeconds   float64          `json:"wall_seconds"`
	o             *options
}

func newReport(o *options) *report {
	m := benchkit.DescribeMachine(o.tmp, "")
	m.Note = fmt.Sprintf(shared, m.NProc)
	return &report{
		Machine:      m,
		Quick:        o.quick,
		Conns:        o.conns,
		Tenants:      o.tenants,
		Duration:     o.duration.String(),
		Warmup:       o.warmup.String(),
		OpenDuration: o.openD.String(),
		AMQPConsumer: amqpConsumer(o.amqpAck),
		HTTPConc:     o.httpConc,
		Failures:     []string{},
		o:            o,
	}
}

// consumerNote says how the RabbitMQ queue is consumed.
var consumerNote = map[string]string{
	"no-ack": "no-ack: the broker forgets a message as it hands it over; -amqp-ack acks instead",
	"ack":    "acked in groups of 256, prefetch 4096: -amqp-ack",
}

// amqpConsumer names the RabbitMQ consumer's mode for the report.
func amqpConsumer(ack bool) string {
	if ack {
		return "ack"
	}
	return "no-ack"
}

func (rep *report) Publish(wall time.Duration) benchkit.Published {
	rep.WallSeconds = wall.Seconds()
	return benchkit.Published{Markdown: rep.markdown(), Out: rep.o.out, JSONOut: rep.o.jsonOut, Figures: rep, Failures: rep.Failures}
}

func (rep *report) note(format string, a ...any) {
	rep.Notes = append(rep.Notes, fmt.Sprintf(format, a...))
}

func (rep *report) fail(problems ...string) {
	rep.Failures = append(rep.Failures, problems...)
}

// sustained is the highest bounded open-loop run, or nil.
func (rep *report) sustained() *openResult {
	var best *openResult
	for _, r := range rep.Open {
		if r.Bounded && (best == nil || r.Frac > best.Frac) {
			best = r
		}
	}
	return best
}

// markdown renders the report: how the runs were made, a table per kind
// of run, what the node got wrong, the notes and the verdict.
func (rep *report) markdown() string {
	var b strings.Builder
	rep.header(&b)
	if len(rep.Live) > 0 {
		rep.liveTable(&b)
	}
	if rep.o.filter != "" {
		rep.filterTable(&b)
	}
	if len(rep.Open) > 0 {
		rep.openTable(&b)
	}
	if rep.Relay != nil {
		rep.relaySection(&b)
	}
	rep.anomalies(&b)
	for _, n := range rep.Notes {
		fmt.Fprintf(&b, "Note: %s.\n", n)
	}
	b.WriteString(benchkit.Footer("every request answered 201, every hook delivered", rep.Failures, rep.WallSeconds))
	return b.String()
}

func (rep *report) header(b *strings.Builder) {
	m := rep.Machine
	name := "make bench-dispatch"
	if rep.Quick {
		name = "bench-dispatch -quick"
	}
	b.WriteString(m.Header(name))
	fmt.Fprintf(b, "- %s: every figure below is the whole machine's, not the node's alone\n", m.Note)
	fmt.Fprintf(b, "- request (every run, gcref's too): `loadgen -url http://127.0.0.1:PORT%s -tenants %d -c %d -size 1KiB -kind stripe`\n", loadPath, rep.Tenants, rep.Conns)
	fmt.Fprintf(b, "- node: `ankusa serve`, wal.type disk, sealing at its defaults, the tenantpath resolver, one source with one sink at its defaults (concurrency 32, tenant_concurrency 8, 64 MiB of hooks held in memory for first attempts) except as said. HTTP sink: %s, raw body, Standard Webhooks signature, to a fasthttp receiver in this process answering 204. RabbitMQ sink: persistent messages with publisher confirms to a topic exchange of its own, a durable queue bound to it, consumed here (%s). Kafka sink: acks=all, idempotent producer, zstd, key {tenant_id}, to a 16-partition topic of a three-broker kfake cluster in this process (in memory; its CPU counts as the receiver's), consumed here. NATS sink: publish with PubAck to a file-storage stream of its own on the NATS server, consumed here by an ordered consumer\n", httpConcNote(rep.HTTPConc), consumerNote[rep.AMQPConsumer])
	b.WriteString("- delivered: a hook counts once, at its first 2xx (HTTP) or consumed message (brokers), by event id; latency: from the hook's commit (the event id's millisecond timestamp) to that moment\n")
	if len(rep.Gcref.Rounds) > 0 {
		fmt.Fprintf(b, "- gcref (bench/gcref, group commit only) closed loop, %d round(s) of %s after %s: %s req/s (median; rounds %s)\n",
			len(rep.Gcref.Rounds), rep.Duration, rep.Warmup, thousands(rep.Gcref.Max), joinRates(rep.Gcref.Rounds))
	}
	b.WriteString("\n")
}

func (rep *report) liveTable(b *strings.Builder) {
	fmt.Fprintf(b, "Live: loadgen closed loop at full speed (-d %s -warmup %s) while the node delivers. A hook's first attempt goes from memory when its sink's queue has room; otherwise the scheduler claims the row later and the hook is read back from the store (read back: segment fetches; cache hits: the store's block cache):\n\n", rep.Duration, rep.Warmup)
	t := benchkit.Table{Header: []string{"target", "hooks", "ingest req/s", "delivered/s while ingesting", "backlog at ingest end", "max backlog", "drain after ingest", "delivered/s draining", "end to end hooks/s", "read back", "cache hits", "retries", "dups", "latency p50", "p99", "CPU node", "loadgen", "receiver", "rest"}, Left: map[int]bool{0: true}}
	for _, r := range rep.Live {
		t.Add(r.label(), thousands(float64(r.Hooks)), thousands(r.IngestRPS), thousands(r.DeliveredRPS), thousands(float64(r.BacklogAtEnd)), thousands(float64(r.BacklogMax)),
			secs(r.DrainS), thousands(r.DrainRPS), thousands(r.EndToEndRPS), share(r.ReadBack, r.Hooks), pct(100*r.CacheHitRate), fmt.Sprint(r.Retries), fmt.Sprint(r.Duplicates),
			ms(r.LatencyUS.P50), ms(r.LatencyUS.P99), pct(r.CPU.Node), pct(r.CPU.Client), pct(r.CPU.Target), pct(r.CPU.Rest))
	}
	b.WriteString(t.String() + "\n")
}

func (rep *report) openTable(b *strings.Builder) {
	fmt.Fprintf(b, "Open loop, every stage running (ingest, WAL, sealing, dispatch to the HTTP receiver): `loadgen ... -rate R -d %s -warmup %s`, R a fraction of gcref's %s req/s; the backlog (pending delivery rows) sampled every %s over the window. Bounded: ingest made at least %.0f%% of R with every answer 201, the backlog grew by at most %.0f%% of R per second (least-squares slope), and its final value (median of the last second) is within %d × R × the median delivery latency (at least 1 ms). Read back: hooks fetched from the store in the window instead of attempted from memory (share of R × window):\n\n",
		rep.OpenDuration, rep.Warmup, thousands(rep.Gcref.Max), sampleEvery, 100*ingestShare, 100*slopeShare, boundFactor)
	t := benchkit.Table{Header: []string{"of gcref", "rate", "ingest req/s", "ingest p99", "delivered/s", "read back", "backlog max", "final", "slope /s", "bound", "latency p50", "p99", "max", "CPU node", "loadgen", "receiver", "rest", "bounded"}}
	var why []string
	for _, r := range rep.Open {
		verdict := "yes"
		if !r.Bounded {
			verdict = "no"
			why = append(why, fmt.Sprintf("- %.0f%%: %s", 100*r.Frac, r.Why))
		}
		t.Add(fmt.Sprintf("%.0f%%", 100*r.Frac), thousands(r.Rate), thousands(r.Load.ThroughputRPS), ms(r.Load.LatencyUs.P99), thousands(r.DeliveredRPS), share(r.ReadBack, int64(r.Rate*r.WindowS)),
			thousands(float64(r.BacklogMax)), thousands(float64(r.BacklogFinal)), fmt.Sprintf("%.0f", r.Slope), thousands(r.Bound),
			ms(r.LatencyUS.P50), ms(r.LatencyUS.P99), ms(r.LatencyUS.Max), pct(r.CPU.Node), pct(r.CPU.Client), pct(r.CPU.Target), pct(r.CPU.Rest), verdict)
	}
	b.WriteString(t.String() + "\n")
	if len(why) > 0 {
		b.WriteString("Not bounded:\n\n" + strings.Join(why, "\n") + "\n\n")
	}
	if s := rep.sustained(); s != nil {
		fmt.Fprintf(b, "**Sustained end-to-end = %.0f%% of gcref**: %s hooks/s ingested durably, sealed and delivered over HTTP with the backlog bounded (max %s rows, final %s), against gcref's %s req/s closed-loop maximum on the same machine and request.\n\n",
			100*s.Frac, thousands(s.Rate), thousands(float64(s.BacklogMax)), thousands(float64(s.BacklogFinal)), thousands(rep.Gcref.Max))
	} else {
		b.WriteString("**Sustained end-to-end: no rate tried kept the backlog bounded.**\n\n")
	}
}

func (rep *report) anomalies(b *strings.Builder) {
	var anomalies []string
	for _, r := range rep.Live {
		anomalies = append(anomalies, benchkit.Prefixed("live "+r.label(), r.Anomalies)...)
	}
	for _, r := range rep.Open {
		anomalies = append(anomalies, benchkit.Prefixed(fmt.Sprintf("open loop at %.0f%%", 100*r.Frac), r.Anomalies)...)
	}
	if len(anomalies) > 0 {
		b.WriteString("Seen in the node (its error log, and backlog gauges that cannot be right):\n\n")
		for _, a := range anomalies {
			fmt.Fprintf(b, "- %s\n", a)
		}
		b.WriteString("\n")
	}
}

func joinRates(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = thousands(x)
	}
	return strings.Join(s, ", ")
}

func thousands(f float64) string { return benchkit.Thousands(f) }

func ms(us int64) string {
	if us >= 1e6 {
		return fmt.Sprintf("%.2f s", float64(us)/1e6)
	}
	return fmt.Sprintf("%.1f ms", float64(us)/1000)
}

func secs(s float64) string {
	return fmt.Sprintf("%.1f s", s)
}

// share is n and its share of total.
func share(n, total int64) string {
	if total == 0 {
		return thousands(float64(n))
	}
	return fmt.Sprintf("%s (%.0f%%)", thousands(float64(n)), 100*float64(n)/float64(total))
}

func pct(p float64) string {
	return fmt.Sprintf("%.0f%%", p)
}

// label is the run's target, and whether its sink had the filter.
func (r *liveResult) label() string {
	if r.Filter != "" {
		return r.Target + " + filter"
	}
	return r.Target
}

// filterTable compares each target's live run with the filter to the one
// without it, made just before on the same machine.
func (rep *report) filterTable(b *strings.Builder) {
	fmt.Fprintf(b, "Filter: each live run again with `filter: %s` on its sink (evaluated once per hook on the dispatcher's row writer, before the row is written), against the run without it just before (goal: within 5%%):\n\n", rep.o.filter)
	t := benchkit.Table{Header: []string{"target", "ingest req/s without", "with", "ratio", "end to end hooks/s without", "with", "ratio", "delivery p50 without", "with"}, Left: map[int]bool{0: true}}
	var plain *liveResult
	for _, r := range rep.Live {
		if r.Filter == "" {
			plain = r
			continue
		}
		if plain == nil || plain.Target != r.Target {
			continue
		}
		t.Add(r.Target, thousands(plain.IngestRPS), thousands(r.IngestRPS), ratio(r.IngestRPS, plain.IngestRPS),
			thousands(plain.EndToEndRPS), thousands(r.EndToEndRPS), ratio(r.EndToEndRPS, plain.EndToEndRPS),
			ms(plain.LatencyUS.P50), ms(r.LatencyUS.P50))
	}
	b.WriteString(t.String() + "\n")
}

func ratio(with, without float64) string {
	if without == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f", with/without)
}

// Target 2 of issue 23: sustained end-to-end over HTTP at least this share
// of the relay, with delivery p99 at half that rate at most this.
const (
	targetVsRelay   = 0.7
	targetDeliveryP = 50 * time.Millisecond
)

// relaySection is the relay reference, the sustained figure against it,
// and the latency runs' ledgers and latencies.
func (rep *report) relaySection(b *strings.Builder) {
	r := rep.Relay
	fmt.Fprintf(b, "Relay reference (bench/relay: a bare fasthttp server that forwards each request to the same in-process receiver with a fasthttp HostClient and answers 201 after the receiver's 2xx, store-and-forward without the store; its closed-loop rate is its end-to-end rate): `%s`, %d round(s): %s req/s (median; rounds %s).",
		r.Command, len(r.Rounds), thousands(r.Max), joinRates(r.Rounds))
	if c := r.Check; c != nil {
		verdict := "held"
		if !r.Held {
			verdict = "did not hold"
		}
		fmt.Fprintf(b, " Open loop at that rate for %s: %s req/s made (%s), ledger whole: %v — it %s that rate.", rep.OpenDuration, thousands(c.Load.ThroughputRPS), orAll201(c.LoadIssues), !c.Ledger.Void, verdict)
	}
	b.WriteString("\n\n")
	if s := rep.sustained(); s != nil && r.Sustained > 0 {
		floor := ""
		if len(rep.Open) == 1 {
			floor = " (one open-loop rate was tried: a floor of the sustained figure, not its maximum)"
		}
		which := "its closed-loop maximum, which it held open loop"
		if r.Sustained < r.Max {
			which = fmt.Sprintf("what it made open loop at its closed-loop maximum of %s, which it did not hold", thousands(r.Max))
		}
		fmt.Fprintf(b, "**Sustained end-to-end = %.2f × the relay**: the appliance's %s hooks/s (the open-loop search above) against the relay's %s (%s)%s.\n\n", rep.VsRelay, thousands(s.Rate), thousands(r.Sustained), which, floor)
	}
	if len(rep.Latency) == 0 && r.Check == nil {
		return
	}
	fmt.Fprintf(b, "Latency, Outpost's method: loadgen open loop (`... -rate R -d %s -warmup %s -sent FILE`); t0 = a request's scheduled send time, t2 = its 201, t3 = the receiver's first reading of the delivery (the handler's first clock reading; requests and deliveries are joined by the body's sha256: loadgen's -sent lines, the receiver's hash of each body). Publish latency t2 − t0, delivery latency t3 − t0. Ledger: every 201 (published) is delivered (t3 by the last 201), cut off (arrived within %s after it) or missing; a run is void unless published = delivered + cut off + missing and nothing is missing:\n\n",
		rep.OpenDuration, rep.Warmup, rep.o.latencyDrain)
	t := benchkit.Table{Header: []string{"server", "rate", "made req/s", "published", "delivered", "cut off", "missing", "publish p50", "p99", "p999", "delivery p50", "p99", "p999", "ledger"}, Left: map[int]bool{0: true}}
	all := rep.Latency
	if r.Check != nil {
		all = append([]*latencyResult{r.Check}, all...)
	}
	for _, l := range all {
		g, ledger := l.Ledger, "whole"
		if g.Void {
			ledger = "VOID"
		}
		what := "relay at its maximum"
		if l != r.Check {
			what = fmt.Sprintf("%s at half the sustained rate", l.Server)
		}
		t.Add(what, thousands(l.Rate), thousands(l.Load.ThroughputRPS), thousands(float64(g.Published)), thousands(float64(g.Delivered)), thousands(float64(g.CutOff)), thousands(float64(g.Missing)),
			ms(g.PublishUS.P50), ms(g.PublishUS.P99), ms(g.PublishUS.P999), ms(g.DeliveryUS.P50), ms(g.DeliveryUS.P99), ms(g.DeliveryUS.P999), ledger)
	}
	b.WriteString(t.String() + "\n")
	if void := rep.voidRuns(); len(void) > 0 {
		b.WriteString("Void:\n\n- " + strings.Join(void, "\n- ") + "\n\n")
	}
	var half *latencyResult
	for _, l := range rep.Latency {
		if l.Server == ankusaKind {
			half = l
		}
	}
	if half != nil && rep.VsRelay > 0 {
		p99 := time.Duration(half.Ledger.DeliveryUS.P99) * time.Microsecond
		met := rep.VsRelay >= targetVsRelay && p99 <= targetDeliveryP && !half.Ledger.Void
		fmt.Fprintf(b, "Target 2 (sustained ≥ %.1f × the relay, delivery p99 at half that rate ≤ %s): %.2f × and p99 %s: **%s**.\n\n",
			targetVsRelay, targetDeliveryP, rep.VsRelay, ms(half.Ledger.DeliveryUS.P99), map[bool]string{true: "met", false: "not met"}[met])
	}
}

func orAll201(issues []string) string {
	if len(issues) == 0 {
		return "every answer 201"
	}
	return strings.Join(issues, "; ")
}

// httpConcNote says how many deliveries the HTTP sink has in flight.
func httpConcNote(n int) string {
	if n <= 0 {
		return "concurrency at its default"
	}
	return fmt.Sprintf("concurrency %d, tenant_concurrency %d (-http-concurrency: as many deliveries in flight as the relay forwards at once)", n, max(n/4, 1))
}
