package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
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

// startNode starts a node delivering to sink (a YAML flow mapping).
func startNode(ctx context.Context, o *options, sink string) (*node, error) {
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
