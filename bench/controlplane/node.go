package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/source"
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

// seedTarget is the stored source loadgen posts to: tenant t00000,
// verified as GitHub signs (loadgen -sign github), no sinks (a hook
// costs dispatch nothing but its seq), so that the request path is what
// is measured.
const (
	seedTarget       = "loadgen-target"
	seedTargetTenant = "t00000"
	seedTargetSecret = "bench-github-secret"
)

// seedName is the name of seeded source i, and seedTenant its tenant.
func seedName(i int) string            { return fmt.Sprintf("s%06d", i) }
func seedTenant(i, tenants int) string { return fmt.Sprintf("t%05d", i%tenants) }

// createBody is the admin API's body of a source named name (and the
// document seeded in-process): a generic HMAC verifier (X-Sig, hex
// HMAC-SHA256 of the body, no prefix) and one HTTP sink nobody listens
// on, whose hooks wait as pending deliveries.
func createBody(name string) string {
	return fmt.Sprintf(`{"name": %q, "verify": {"type": "hmac", "header": "X-Sig", "secret": %q}, "sinks": [{"type": "http", "url": "http://127.0.0.1:9/in", "allow_private": true}]}`, name, hookSecret(name))
}

// hookSecret is the verifier secret of the source named name.
func hookSecret(name string) string { return "secret-" + name }

// noSyncBackend is source.MetaBackend but for its writes' durability:
// the seeding's writes need not each wait for a log sync, and the store
// closes (and syncs) before the node opens it. The audit row carries the
// source.created event Persistent gives it, as an admin create's does;
// a batch holding an event commits synced through the lifecycle outbox
// all the same (meta.Batch.Commit), which merges the seeders' batches
// into one sync (3000 sources: 1.4 s, against 1.1 s before the outbox).
type noSyncBackend struct{ source.MetaBackend }

func (b noSyncBackend) Commit(ops []source.Op, audit meta.AuditRow) (uint64, error) {
	batch := b.Store.NewBatch()
	defer batch.Close()
	for _, op := range ops {
		switch op.Kind {
		case source.PutSource:
			batch.PutSource(op.Tenant, op.Name, op.Record)
		case source.PutRoute:
			batch.PutRoute(op.Tenant, op.Name, op.Record)
		default:
			return 0, fmt.Errorf("BUG: the seeding writes no op of kind %d", op.Kind)
		}
	}
	if audit.Event.Type != meta.EventType("source", "created") {
		return 0, fmt.Errorf("BUG: the seeding writes source.created events, not %q", audit.Event.Type)
	}
	if err := batch.AddAudit(audit); err != nil {
		return 0, err
	}
	return 0, batch.Commit(meta.NoSync)
}

// seed stores n sources over tenants tenants (and the loadgen target) in
// the node's meta store, through source.Persistent: the records and audit
// rows an admin create writes. The node must not be running.
func seed(n *node, count, tenants int) (time.Duration, error) {
	began := time.Now()
	if err := os.MkdirAll(n.Data(), 0o755); err != nil {
		return 0, err
	}
	cfg, err := config.Load([]byte(n.config()), config.ValidateOptions{})
	if err != nil {
		return 0, fmt.Errorf("cannot load the node's config: %w", err)
	}
	ms, err := meta.Open(meta.Options{Dir: filepath.Join(n.Data(), "meta")})
	if err != nil {
		return 0, err
	}
	p, _, err := source.OpenPersistent(source.PersistentOptions{
		Config:  cfg,
		Context: config.SourceContext{Resolver: cfg.RouteResolver.Type, WALType: cfg.WAL.Type, DedupeScope: cfg.Dedupe.Scope},
		Backend: noSyncBackend{source.MetaBackend{Store: ms}},
	})
	if err == nil {
		err = put(p, seedTargetTenant, fmt.Sprintf(`{"name": %q, "verify": {"type": "github", "secret": %q}}`, seedTarget, seedTargetSecret))
	}
	if err == nil {
		err = seedAll(p, count, tenants)
	}
	if cerr := ms.Close(); err == nil {
		err = cerr
	}
	return time.Since(began), err
}

// seedAll puts the count sources from 4 goroutines.
func seedAll(p *source.Persistent, count, tenants int) error {
	var next atomic.Int64
	errs := make([]error, 4)
	benchkit.Each(context.Background(), len(errs), func(w, _ int) bool {
		i := int(next.Add(1) - 1)
		if i < count {
			errs[w] = put(p, seedTenant(i, tenants), createBody(seedName(i)))
		}
		return i < count && errs[w] == nil
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if got := p.Snapshot().Len(); got != count+1 {
		return fmt.Errorf("seeded %d sources, want %d", got, count+1)
	}
	return nil
}

func put(p *source.Persistent, tenant, body string) error {
	doc, probs := config.ParseSourceDoc([]byte(body))
	if len(probs) > 0 {
		return fmt.Errorf("BUG: the seed document %s: %v", body, probs)
	}
	_, err := p.PutSource(source.SourceWrite{Tenant: tenant, Create: true, Doc: doc, Audit: meta.AuditRow{Principal: "bench-seed", Action: "source.create"}})
	if err != nil {
		return fmt.Errorf("cannot seed source %q of tenant %q: %w", doc.Name, tenant, err)
	}
	return nil
}
