package main

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/segment"
	"github.com/ankusa/ankusa/wal"
)

// testEnv is a hook of seq and id with body, and the sha256 of its binary
// form (what the log's copies are compared by).
func testEnv(seq uint64, id envelope.ID, body string) (*envelope.Envelope, [sha256.Size]byte) {
	e := &envelope.Envelope{Seq: seq, ID: id, TenantID: "t1", SourceID: "open", Body: []byte(body)}
	return e, sha256.Sum256(e.AppendTo(nil))
}

// wantProblems fails t unless problems has one containing each of want,
// and none at all when want is empty.
func wantProblems(t *testing.T, problems []string, want ...string) {
	t.Helper()
	if len(want) == 0 && len(problems) > 0 {
		t.Fatalf("problems %q, want none", problems)
	}
	for _, w := range want {
		found := false
		for _, p := range problems {
			found = found || strings.Contains(p, w)
		}
		if !found {
			t.Fatalf("problems %q, want one saying %q", problems, w)
		}
	}
}

// TestLogChecks: the checks of the log as a whole (segments and the WAL
// files left, DESIGN.md §6 item 3) each find what they are for.
func TestLogChecks(t *testing.T) {
	type rec struct {
		seq  uint64
		id   envelope.ID
		body string
	}
	idOf := func(seq uint64) envelope.ID { return envelope.MakeID(1_764_445_200_000, 1, seq) }
	r := func(seq uint64) rec { return rec{seq, idOf(seq), fmt.Sprint("body ", seq)} }
	span := func(first, last uint64) []rec {
		var out []rec
		for s := first; s <= last; s++ {
			out = append(out, r(s))
		}
		return out
	}
	cat := func(rs ...[]rec) []rec {
		var out []rec
		for _, x := range rs {
			out = append(out, x...)
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		segs     []rec // sealed, tiling 1..last
		wal      []rec // in WAL order
		files    []uint64
		want     []string // problems; none if empty
		overlap  int
		deleted  int
		lastSeen uint64
	}{
		{name: "sealed, then the WAL from inside the sealed range", segs: span(1, 4), wal: span(3, 7), files: []uint64{2, 3}, overlap: 2, deleted: 1, lastSeen: 7},
		{name: "the WAL right after the segments", segs: span(1, 4), wal: span(5, 7), files: []uint64{4}, deleted: 3, lastSeen: 7},
		{name: "all sealed, the WAL empty", segs: span(1, 6), files: []uint64{5}, deleted: 4, lastSeen: 6},
		{name: "nothing sealed", wal: span(1, 5), files: []uint64{1, 2}, lastSeen: 5},
		{name: "nothing at all", files: []uint64{1}},
		{name: "a hole in the middle of the WAL files", segs: span(1, 4), wal: span(3, 7), files: []uint64{2, 4, 5},
			want: []string{"only a prefix of the WAL may be deleted"}, overlap: 2, deleted: 1, lastSeen: 7},
		{name: "no WAL file", segs: span(1, 4),
			want: []string{"the WAL holds no file"}, lastSeen: 4},
		{name: "a seq missing between the last segment and the first WAL file", segs: span(1, 4), wal: span(6, 8), files: []uint64{3},
			want: []string{"seqs 5..5 are in no segment and in no WAL file on disk: the segments end at seq 4", "dense from 1"}, deleted: 2, lastSeen: 8},
		{name: "nothing sealed and WAL files deleted", wal: span(3, 5), files: []uint64{2},
			want: []string{"seqs 1..2 are in no segment and in no WAL file on disk"}, deleted: 1, lastSeen: 5},
		{name: "a differing duplicate", segs: span(1, 4), wal: cat([]rec{{4, idOf(4), "another body"}}, span(5, 6)), files: []uint64{1},
			want: []string{"seq 4 differs between its two copies"}, lastSeen: 6},
		{name: "another hook at a sealed seq", segs: span(1, 4), wal: cat([]rec{{4, idOf(40), "body 4"}}, span(5, 6)), files: []uint64{1},
			want: []string{"seq 4 differs between its two copies"}, lastSeen: 6},
		{name: "twice in the WAL", segs: span(1, 4), wal: cat(span(5, 5), span(5, 6)), files: []uint64{1},
			want: []string{"seq 5 is in the WAL twice", "skip from seq 5 to 5"}, lastSeen: 6},
		{name: "twice in the segments", segs: cat(span(1, 4), span(4, 4)), files: []uint64{1},
			want: []string{"seq 4 is in the segments twice"}, lastSeen: 4},
		{name: "the WAL skips a sealed seq", segs: span(1, 7), wal: cat(span(5, 5), span(7, 8)), files: []uint64{1},
			want: []string{"skip from seq 5 to 7"}, overlap: 2, lastSeen: 8},
		{name: "a gap in the WAL past the segments", segs: span(1, 4), wal: cat(span(5, 5), span(7, 8)), files: []uint64{1},
			want: []string{"skip from seq 5 to 7", "seqs 6..6 are in no segment and in no WAL file: seqs must be dense from 1"}, lastSeen: 8},
		{name: "an id not above the previous", segs: span(1, 4), wal: []rec{{5, idOf(3), "body 5"}}, files: []uint64{1},
			want: []string{"seq 5 (wal) has id"}, lastSeen: 5},
		{name: "not from seq 1", wal: span(2, 4), files: []uint64{1},
			want: []string{"seqs 1..1 are in no segment and in no WAL file: seqs must be dense from 1"}, lastSeen: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newNodeLog()
			for _, x := range tc.segs {
				e, p := testEnv(x.seq, x.id, x.body)
				l.addSegment(e, p, "seg")
				l.seg.sealed = max(l.seg.sealed, x.seq)
			}
			for _, x := range tc.wal {
				e, p := testEnv(x.seq, x.id, x.body)
				l.addWAL(e, p, "wal")
			}
			l.walFiles = tc.files
			l.finish()
			wantProblems(t, l.problems, tc.want...)
			if l.overlap != tc.overlap || l.walDeleted() != tc.deleted || l.last != tc.lastSeen {
				t.Fatalf("overlap %d, %d WAL files deleted, last seq %d; want %d, %d, %d", l.overlap, l.walDeleted(), l.last, tc.overlap, tc.deleted, tc.lastSeen)
			}
		})
	}
}

// TestCarried: the log after the last boot must hold every hook of the log
// before it, unchanged.
func TestCarried(t *testing.T) {
	idOf := func(seq uint64) envelope.ID { return envelope.MakeID(1_764_445_200_000, 1, seq) }
	logOf := func(bodies ...string) *nodeLog {
		l := newNodeLog()
		for i, b := range bodies {
			e, p := testEnv(uint64(i+1), idOf(uint64(i+1)), b)
			l.addWAL(e, p, "wal")
		}
		return l
	}
	before := logOf("a", "b", "c")
	if n, problems := carried(before, logOf("a", "b", "c", "d")); n != 3 || len(problems) != 0 {
		t.Fatalf("carried %d, problems %q: want 3, none", n, problems)
	}
	_, problems := carried(before, logOf("a", "b"))
	wantProblems(t, problems, "seq 3 (")
	_, problems = carried(before, logOf("a", "B", "c"))
	wantProblems(t, problems, "seq 2 was")
}

// logFixture is a log written the way a node writes it: a WAL of 30 hooks
// over several files (real wal.WAL commits), and segments sealing seqs
// 1..10 and 11..20 from the WAL's payloads.
type logFixture struct {
	segDir, walDir string
	payloads       [][]byte             // by seq-1
	fileOf         map[uint64]uint64    // seq -> WAL file number
	files          map[uint64][2]uint64 // WAL file number -> first and last seq
}

func newLogFixture(t *testing.T) *logFixture {
	t.Helper()
	dir := t.TempDir()
	f := &logFixture{
		segDir: filepath.Join(dir, "segments"),
		walDir: filepath.Join(dir, "wal"),
		fileOf: map[uint64]uint64{},
		files:  map[uint64][2]uint64{},
	}
	w, err := wal.Open(wal.Options{FS: vfs.Default, Dir: f.walDir, MaxFileBytes: 2 << 10, Node: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		e := envelope.Envelope{TenantID: fmt.Sprint("t", i%3), SourceID: "open", ReceivedAt: 1, Body: []byte(strings.Repeat(fmt.Sprint(i), 300))}
		req := wal.AcquireRequest()
		req.Buf = e.AppendTo(req.Buf)
		wal.SealPayload(req.Buf)
		err := w.Commit(req)
		wal.ReleaseRequest(req)
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	err = wal.ReadDir(vfs.Default, f.walDir, func(r *wal.Record) error {
		if r.Kind != envelope.KindEnvelope {
			return nil
		}
		num, ok := wal.ParseFileName(filepath.Base(r.File))
		if !ok {
			return fmt.Errorf("%s: not a WAL file name", r.File)
		}
		f.payloads = append(f.payloads, append([]byte(nil), r.Payload...))
		f.fileOf[r.Seq] = num
		span, seen := f.files[num]
		if !seen {
			span[0] = r.Seq
		}
		span[1] = r.Seq
		f.files[num] = span
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.payloads) != 30 || len(f.files) < 4 {
		t.Fatalf("the fixture's WAL holds %d hooks in %d files: want 30 in 4 or more", len(f.payloads), len(f.files))
	}
	if err := os.MkdirAll(f.segDir, 0o755); err != nil {
		t.Fatal(err)
	}
	f.seal(t, 1, 10, nil)
	f.seal(t, 11, 20, nil)
	return f
}

// seal writes the segment of seqs first..last from the WAL's payloads,
// changed by edit if not nil.
func (f *logFixture) seal(t *testing.T, first, last uint64, edit func(seq uint64, p []byte) []byte) {
	t.Helper()
	enc := segment.NewEncoder()
	defer enc.Close()
	partial := filepath.Join(f.segDir, fmt.Sprintf("%020d.partial", first))
	w, err := segment.Create(vfs.Default, partial, enc, 0)
	if err != nil {
		t.Fatal(err)
	}
	for s := first; s <= last; s++ {
		p := f.payloads[s-1]
		if edit != nil {
			p = edit(s, p)
		}
		if err := w.Append(p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(partial, filepath.Join(f.segDir, segment.FileName(first, last))); err != nil {
		t.Fatal(err)
	}
}

// removeWAL deletes the WAL files for which del says so.
func (f *logFixture) removeWAL(t *testing.T, del func(num uint64, first, last uint64) bool) int {
	t.Helper()
	n := 0
	for num, span := range f.files {
		if del(num, span[0], span[1]) {
			if err := os.Remove(filepath.Join(f.walDir, wal.FileName(num))); err != nil {
				t.Fatal(err)
			}
			n++
		}
	}
	return n
}

// TestReadLog reads real segment and WAL files back as one log: the
// harness's reading and its checks, on the files a node writes.
func TestReadLog(t *testing.T) {
	t.Run("every WAL file still there", func(t *testing.T) {
		f := newLogFixture(t)
		l, err := readLog(f.segDir, f.walDir, true, true)
		if err != nil {
			t.Fatal(err)
		}
		wantProblems(t, append(l.seg.problems, l.problems...))
		if l.hooks() != 30 || l.last != 30 || l.seg.sealed != 20 || l.seg.files != 2 || l.seg.records != 20 || l.overlap != 20 || l.walDeleted() != 0 || l.walFirst != 1 {
			t.Fatalf("%d hooks up to seq %d, sealed %d in %d files (%d records), overlap %d, %d WAL files deleted, WAL from seq %d: want 30, 30, 20, 2, 20, 20, 0, 1",
				l.hooks(), l.last, l.seg.sealed, l.seg.files, l.seg.records, l.overlap, l.walDeleted(), l.walFirst)
		}
		// The tenant of each hook comes back from either copy.
		for s, h := range l.bySeq {
			if want := fmt.Sprint("t", (s-1)%3); h.tenant != want {
				t.Fatalf("seq %d: tenant %q, want %q", s, h.tenant, want)
			}
		}
	})
	t.Run("the sealed WAL files deleted", func(t *testing.T) {
		f := newLogFixture(t)
		n := f.removeWAL(t, func(_, _, last uint64) bool { return last <= 20 })
		l, err := readLog(f.segDir, f.walDir, true, true)
		if err != nil {
			t.Fatal(err)
		}
		wantProblems(t, append(l.seg.problems, l.problems...))
		if n == 0 || l.walDeleted() != n || l.hooks() != 30 || l.walFirst > 21 || l.walFirst != f.files[f.fileOf[21]][0] {
			t.Fatalf("%d WAL files deleted, %d seen deleted, %d hooks, WAL from seq %d", n, l.walDeleted(), l.hooks(), l.walFirst)
		}
		acks := make([]acked, 0, 30)
		for _, p := range f.payloads {
			var e envelope.Envelope
			if _, err := envelope.Decode(p, &e); err != nil {
				t.Fatal(err)
			}
			acks = append(acks, acked{id: e.ID, hash: sha256.Sum256(e.Body)})
		}
		if v := compare(acks, l); v.lost+v.mismatched+v.duplicated != 0 {
			t.Fatalf("%+v: want every hook once", v)
		}
	})
	t.Run("a hole in the middle of the WAL files", func(t *testing.T) {
		f := newLogFixture(t)
		second := uint64(2)
		f.removeWAL(t, func(num, _, _ uint64) bool { return num == second })
		l, err := readLog(f.segDir, f.walDir, true, true)
		if err != nil {
			t.Fatal(err)
		}
		wantProblems(t, l.problems, "WAL files "+wal.FileName(second)+".."+wal.FileName(second)+" are gone while")
	})
	t.Run("a WAL file with an unsealed hook deleted", func(t *testing.T) {
		f := newLogFixture(t)
		cut := f.fileOf[21] // the file holding the first hook no segment holds
		f.removeWAL(t, func(num, _, _ uint64) bool { return num <= cut })
		l, err := readLog(f.segDir, f.walDir, true, true)
		if err != nil {
			t.Fatal(err)
		}
		next := f.files[cut][1] + 1
		wantProblems(t, l.problems, fmt.Sprintf("seqs 21..%d are in no segment and in no WAL file on disk: the segments end at seq 20, the WAL's first hook is seq %d", next-1, next))
	})
	t.Run("a sealed copy that differs from the WAL's", func(t *testing.T) {
		f := newLogFixture(t)
		if err := os.Remove(filepath.Join(f.segDir, segment.FileName(11, 20))); err != nil {
			t.Fatal(err)
		}
		f.seal(t, 11, 20, func(seq uint64, p []byte) []byte {
			if seq != 15 {
				return p
			}
			var e envelope.Envelope
			if _, err := envelope.Decode(p, &e); err != nil {
				t.Fatal(err)
			}
			e.Body = append(e.Body, '!')
			return e.AppendTo(nil)
		})
		l, err := readLog(f.segDir, f.walDir, true, true)
		if err != nil {
			t.Fatal(err)
		}
		wantProblems(t, l.problems, "seq 15 differs between its two copies")
		var e envelope.Envelope
		if _, err := envelope.Decode(f.payloads[14], &e); err != nil {
			t.Fatal(err)
		}
		if v := compare([]acked{{id: e.ID, hash: sha256.Sum256(e.Body)}}, l); v.duplicated != 1 {
			t.Fatalf("%+v: want the hook counted twice", v)
		}
	})
	t.Run("a flipped byte in a segment", func(t *testing.T) {
		f := newLogFixture(t)
		path := filepath.Join(f.segDir, segment.FileName(1, 10))
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		data[100] ^= 0x40 // inside the first block
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		l, err := readLog(f.segDir, f.walDir, true, true)
		if err != nil {
			t.Fatal(err)
		}
		wantProblems(t, l.seg.problems, segment.FileName(1, 10))
	})
	t.Run("a partial segment", func(t *testing.T) {
		f := newLogFixture(t)
		if err := os.WriteFile(filepath.Join(f.segDir, fmt.Sprintf("%020d.partial", 21)), []byte("open"), 0o644); err != nil {
			t.Fatal(err)
		}
		l, err := readLog(f.segDir, f.walDir, false, false)
		if err != nil {
			t.Fatal(err)
		}
		wantProblems(t, append(l.seg.problems, l.problems...)) // after a SIGKILL: the open segment
		l, err = readLog(f.segDir, f.walDir, true, true)
		if err != nil {
			t.Fatal(err)
		}
		wantProblems(t, l.seg.problems, "a partial segment is left after a clean stop")
	})
	t.Run("a torn WAL tail", func(t *testing.T) {
		f := newLogFixture(t)
		last := f.fileOf[30]
		path := filepath.Join(f.walDir, wal.FileName(last))
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(path, fi.Size()-10); err != nil {
			t.Fatal(err)
		}
		l, err := readLog(f.segDir, f.walDir, false, false)
		if _, torn := errors.AsType[*wal.CorruptError](err); !torn {
			t.Fatalf("err %v, want a *wal.CorruptError", err)
		}
		wantProblems(t, append(l.seg.problems, l.problems...))
		if l.hooks() != 29 || l.walLast != 29 {
			t.Fatalf("%d hooks, the WAL up to seq %d: want the 29 before the torn one", l.hooks(), l.walLast)
		}
	})
}
