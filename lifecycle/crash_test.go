package lifecycle_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/internal/outboxcrash"
	"github.com/ankusa/ankusa/internal/vfsutil"
	"github.com/ankusa/ankusa/lifecycle"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/source"
)

// Acceptance 1 of the lifecycle events, the crash half: the audit row
// and the event of a change share its batch. Each kind of change the
// source store and the rate limits make is written with the meta store
// crashed at every sync point (before it: not yet durable; after it:
// durable; and clones keeping a random share of what was not synced):
// after every crash the change, its audit row and its event are all
// there or none is, and the next event is numbered above every survivor.
// Dead letters and the quarantine pen: dispatch's TestOutboxCrash*.

const crashDir = "data/meta"

// crashRig opens a meta store and a persistent source store over it on a
// crashable memory file system with sync points.
func crashRig(t *testing.T, seed uint64) (*outboxcrash.Rig, *source.Persistent) {
	t.Helper()
	mem := vfs.NewCrashableMem()
	if err := vfsutil.MkdirAllSynced(mem, "data"); err != nil {
		t.Fatal(err)
	}
	fs := outboxcrash.Wrap(mem)
	ms, err := meta.Open(meta.Options{Dir: crashDir, FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ms.Close() })
	ms.SetEventNode(5)
	cfg, err := config.Load([]byte(`
route_resolver: {type: token, path: /webhooks/catch/:token}
routes: {enabled: true}
rate_limits: {default: {rate: 10, burst: 10}}
source_store: {type: persistent}
`), config.ValidateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	store, _, err := source.OpenPersistent(source.PersistentOptions{Config: cfg, Backend: source.MetaBackend{Store: ms},
		Context: config.SourceContext{Resolver: "token", WALType: "disk", DedupeScope: "node"}})
	if err != nil {
		t.Fatal(err)
	}
	rig := &outboxcrash.Rig{Mem: mem, FS: fs, Dir: crashDir, Node: 5, Store: ms, Random: 6, RNG: rand.New(rand.NewPCG(seed, 17))}
	return rig, store
}

// storedSource is the record of tenant's source name in s ("absent").
func storedSource(tenant, name string) func(*meta.Store) (string, error) {
	return func(s *meta.Store) (string, error) {
		out := "absent"
		err := s.Sources(func(tn, n string, rec []byte) error {
			if tn == tenant && n == name {
				out = string(rec)
			}
			return nil
		})
		return out, err
	}
}

// storedRoute is the record of tenant's route id in s ("absent").
func storedRoute(tenant, id string) func(*meta.Store) (string, error) {
	return func(s *meta.Store) (string, error) {
		out := "absent"
		err := s.Routes(func(tn, n string, rec []byte) error {
			if tn == tenant && n == id {
				out = string(rec)
			}
			return nil
		})
		return out, err
	}
}

// storedRateLimit is tenant's override in s ("absent").
func storedRateLimit(tenant string) func(*meta.Store) (string, error) {
	return func(s *meta.Store) (string, error) {
		all, err := s.RateLimitOverrides()
		if rl, ok := all[tenant]; ok {
			return string(meta.RateLimitJSON(rl)), err
		}
		return "absent", err
	}
}

func sourceDoc(t *testing.T, text string) config.SourceDoc {
	t.Helper()
	doc, probs := config.ParseSourceDoc([]byte(text))
	if len(probs) > 0 {
		t.Fatalf("%s: %v", text, probs)
	}
	return doc
}

// The secrets of the crashed source: none may reach an event.
const (
	crashVerifySecret = "crash-verify-secret-5be1"
	crashSinkSecret   = "crash-sink-secret-77ac"
	crashAMQPPassword = "crash-amqp-pw-c01d"
)

func TestOutboxCrashSourcesRoutesRateLimits(t *testing.T) {
	for _, seed := range []uint64{1, 2} {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) { crashSourcesRoutesRateLimits(t, seed) })
	}
}

func crashSourcesRoutesRateLimits(t *testing.T, seed uint64) {
	rig, store := crashRig(t, seed)
	ops := meta.AuditRow{Principal: "ops"}
	withAction := func(a string) meta.AuditRow { r := ops; r.Action = a; return r }
	spec := `{"name": "billing", "verify": {"type": "hmac", "header": "X-Sig", "secret": %q},
	  "sinks": [{"id": "out", "type": "http", "url": "https://example.com/in", "secret": %q},
	            {"id": "mq", "type": "rabbitmq", "url": "amqp://ankusa:%s@mq.example.com:5672/", "exchange": "hooks", "routing_key": "k"}]%s}`
	var route *source.Route
	var token string
	steps := []struct {
		change outboxcrash.Change
		write  func() error
	}{
		{outboxcrash.Change{Name: "source create", Tenant: "acme", Action: "source.create", Entity: "source/billing",
			EventType: "io.ankusa.source.created", Subject: "billing", State: storedSource("acme", "billing")},
			func() error {
				_, err := store.PutSource(source.SourceWrite{Tenant: "acme", Create: true, Audit: withAction("source.create"),
					Doc: sourceDoc(t, fmt.Sprintf(spec, crashVerifySecret, crashSinkSecret, crashAMQPPassword, ""))})
				return err
			}},
		{outboxcrash.Change{Name: "source update", Tenant: "acme", Action: "source.update", Entity: "source/billing",
			EventType: "io.ankusa.source.updated", Subject: "billing", State: storedSource("acme", "billing")},
			func() error {
				_, err := store.PutSource(source.SourceWrite{Tenant: "acme", Audit: withAction("source.update"),
					Doc: sourceDoc(t, fmt.Sprintf(spec, crashVerifySecret, crashSinkSecret, crashAMQPPassword, `, "max_body_bytes": 4096`))})
				return err
			}},
		{outboxcrash.Change{Name: "route create", Tenant: "acme", Action: "route.create", Entity: "route/r1",
			EventType: "io.ankusa.route.created", Subject: "r1", State: storedRoute("acme", "r1")},
			func() (err error) {
				var minted []string
				route, minted, err = store.PutRoute(source.RouteWrite{Tenant: "acme", Create: true, ID: "r1", SourceID: "billing", Token: source.TokenAuto, Audit: withAction("route.create")})
				if len(minted) == 1 {
					token = minted[0]
				}
				return err
			}},
		{outboxcrash.Change{Name: "route update", Tenant: "acme", Action: "route.update", Entity: "route/r1",
			EventType: "io.ankusa.route.updated", Subject: "r1", State: storedRoute("acme", "r1")},
			func() error {
				_, _, err := store.PutRoute(source.RouteWrite{Tenant: "acme", ID: "r1", SourceID: "billing", Token: source.TokenAuto, Audit: withAction("route.update")})
				return err
			}},
		{outboxcrash.Change{Name: "route delete", Tenant: "acme", Action: "route.delete", Entity: "route/r1",
			EventType: "io.ankusa.route.deleted", Subject: "r1", State: storedRoute("acme", "r1")},
			func() error {
				_, err := store.DeleteRoute(source.RouteDelete{Tenant: "acme", ID: "r1", Audit: withAction("route.delete")})
				return err
			}},
		{outboxcrash.Change{Name: "source delete", Tenant: "acme", Action: "source.delete", Entity: "source/billing",
			EventType: "io.ankusa.source.deleted", Subject: "billing", State: storedSource("acme", "billing")},
			func() error {
				_, err := store.DeleteSource(source.SourceDelete{Tenant: "acme", Name: "billing", Audit: withAction("source.delete")})
				return err
			}},
		{outboxcrash.Change{Name: "rate limit set", Tenant: "globex", Action: "tenant.rate_limit.set",
			EventType: "io.ankusa.rate_limit.created", Subject: "globex", State: storedRateLimit("globex")},
			func() error {
				return rig.Store.SetRateLimitOverride("globex", config.RateLimit{Rate: 5, Burst: 10}, rateRow("tenant.rate_limit.set", "globex"))
			}},
		{outboxcrash.Change{Name: "rate limit update", Tenant: "globex", Action: "tenant.rate_limit.set",
			EventType: "io.ankusa.rate_limit.updated", Subject: "globex", State: storedRateLimit("globex")},
			func() error {
				return rig.Store.SetRateLimitOverride("globex", config.RateLimit{Rate: 7, Burst: 20, MaxQueue: 100}, rateRow("tenant.rate_limit.set", "globex"))
			}},
		{outboxcrash.Change{Name: "rate limit clear", Tenant: "globex", Action: "tenant.rate_limit.clear",
			EventType: "io.ankusa.rate_limit.deleted", Subject: "globex", State: storedRateLimit("globex")},
			func() error {
				return rig.Store.DeleteRateLimitOverride("globex", rateRow("tenant.rate_limit.clear", "globex"))
			}},
	}
	// The erase's redaction hook: every event of globex so far goes, one
	// final event stays, in one batch.
	var upTo uint64
	steps = append(steps, struct {
		change outboxcrash.Change
		write  func() error
	}{outboxcrash.Change{Name: "tenant erased (the final batch)", Tenant: "globex", Action: "tenant.delete",
		EventType: "io.ankusa.tenant.deleted", Subject: "globex", State: func(s *meta.Store) (string, error) {
			n := 0
			err := s.TenantEvents("globex", 0, func(ev *meta.EventRecord) (bool, error) {
				if ev.Seq <= upTo {
					n++
				}
				return false, nil
			})
			if err != nil {
				return "", err
			}
			tomb, erased, err := s.TombstoneOf("globex")
			_, progress, perr := s.EraseProgress("globex")
			_, named, nerr := s.TenantInfo("globex")
			return fmt.Sprintf("%d events of globex up to %d, tombstone %v %v, progress row %v, name mapped %v", n, upTo, erased, tomb.Ordinals, progress, named), errors.Join(err, perr, nerr)
		}},
		func() error {
			final := rateRow("tenant.delete", "globex")
			final.Event = meta.Event{Type: "io.ankusa.tenant.deleted", Subject: "globex"}
			_, _, err := rig.Store.FinishErase(meta.Tombstone{Tenant: "globex", SeqAtClose: 10, ErasedAt: time.Now().UTC()}, 3, true, upTo, final)
			return err
		}})
	total := outboxcrash.Result{}
	for _, s := range steps {
		upTo = rig.Store.EventsDurable() // the replace's bound: every event before it

		r := rig.Write(t, s.change, s.write)
		t.Logf("%s: %d crash points, %d with the change, %d without", s.change.Name, r.Points, r.Applied, r.Absent)
		total.Points, total.Applied, total.Absent = total.Points+r.Points, total.Applied+r.Applied, total.Absent+r.Absent
	}
	t.Logf("%d crash points: %d with the change, %d without", total.Points, total.Applied, total.Absent)
	if route == nil || token == "" {
		t.Fatal("the route create minted no token")
	}
	noSecretInOutbox(t, rig.Store, crashVerifySecret, crashSinkSecret, crashAMQPPassword, token)
}

// rateRow is the audit row the admin API hands a rate limit change.
func rateRow(action, tenant string) meta.AuditRow {
	return meta.AuditRow{At: time.Now().UTC(), Principal: "ops", Action: action, Tenant: tenant, Outcome: "ok"}
}

// noSecretInOutbox fails if any event of s, as sent, holds one of the
// secrets.
func noSecretInOutbox(t *testing.T, s *meta.Store, secrets ...string) {
	t.Helper()
	n := 0
	err := s.Events(0, ^uint64(0), func(ev *meta.EventRecord) (bool, error) {
		n++
		for _, sec := range secrets {
			if bytes.Contains(lifecycle.Render(ev, "crash"), []byte(sec)) {
				return true, fmt.Errorf("event %d (%s) holds a secret: %s", ev.Seq, ev.Type, lifecycle.Render(ev, "crash"))
			}
		}
		return false, nil
	})
	if err != nil || n == 0 {
		t.Fatalf("the outbox: %d events, %v", n, err)
	}
}
