package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
)

// adminToken is the bench's admin bearer token; the config holds its
// SHA-256.
const adminToken = "bench-controlplane-token-9f2c41d7e8"

// nodeConfig is the node's config (DESIGN.md §5): the persistent source
// store, the tenantpath resolver with a finite default rate limit far
// above any rate here, one admin token for every tenant, the WAL on disk,
// no archive. %[1]s is the data directory, %[2]s the listener, %[3]s the
// admin listener, %[4]s the token's SHA-256.
const nodeConfig = `node: {name: bench-controlplane, data_dir: %[1]s}
listen: %[2]s
admin:
  listen: %[3]s
  tokens:
    - {name: bench, sha256: "%[4]s", scopes: ["tenant:*", "tenants:read", "tenants:write", "debug"]}
log: {level: warn}
rate_limits:
  default: {rate: 1000000, burst: 1000000}
route_resolver: {type: tenantpath, prefix: [webhooks]}
wal: {type: disk}
archive: {type: none}
source_store: {type: persistent}
`

func configText(dataDir, listen, admin string) string {
	sum := sha256.Sum256([]byte(adminToken))
	return fmt.Sprintf(nodeConfig, dataDir, listen, admin, hex.EncodeToString(sum[:]))
}

// node is a data directory and, while started, the `ankusa serve` on it.
type node struct {
	dir, listen, admin string
	bin                string
	proc               *benchkit.Proc
}

// newNode makes a data directory under tmp and picks two loopback ports.
func newNode(o *options, name string) (*node, error) {
	dir, addrs, err := benchkit.DataDir(o.tmp, "ankusa-bench-controlplane-"+name+"-", 2)
	if err != nil {
		return nil, err
	}
	return &node{dir: dir, listen: addrs[0], admin: addrs[1], bin: o.bin}, nil
}

func (n *node) dataDir() string { return filepath.Join(n.dir, "data") }

func (n *node) config() string { return configText(n.dataDir(), n.listen, n.admin) }

// boot starts the node and waits for /readyz 200 (polled every 5 ms); it
// returns the time from the process's start to that answer and the RSS
// then.
func (n *node) boot(ctx context.Context) (time.Duration, int64, error) {
	cmd, err := benchkit.AnkusaCmd(n.bin, n.dir, n.config())
	if err != nil {
		return 0, 0, err
	}
	began := time.Now()
	if n.proc, err = benchkit.StartProc("ankusa", cmd); err != nil {
		return 0, 0, fmt.Errorf("cannot start ankusa (build it with make build): %w", err)
	}
	ready := "http://" + n.admin + "/readyz"
	deadline := began.Add(5 * time.Minute)
	for {
		if benchkit.GetOK(client, ready) == nil {
			break
		}
		if !n.proc.Alive() {
			return 0, 0, fmt.Errorf("ankusa exited before it was ready: %v\n%s", n.proc.WaitErr(), benchkit.Tail(n.proc.Output()))
		}
		if time.Now().After(deadline) {
			n.stop()
			return 0, 0, fmt.Errorf("ankusa not ready after 5m\n%s", benchkit.Tail(n.proc.Output()))
		}
		select {
		case <-ctx.Done():
			n.stop()
			return 0, 0, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	took := time.Since(began)
	rss, err := vmRSS(n.proc.Pid())
	return took, rss, err
}

// stop sends SIGTERM and waits for the drain (SIGKILL after 60 s).
func (n *node) stop() error {
	if n.proc == nil {
		return nil
	}
	err := n.proc.Stop(60 * time.Second)
	n.proc = nil
	return err
}

// remove stops the node and removes its data directory.
func (n *node) remove() {
	_ = n.stop()
	os.RemoveAll(n.dir)
}

// vmRSS is the process's resident set now (VmRSS), in bytes.
func vmRSS(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("cannot read the RSS of process %d: %w", pid, err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("cannot parse %q", line)
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

// client is the bench's HTTP client: keep-alive connections enough for
// the most concurrent run.
var client = &http.Client{
	Timeout:   30 * time.Second,
	Transport: &http.Transport{MaxIdleConns: 512, MaxIdleConnsPerHost: 256, IdleConnTimeout: time.Minute},
}
