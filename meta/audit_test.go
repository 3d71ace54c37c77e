package meta

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/envelope"
)

// Audit keys are au/, the time in unix ns, then the counter: they sort by
// time, then by the order they were added in.
func TestAuditKey(t *testing.T) {
	got := hex.EncodeToString(AuditKey(0x0102030405060708, 0x0a0b0c0d))
	if want := "61752f" + "0102030405060708" + "0a0b0c0d"; got != want {
		t.Fatalf("AuditKey = %s, want %s", got, want)
	}
	keys := [][]byte{
		AuditKey(0, 0),
		AuditKey(0, 1<<32-1),
		AuditKey(1, 0),
		AuditKey(255, 7),
		AuditKey(256, 0),
		AuditKey(1_764_445_200_000_000_000, 1),
		AuditKey(1_764_445_200_000_000_000, 2),
		AuditKey(1<<63-1, 0),
	}
	for i := 1; i < len(keys); i++ {
		if bytes.Compare(keys[i-1], keys[i]) >= 0 {
			t.Fatalf("audit key %d (%x) does not sort before %d (%x)", i-1, keys[i-1], i, keys[i])
		}
	}
	for _, k := range keys {
		if !bytes.HasPrefix(k, []byte(prefixAudit)) || len(k) != len(prefixAudit)+12 {
			t.Fatalf("audit key %x", k)
		}
	}
}

// addAudits commits rows, each with AddAudit, in one synced batch.
func addAudits(t *testing.T, s *Store, rows ...AuditRow) {
	t.Helper()
	b := s.NewBatch()
	defer b.Close()
	for _, r := range rows {
		if err := b.AddAudit(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(Sync); err != nil {
		t.Fatal(err)
	}
}

func auditActions(rows []AuditRow) string {
	var s []string
	for _, r := range rows {
		s = append(s, r.Action)
	}
	return strings.Join(s, ",")
}

// Rows added with AddAudit come back from Audit oldest first, from since
// on, at most limit, whole, and after a reopen.
func TestAuditRoundTrip(t *testing.T) {
	fs := vfs.NewMem()
	s := openMem(t, fs)
	t0 := time.Date(2025, 11, 29, 19, 40, 0, 123456789, time.UTC)
	id := envelope.MakeID(1_764_445_200_000, 7, 42)
	first := AuditRow{At: t0, Principal: "ops", Action: "quarantine.release_forced", Tenant: "acme", Entity: id.String(), Detail: "source stripe",
		Event: testEvent("quarantine.release_forced", id.String())}
	// Added out of time order; two rows share a nanosecond.
	addAudits(t, s,
		AuditRow{At: t0.Add(2 * time.Second), Principal: "ops", Action: "c", Tenant: "acme", Event: testEvent("c", "x")},
		first,
		AuditRow{At: t0.Add(time.Second), Principal: "ci", Action: "b1", Tenant: "globex", Event: testEvent("b1", "x")},
		AuditRow{At: t0.Add(time.Second), Principal: "ci", Action: "b2", Tenant: "globex", Event: testEvent("b2", "x")},
	)
	// Keys that are not audit rows stay out of the listing.
	if err := s.db.Set(AttemptKey(nil, RowID{1, 1, "s"}, 1), []byte("x"), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Set(prefixEnd([]byte(prefixAudit)), []byte("x"), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openMem(t, fs)
	defer s.Close()

	epoch := time.Unix(0, 0)
	rows, err := s.Audit(epoch, 100)
	if err != nil || auditActions(rows) != "quarantine.release_forced,b1,b2,c" {
		t.Fatalf("Audit: %+v, %v", rows, err)
	}
	if got := rows[0]; !got.At.Equal(first.At) || got.Principal != first.Principal || got.Action != first.Action ||
		got.Tenant != first.Tenant || got.Entity != first.Entity || got.Detail != first.Detail {
		t.Fatalf("row %+v, want %+v", got, first)
	}
	// The rows' events survived the reopen too, in the order the rows
	// were added (not their times'): the outbox's order is the commits'.
	if got := eventSummary(t, s); got != "acme test.c x;acme test.quarantine.release_forced "+id.String()+";globex test.b1 x;globex test.b2 x;" {
		t.Fatalf("events after a reopen: %s", got)
	}
	f := func(since time.Time, limit int, want string) {
		t.Helper()
		rows, err := s.Audit(since, limit)
		if err != nil || auditActions(rows) != want {
			t.Fatalf("Audit(%v, %d) = %q, %v; want %q", since, limit, auditActions(rows), err, want)
		}
	}
	f(epoch, 2, "quarantine.release_forced,b1")
	f(epoch, 0, "")
	f(t0, 100, "quarantine.release_forced,b1,b2,c") // since is inclusive
	f(t0.Add(1), 100, "b1,b2,c")                    // one nanosecond later
	f(t0.Add(time.Second), 1, "b1")                 // the earlier of one nanosecond's rows
	f(t0.Add(2*time.Second), 100, "c")
	f(t0.Add(2*time.Second+1), 100, "")                                                // after the last row
	f(t0.In(time.FixedZone("+01:00", 3600)), 100, "quarantine.release_forced,b1,b2,c") // zones do not matter
}

// The value is JSON, with empty tenant, entity and detail left out: it
// never holds more than the row.
func TestAuditValue(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	at := time.Date(2025, 11, 29, 19, 40, 0, 5, time.UTC)
	addAudits(t, s,
		AuditRow{At: at, Principal: "ops", Action: "quarantine.drop_all", Tenant: "acme", Detail: "3 hooks, source gh", Event: testEvent("quarantine.bulk_dropped", "acme")},
		AuditRow{At: at.Add(1), Principal: "root", Action: "tenant.erase", Tenant: "globex", Event: testEvent("tenant.deleted", "globex")})
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte(prefixAudit), UpperBound: prefixEnd([]byte(prefixAudit))})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var vals []string
	for ok := it.First(); ok; ok = it.Next() {
		if k := it.Key(); len(k) != len(prefixAudit)+12 || !bytes.HasPrefix(k, AuditKey(at.UnixNano()+int64(len(vals)), 0)[:len(prefixAudit)+8]) {
			t.Errorf("key %x is not the row's time", k)
		}
		vals = append(vals, string(it.Value()))
	}
	want := []string{
		`{"at":"2025-11-29T19:40:00.000000005Z","principal":"ops","action":"quarantine.drop_all","tenant":"acme","detail":"3 hooks, source gh"}`,
		`{"at":"2025-11-29T19:40:00.000000006Z","principal":"root","action":"tenant.erase","tenant":"globex"}`,
	}
	if strings.Join(vals, "\n") != strings.Join(want, "\n") {
		t.Fatalf("values\n%s\nwant\n%s", strings.Join(vals, "\n"), strings.Join(want, "\n"))
	}
}

// Rows added in one nanosecond keep the order they were added in, across
// batches too.
func TestAuditSameInstant(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	at := time.Date(2025, 11, 29, 19, 40, 0, 0, time.UTC)
	var want []string
	for i := 0; i < 5; i++ {
		name := string(rune('a' + i))
		addAudits(t, s, AuditRow{At: at, Principal: "ops", Action: name, Tenant: "acme", Event: testEvent(name, "x")})
		want = append(want, name)
	}
	rows, err := s.Audit(at, 100)
	if err != nil || auditActions(rows) != strings.Join(want, ",") {
		t.Fatalf("Audit: %q, %v; want %q", auditActions(rows), err, want)
	}
}

// A row that does not decode is ErrBadRecord; the rows before it are
// returned.
func TestAuditDamagedRow(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	at := time.Date(2025, 11, 29, 19, 40, 0, 0, time.UTC)
	addAudits(t, s, AuditRow{At: at, Principal: "ops", Action: "ok", Tenant: "acme", Event: testEvent("ok", "x")})
	if err := s.db.Set(AuditKey(at.Add(time.Second).UnixNano(), 0), []byte("{not json"), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	rows, err := s.Audit(at, 10)
	if !errors.Is(err, ErrBadRecord) || auditActions(rows) != "ok" {
		t.Fatalf("Audit over a damaged row: %+v, %v", rows, err)
	}
}

// A since of the zero time, or before 1970, lists from the first row:
// such a time has no unix-nanosecond key of its own (its UnixNano is
// negative or overflows, and as a key it would sort after every row).
func TestAuditSinceBeforeEpoch(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	at := time.Date(2025, 11, 29, 19, 40, 0, 0, time.UTC)
	addAudits(t, s, AuditRow{At: at, Principal: "ops", Action: "a", Tenant: "acme", Event: testEvent("a", "x")},
		AuditRow{At: at.Add(time.Hour), Principal: "ops", Action: "b", Tenant: "acme", Event: testEvent("b", "x")})
	for _, since := range []time.Time{{}, time.Unix(-1, 0), time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC)} {
		rows, err := s.Audit(since, 10)
		if err != nil || auditActions(rows) != "a,b" {
			t.Errorf("Audit(%v) = %q, %v; want a,b", since, auditActions(rows), err)
		}
	}
}

// testEvent is the lifecycle event a test's audit row carries: of type
// io.ankusa.test.<action>, about subject, its data naming the action.
func testEvent(action, subject string) Event {
	return Event{Type: EventType("test", action), Subject: subject, Data: json.RawMessage(`{"action":"` + action + `"}`)}
}

// eventSummary is every durable event of the outbox, in seq order, as
// "tenant type-without-io.ankusa. subject;", checking on the way that
// seqs are dense from the first, that each id is its seq's and that the
// data is the one testEvent gave (or null, for an event given none).
func eventSummary(t *testing.T, s *Store) string {
	t.Helper()
	var out strings.Builder
	var prev uint64
	err := s.Events(0, math.MaxUint64, func(ev *EventRecord) (bool, error) {
		if prev != 0 && ev.Seq != prev+1 {
			t.Errorf("event seq %d after %d", ev.Seq, prev)
		}
		prev = ev.Seq
		if seq, ok := EventSeqOf(ev.ID); !ok || seq != ev.Seq {
			t.Errorf("event %d has id %s (seq %d, %v)", ev.Seq, ev.ID, seq, ok)
		}
		typ := strings.TrimPrefix(ev.Type, "io.ankusa.")
		if want := `{"action":"` + strings.TrimPrefix(typ, "test.") + `"}`; strings.HasPrefix(typ, "test.") && string(ev.Data) != "null" && string(ev.Data) != want {
			t.Errorf("event %d data %s, want %s", ev.Seq, ev.Data, want)
		}
		fmt.Fprintf(&out, "%s %s %s;", ev.Tenant, typ, ev.Subject)
		return false, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// An audit row's event is written with it: in the tenant's range of the
// outbox and in the outbox's order, numbered in commit order, its time
// the commit's, its stored value the CloudEvent's fields and nothing of
// the audit row (which holds nothing of the event).
func TestAuditRowCarriesItsEvent(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	at := time.Date(2025, 11, 29, 19, 40, 0, 0, time.UTC)
	s.SetEventNode(5)
	before := time.Now()
	addAudits(t, s,
		AuditRow{At: at, Principal: "ops", Action: "a", Tenant: "acme", Event: testEvent("a", "s1")},
		AuditRow{At: at, Principal: "ops", Action: "b", Tenant: "globex", Event: testEvent("b", "s2")})
	addAudits(t, s, AuditRow{At: at, Principal: "ops", Action: "c", Tenant: "acme", Detail: "d", Event: Event{Type: EventType("test", "c"), Subject: "s3"}})
	after := time.Now()
	if got, want := eventSummary(t, s), "acme test.a s1;globex test.b s2;acme test.c s3;"; got != want {
		t.Fatalf("events %q, want %q", got, want)
	}
	if d := s.EventsDurable(); d != 3 {
		t.Errorf("EventsDurable = %d, want 3", d)
	}
	var acme []string
	err := s.TenantEvents("acme", 0, func(ev *EventRecord) (bool, error) {
		if ev.Time.Before(before.Add(-time.Millisecond)) || ev.Time.After(after) {
			t.Errorf("event %d at %v, not its commit's time (%v..%v)", ev.Seq, ev.Time, before, after)
		}
		if ev.ID.Node() != 5 {
			t.Errorf("event %d id %s of node %d, want 5", ev.Seq, ev.ID, ev.ID.Node())
		}
		acme = append(acme, fmt.Sprintf("%d %s %s", ev.Seq, ev.Type, ev.Data))
		return false, nil
	})
	if want := []string{`1 io.ankusa.test.a {"action":"a"}`, "3 io.ankusa.test.c null"}; err != nil || strings.Join(acme, "|") != strings.Join(want, "|") {
		t.Fatalf("TenantEvents(acme) = %q, %v; want %q", acme, err, want)
	}
	if last, err := s.LastTenantEvent("globex"); err != nil || last != 2 {
		t.Errorf("LastTenantEvent(globex) = %d, %v; want 2", last, err)
	}
	// The stored event is the CloudEvent's fields, nothing of the row.
	var fields map[string]json.RawMessage
	if _, err := s.getKey("an event", func(dst []byte) []byte { return appendEventKey(dst, "acme", 3) }, func(v []byte) error {
		return json.Unmarshal(v, &fields)
	}); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if got := strings.Join(keys, ","); got != "data,id,subject,tenant,time,type" {
		t.Errorf("stored event fields %s", got)
	}
}

// A row without its event, or without a tenant to file the event under,
// is refused, and leaves the batch as it was: a change cannot be written
// with an audit row and no event.
func TestAuditRowWithoutEventRefused(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	at := time.Date(2025, 11, 29, 19, 40, 0, 0, time.UTC)
	for _, row := range []AuditRow{
		{At: at, Principal: "ops", Action: "source.create", Tenant: "acme"},
		{At: at, Principal: "ops", Action: "source.create", Tenant: "acme", Event: Event{Subject: "s", Data: json.RawMessage(`{}`)}},
		{At: at, Principal: "ops", Action: "source.create", Event: testEvent("a", "s")},
	} {
		b := s.NewBatch()
		if err := b.AddAudit(row); err == nil || !strings.Contains(err.Error(), "BUG: meta:") {
			t.Errorf("AddAudit(%+v) = %v, want a BUG error", row, err)
		}
		if !b.Empty() {
			t.Errorf("AddAudit(%+v) refused, but left %d writes in the batch", row, b.Len())
		}
		b.Close()
	}
	if rows, err := s.Audit(time.Time{}, 10); err != nil || len(rows) != 0 {
		t.Errorf("audit rows %+v, %v; want none", rows, err)
	}
	if got := eventSummary(t, s); got != "" {
		t.Errorf("events %q, want none", got)
	}
}
