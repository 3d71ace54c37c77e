package wal_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/wal"
)

// TestDamageBelowAckedBoundsRefused: a crash tears at most the final
// batch, which no synced record outside the log covers. Damage at the tail
// of the last file that would cut hooks the clean-close record or the
// dispatch checkpoint says were acknowledged refuses to start, naming the
// file, the offset and how many would be lost; -wal-recovery=truncate
// still cuts; hooks the catalogue holds are not lost by a cut; and a tear
// above every bound (a kill) is cut as before.
func TestDamageBelowAckedBoundsRefused(t *testing.T) {
	const n = 40
	fs := vfs.NewMem()
	m := &testMeta{}
	w := openWAL(t, wal.Options{FS: fs, Now: newClock(startMs, time.Millisecond).Now, Meta: m})
	for i := 0; i < n; i++ {
		mustCommit(t, w, hook{tenant: fmt.Sprintf("t%d", i%3), tag: fmt.Sprintf("h%d", i)})
	}
	closeWAL(t, w) // the clean-close record: seq n
	if m.closed != n {
		t.Fatalf("clean close recorded seq %d, want %d", m.closed, n)
	}
	recs := mustReadLog(t, fs, dir)
	last := recs[len(recs)-1]
	path := fs.PathJoin(dir, fs.PathBase(last.File))
	whole := readFile(t, fs, path)
	flipped := append([]byte(nil), whole...)
	flipped[last.Offset+int64(last.Size)/2] ^= 0x40
	mid := recs[len(recs)/2]
	cases := []struct {
		name  string
		data  []byte
		meta  testMeta
		lost  int    // acknowledged hooks a cut would lose; 0: the cut is allowed
		bound string // the record that says so
	}{
		{"byte flipped in the last record after a clean close", flipped, testMeta{closed: n}, 1, "clean-close record"},
		{"last file cut to half after a clean close", whole[:mid.Offset+3], testMeta{closed: n}, n - int(mid.Seq) + 1, "clean-close record"},
		{"last file cut to 10 bytes after a clean close", whole[:10], testMeta{closed: n}, n, "clean-close record"},
		{"the dispatch checkpoint above the cut", flipped, testMeta{closed: 3, dispSeq: n}, 1, "dispatch checkpoint"},
		{"a kill's torn final batch, every bound below it", flipped, testMeta{closed: 3, dispSeq: n - 1}, 0, ""},
		{"the cut hooks are in segments", whole[:10], testMeta{closed: n, catSeq: n}, 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mem := copyFS(t, fs, dir)
			writeFile(t, mem, path, c.data)
			meta := c.meta
			meta.ckptSeq = meta.closed // a clean close writes both
			w, err := wal.Open(wal.Options{FS: mem, Dir: dir, Node: testNode, Meta: &meta, Logf: func(string, ...any) {}})
			if c.lost == 0 {
				if err != nil {
					t.Fatalf("Open: %v, want the tail cut", err)
				}
				if w.LossAccepted() {
					t.Error("LossAccepted after cutting a torn tail, which nothing acknowledged")
				}
				closeWAL(t, w)
				return
			}
			if err == nil {
				closeWAL(t, w)
			}
			var ce *wal.CorruptError
			if !errors.As(err, &ce) || ce.File != path || !strings.Contains(err.Error(), fmt.Sprintf("would lose %d acknowledged hooks", c.lost)) || !strings.Contains(err.Error(), c.bound) {
				t.Fatalf("Open: %v; want a refusal naming %s, an offset, %d acknowledged hooks lost and the %s", err, path, c.lost, c.bound)
			}
			if after := readFile(t, mem, path); string(after) != string(c.data) {
				t.Fatal("a refused recovery changed the file")
			}
			// -wal-recovery=truncate cuts anyway, and numbering resumes
			// above what was acknowledged.
			meta = c.meta
			meta.ckptSeq = meta.closed
			w, err = wal.Open(wal.Options{FS: mem, Dir: dir, Node: testNode, Meta: &meta, Recovery: wal.RecoverTruncate, Logf: func(string, ...any) {}})
			if err != nil {
				t.Fatalf("Open with truncate: %v", err)
			}
			if !w.LossAccepted() {
				t.Error("LossAccepted false after -wal-recovery=truncate cut acknowledged hooks")
			}
			a, err := commit(w, hook{tenant: "t0", tag: "after"})
			if err != nil || a.Seq <= n {
				t.Fatalf("commit after the truncate: seq %d, %v; want above %d", a.Seq, err, n)
			}
			closeWAL(t, w)
		})
	}
}
