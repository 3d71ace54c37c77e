package meta

import (
	"bytes"
	"encoding/hex"
	"errors"
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
	first := AuditRow{At: t0, Principal: "ops", Action: "quarantine.release_forced", Tenant: "acme", Entity: id.String(), Detail: "source stripe"}
	// Added out of time order; two rows share a nanosecond.
	addAudits(t, s,
		AuditRow{At: t0.Add(2 * time.Second), Principal: "ops", Action: "c"},
		first,
		AuditRow{At: t0.Add(time.Second), Principal: "ci", Action: "b1", Tenant: "globex"},
		AuditRow{At: t0.Add(time.Second), Principal: "ci", Action: "b2", Tenant: "globex"},
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
		AuditRow{At: at, Principal: "ops", Action: "quarantine.drop_all", Tenant: "acme", Detail: "3 hooks, source gh"},
		AuditRow{At: at.Add(1), Principal: "root", Action: "tenant.erase"})
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
		`{"at":"2025-11-29T19:40:00.000000006Z","principal":"root","action":"tenant.erase"}`,
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
		addAudits(t, s, AuditRow{At: at, Principal: "ops", Action: name})
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
	addAudits(t, s, AuditRow{At: at, Principal: "ops", Action: "ok"})
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
	addAudits(t, s, AuditRow{At: at, Principal: "ops", Action: "a"}, AuditRow{At: at.Add(time.Hour), Principal: "ops", Action: "b"})
	for _, since := range []time.Time{{}, time.Unix(-1, 0), time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC)} {
		rows, err := s.Audit(since, 10)
		if err != nil || auditActions(rows) != "a,b" {
			t.Errorf("Audit(%v) = %q, %v; want a,b", since, auditActions(rows), err)
		}
	}
}
