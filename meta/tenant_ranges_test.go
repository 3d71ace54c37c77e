package meta

import (
	"bytes"
	"math"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/envelope"
)

// tenantFixture writes one record (or a few) of a per-tenant family for
// the tenant (ord, name), through the typed API. Every family that is
// per tenant needs one: TestTenantRanges fails for a family without.
type tenantFixture func(t *testing.T, s *Store, ord uint32, name string)

// Two days of dedupe keys per tenant; the tenants share one of them.
const fixtureDay = 20421

var tenantFixtures = map[string]tenantFixture{
	"rows": func(t *testing.T, s *Store, ord uint32, _ string) {
		commit(t, s, func(b *Batch) { b.PutPending(RowID{ord, 10, "a"}, &Delivery{Due: 5, Source: "src"}) })
	},
	"due": func(t *testing.T, s *Store, ord uint32, _ string) {
		commit(t, s, func(b *Batch) {
			row := Delivery{Due: 5, Source: "src"}
			b.PutPending(RowID{ord, 11, "a"}, &row)
			row.Due = 9
			b.MovePending(RowID{ord, 11, "a"}, 5, &row)
		})
	},
	"dead": func(t *testing.T, s *Store, ord uint32, _ string) {
		commit(t, s, func(b *Batch) {
			row := Delivery{Due: 5, Source: "src"}
			b.PutPending(RowID{ord, 12, "b"}, &row)
			b.PutDead(RowID{ord, 12, "b"}, 5, &row)
		})
	},
	"attempts": func(t *testing.T, s *Store, ord uint32, _ string) {
		commit(t, s, func(b *Batch) { b.PutAttempt(RowID{ord, 10, "a"}, 1, &AttemptRecord{At: 1, Outcome: "retry"}) })
	},
	"pen": func(t *testing.T, s *Store, ord uint32, _ string) {
		commit(t, s, func(b *Batch) { b.PutPen(ord, 13, &PenRow{Bytes: 3, Source: "src"}) })
	},
	"tenant-counts": func(t *testing.T, s *Store, ord uint32, _ string) {
		if err := s.SetDispatchCheckpointWith(13, map[uint32]TenantCounts{ord: {Hooks: 4, Bytes: 400}}); err != nil {
			t.Fatal(err)
		}
	},
	"tenant": func(t *testing.T, s *Store, ord uint32, name string) {
		if err := s.SetTenant(name, ord); err != nil {
			t.Fatal(err)
		}
	},
	"rate-limit": func(t *testing.T, s *Store, _ uint32, name string) {
		audit := AuditRow{At: time.Unix(1, 0), Principal: "ops", Action: "tenant.rate_limit.set", Tenant: name}
		if err := s.SetRateLimitOverride(name, config.RateLimit{Rate: math.Inf(1), Burst: 1}, audit); err != nil {
			t.Fatal(err)
		}
	},
	"source": func(t *testing.T, s *Store, _ uint32, name string) {
		commit(t, s, func(b *Batch) { b.PutSource(name, "src-of-"+name, []byte(`{}`)) })
	},
	"route": func(t *testing.T, s *Store, _ uint32, name string) {
		commit(t, s, func(b *Batch) { b.PutRoute(name, "r1", []byte(`{}`)) })
	},
	"mirror-source": func(t *testing.T, s *Store, _ uint32, name string) {
		commit(t, s, func(b *Batch) { b.PutMirrored(MirrorSource, name, "src-of-"+name, 7, []byte(`{}`)) })
		n := 0
		if err := s.Mirrored(MirrorSource, func(tenant, _ string, v uint64, rec []byte) error {
			if tenant == name && (v != 7 || string(rec) != `{}`) {
				t.Errorf("mirrored source of %s read back as version %d, %q", name, v, rec)
			}
			n++
			return nil
		}); err != nil || n == 0 {
			t.Fatal(n, err)
		}
	},
	"mirror-route": func(t *testing.T, s *Store, _ uint32, name string) {
		commit(t, s, func(b *Batch) { b.PutMirrored(MirrorRoute, name, "r1", 8, []byte(`{}`)) })
	},
	"dedupe": func(t *testing.T, s *Store, ord uint32, _ string) {
		day := int64(24 * time.Hour)
		// The first tenant's days are 0 and 1 after fixtureDay, the
		// second's 1 and 2: a day the other has not, and one they share.
		first := int64(fixtureDay+ord%2) * day
		commit(t, s, func(b *Batch) {
			b.AddDedupe(ord, "src", bytes.Repeat([]byte{1}, 16), &DedupeValue{Expiry: first + 1, Seq: 10})
			b.AddDedupe(ord, "src", bytes.Repeat([]byte{2}, 16), &DedupeValue{Expiry: first + day + 1, Seq: 11})
		})
	},
}

// nodeFixtures write the families that are not per tenant, once. The audit
// row names the first tenant: audit rows stay after an erase, so the
// tenant's ranges must not hold it.
var nodeFixtures = map[string]func(t *testing.T, s *Store){
	"bootstrap-token": func(t *testing.T, s *Store) {
		if err := s.SetBootstrapToken(AdminToken{Name: "local-admin", SHA256: "00", Scopes: []string{"tenant:*"}}); err != nil {
			t.Fatal(err)
		}
		if tok, found, err := s.BootstrapToken(); err != nil || !found || tok.Name != "local-admin" {
			t.Fatal(tok, found, err)
		}
	},
	"mirror-state": func(t *testing.T, s *Store) {
		commit(t, s, func(b *Batch) { b.SetMirrorState(MirrorState{Namespace: "ns:", Epoch: "e1", Version: 9}) })
		if st, found, err := s.Mirror(); err != nil || !found || st.Version != 9 || st.Epoch != "e1" {
			t.Fatal(st, found, err)
		}
	},
	"erase": func(t *testing.T, s *Store) {
		if err := s.SetEraseProgress("t1", []byte(`{"tenant":"t1","stage":"started"}`)); err != nil {
			t.Fatal(err)
		}
		if row, found, err := s.EraseProgress("t1"); err != nil || !found || string(row) != `{"tenant":"t1","stage":"started"}` {
			t.Fatal(string(row), found, err)
		}
	},
	"erased": func(t *testing.T, s *Store) {
		row := AuditRow{At: time.Unix(1, 0), Principal: "ops", Action: "tenant.delete", Event: Event{Type: EventType("tenant", "deleted"), Subject: "t0"}}
		if _, _, err := s.FinishErase(Tombstone{Tenant: "t0", ErasedAt: time.Unix(2, 0)}, 0, false, 0, row); err != nil {
			t.Fatal(err)
		}
		if tomb, found, err := s.TombstoneOf("t0"); err != nil || !found || !tomb.ErasedAt.Equal(time.Unix(2, 0)) {
			t.Fatal(tomb, found, err)
		}
	},
	"pending-change": func(t *testing.T, s *Store) {
		row := AuditRow{At: time.Unix(1, 0), Principal: "ops", Action: "source.create", Tenant: "t1",
			Event: Event{Type: EventType("source", "created"), Subject: "s1", Data: []byte(`{"name":"s1"}`)}}
		commit(t, s, func(b *Batch) { b.PutPendingChange(NewPendingChange("c1", row)) })
		var got []PendingChange
		if err := s.PendingChanges(func(pc PendingChange) error { got = append(got, pc); return nil }); err != nil || len(got) != 1 {
			t.Fatal(got, err)
		}
		if r := got[0].Row(); r.Event.Type != row.Event.Type || string(r.Event.Data) != `{"name":"s1"}` || r.Tenant != "t1" {
			t.Errorf("pending change read back as %+v", r)
		}
	},
	"node": func(t *testing.T, s *Store) {
		if err := s.SetNodeIdentity(Node{Name: "edge-1", Ordinal: 3}); err != nil {
			t.Fatal(err)
		}
	},
	"wal-checkpoint": func(t *testing.T, s *Store) {
		if err := s.SetWALCheckpoint(9, envelope.MakeID(1, 3, 9)); err != nil {
			t.Fatal(err)
		}
	},
	"wal-closed": func(t *testing.T, s *Store) {
		if err := s.SetWALClosed(9); err != nil {
			t.Fatal(err)
		}
	},
	"dispatch-checkpoint": func(t *testing.T, s *Store) {
		if err := s.SetDispatchCheckpoint(8); err != nil {
			t.Fatal(err)
		}
	},
	"catalogue": func(t *testing.T, s *Store) {
		e := SegmentEntry{Name: "1-9.seg", FirstSeq: 1, LastSeq: 9, FirstID: envelope.MakeID(1, 3, 1), LastID: envelope.MakeID(1, 3, 9)}
		if err := s.PutSegment(e); err != nil {
			t.Fatal(err)
		}
	},
	"catalogue-id": func(t *testing.T, s *Store) { // written with its entry
		e := SegmentEntry{Name: "10-19.seg", FirstSeq: 10, LastSeq: 19, FirstID: envelope.MakeID(2, 3, 10), LastID: envelope.MakeID(2, 3, 19)}
		if err := s.PutSegment(e); err != nil {
			t.Fatal(err)
		}
	},
	"catalogue-gap": func(t *testing.T, s *Store) {
		if err := s.PutGap(20, 21); err != nil {
			t.Fatal(err)
		}
	},
	"audit": func(t *testing.T, s *Store) { auditedNodeFixture(t, s) },
	// An audit row's event is filed under the tenant's name, yet an erase
	// replaces the tenant's events rather than deleting them with its
	// ranges (ReplaceTenantEvents): its ranges must not hold them.
	"events":      func(t *testing.T, s *Store) { auditedNodeFixture(t, s) },
	"event-order": func(t *testing.T, s *Store) { auditedNodeFixture(t, s) },
	"event-floor": func(t *testing.T, s *Store) { auditedNodeFixture(t, s) },
	"event-published": func(t *testing.T, s *Store) {
		if err := s.SetEventsPublished(s.EventsDurable()); err != nil {
			t.Fatal(err)
		}
	},
}

// auditedNodeFixture commits an audit row naming the first tenant, with
// its lifecycle event: an audit row, an event, its place in the outbox's
// order and the outbox's floor.
func auditedNodeFixture(t *testing.T, s *Store) {
	commit(t, s, func(b *Batch) {
		row := AuditRow{At: time.Unix(1, 0), Principal: "ops", Action: "quarantine.drop", Tenant: tenantA.name,
			Event: Event{Type: EventType("quarantine", "dropped"), Subject: "evt_x"}}
		if err := b.AddAudit(row); err != nil {
			t.Fatal(err)
		}
	})
}

// The two tenants: adjacent ordinals, and the first's name a prefix of
// the second's.
var tenantA, tenantB = struct {
	ord  uint32
	name string
}{7, "acme"}, struct {
	ord  uint32
	name string
}{8, "acme.eu"}

func commit(t *testing.T, s *Store, fn func(*Batch)) {
	t.Helper()
	b := s.NewBatch()
	defer b.Close()
	fn(b)
	if err := b.Commit(NoSync); err != nil {
		t.Fatal(err)
	}
}

// allKeys is every key of the store, as strings, with its value.
func allKeys(t *testing.T, s *Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	if err := s.scan("the store", nil, nil, func(k, v []byte) (bool, error) {
		out[string(k)] = string(v)
		return false, nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// written runs fn and returns the keys it added or changed, checking that
// it wrote at least one of family (a family of one key, such as the
// outbox's floor, is written once and changed after).
func written(t *testing.T, s *Store, family string, fn func()) map[string]bool {
	t.Helper()
	before := allKeys(t, s)
	fn()
	added := map[string]bool{}
	own := false
	for k, v := range allKeys(t, s) {
		if old, ok := before[k]; !ok || old != v {
			added[k] = true
			if f := familyOf([]byte(k)); f != nil && f.Name == family {
				own = true
			}
		}
	}
	if !own {
		t.Errorf("the fixture of family %s wrote no key of it", family)
	}
	return added
}

// TestTenantRanges writes one record of every family for two tenants (and
// the node's once), then checks that a tenant's ranges hold every key of
// its per-tenant families and nothing else, and that every key of the
// store belongs to a registered family. A family added to keys.go fails
// TestFamiliesRegistered until it is registered; registered, it fails
// here until it has a fixture; a key written under no family fails here.
func TestTenantRanges(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	for _, f := range families {
		if f.Scope != NotPerTenant {
			if tenantFixtures[f.Name] == nil {
				t.Errorf("family %s is per tenant and has no fixture in tenantFixtures", f.Name)
			}
			continue
		}
		fix := nodeFixtures[f.Name]
		if fix == nil {
			t.Errorf("family %s has no fixture in nodeFixtures", f.Name)
			continue
		}
		written(t, s, f.Name, func() { fix(t, s) })
	}
	byTenant := map[uint32]map[string]bool{}
	for _, tn := range []struct {
		ord  uint32
		name string
	}{tenantA, tenantB} {
		byTenant[tn.ord] = map[string]bool{}
		for name, fix := range tenantFixtures {
			if f := familyNamed(name); f == nil || f.Scope == NotPerTenant {
				t.Errorf("tenantFixtures has a fixture for %s, which is not a registered per-tenant family", name)
			}
			for k := range written(t, s, name, func() { fix(t, s, tn.ord, tn.name) }) {
				byTenant[tn.ord][k] = true
			}
		}
	}
	for k := range allKeys(t, s) {
		if familyOf([]byte(k)) == nil {
			t.Errorf("key %q belongs to no registered family", k)
		}
	}
	checkRanges(t, s, tenantA.ord, tenantA.name, byTenant[tenantA.ord])
	checkRanges(t, s, tenantB.ord, tenantB.name, byTenant[tenantB.ord])
}

// checkRanges holds a tenant's ranges against the keys its fixtures
// wrote: every one of them, of a per-tenant family, is in a range of its
// family, and every key in its ranges is one of them.
func checkRanges(t *testing.T, s *Store, ord uint32, name string, own map[string]bool) {
	t.Helper()
	ranges, err := s.TenantRanges(ord, name)
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, r := range ranges {
		err := s.scan("the range", r.Lo, r.Hi, func(k, _ []byte) (bool, error) {
			if f := familyOf(k); f == nil || f.Name != r.Family {
				t.Errorf("tenant %s: range %s [%x, %x) holds %q of family %v", name, r.Family, r.Lo, r.Hi, k, f)
			}
			if !own[string(k)] {
				t.Errorf("tenant %s: range %s holds %q, which is not the tenant's", name, r.Family, k)
			}
			found[string(k)] = true
			return false, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	var missed []string
	for k := range own {
		f := familyOf([]byte(k))
		switch {
		case found[k]:
		case f == nil:
			missed = append(missed, "<none> "+strconv.Quote(k))
		case f.Scope != NotPerTenant:
			missed = append(missed, f.Name+" "+strconv.Quote(k))
		}
	}
	sort.Strings(missed)
	for _, m := range missed {
		t.Errorf("tenant %s: its key of family %s is in none of its ranges", name, m)
	}
}

func familyNamed(name string) *Family {
	for i := range families {
		if families[i].Name == name {
			return &families[i]
		}
	}
	return nil
}
