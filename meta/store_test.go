package meta

import (
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/envelope"
)

func openMem(t *testing.T, fs vfs.FS) *Store {
	t.Helper()
	s, err := Open(Options{Dir: "meta", FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStoreRoundTrip(t *testing.T) {
	fs := vfs.NewMem()
	s := openMem(t, fs)
	if _, found, err := s.NodeIdentity(); err != nil || found {
		t.Fatalf("fresh store: identity found=%v err=%v", found, err)
	}
	if seq, id, err := s.WALCheckpoint(); err != nil || seq != 0 || !id.IsZero() {
		t.Fatalf("fresh store: checkpoint %d %v %v", seq, id, err)
	}
	node := Node{Name: "edge-1", Ordinal: 7, CreatedAt: time.Unix(1700000000, 0).UTC()}
	if err := s.SetNodeIdentity(node); err != nil {
		t.Fatal(err)
	}
	id := envelope.MakeID(1700000000123, 7, 42)
	if err := s.SetWALCheckpoint(42, id); err != nil {
		t.Fatal(err)
	}
	for name, ord := range map[string]uint32{"acme": 1, "globex": 2, "default": 3} {
		if err := s.SetTenant(name, ord); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openMem(t, fs)
	defer s.Close()
	got, found, err := s.NodeIdentity()
	if err != nil || !found || got != node {
		t.Fatalf("identity %+v found=%v err=%v, want %+v", got, found, err, node)
	}
	seq, gotID, err := s.WALCheckpoint()
	if err != nil || seq != 42 || gotID != id {
		t.Fatalf("checkpoint %d %v %v, want 42 %v", seq, gotID, err, id)
	}
	tenants, err := s.Tenants()
	if err != nil {
		t.Fatal(err)
	}
	if len(tenants) != 3 || tenants["acme"] != 1 || tenants["globex"] != 2 || tenants["default"] != 3 {
		t.Fatalf("tenants %v", tenants)
	}
}

// TestStoreRejectsCorruptValues feeds stored values of the wrong shape and
// checks that each accessor names the problem rather than guessing.
func TestStoreRejectsCorruptValues(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	for key, val := range map[string]string{keyNode: "{not json", keyWALCheckpoint: "short", keyWALClosed: "short", prefixTenant + "x": "123"} {
		if err := s.db.Set([]byte(key), []byte(val), nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := s.NodeIdentity(); err == nil || !strings.Contains(err.Error(), "node identity") {
		t.Fatalf("corrupt identity: %v", err)
	}
	if _, _, err := s.WALCheckpoint(); err == nil || !strings.Contains(err.Error(), "wal checkpoint") {
		t.Fatalf("corrupt checkpoint: %v", err)
	}
	if _, err := s.WALClosed(); err == nil || !strings.Contains(err.Error(), "clean-close record") {
		t.Fatalf("corrupt clean-close record: %v", err)
	}
	if _, err := s.Tenants(); err == nil || !strings.Contains(err.Error(), "tenant") {
		t.Fatalf("corrupt tenant: %v", err)
	}
}

// TestFatalLoggerDoesNotReturn: pebble's Fatalf must stop the node; if the
// configured Fatalf returned, the logger panics rather than let pebble go on.
func TestFatalLoggerDoesNotReturn(t *testing.T) {
	called := false
	o := Options{Logf: func(string, ...any) {}, Fatalf: func(string, ...any) { called = true }}
	l := newLogger(&o)
	defer func() {
		if r := recover(); r == nil || !called {
			t.Fatalf("Fatalf returned normally (called=%v, recovered=%v)", called, r)
		}
	}()
	l.Fatalf("disk on fire: %d", 1)
}
