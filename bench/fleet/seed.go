package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/internal/redisx"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/secrets"
	"github.com/ankusa/ankusa/source"
)

// seedName is the name of seeded source i, and seedTenant its tenant.
func seedName(i int) string            { return fmt.Sprintf("s%06d", i) }
func seedTenant(i, tenants int) string { return fmt.Sprintf("t%05d", i%tenants) }

// seedBody is the document of a seeded source, as bench/controlplane
// seeds: a generic HMAC verifier (its secret sealed under secrets.kek)
// and one HTTP sink nobody listens on.
func seedBody(name string) string {
	return fmt.Sprintf(`{"name": %q, "verify": {"type": "hmac", "header": "X-Sig", "secret": %q}, "sinks": [{"type": "http", "url": "http://127.0.0.1:9/in", "allow_private": true}]}`, name, seedSecret(name))
}

// seedSecret is the verifier secret of the seeded source named name.
func seedSecret(name string) string { return "secret-" + name }

// seed writes count sources over tenants tenants into the namespace
// through source.OpenFleet over a meta store of its own (removed after),
// from -seeders goroutines: each write is an admin create's (a synced
// pending record, the Lua check-and-set, a synced audit row). It returns
// the time the writes took.
func seed(o *options, namespace string, count, tenants int) (time.Duration, error) {
	if count == 0 {
		return 0, nil
	}
	dir, err := tempDir(o)
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	f, closeFleet, _, err := openFleet(o, namespace, dir)
	if err != nil {
		return 0, err
	}
	defer closeFleet()
	began := time.Now()
	if err := seedAll(f, o.seeders, count, tenants); err != nil {
		return 0, err
	}
	return time.Since(began), nil
}

// readRun is the store opened in-process (source.OpenFleet) over an
// empty meta store, as a node's first boot opens it, then again over the
// mirror that left, as a later boot does.
type readRun struct {
	First  time.Duration `json:"first_open_ns"`
	Mirror time.Duration `json:"mirror_open_ns"`
}

// Remote is the first open less the second: about the time the first
// boot takes to read the store from Redis and keep it in its mirror,
// each exchange bounded by source.FleetTimeout as in a node; the rest
// (each record unsealed and built) both opens share.
func (r readRun) Remote() time.Duration { return r.First - r.Mirror }

// reads opens the namespace in-process twice over one meta store (see
// readRun); each open must find want sources.
func reads(o *options, namespace string, want int) (readRun, error) {
	dir, err := tempDir(o)
	if err != nil {
		return readRun{}, err
	}
	defer os.RemoveAll(dir)
	var r readRun
	for _, took := range []*time.Duration{&r.First, &r.Mirror} {
		f, closeFleet, t, err := openFleet(o, namespace, dir)
		if err != nil {
			return r, err
		}
		got := f.Snapshot().Len()
		closeFleet()
		if got != want {
			return r, fmt.Errorf("source.OpenFleet found %d sources, want %d", got, want)
		}
		*took = t
	}
	return r, nil
}

// tempDir is a fresh directory under -tmp for an in-process meta store.
func tempDir(o *options) (string, error) {
	dir, err := os.MkdirTemp(o.tmp, "ankusa-bench-fleet-seed-")
	if err != nil {
		return "", fmt.Errorf("cannot create a directory for the in-process meta store (set -tmp): %w", err)
	}
	return dir, nil
}

// openFleet opens the redis store of the namespace through
// source.OpenFleet over the meta store in dir, with the nodes' config
// and keyring, over a client built as a node builds it: release closes
// it; took is OpenFleet's time.
func openFleet(o *options, namespace, dir string) (f *source.Fleet, release func(), took time.Duration, err error) {
	var closers []func()
	release = func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	defer func() {
		if err != nil {
			release()
		}
	}()
	cfg, err := config.Load([]byte(configOf(dir, "127.0.0.1:1", "127.0.0.1:2", "bench-fleet-seed", o.redis, namespace)), config.ValidateOptions{})
	if err != nil {
		return nil, nil, 0, fmt.Errorf("cannot load the seeding's config: %w", err)
	}
	key, err := config.ParseKEK(kek)
	if err != nil {
		return nil, nil, 0, err
	}
	kr, err := secrets.NewKeyring(key, nil)
	if err != nil {
		return nil, nil, 0, err
	}
	rdb, addr, err := redisx.NewClientWith("-redis", o.redis, source.FleetTimeout)
	if err != nil {
		return nil, nil, 0, err
	}
	closers = append(closers, func() { rdb.Close() })
	ms, err := meta.Open(meta.Options{Dir: filepath.Join(dir, "meta")})
	if err != nil {
		return nil, nil, 0, err
	}
	closers = append(closers, func() { ms.Close() })
	began := time.Now()
	f, _, err = source.OpenFleet(source.FleetOptions{
		PersistentOptions: source.PersistentOptions{
			Config:  cfg,
			Context: config.SourceContext{Resolver: cfg.RouteResolver.Type, WALType: cfg.WAL.Type, DedupeScope: cfg.Dedupe.Scope},
			Keyring: kr,
		},
		Redis: rdb, Addr: addr, Namespace: namespace, Tick: time.Second, Meta: ms,
	})
	if err != nil {
		return nil, nil, 0, err
	}
	took = time.Since(began)
	closers = append(closers, f.Close)
	return f, release, took, nil
}

// seedAll puts the count sources from workers goroutines.
func seedAll(f *source.Fleet, workers, count, tenants int) error {
	var next atomic.Int64
	var done atomic.Int64
	errs := make([]error, workers)
	stop := progress(&done, count)
	defer stop()
	benchkit.Each(context.Background(), workers, func(w, _ int) bool {
		i := int(next.Add(1) - 1)
		if i < count {
			errs[w] = put(f, seedTenant(i, tenants), seedBody(seedName(i)))
			done.Add(1)
		}
		return i < count && errs[w] == nil
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if got := f.Snapshot().Len(); got != count {
		return fmt.Errorf("seeded %d sources, want %d", got, count)
	}
	return nil
}

// progress prints every 10 s how many of count sources are seeded, until
// the returned function is called.
func progress(done *atomic.Int64, count int) (stop func()) {
	quit := make(chan struct{})
	go func() {
		t := time.NewTicker(10 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				fmt.Printf("seeded %d of %d sources...\n", done.Load(), count)
			}
		}
	}()
	return func() { close(quit) }
}

func put(f *source.Fleet, tenant, body string) error {
	doc, probs := config.ParseSourceDoc([]byte(body))
	if len(probs) > 0 {
		return fmt.Errorf("BUG: the seed document %s: %v", body, probs)
	}
	_, err := f.PutSource(source.SourceWrite{Tenant: tenant, Create: true, Doc: doc, Audit: meta.AuditRow{Principal: "bench-seed", Action: "source.create"}})
	if err != nil {
		return fmt.Errorf("cannot seed source %q of tenant %q: %w", doc.Name, tenant, err)
	}
	return nil
}
