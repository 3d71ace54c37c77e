package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
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
// everything else at its default. %[5]s is the sink.
const nodeConfig = `node: {name: bench-dispatch, data_dir: %[1]s}
listen: %[2]s
admin:
  listen: %[3]s
  tokens:
    - {name: bench, sha256: %[4]s, scopes: ["tenant:*"]}
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
      - %[5]s
`

// loadPath is loadgen's URL path: the tenant from -tenants, the demo
// source. gcref answers any path.
const loadPath = "/webhooks/{tenant}/demo"

// sinkSpec is the YAML flow mapping of the run's one sink.
type sinkSpec struct {
	kind string // http or rabbitmq
	yaml string
}

// httpSink delivers to the receiver at addr; extra is more sink keys.
func httpSink(addr, extra string) sinkSpec {
	return sinkSpec{kind: "http", yaml: fmt.Sprintf(`{id: recv, type: http, url: "http://%s/in/{tenant_id}", secret: "%s", allow_private: true%s}`, addr, sinkSecret, extra)}
}

// amqpSink publishes to exchange on the broker at url.
func amqpSink(url, exchange, extra string) sinkSpec {
	return sinkSpec{kind: "rabbitmq", yaml: fmt.Sprintf(`{id: mq, type: rabbitmq, url: %q, exchange: %q, routing_key: "bench.{tenant_id}"%s}`, url, exchange, extra)}
}

// node is a started `ankusa serve`. stop removes its data directory.
type node struct {
	dir    string
	listen string
	admin  string
	token  string
	config string
	proc   *benchkit.Proc
}

// startNode starts a node on a fresh data directory; segment is extra
// config (a "segment: {...}" line) or "".
func startNode(ctx context.Context, o *options, sink sinkSpec, segment string) (*node, error) {
	dir, addrs, err := benchkit.DataDir(o.tmp, "ankusa-bench-dispatch-", 2)
	if err != nil {
		return nil, err
	}
	n := &node{dir: dir, listen: addrs[0], admin: addrs[1]}
	var tok [16]byte
	_, _ = rand.Read(tok[:])
	n.token = "bench-" + hex.EncodeToString(tok[:])
	if err := n.launch(ctx, o, sink, segment); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return n, nil
}

// launch writes the config and starts the binary on n's data directory,
// and waits until it is ready.
func (n *node) launch(ctx context.Context, o *options, sink sinkSpec, segment string) error {
	sum := sha256.Sum256([]byte(n.token))
	n.config = fmt.Sprintf(nodeConfig, filepath.Join(n.dir, "data"), n.listen, n.admin, hex.EncodeToString(sum[:]), sink.yaml) + segment
	cfg := filepath.Join(n.dir, "ankusa.yaml")
	if err := os.WriteFile(cfg, []byte(n.config), 0o600); err != nil {
		return fmt.Errorf("cannot write the node's config: %w", err)
	}
	p, err := benchkit.StartProc("ankusa", exec.Command(filepath.Join(o.bin, "ankusa"), "serve", "-config", cfg))
	if err != nil {
		return fmt.Errorf("cannot start ankusa (build it with make build): %w", err)
	}
	n.proc = p
	if err := p.WaitReady(ctx, 15*time.Second, func() error { return benchkit.GetOK(client, "http://"+n.admin+"/readyz") }); err != nil {
		n.halt()
		return err
	}
	return nil
}

func (n *node) pid() int { return n.proc.Pid() }

func (n *node) alive() bool { return n.proc.Alive() }

// halt sends SIGTERM and waits for the drain (SIGKILL after 30s); it
// returns an error unless the node exited 0.
func (n *node) halt() error { return n.proc.Stop(30 * time.Second) }

// stop halts the node and removes its data directory.
func (n *node) stop() error {
	err := n.halt()
	os.RemoveAll(n.dir)
	return err
}

// loggedErrors counts the node's error log lines by message (the node
// logs at level error only).
func (n *node) loggedErrors() map[string]int {
	out := map[string]int{}
	for _, line := range strings.Split(n.proc.Output(), "\n") {
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
	url := "http://" + n.admin + "/metrics"
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

// retryDead asks the admin API to retry every dead letter of each tenant,
// all tenants at once, and returns how many it revived.
func (n *node) retryDead(tenants []string) (int, error) {
	var mu sync.Mutex
	var total int
	var errs []string
	var wg sync.WaitGroup
	for _, t := range tenants {
		wg.Add(1)
		go func() {
			defer wg.Done()
			url := "http://" + n.admin + "/v1/tenants/" + t + "/deliveries/retry"
			req, _ := http.NewRequest(http.MethodPost, url, nil)
			req.Header.Set("Authorization", "Bearer "+n.token)
			c := &http.Client{Timeout: 5 * time.Minute}
			resp, err := c.Do(req)
			if err != nil {
				mu.Lock()
				errs = append(errs, err.Error())
				mu.Unlock()
				return
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			var v struct {
				Retried int `json:"retried"`
			}
			mu.Lock()
			defer mu.Unlock()
			if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &v) != nil {
				errs = append(errs, fmt.Sprintf("POST %s: %s %s", url, resp.Status, body))
				return
			}
			total += v.Retried
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return total, fmt.Errorf("retrying dead letters: %s", strings.Join(errs, "; "))
	}
	return total, nil
}
