package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
)

// The tenants: big is ingested and erased, steady sends throughout.
const (
	bigTenant    = "big"
	steadyTenant = "steady"
)

// adminToken is the bench's admin bearer token; the config holds its
// SHA-256. Erasing needs tenants:write and tenant:*, the profiles debug.
const adminToken = "bench-erase-token-4b7d02c9e1"

// nodeConfig is the node's config (DESIGN.md §5). %[1]s is the data
// directory, %[2]s the listener, %[3]s the admin listener, %[4]s the
// token's SHA-256, %[5]s the receiver. The rate limit is finite (the
// tenantpath resolver wants one) and far above any rate here.
const nodeConfig = `node: {name: bench-erase, data_dir: %[1]s}
listen: %[2]s
admin:
  listen: %[3]s
  tokens:
    - {name: bench, sha256: "%[4]s", scopes: ["tenants:read", "tenants:write", "tenant:*", "debug"]}
log: {level: warn}
rate_limits:
  default: {rate: 1000000, burst: 1000000}
route_resolver: {type: tenantpath, prefix: [webhooks]}
wal: {type: disk}
segment: {max_age: 1s}
archive: {type: dir, path: %[1]s/archive}
source_store: {type: static}
sources:
  demo:
    verify: {type: none}
    trust_url_tenant: true
    sinks:
      - {id: recv, type: http, url: "http://%[5]s/in/{tenant_id}", allow_private: true}
`

// node is the started `ankusa serve`.
type node struct{ *benchkit.Node }

func startNode(ctx context.Context, o *options, receiver string) (*node, error) {
	sum := sha256.Sum256([]byte(adminToken))
	n, err := benchkit.StartNode(ctx, o.bin, o.tmp, func(n *benchkit.Node) string {
		return fmt.Sprintf(nodeConfig, n.Data(), n.Listen, n.Admin, hex.EncodeToString(sum[:]), receiver)
	})
	if err != nil {
		return nil, err
	}
	return &node{n}, nil
}

// client is the bench's admin client.
var client = &http.Client{Timeout: 30 * time.Second}

// call sends an admin request with the bench's token.
func (n *node) call(method, uri string) (int, []byte, error) {
	return benchkit.Call(client, method, "http://"+n.Admin+uri, nil, "Authorization", "Bearer "+adminToken)
}

// eraseStatus is GET /v1/tenants/{t}/erase's answer (and the DELETE's).
type eraseStatus struct {
	Tenant     string           `json:"tenant"`
	State      string           `json:"state"`
	Stage      string           `json:"stage"`
	StartedAt  *time.Time       `json:"started_at"`
	Removed    map[string]int64 `json:"removed"`
	ErasedAt   *time.Time       `json:"erased_at"`
	SeqAtClose *uint64          `json:"seq_at_close"`
	Ordinals   []uint32         `json:"ordinals"`
}

// erase sends DELETE /v1/tenants/{t}?confirm={t}; anything but 202 is an
// error.
func (n *node) erase(t string) (eraseStatus, error) {
	status, body, err := n.call("DELETE", "/v1/tenants/"+t+"?confirm="+t)
	if err != nil {
		return eraseStatus{}, fmt.Errorf("DELETE /v1/tenants/%s: %w", t, err)
	}
	if status != http.StatusAccepted {
		return eraseStatus{}, fmt.Errorf("DELETE /v1/tenants/%s: %d %s, want 202", t, status, benchkit.Tail(string(body)))
	}
	var st eraseStatus
	if err := json.Unmarshal(body, &st); err != nil {
		return st, fmt.Errorf("DELETE /v1/tenants/%s: cannot parse %s: %w", t, benchkit.Tail(string(body)), err)
	}
	return st, nil
}

// eraseStatus reads GET /v1/tenants/{t}/erase.
func (n *node) eraseStatus(t string) (eraseStatus, error) {
	status, body, err := n.call("GET", "/v1/tenants/"+t+"/erase")
	if err != nil {
		return eraseStatus{}, fmt.Errorf("GET /v1/tenants/%s/erase: %w", t, err)
	}
	if status != http.StatusOK {
		return eraseStatus{}, fmt.Errorf("GET /v1/tenants/%s/erase: %d %s", t, status, benchkit.Tail(string(body)))
	}
	var st eraseStatus
	if err := json.Unmarshal(body, &st); err != nil {
		return st, fmt.Errorf("GET /v1/tenants/%s/erase: cannot parse %s: %w", t, benchkit.Tail(string(body)), err)
	}
	return st, nil
}

// backlog is the node's delivery backlog gauges.
type backlog struct {
	Pending  int64 `json:"pending"`
	InFlight int64 `json:"in_flight"`
	Dead     int64 `json:"dead"`
}

func (n *node) backlog() (backlog, error) {
	var b backlog
	gauges := map[string]*int64{
		`ankusa_dispatch_backlog{state="pending"}`:   &b.Pending,
		`ankusa_dispatch_backlog{state="in_flight"}`: &b.InFlight,
		`ankusa_dispatch_backlog{state="dead"}`:      &b.Dead,
	}
	found := 0
	err := benchkit.Metrics(client, "http://"+n.Admin+"/metrics", func(name string, v float64) {
		if g, ok := gauges[name]; ok {
			*g = int64(v)
			found++
		}
	})
	if err == nil && found != len(gauges) {
		err = fmt.Errorf("GET /metrics: no ankusa_dispatch_backlog gauges")
	}
	return b, err
}

// dataBytes is the size of the files under the node's data directory by
// top-level directory (wal, segments, meta, archive).
func (n *node) dataBytes() map[string]int64 {
	out := map[string]int64{}
	entries, _ := os.ReadDir(n.Data())
	for _, e := range entries {
		var total int64
		_ = filepath.WalkDir(filepath.Join(n.Data(), e.Name()), func(_ string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if fi, err := d.Info(); err == nil {
					total += fi.Size()
				}
			}
			return nil
		})
		out[e.Name()] = total
	}
	return out
}

// idle waits up to limit until the node uses under 10% of a core over a
// second; it returns the last second's share and whether it got there.
func (n *node) idle(ctx context.Context, limit time.Duration) (float64, bool, error) {
	deadline := time.Now().Add(limit)
	for {
		c0, err := benchkit.CPUSeconds(n.Pid())
		if err != nil {
			return 0, false, err
		}
		if err := benchkit.Sleep(ctx, time.Second); err != nil {
			return 0, false, err
		}
		c1, err := benchkit.CPUSeconds(n.Pid())
		if err != nil {
			return 0, false, err
		}
		if share := c1 - c0; share < 0.10 || time.Now().After(deadline) {
			return share, share < 0.10, nil
		}
	}
}

// cpuProfile fetches the node's CPU profile over d into path.
func (n *node) cpuProfile(path string, d time.Duration) error {
	secs := max(1, int(d.Round(time.Second).Seconds()))
	c := &http.Client{Timeout: d + 30*time.Second}
	status, body, err := benchkit.Call(c, "GET", fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", n.Admin, secs), nil, "Authorization", "Bearer "+adminToken)
	if err == nil && status != http.StatusOK {
		err = fmt.Errorf("GET /debug/pprof/profile: %d %s", status, benchkit.Tail(string(body)))
	}
	if err == nil {
		if err = os.WriteFile(path, body, 0o644); err != nil {
			err = fmt.Errorf("cannot write the profile %q: %w", path, err)
		}
	}
	return err
}

// receiver is the sink's HTTP receiver: big's deliveries are answered 503
// with Retry-After: 86400 (their rows then wait a day, pending), steady's
// 204.
type receiver struct {
	addr        string
	srv         *fasthttp.Server
	big, steady atomic.Int64
	other       atomic.Int64
}

var (
	bigPath      = []byte("/in/" + bigTenant)
	steadyPath   = []byte("/in/" + steadyTenant)
	retryAfter   = []byte("86400")
	retryAfterHd = []byte("Retry-After")
)

func startReceiver() (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("cannot listen for the receiver: %w", err)
	}
	r := &receiver{addr: ln.Addr().String()}
	r.srv = &fasthttp.Server{Handler: r.handle, Name: "bench-erase-receiver", ReadTimeout: time.Minute, IdleTimeout: time.Minute}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

func (r *receiver) handle(ctx *fasthttp.RequestCtx) {
	switch p := ctx.Path(); {
	case string(p) == string(bigPath):
		r.big.Add(1)
		ctx.Response.Header.SetBytesKV(retryAfterHd, retryAfter)
		ctx.SetStatusCode(fasthttp.StatusServiceUnavailable)
	case string(p) == string(steadyPath):
		r.steady.Add(1)
		ctx.SetStatusCode(fasthttp.StatusNoContent)
	default:
		r.other.Add(1)
		ctx.SetStatusCode(fasthttp.StatusNotFound)
	}
}

func (r *receiver) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = r.srv.ShutdownWithContext(ctx)
}
