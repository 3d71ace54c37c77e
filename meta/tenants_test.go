package meta

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/config"
)

// The mirror stamps first_seen when a tenant is first written, keeps it
// when the same ordinal is mirrored again, and starts again for another
// ordinal; a 4-byte value of an older node reads as first_seen unknown.
func TestTenantFirstSeen(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	before := time.Now()
	if err := s.SetTenant("acme", 1); err != nil {
		t.Fatal(err)
	}
	a, found, err := s.TenantInfo("acme")
	if err != nil || !found || a.Ordinal != 1 || a.FirstSeen.Before(before.Add(-time.Millisecond)) || a.FirstSeen.After(time.Now()) {
		t.Fatalf("TenantInfo(acme) = %+v, %v, %v", a, found, err)
	}
	time.Sleep(2 * time.Millisecond)
	if err := s.SetTenantSynced("acme", 1); err != nil {
		t.Fatal(err)
	}
	if again, _, _ := s.TenantInfo("acme"); !again.FirstSeen.Equal(a.FirstSeen) {
		t.Errorf("mirrored again: first_seen %s, want it kept (%s)", again.FirstSeen, a.FirstSeen)
	}
	if err := s.SetTenant("acme", 7); err != nil {
		t.Fatal(err)
	}
	if moved, _, _ := s.TenantInfo("acme"); moved.Ordinal != 7 || !moved.FirstSeen.After(a.FirstSeen) {
		t.Errorf("another ordinal: %+v, want a new first_seen", moved)
	}
	// An old node's value.
	if err := s.db.Set(tenantKey("old"), []byte{0, 0, 0, 9}, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if old, found, err := s.TenantInfo("old"); err != nil || !found || old.Ordinal != 9 || !old.FirstSeen.IsZero() {
		t.Errorf("4-byte value: %+v, %v, %v", old, found, err)
	}
	if _, found, err := s.TenantInfo("nobody"); found || err != nil {
		t.Errorf("TenantInfo(nobody) = %v, %v", found, err)
	}
	m, err := s.Tenants()
	if err != nil || len(m) != 2 || m["acme"] != 7 || m["old"] != 9 {
		t.Errorf("Tenants() = %v, %v", m, err)
	}
	if err := s.db.Set(tenantKey("bad"), []byte{1, 2, 3}, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Tenants(); !errors.Is(err, ErrBadRecord) {
		t.Errorf("a 3-byte value: %v, want ErrBadRecord", err)
	}
}

func TestTenantsAfter(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	for i, name := range []string{"c", "a", "b", "a0", "d"} {
		if err := s.SetTenant(name, uint32(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	f := func(after string, limit int, want string) {
		t.Helper()
		ts, err := s.TenantsAfter(after, limit)
		got := ""
		for _, x := range ts {
			got += x.Name + " "
		}
		if err != nil || got != want {
			t.Errorf("TenantsAfter(%q, %d) = %q, %v; want %q", after, limit, got, err, want)
		}
	}
	f("", 2, "a a0 ")
	f("a0", 2, "b c ")
	f("c", 2, "d ")
	f("d", 2, "")
	f("", 0, "")
	f("", 100, "a a0 b c d ")
	f("a00", 1, "b ")
}

// AuditPage bounds by since and until, filters by tenant, and pages with
// its cursor, oldest first.
func TestAuditPage(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	at := time.Date(2025, 11, 29, 19, 40, 0, 0, time.UTC)
	for i := range 10 {
		tenant := "acme"
		if i%2 == 1 {
			tenant = "globex"
		}
		addAudits(t, s, AuditRow{At: at.Add(time.Duration(i) * time.Second), Principal: "ops", Action: fmt.Sprint(i), Tenant: tenant, Event: testEvent(fmt.Sprint(i), "x")})
	}
	all := func(q AuditQuery) (string, int) {
		t.Helper()
		out, pages := "", 0
		for {
			rows, next, err := s.AuditPage(q)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			if a := auditActions(rows); a != "" {
				out += a + ";"
			}
			if next == "" {
				return out, pages
			}
			q.Cursor = next
		}
	}
	f := func(q AuditQuery, want string) {
		t.Helper()
		if got, _ := all(q); got != want {
			t.Errorf("%+v: %q, want %q", q, got, want)
		}
	}
	f(AuditQuery{Limit: 3}, "0,1,2;3,4,5;6,7,8;9;")
	f(AuditQuery{Limit: 2, Tenant: "acme"}, "0,2;4,6;8;")
	f(AuditQuery{Limit: 10, Tenant: "globex", Since: at.Add(2 * time.Second), Until: at.Add(7 * time.Second)}, "3,5;")
	f(AuditQuery{Limit: 10, Until: at.Add(2 * time.Second)}, "0,1;")
	f(AuditQuery{Limit: 10, Since: at.Add(9 * time.Second)}, "9;")
	f(AuditQuery{Limit: 10, Since: at.Add(time.Hour)}, "")
	f(AuditQuery{Limit: 10, Tenant: "initech"}, "")
	if _, _, err := s.AuditPage(AuditQuery{Limit: 1, Cursor: "zz"}); !errors.Is(err, ErrBadAuditCursor) {
		t.Errorf("a bad cursor: %v", err)
	}
	if _, _, err := s.AuditPage(AuditQuery{Limit: 1, Cursor: hex.EncodeToString([]byte("t:acme"))}); !errors.Is(err, ErrBadAuditCursor) {
		t.Errorf("a cursor outside the audit log: %v", err)
	}
}

// An override and its audit row are one synced batch; the row's
// spec_sha256 is the hash of the stored value.
func TestRateLimitOverrideAudited(t *testing.T) {
	fs := vfs.NewMem()
	s := openMem(t, fs)
	at := time.Date(2025, 11, 29, 19, 40, 0, 0, time.UTC)
	rl := config.RateLimit{Rate: 5, Burst: 10, MaxQueue: 3, MaxQueueBytes: 4096}
	if err := s.SetRateLimitOverride("acme", rl, AuditRow{At: at, Principal: "ops", Action: "tenant.rate_limit.set", Tenant: "acme", Outcome: "ok"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetRateLimitOverride("free", config.RateLimit{Rate: math.Inf(1)}, AuditRow{At: at.Add(time.Second), Principal: "ops", Action: "tenant.rate_limit.set", Tenant: "free"}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRateLimitOverride("free", AuditRow{At: at.Add(2 * time.Second), Principal: "ops", Action: "tenant.rate_limit.clear", Tenant: "free"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetRateLimitOverride("x", rl, AuditRow{}); err == nil {
		t.Error("an override without its audit row was stored")
	}
	if err := s.SetRateLimitOverride("x", config.RateLimit{Rate: math.NaN()}, AuditRow{At: at, Action: "a"}); err == nil {
		t.Error("a NaN rate was stored")
	}
	// Reopen: both are durable.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openMem(t, fs)
	defer s.Close()
	m, err := s.RateLimitOverrides()
	if err != nil || len(m) != 1 || m["acme"] != rl {
		t.Fatalf("overrides = %v, %v", m, err)
	}
	rows, err := s.Audit(time.Time{}, 10)
	if err != nil || auditActions(rows) != "tenant.rate_limit.set,tenant.rate_limit.set,tenant.rate_limit.clear" {
		t.Fatalf("audit = %+v, %v", rows, err)
	}
	sum := sha256.Sum256(RateLimitJSON(rl))
	if rows[0].SpecSHA256 != hex.EncodeToString(sum[:]) || rows[0].Outcome != "ok" || rows[2].SpecSHA256 != "" {
		t.Errorf("rows = %+v", rows)
	}
	if string(RateLimitJSON(rl)) != `{"rate":5,"burst":10,"max_queue":3,"max_queue_bytes":4096}` {
		t.Errorf("RateLimitJSON = %s", RateLimitJSON(rl))
	}
	// Each change carries its event, in the change's batch: created for a
	// tenant without an override, deleted with the override it removed;
	// the refused changes wrote none.
	var events []string
	err = s.Events(0, math.MaxUint64, func(ev *EventRecord) (bool, error) {
		events = append(events, fmt.Sprintf("%s %s %s %s", ev.Tenant, ev.Type, ev.Subject, ev.Data))
		return false, nil
	})
	want := []string{
		`acme io.ankusa.rate_limit.created acme {"rate":5,"burst":10,"max_queue":3,"max_queue_bytes":4096}`,
		`free io.ankusa.rate_limit.created free {"rate":0,"burst":0,"max_queue":0,"max_queue_bytes":0,"unlimited":true}`,
		`free io.ankusa.rate_limit.deleted free {"rate":0,"burst":0,"max_queue":0,"max_queue_bytes":0,"unlimited":true}`,
	}
	if err != nil || strings.Join(events, "\n") != strings.Join(want, "\n") {
		t.Errorf("events\n%s\nwant\n%s (%v)", strings.Join(events, "\n"), strings.Join(want, "\n"), err)
	}
}

// Changing an override that exists is an update event carrying the new
// override.
func TestRateLimitOverrideUpdatedEvent(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	at := time.Date(2025, 11, 29, 19, 40, 0, 0, time.UTC)
	for _, rate := range []float64{1, 2} {
		if err := s.SetRateLimitOverride("acme", config.RateLimit{Rate: rate, Burst: 1}, AuditRow{At: at, Principal: "ops", Action: "tenant.rate_limit.set", Tenant: "acme"}); err != nil {
			t.Fatal(err)
		}
	}
	var last EventRecord
	if err := s.TenantEvents("acme", 1, func(ev *EventRecord) (bool, error) { last = *ev; return false, nil }); err != nil {
		t.Fatal(err)
	}
	if last.Seq != 2 || last.Type != "io.ankusa.rate_limit.updated" || last.Subject != "acme" || string(last.Data) != string(RateLimitJSON(config.RateLimit{Rate: 2, Burst: 1})) {
		t.Errorf("second set's event %+v", last)
	}
}
