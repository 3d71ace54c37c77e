package tenant

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/meta"
)

func TestPolicyPrecedence(t *testing.T) {
	p := NewPolicy(config.RateLimits{
		Default: &config.RateLimit{Rate: 10, Burst: 20, MaxQueue: 5},
		Tenants: map[string]config.RateLimit{"acme": {Rate: 100, Burst: 200}},
	})
	if rl, finite := p.Of("other"); rl.Rate != 10 || !finite {
		t.Fatalf("default: %+v %v", rl, finite)
	}
	if rl, _ := p.Of("acme"); rl.Rate != 100 {
		t.Fatalf("config entry: %+v", rl)
	}
	if err := p.SetOverride("acme", config.RateLimit{Rate: 1, Burst: 1}, nil); err != nil {
		t.Fatal(err)
	}
	if rl, _ := p.Of("acme"); rl.Rate != 1 {
		t.Fatalf("an override does not win: %+v", rl)
	}
	if err := p.SetOverride("free", config.RateLimit{Rate: math.Inf(1)}, nil); err != nil {
		t.Fatal(err)
	}
	if _, finite := p.Of("free"); finite {
		t.Fatal("an .inf override still limits")
	}
	if err := p.ClearOverride("acme", nil); err != nil {
		t.Fatal(err)
	}
	if rl, _ := p.Of("acme"); rl.Rate != 100 {
		t.Fatalf("after clearing, the config entry: %+v", rl)
	}
	for _, bad := range []config.RateLimit{{Rate: -1}, {Rate: math.NaN()}, {Rate: 5, Burst: 0}, {Rate: 5, Burst: 1, MaxQueue: -1}} {
		if err := p.SetOverride("x", bad, nil); err == nil {
			t.Errorf("override %+v accepted", bad)
		}
	}
}

// TestOverridesSurviveRestart: overrides are written to the meta store
// and found again by a new policy; a store that fails leaves the policy
// unchanged.
func TestOverridesSurviveRestart(t *testing.T) {
	fs := vfs.NewMem()
	open := func() *meta.Store {
		s, err := meta.Open(meta.Options{Dir: "meta", FS: fs})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := open()
	p := NewPolicy(config.RateLimits{Default: &config.RateLimit{Rate: 10, Burst: 10}})
	if err := p.LoadOverrides(s); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2025, 11, 29, 19, 40, 0, 0, time.UTC)
	set := func(tenant string, rl config.RateLimit) {
		t.Helper()
		row := meta.AuditRow{At: at, Principal: "ops", Action: "tenant.rate_limit.set", Tenant: tenant}
		if err := p.SetOverride(tenant, rl, func() error { return s.SetRateLimitOverride(tenant, rl, row) }); err != nil {
			t.Fatal(err)
		}
	}
	set("acme", config.RateLimit{Rate: 2, Burst: 3, MaxQueue: 4, MaxQueueBytes: 5})
	set("free", config.RateLimit{Rate: math.Inf(1)})
	set("gone", config.RateLimit{Rate: 1, Burst: 1})
	row := meta.AuditRow{At: at, Principal: "ops", Action: "tenant.rate_limit.clear", Tenant: "gone"}
	if err := p.ClearOverride("gone", func() error { return s.DeleteRateLimitOverride("gone", row) }); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = open()
	defer s.Close()
	p2 := NewPolicy(config.RateLimits{Default: &config.RateLimit{Rate: 10, Burst: 10}})
	if err := p2.LoadOverrides(s); err != nil {
		t.Fatal(err)
	}
	if rl, ok := p2.Override("acme"); !ok || rl != (config.RateLimit{Rate: 2, Burst: 3, MaxQueue: 4, MaxQueueBytes: 5}) {
		t.Fatalf("acme after a restart: %+v %v", rl, ok)
	}
	if rl, ok := p2.Override("free"); !ok || !math.IsInf(rl.Rate, 1) {
		t.Fatalf("free after a restart: %+v %v", rl, ok)
	}
	if _, ok := p2.Override("gone"); ok {
		t.Fatal("a cleared override came back")
	}
	// Every change the policy made durable left its lifecycle event.
	var evs []string
	if err := s.Events(0, math.MaxUint64, func(ev *meta.EventRecord) (bool, error) {
		evs = append(evs, ev.Tenant+" "+ev.Type+" "+ev.Subject)
		return false, nil
	}); err != nil {
		t.Fatal(err)
	}
	want := "acme io.ankusa.rate_limit.created acme,free io.ankusa.rate_limit.created free,gone io.ankusa.rate_limit.created gone,gone io.ankusa.rate_limit.deleted gone"
	if got := strings.Join(evs, ","); got != want {
		t.Fatalf("events %s, want %s", got, want)
	}
	diskFull := func() error { return errors.New("disk full") }
	if err := p2.ClearOverride("acme", diskFull); err == nil {
		t.Fatal("a failed clear was reported as done")
	}
	if err := p2.SetOverride("acme", config.RateLimit{Rate: 9, Burst: 9}, diskFull); err == nil {
		t.Fatal("a failed write was reported as done")
	}
	if rl, _ := p2.Of("acme"); rl.Rate != 2 {
		t.Fatalf("a failed write changed the policy: %+v", rl)
	}
}

// TestLimiterFollowsOverrides: an override changes a tenant's bucket at
// once, keeping what it holds.
func TestLimiterFollowsOverrides(t *testing.T) {
	c := &fakeClock{}
	p := NewPolicy(config.RateLimits{Default: &config.RateLimit{Rate: 1, Burst: 1}})
	l := NewPolicyLimiter(p, c.mono)
	if ok, _ := l.Take("acme"); !ok {
		t.Fatal("first token refused")
	}
	if ok, _ := l.Take("acme"); ok {
		t.Fatal("burst 1 gave two")
	}
	if err := p.SetOverride("acme", config.RateLimit{Rate: 1000, Burst: 5}, nil); err != nil {
		t.Fatal(err)
	}
	// The bucket takes the new limits at its next decision, keeping the
	// (near zero) tokens it held; at 1000/s it is full (5) 5ms later.
	l.Take("acme")
	c.now += int64(10 * time.Millisecond)
	n := 0
	for ok, _ := l.Take("acme"); ok; ok, _ = l.Take("acme") {
		n++
	}
	if n != 5 {
		t.Fatalf("after raising the limit took %d, want the new burst 5", n)
	}
	q := NewPolicyQueues(p)
	if err := p.SetOverride("acme", config.RateLimit{Rate: 1, Burst: 1, MaxQueue: 1}, nil); err != nil {
		t.Fatal(err)
	}
	if !q.Reserve("acme", 1, 0) || q.Reserve("acme", 1, 0) {
		t.Fatal("the queue cap did not follow the override")
	}
	q.Release("acme", 1)
}
