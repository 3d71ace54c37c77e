package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"time"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
	"github.com/ankusa/ankusa/internal/child"
)

// adminToken is the bench's admin bearer token; the config holds its
// SHA-256.
const adminToken = "bench-fleet-token-5b18e0c3a9"

// kek is secrets.kek of every node and of the seeding: stored secrets
// rest sealed in Redis, as in production, so a boot opens each.
const kek = "9d3c0f6e5a4b2718c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f00f1e"

// nodeConfig is a node's config (DESIGN.md §5): the redis source store
// at tick_ms 1000, the tenantpath resolver with a finite default rate
// limit far above any rate here, one admin token for every tenant, the
// WAL on disk, no archive. %[1]s is the data directory, %[2]s the
// listener, %[3]s the admin listener, %[4]s the token's SHA-256, %[5]s
// the node's name, %[6]s source_store.url, %[7]s its namespace, %[8]s
// secrets.kek.
const nodeConfig = `node: {name: %[5]s, data_dir: %[1]s}
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
source_store: {type: redis, url: "%[6]s", namespace: "%[7]s", tick_ms: 1000}
secrets: {kek: "%[8]s"}
`

// node is one node of the fleet: its data directory and, once booted,
// the `ankusa serve` on it.
type node struct {
	*benchkit.Node
	name string
}

func newNode(o *options, name string) (*node, error) {
	n, err := benchkit.NewNode(o.bin, o.tmp)
	return &node{n, name}, err
}

// config is the node's config with source_store.url redisURL.
func (n *node) config(redisURL, namespace string) string {
	return configOf(n.Data(), n.Listen, n.Admin, n.name, redisURL, namespace)
}

// configOf is nodeConfig of a node named name.
func configOf(data, listen, admin, name, redisURL, namespace string) string {
	sum := sha256.Sum256([]byte(adminToken))
	return fmt.Sprintf(nodeConfig, data, listen, admin, hex.EncodeToString(sum[:]), name, redisURL, namespace, kek)
}

// bootRun is one boot of a node.
type bootRun struct {
	What  string        `json:"what"`
	Ready time.Duration `json:"start_to_readyz_ns"`
	RSS   int64         `json:"rss_bytes"`
}

// boot waits for a quiet machine, starts the node on source_store.url
// redisURL and waits up to 5 minutes for /readyz 200: the time from the
// process's start to that answer, and the RSS then. With sources stored,
// the node must then serve the first seeded one (checkServes).
func (n *node) boot(ctx context.Context, o *options, what, redisURL, namespace string, stored int) (bootRun, error) {
	if err := o.alone.Wait(ctx); err != nil {
		return bootRun{}, err
	}
	ready, err := n.Boot(ctx, n.config(redisURL, namespace), 5*time.Minute)
	if err != nil {
		return bootRun{}, fmt.Errorf("node %s, %s: %w", n.name, what, err)
	}
	rss, err := benchkit.RSS(n.Pid())
	if err != nil {
		return bootRun{}, err
	}
	fmt.Printf("node %s, %s: ready in %s, RSS %d MiB\n", n.name, what, ready.Round(time.Millisecond), int64(rss)>>20)
	if stored > 0 {
		if err := checkServes(n); err != nil {
			return bootRun{}, fmt.Errorf("%s: %w", what, err)
		}
	}
	return bootRun{What: what, Ready: ready, RSS: int64(rss)}, nil
}

// stop sends SIGTERM and waits for the drain (SIGKILL after 60 s).
func (n *node) stop() error { return n.Stop(60 * time.Second) }

// remove stops the node, if it runs, and removes its data directory; a
// nil node is nothing to remove.
func (n *node) remove() {
	if n != nil {
		_ = n.Shut(60 * time.Second)
	}
}

// deadRedis is a source_store.url where nothing listens: a port free a
// moment ago, on the -redis URL's database.
func deadRedis() (string, error) {
	addr, err := child.FreeAddr()
	if err != nil {
		return "", err
	}
	return "redis://" + addr + "/0", nil
}

// newNamespace is a fresh source_store.namespace for one store of a run.
func newNamespace(what string) string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		panic("BUG: bench-fleet: crypto/rand failed: " + err.Error())
	}
	return "bench-fleet-" + what + "-" + hex.EncodeToString(b) + ":"
}

// client is the bench's HTTP client: keep-alive connections enough for
// the most concurrent run.
var client = &http.Client{
	Timeout:   30 * time.Second,
	Transport: &http.Transport{MaxIdleConns: 512, MaxIdleConnsPerHost: 256, IdleConnTimeout: time.Minute},
}
