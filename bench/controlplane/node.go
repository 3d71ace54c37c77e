package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
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

// node is a data directory seeded while no process runs on it and, once
// booted, the `ankusa serve` on it.
type node struct{ *benchkit.Node }

func newNode(o *options) (*node, error) {
	n, err := benchkit.NewNode(o.bin, o.tmp)
	return &node{n}, err
}

func (n *node) config() string {
	sum := sha256.Sum256([]byte(adminToken))
	return fmt.Sprintf(nodeConfig, n.Data(), n.Listen, n.Admin, hex.EncodeToString(sum[:]))
}

// boot waits for a quiet machine, starts the node with sources stored and
// waits up to 5 minutes for /readyz 200: the time from the process's
// start to that answer, and the RSS then.
func (n *node) boot(ctx context.Context, o *options, sources int) (bootRun, error) {
	if err := o.alone.Wait(ctx); err != nil {
		return bootRun{}, err
	}
	ready, err := n.Boot(ctx, n.config(), 5*time.Minute)
	if err != nil {
		return bootRun{}, err
	}
	rss, err := benchkit.RSS(n.Pid())
	if err != nil {
		return bootRun{}, err
	}
	fmt.Printf("booted with %d sources in %s, RSS %d MiB\n", sources, ready.Round(time.Millisecond), int64(rss)>>20)
	return bootRun{Sources: sources, Ready: ready, RSS: int64(rss)}, nil
}

// stop sends SIGTERM and waits for the drain (SIGKILL after 60 s).
func (n *node) stop() error { return n.Stop(60 * time.Second) }

// remove stops the node, if it runs, and removes its data directory.
func (n *node) remove() { _ = n.Shut(60 * time.Second) }

// client is the bench's HTTP client: keep-alive connections enough for
// the most concurrent run.
var client = &http.Client{
	Timeout:   30 * time.Second,
	Transport: &http.Transport{MaxIdleConns: 512, MaxIdleConnsPerHost: 256, IdleConnTimeout: time.Minute},
}
