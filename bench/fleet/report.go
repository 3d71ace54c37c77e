package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
)

// report is everything one run measured.
type report struct {
	machine     benchkit.Machine
	command     string
	o           *options
	seed        time.Duration
	reads       readRun
	boots       []bootRun
	propagation []propagationRun // the large store's, then the small one's
	creates     []benchkit.CreateRun
	failures    []string
	busy        int
	wall        time.Duration
}

func newReport(o *options) *report {
	return &report{
		machine: benchkit.DescribeMachine(o.tmp, ""),
		command: "make bench-fleet (" + strings.Join(os.Args, " ") + ")",
		o:       o,
	}
}

func (r *report) seedRate() float64 { return float64(r.o.sources) / r.seed.Seconds() }

func (r *report) printPropagation() {
	p := r.propagation[len(r.propagation)-1]
	fmt.Printf("propagation with %d sources stored: %d writes, p50 %s p99 %s p99.9 %s max %s, %d not served within %s\n",
		p.Stored, p.Writes, benchkit.Dur(p.P50), benchkit.Dur(p.P99), benchkit.Dur(p.P999), benchkit.Dur(p.Max), p.NotServed, propagationLimit)
}

// check counts what is wrong as failures: a source B did not serve
// within propagationLimit of A's 201, a refused create.
func (r *report) check() {
	for _, p := range r.propagation {
		if p.NotServed > 0 {
			r.failures = append(r.failures, fmt.Sprintf("with %d sources stored, %d of %d sources created on A were not served by B: %s", p.Stored, p.NotServed, p.Writes, strings.Join(p.Failures, "; ")))
		}
	}
	for _, c := range r.creates {
		if c.Refused > 0 {
			r.failures = append(r.failures, fmt.Sprintf("%d creates at %d clients answered other than 201: %s", c.Refused, c.Clients, strings.Join(c.Errors, "; ")))
		}
	}
}

func (r *report) Publish(wall time.Duration) benchkit.Published {
	r.wall = wall
	return benchkit.Published{Markdown: "\n" + r.markdown(), Out: r.o.out, JSONOut: r.o.jsonOut, Figures: r.figures(), Failures: r.failures}
}

// markdown renders the report; the same text is printed and written to
// -out.
func (r *report) markdown() string {
	var b strings.Builder
	b.WriteString(r.machine.Header(r.command))
	fmt.Fprintf(&b, "- redis source store (tick_ms 1000, secrets.kek set), Redis at %s, a fresh namespace per store, deleted after; two nodes A and B, tenantpath resolver\n", r.o.redis)
	fmt.Fprintf(&b, "- %s sources over %s tenants (each a generic HMAC verifier, its secret sealed, and one HTTP sink) seeded through source.OpenFleet from %d goroutines in %s: %s sources/s (each a synced pending record, the Lua check-and-set, a synced audit row)\n",
		benchkit.Thousands(float64(r.o.sources)), benchkit.Thousands(float64(r.o.tenants)), r.o.seeders, r.seed.Round(time.Millisecond), benchkit.Thousands(r.seedRate()))
	b.WriteString(benchkit.BusyNote(r.busy))
	fmt.Fprintf(&b, "- the store opened in-process (source.OpenFleet, as a node's boot opens it): over an empty meta store (a first boot: every record read from Redis and kept in the mirror, then unsealed and built) %s; over the mirror that left (Redis up, nothing new) %s; the difference, about the first boot's read from Redis, %s (each exchange bounded by source.FleetTimeout, the whole read by nothing)\n",
		benchkit.Dur(r.reads.First), benchkit.Dur(r.reads.Mirror), benchkit.Dur(r.reads.Remote()))
	fmt.Fprintf(&b, "\nBoot with %s sources stored (process start to the admin listener's /readyz 200) and the RSS then:\n\n", benchkit.Thousands(float64(r.o.sources)))
	t := benchkit.Table{Header: []string{"node", "start → /readyz", "RSS after boot"}, Left: map[int]bool{0: true}}
	for _, x := range r.boots {
		t.Add(x.What, benchkit.Dur(x.Ready), benchkit.MiB(x.RSS))
	}
	b.WriteString(t.String())
	fmt.Fprintf(&b, "\nPropagation: %d sequential creates on A (verify none), each followed by hooks to B for the new source in a tight loop until B answers 201; the time from A's 201 to B's (it includes that last hook's own round trip, whose median is given):\n\n", r.o.writes)
	t = benchkit.Table{Header: []string{"sources stored", "writes", "p50", "p99", "p99.9", "max", "not served (10 s limit)", "B had it at the first hook", "404s before the 201", "B's 201 hook p50", "A's create p50", "create p99"}}
	for _, p := range r.propagation {
		t.Add(benchkit.Thousands(float64(p.Stored)), fmt.Sprint(p.Writes), benchkit.Dur(p.P50), benchkit.Dur(p.P99), benchkit.Dur(p.P999), benchkit.Dur(p.Max), fmt.Sprint(p.NotServed), fmt.Sprint(p.FirstTry), fmt.Sprint(p.Polls), benchkit.Dur(p.Hook.P50), benchkit.Dur(p.Create.P50), benchkit.Dur(p.Create.P99))
	}
	b.WriteString(t.String())
	fmt.Fprintf(&b, "\nCreates over A's admin API (POST /v1/tenants/{t}/sources, random tenant, verify none; each a synced pending record, one Lua script, a synced audit row), %s per run, %s+ sources stored:\n\n", r.o.createD, benchkit.Thousands(float64(r.o.sources)))
	t = benchkit.Table{Header: []string{"clients", "creates", "creates/s", "p50", "p99", "max", "not 201"}}
	for _, c := range r.creates {
		t.Add(fmt.Sprint(c.Clients), benchkit.Thousands(float64(c.Created)), benchkit.Thousands(c.PerSecond), benchkit.Dur(c.Latency.P50), benchkit.Dur(c.Latency.P99), benchkit.Dur(c.Latency.Max), fmt.Sprint(c.Refused))
	}
	b.WriteString(t.String())
	b.WriteString("\n" + benchkit.Footer("every create 201, every new source served by B", r.failures, r.wall.Seconds()))
	return b.String()
}

// figures is the report as JSON.
func (r *report) figures() any {
	return map[string]any{
		"machine": r.machine, "redis": r.o.redis, "sources": r.o.sources, "tenants": r.o.tenants,
		"seed_ns": r.seed, "in_process_open": r.reads, "first_read_ns": r.reads.Remote(), "seed_per_s": r.seedRate(), "seeders": r.o.seeders, "boots": r.boots,
		"propagation": r.propagation, "creates": r.creates, "failures": r.failures,
		"busy_measurements": r.busy, "wall_s": r.wall.Seconds(),
	}
}
