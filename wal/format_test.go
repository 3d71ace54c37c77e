package wal_test

import (
	"bytes"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/internal/golden"
	"github.com/ankusa/ankusa/wal"
)

// readGolden reads an annotated hex file (see package golden).
func readGolden(t *testing.T, path string) []byte {
	t.Helper()
	b, err := golden.ReadHex(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGoldenFile freezes the WAL's on-disk form: the file header, a tenant
// record and a hook record, byte for byte.
func TestGoldenFile(t *testing.T) {
	fs := vfs.NewMem()
	clk := newClock(1_764_445_200_123, 0)
	w := openWAL(t, wal.Options{FS: fs, Now: clk.Now})
	e := envelope.Envelope{
		TenantID:     "acme",
		SourceID:     "stripe",
		ReceivedAt:   1_764_445_200_123_456_789,
		Body:         []byte(`{"id":"evt_1"}`),
		Verification: envelope.Verification{Verifier: "stripe", Verified: true},
		DedupeKey:    "evt_1",
	}
	req := wal.AcquireRequest()
	if len(req.Buf) != wal.FrameHeaderSize {
		t.Fatalf("an acquired request holds %d bytes, want the %d of a frame header", len(req.Buf), wal.FrameHeaderSize)
	}
	req.Buf = e.AppendTo(req.Buf)
	wal.SealPayload(req.Buf)
	if err := w.Commit(req); err != nil {
		t.Fatal(err)
	}
	wal.ReleaseRequest(req)
	closeWAL(t, w)
	got := readFile(t, fs, fs.PathJoin(dir, wal.FileName(1)))
	want := readGolden(t, "testdata/wal_v1.golden")
	if !bytes.Equal(got, want) {
		t.Fatalf("the WAL file format changed (version 1 is frozen)\ngot  %x\nwant %x", got, want)
	}
	// And the frozen bytes read back.
	mem := vfs.NewMem()
	if err := mem.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, mem, mem.PathJoin(dir, wal.FileName(1)), want)
	recs := mustReadLog(t, mem, dir)
	if len(recs) != 2 || recs[0].Tenant != "acme" || recs[0].Ordinal != 1 {
		t.Fatalf("golden log reads back as %+v", recs)
	}
	h := recs[1].Env
	e.Seq, e.ID, e.TenantOrdinal = 1, envelope.MakeID(1_764_445_200_123, testNode, 1), 1
	if h.Seq != e.Seq || h.ID != e.ID || h.TenantOrdinal != 1 || h.TenantID != e.TenantID || string(h.Body) != string(e.Body) || h.DedupeKey != e.DedupeKey || h.Verification != e.Verification {
		t.Fatalf("golden hook reads back as %+v", h)
	}
}
