package segment_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/internal/vfsutil"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/segment"
)

// fastScrub is a scrub rate that reads the test's segments in moments.
const fastScrub = 1 << 30

// memRepairer restores segments from copies in memory, with the write
// discipline of the archive's: a temporary file, synced, renamed over the
// damaged one, the directory synced.
type memRepairer struct {
	fs       vfs.FS
	mu       sync.Mutex
	copies   map[string][]byte
	restores int
	fail     error
}

func (m *memRepairer) Restore(_ context.Context, e *meta.SegmentEntry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	data, ok := m.copies[e.Name]
	if !ok {
		return errors.New("no copy of " + e.Name)
	}
	tmp := m.fs.PathJoin(segDir, e.Name+".restoring")
	f, err := m.fs.Create(tmp, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	if _, err := f.Write(append([]byte(nil), data...)); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := m.fs.Rename(tmp, m.fs.PathJoin(segDir, e.Name)); err != nil {
		return err
	}
	m.restores++
	return vfsutil.SyncDir(m.fs, segDir)
}

// scrubFixture seals hooks into segments on a MemFS, marks them archived
// when archived is true, and returns the file system, the hooks, the
// catalogue and a copy of every segment file by name.
func scrubFixture(t *testing.T, archived bool) (vfs.FS, []envelope.Envelope, []meta.SegmentEntry, map[string][]byte) {
	t.Helper()
	fs, hooks, entries := sealedFixture(t, 400, 1500)
	copies := map[string][]byte{}
	for _, e := range entries {
		copies[e.Name] = readMemFile(t, fs, fs.PathJoin(segDir, e.Name))
	}
	if archived {
		m, err := meta.Open(meta.Options{Dir: "data/meta", FS: fs})
		if err != nil {
			t.Fatal(err)
		}
		for i := range entries {
			if _, _, err := m.UpdateSegment(entries[i].LastSeq, func(e *meta.SegmentEntry) { e.Archived = true }); err != nil {
				t.Fatal(err)
			}
			entries[i].Archived = true
		}
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return fs, hooks, entries, copies
}

// damage rewrites the file of segment e with fn applied to its bytes.
func damage(t *testing.T, fs vfs.FS, e meta.SegmentEntry, fn func([]byte) []byte) {
	t.Helper()
	path := fs.PathJoin(segDir, e.Name)
	writeSynced(t, fs, path, fn(readMemFile(t, fs, path)))
}

// waitDamaged waits until the store reports n damaged segments.
func waitDamaged(t *testing.T, s *segment.Store, n int) []segment.Damage {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		d := s.Damaged()
		if len(d) == n {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("damaged segments: %v, want %d", d, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// hooksIn returns the hooks with first <= seq <= last.
func hooksIn(hooks []envelope.Envelope, first, last uint64) []envelope.Envelope {
	var out []envelope.Envelope
	for _, h := range hooks {
		if h.Seq >= first && h.Seq <= last {
			out = append(out, h)
		}
	}
	return out
}

// TestScrubFindsFlippedBlock: a byte flipped in a block passes boot (the
// footer and index are whole); the scrubber finds it in its first pass
// and reports the block's seqs, fetches of those hooks answer the
// CorruptError naming the file, and the segment's other hooks still read.
func TestScrubFindsFlippedBlock(t *testing.T) {
	fs, hooks, entries, _ := scrubFixture(t, false)
	e := entries[0]
	f, err := segment.OpenFile(fs, fs.PathJoin(segDir, e.Name))
	if err != nil {
		t.Fatal(err)
	}
	bad := f.Index[1]
	f.Close()
	damage(t, fs, e, func(b []byte) []byte { b[bad.Offset+int64(bad.CompLen)/2] ^= 0x01; return b })

	// Boot alone (no scrubber: it could find the block before the look)
	// checks footer and index only.
	n := openNode(t, fs, nodeOptions{maxBytes: 64 << 10, maxAge: time.Hour, blockSize: 4 << 10})
	if d := n.store.Damaged(); len(d) != 0 {
		t.Fatalf("boot reported %v; a block's damage is the scrubber's to find", d)
	}
	n.close()
	passes := counter("ankusa_segment_scrub_passes_total")
	n = openNode(t, fs, nodeOptions{maxBytes: 64 << 10, maxAge: time.Hour, blockSize: 4 << 10, scrubRate: fastScrub})
	defer n.close()
	d := waitDamaged(t, n.store, 1)[0]
	last := bad.FirstSeq + uint64(bad.Count) - 1
	if d.Name != e.Name || d.FirstSeq != bad.FirstSeq || d.LastSeq != last || d.Archived || !strings.Contains(d.Reason, "block 1") {
		t.Fatalf("damage %+v, want %s seqs %d..%d in block 1, not archived", d, e.Name, bad.FirstSeq, last)
	}
	if !strings.Contains(d.String(), "no archived copy") {
		t.Fatalf("damage line %q does not say there is no copy", d.String())
	}
	for _, h := range hooksIn(hooks, bad.FirstSeq, last) {
		_, err := n.store.Fetch(h.ID)
		var ce *segment.CorruptError
		if !errors.As(err, &ce) || !strings.HasSuffix(ce.File, e.Name) {
			t.Fatalf("fetch of seq %d: %v, want a CorruptError naming %s", h.Seq, err, e.Name)
		}
	}
	checkFetch(t, n.store, &hooks[0])
	// Passes go on, and the damage stays reported.
	deadline := time.Now().Add(10 * time.Second)
	for counter("ankusa_segment_scrub_passes_total") < passes+2 {
		if time.Now().After(deadline) {
			t.Fatal("the scrubber does not go on with its passes")
		}
		time.Sleep(10 * time.Millisecond)
	}
	waitDamaged(t, n.store, 1)
}

// TestScrubRestoresArchivedSegment: the same flipped block in an archived
// segment is restored from the copy within one pass; the file is the
// archived bytes again and every hook reads.
func TestScrubRestoresArchivedSegment(t *testing.T) {
	fs, hooks, entries, copies := scrubFixture(t, true)
	e := entries[0]
	damage(t, fs, e, func(b []byte) []byte { b[100] ^= 0x80; return b })
	rep := &memRepairer{fs: fs, copies: copies}
	restored := counter("ankusa_segment_restored_total")
	n := openNode(t, fs, nodeOptions{maxBytes: 64 << 10, maxAge: time.Hour, blockSize: 4 << 10, scrubRate: fastScrub, repair: rep})
	defer n.close()
	deadline := time.Now().Add(10 * time.Second)
	for counter("ankusa_segment_restored_total") == restored {
		if time.Now().After(deadline) {
			t.Fatalf("not restored; damaged: %v", n.store.Damaged())
		}
		time.Sleep(5 * time.Millisecond)
	}
	waitDamaged(t, n.store, 0)
	if got := readMemFile(t, fs, fs.PathJoin(segDir, e.Name)); !bytes.Equal(got, copies[e.Name]) {
		t.Fatal("the restored file is not the archived copy")
	}
	for i := range hooksIn(hooks, e.FirstSeq, e.LastSeq) {
		checkFetch(t, n.store, &hooks[i])
	}
}

// TestBootReportsDamagedFooterAndIndex: a flipped byte in a footer, in an
// index, and a file cut short are found at boot (the node opens), each
// reported with the whole segment's seqs; fetches answer a CorruptError
// naming the file, or, when the segment is archived and the archive
// readable, read the archived copy until the scrubber restores it.
func TestBootReportsDamagedFooterAndIndex(t *testing.T) {
	cases := []struct {
		name   string
		fn     func([]byte) []byte
		reason string
	}{
		{"footer", func(b []byte) []byte { b[len(b)-112+20] ^= 0x04; return b }, "footer checksum mismatch"},
		{"index", func(b []byte) []byte { b[len(b)-112-30] ^= 0x04; return b }, "block index checksum mismatch"},
		{"truncated", func(b []byte) []byte { return b[:len(b)-7] }, "footer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, archived := range []bool{false, true} {
				fs, hooks, entries, copies := scrubFixture(t, archived)
				e := entries[1]
				damage(t, fs, e, c.fn)
				o := nodeOptions{maxBytes: 64 << 10, maxAge: time.Hour, blockSize: 4 << 10}
				if archived {
					o.remote = &memRemote{objects: copies}
				}
				n := openNode(t, fs, o)
				d := n.store.Damaged()
				if len(d) != 1 || d[0].FirstSeq != e.FirstSeq || d[0].LastSeq != e.LastSeq || !strings.Contains(d[0].Reason, c.reason) || d[0].Archived != archived {
					n.close()
					t.Fatalf("archived=%v: damage %+v, want %s seqs %d..%d: %s", archived, d, e.Name, e.FirstSeq, e.LastSeq, c.reason)
				}
				in := hooksIn(hooks, e.FirstSeq, e.LastSeq)
				_, err := n.store.Fetch(in[0].ID)
				if archived {
					checkFetch(t, n.store, &in[len(in)-1])
				} else {
					var ce *segment.CorruptError
					if !errors.As(err, &ce) || !strings.HasSuffix(ce.File, e.Name) {
						t.Errorf("fetch: %v, want a CorruptError naming %s", err, e.Name)
					}
				}
				checkFetch(t, n.store, &hooks[0]) // another segment
				n.close()
			}
		})
	}
}

// TestScrubRate: the scrubber keeps to its rate: a pass over the local
// segments takes about their size divided by the rate.
func TestScrubRate(t *testing.T) {
	fs, _, entries, _ := scrubFixture(t, false)
	var total int64
	for _, e := range entries {
		total += e.Size
	}
	rate := total * 4 // a pass in about 250ms
	passes := counter("ankusa_segment_scrub_passes_total")
	scrubbed := counter("ankusa_segment_scrub_bytes_total")
	began := time.Now()
	n := openNode(t, fs, nodeOptions{maxBytes: 64 << 10, maxAge: time.Hour, blockSize: 4 << 10, scrubRate: rate})
	defer n.close()
	deadline := time.Now().Add(10 * time.Second)
	for counter("ankusa_segment_scrub_passes_total") == passes {
		if time.Now().After(deadline) {
			t.Fatal("no pass finished")
		}
		time.Sleep(5 * time.Millisecond)
	}
	took := time.Since(began)
	if took < 200*time.Millisecond {
		t.Fatalf("a pass over %d bytes at %d bytes/s took %v, want about 250ms", total, rate, took)
	}
	if got := counter("ankusa_segment_scrub_bytes_total") - scrubbed; got < uint64(total) {
		t.Fatalf("scrubbed %d bytes in a pass, want the %d of the segments", got, total)
	}
}

// TestScrubRestoreFailureRetried: a restore that fails leaves the damage
// reported and is tried again; once the archive answers, the segment is
// restored.
func TestScrubRestoreFailureRetried(t *testing.T) {
	fs, _, entries, copies := scrubFixture(t, true)
	e := entries[0]
	damage(t, fs, e, func(b []byte) []byte { b[len(b)-1] ^= 0x01; return b })
	rep := &memRepairer{fs: fs, copies: copies, fail: errors.New("archive unreachable")}
	failures := counter("ankusa_segment_restore_failures_total")
	n := openNode(t, fs, nodeOptions{maxBytes: 64 << 10, maxAge: time.Hour, blockSize: 4 << 10, scrubRate: fastScrub, repair: rep})
	defer n.close()
	deadline := time.Now().Add(10 * time.Second)
	for counter("ankusa_segment_restore_failures_total") == failures {
		if time.Now().After(deadline) {
			t.Fatal("no restore was tried")
		}
		time.Sleep(5 * time.Millisecond)
	}
	waitDamaged(t, n.store, 1)
	rep.mu.Lock()
	rep.fail = nil
	rep.mu.Unlock()
	waitDamaged(t, n.store, 0)
	if got := readMemFile(t, fs, fs.PathJoin(segDir, e.Name)); !bytes.Equal(got, copies[e.Name]) {
		t.Fatal("the restored file is not the archived copy")
	}
}

// TestBootRemovesUnfinishedRestore: a .restoring file a crash left in the
// segment directory is removed at boot; the segment it was for is
// untouched.
func TestBootRemovesUnfinishedRestore(t *testing.T) {
	fs, hooks, entries, copies := scrubFixture(t, true)
	e := entries[0]
	left := fs.PathJoin(segDir, segment.RestoringName(e.Name))
	writeSynced(t, fs, left, copies[e.Name][:100])
	n := openNode(t, fs, nodeOptions{maxBytes: 64 << 10, maxAge: time.Hour, blockSize: 4 << 10})
	defer n.close()
	if _, err := fs.Stat(left); err == nil {
		t.Fatalf("%s is still there after boot", left)
	}
	checkFetch(t, n.store, &hooks[0])
}

// TestCheckFile: CheckFile says a whole segment is whole, and describes a
// flipped block by its seqs and a damaged footer by the segment's.
func TestCheckFile(t *testing.T) {
	fs, _, entries, _ := scrubFixture(t, false)
	dec := segment.NewDecoder()
	e0, e1 := entries[0], entries[1]
	if d, bad, err := segment.CheckFile(fs, fs.PathJoin(segDir, e0.Name), dec); err != nil || bad || d.FirstSeq != e0.FirstSeq || d.LastSeq != e0.LastSeq {
		t.Fatalf("whole segment: %+v %v %v", d, bad, err)
	}
	f, err := segment.OpenFile(fs, fs.PathJoin(segDir, e0.Name))
	if err != nil {
		t.Fatal(err)
	}
	b := f.Index[2]
	f.Close()
	damage(t, fs, e0, func(d []byte) []byte { d[b.Offset+3] ^= 0x01; return d })
	d, bad, err := segment.CheckFile(fs, fs.PathJoin(segDir, e0.Name), dec)
	if err != nil || !bad || d.FirstSeq != b.FirstSeq || d.LastSeq != b.FirstSeq+uint64(b.Count)-1 || !strings.Contains(d.Reason, "block 2") {
		t.Fatalf("flipped block 2: %+v %v %v", d, bad, err)
	}
	damage(t, fs, e1, func(d []byte) []byte { d[len(d)-50] ^= 0x01; return d })
	d, bad, err = segment.CheckFile(fs, fs.PathJoin(segDir, e1.Name), dec)
	if err != nil || !bad || d.FirstSeq != e1.FirstSeq || d.LastSeq != e1.LastSeq || !strings.Contains(d.Reason, "footer") {
		t.Fatalf("damaged footer: %+v %v %v", d, bad, err)
	}
	if _, bad, err := segment.CheckFile(fs, fs.PathJoin(segDir, "00000000000000000001-00000000000000000002.seg"), dec); err != nil || !bad {
		t.Fatalf("missing file: %v %v, want damaged (missing)", bad, err)
	}
}
