package archive

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/segment"
)

// replayBase is the receipt time of the first hook of the replay archive;
// the hooks cross midnight, so the segments sit under two days.
var replayBase = time.Date(2026, 11, 29, 22, 0, 0, 0, time.UTC)

// replayHook is one hook of the replay archive and the node that sealed it.
type replayHook struct {
	node string
	env  envelope.Envelope
}

// replayArchive is an archive of two nodes' segments in a Dir.
type replayArchive struct {
	root  string // the Dir's directory
	dir   *Dir
	l     Layout
	hooks []replayHook           // by node name, then seq
	keys  map[string][][2]string // .seg and .cat keys of each node's segments
}

// replayEnvelope is hook seq of node ord: tenants, sources and bodies
// (text and binary) vary with seq; seq 4 of node 1 is quarantined.
func replayEnvelope(ord uint16, seq uint64, at time.Time) envelope.Envelope {
	tenants := []string{"acme", "globex", "initech"}
	sources := []string{"stripe", "github"}
	body := fmt.Appendf(nil, `{"node":%d,"seq":%d}`, ord, seq)
	if seq%3 == 0 {
		body = []byte{0xff, 0x00, byte(seq), byte(ord), 0xfe}
	}
	e := envelope.Envelope{
		Seq: seq, ID: envelope.MakeID(uint64(at.UnixMilli()), ord, seq), TenantOrdinal: uint32(seq % 3),
		TenantID: tenants[seq%3], SourceID: sources[seq%2], ReceivedAt: at.UnixNano(),
		RouteParams: []envelope.Param{{Key: "app_id", Value: fmt.Sprint("a", seq)}},
		Headers: []envelope.Header{
			{Name: "Content-Type", Value: "application/json"},
			{Name: "X-Seq", Value: fmt.Sprint(seq)},
			{Name: "X-Dup", Value: "1"}, {Name: "X-Dup", Value: "2"},
		},
		Body:         body,
		Verification: envelope.Verification{Verifier: "stripe", Verified: seq%2 == 0},
		DedupeKey:    fmt.Sprintf("k%d-%d", ord, seq),
	}
	if ord == 1 && seq == 4 {
		e.Verification = envelope.Verification{Verifier: "stripe", Flagged: true, Quarantined: true, Failure: envelope.FailMismatch}
	}
	return e
}

// newReplayArchive seals and archives, under prefix "arch":
//   - edge-a: seqs 1..6 (22:00 to 00:30, key day 29th) and 7..10 (key day
//     30th), one hook every 30 minutes from replayBase;
//   - edge-b: seqs 1..6, 15 minutes after edge-a's, in one segment.
//
// Blocks are small, so every segment has several.
func newReplayArchive(t *testing.T) *replayArchive {
	t.Helper()
	a := &replayArchive{root: filepath.Join(t.TempDir(), "archive"), l: Layout{Prefix: "arch"}, keys: map[string][][2]string{}}
	var err error
	if a.dir, err = NewDir(a.root); err != nil {
		t.Fatal(err)
	}
	at := func(offset time.Duration, seq uint64) time.Time {
		return replayBase.Add(offset + time.Duration(seq-1)*30*time.Minute)
	}
	for _, n := range []struct {
		name   string
		ord    uint16
		offset time.Duration
		segs   [][2]uint64
	}{
		{"edge-a", 1, 0, [][2]uint64{{1, 6}, {7, 10}}},
		{"edge-b", 2, 15 * time.Minute, [][2]uint64{{1, 6}}},
	} {
		for _, s := range n.segs {
			var envs []envelope.Envelope
			for seq := s[0]; seq <= s[1]; seq++ {
				envs = append(envs, replayEnvelope(n.ord, seq, at(n.offset, seq)))
			}
			seg, cat := replayPutSegment(t, a.dir, a.l, n.name, envs, nil)
			a.keys[n.name] = append(a.keys[n.name], [2]string{seg, cat})
			for _, e := range envs {
				a.hooks = append(a.hooks, replayHook{n.name, e})
			}
		}
	}
	return a
}

// replayPutSegment writes envs into a segment file and puts it and its
// catalogue object into b, as the uploader does; it returns their keys.
// damage, if not nil, changes the file's bytes before they are archived.
func replayPutSegment(t *testing.T, b Backend, l Layout, node string, envs []envelope.Envelope, damage func([]byte)) (segKey, catKey string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "seg")
	w, err := segment.Create(vfs.Default, path, segment.NewEncoder(), 300)
	if err != nil {
		t.Fatal(err)
	}
	for i := range envs {
		if err := w.Append(envs[i].AppendTo(nil)); err != nil {
			t.Fatal(err)
		}
	}
	foot, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if foot.Blocks < 2 {
		t.Fatalf("segment of %d hooks has %d block; the test wants several", len(envs), foot.Blocks)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if damage != nil {
		damage(data)
	}
	e := meta.SegmentEntry{
		Name: segment.FileName(foot.FirstSeq, foot.LastSeq), Size: int64(len(data)),
		FirstSeq: foot.FirstSeq, LastSeq: foot.LastSeq, FirstID: foot.FirstID, LastID: foot.LastID,
		MinReceivedAt: foot.MinReceivedAt, MaxReceivedAt: foot.MaxReceivedAt,
		Count: foot.Count, RawBytes: foot.RawBytes, SealedAt: foot.MaxReceivedAt + 1,
	}
	segKey, catKey = l.SegmentKey(node, &e), l.CatalogueKey(node, &e)
	replayPut(t, b, segKey, data)
	cat := catalogueOf(node, &e, replaySum(data))
	replayPut(t, b, catKey, cat.Marshal())
	return segKey, catKey
}

func replaySum(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

func replayPut(t *testing.T, b Backend, key string, data []byte) {
	t.Helper()
	if err := b.Put(context.Background(), key, bytes.NewReader(data), int64(len(data)), replaySum(data)); err != nil {
		t.Fatal(err)
	}
}

// where returns the hooks of the archive keep selects, in archive order.
func (a *replayArchive) where(keep func(h replayHook) bool) []replayHook {
	var out []replayHook
	for _, h := range a.hooks {
		if keep(h) {
			out = append(out, h)
		}
	}
	return out
}

// hook returns hook seq of node.
func (a *replayArchive) hook(t *testing.T, node string, seq uint64) replayHook {
	for _, h := range a.hooks {
		if h.node == node && h.env.Seq == seq {
			return h
		}
	}
	t.Fatalf("no hook %s/%d", node, seq)
	return replayHook{}
}

// replayAll replays b with f and returns the hooks fn saw.
func replayAll(t *testing.T, b Backend, l Layout, f Filter) ([]*envelope.Envelope, Stats, error) {
	t.Helper()
	var got []*envelope.Envelope
	st, err := Replay(context.Background(), b, l, f, func(e *envelope.Envelope) error {
		got = append(got, e)
		return nil
	}, nil)
	return got, st, err
}

// checkHooks requires got to be want, byte for byte in the binary form
// (ids, seqs, headers, body, flags), and in order.
func checkHooks(t *testing.T, got []*envelope.Envelope, want []replayHook) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("replayed %d hooks, want %d:\ngot  %s\nwant %s", len(got), len(want), hookNames(got, nil), hookNames(nil, want))
	}
	for i := range got {
		if g, w := got[i].AppendTo(nil), want[i].env.AppendTo(nil); !bytes.Equal(g, w) {
			t.Fatalf("hook %d is %s seq %d, want %s seq %d (or its bytes differ):\ngot  %s\nwant %s",
				i, got[i].ID, got[i].Seq, want[i].node, want[i].env.Seq, got[i].AppendJSON(nil), want[i].env.AppendJSON(nil))
		}
	}
}

func hookNames(got []*envelope.Envelope, want []replayHook) string {
	var b strings.Builder
	for _, e := range got {
		fmt.Fprintf(&b, "%d/%d ", e.ID.Node(), e.Seq)
	}
	for _, h := range want {
		fmt.Fprintf(&b, "%d/%d ", h.env.ID.Node(), h.env.Seq)
	}
	return b.String()
}

// TestReplayFilters: every filter returns exactly the hooks it selects,
// byte-identical, node by node in seq order; window edges are exact
// (Since inclusive, Until exclusive) and the window keeps segments that
// cannot hold a hook from being read at all.
func TestReplayFilters(t *testing.T) {
	a := newReplayArchive(t)
	b6 := a.hook(t, "edge-b", 6).env.ReceivedAt // 00:45 on the 30th
	a7 := a.hook(t, "edge-a", 7).env.ReceivedAt // 01:00 on the 30th, first of edge-a's 2nd segment
	notQuarantined := func(h replayHook) bool { return !h.env.Verification.Quarantined }
	for _, tc := range []struct {
		name     string
		f        Filter
		keep     func(h replayHook) bool
		n        int // len(want), stated so a broken keep cannot pass
		segments int
	}{
		{"everything", Filter{}, notQuarantined, 15, 3},
		{"quarantined too", Filter{Quarantined: true}, func(replayHook) bool { return true }, 16, 3},
		{"tenant", Filter{Tenant: "acme"}, func(h replayHook) bool { return h.env.TenantID == "acme" }, 5, 3},
		{"source", Filter{Source: "github"}, func(h replayHook) bool { return h.env.SourceID == "github" && notQuarantined(h) }, 8, 3},
		{"tenant and source", Filter{Tenant: "globex", Source: "stripe"}, func(h replayHook) bool {
			return h.env.TenantID == "globex" && h.env.SourceID == "stripe" && notQuarantined(h)
		}, 2, 3},
		{"unknown tenant", Filter{Tenant: "nobody"}, nil, 0, 3},
		{"node", Filter{Node: "edge-b"}, func(h replayHook) bool { return h.node == "edge-b" }, 6, 1},
		{"unknown node", Filter{Node: "edge"}, nil, 0, 0},
		{"since is inclusive", Filter{Since: time.Unix(0, b6)}, func(h replayHook) bool {
			return h.env.ReceivedAt >= b6 && notQuarantined(h)
		}, 5, 2},
		{"until is exclusive", Filter{Until: time.Unix(0, a7)}, func(h replayHook) bool {
			return h.env.ReceivedAt < a7 && notQuarantined(h)
		}, 11, 2},
		{"window", Filter{Since: time.Unix(0, b6), Until: time.Unix(0, a7+1)}, func(h replayHook) bool {
			return h.env.ReceivedAt >= b6 && h.env.ReceivedAt <= a7
		}, 2, 2},
		{"empty window", Filter{Since: time.Unix(0, a7), Until: time.Unix(0, a7)}, nil, 0, 0},
		{"before everything", Filter{Until: replayBase}, nil, 0, 0},
		{"after everything", Filter{Since: replayBase.Add(24 * time.Hour)}, nil, 0, 0},
		{"window before year 1678 and after 2262", Filter{Since: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), Until: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)}, notQuarantined, 15, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want []replayHook
			if tc.keep != nil {
				want = a.where(tc.keep)
			}
			if len(want) != tc.n {
				t.Fatalf("the test's own selection has %d hooks, want %d", len(want), tc.n)
			}
			got, st, err := replayAll(t, a.dir, a.l, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			checkHooks(t, got, want)
			var bodies int64
			for _, h := range want {
				bodies += int64(len(h.env.Body))
			}
			if st.Hooks != int64(len(want)) || st.Bytes != bodies || st.Segments != tc.segments || st.Erased != 0 || len(st.Uncatalogued) != 0 {
				t.Fatalf("stats %+v, want %d hooks, %d bytes, %d segments", st, len(want), bodies, tc.segments)
			}
		})
	}
}

// TestReplayProgress: Start gets the selected segments' total size and
// the Advances add up to it.
func TestReplayProgress(t *testing.T) {
	a := newReplayArchive(t)
	var p countingProgress
	_, err := Replay(context.Background(), a.dir, a.l, Filter{}, func(*envelope.Envelope) error { return nil }, &p)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	err = a.dir.List(context.Background(), a.l.SegmentsPrefix(), func(o Object) error {
		if strings.HasSuffix(o.Key, ".seg") {
			total += o.Size
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if p.starts != 1 || p.segments != 3 || p.total != total || p.advanced != total {
		t.Fatalf("progress %+v, want one start with 3 segments of %d bytes, all advanced", p, total)
	}
}

type countingProgress struct {
	starts, segments int
	total, advanced  int64
}

func (p *countingProgress) Start(n int, bytes int64) { p.starts++; p.segments, p.total = n, bytes }
func (p *countingProgress) Advance(n int64)          { p.advanced += n }

// TestReplayTombstones: an erased tenant's hooks received at or before
// erased_at are skipped and counted; later ones (a new tenant of the same
// name) are replayed. A tombstone that does not parse stops the replay.
func TestReplayTombstones(t *testing.T) {
	a := newReplayArchive(t)
	erasedAt := a.hook(t, "edge-a", 6).env.ReceivedAt // an acme hook: erased, to the nanosecond
	replayPut(t, a.dir, a.l.TombstoneKey("acme"),
		fmt.Appendf(nil, `{"tenant":"acme","erased_at":%q}`, time.Unix(0, erasedAt).UTC().Format(time.RFC3339Nano)))
	got, st, err := replayAll(t, a.dir, a.l, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	erased := a.where(func(h replayHook) bool {
		return h.env.TenantID == "acme" && h.env.ReceivedAt <= erasedAt
	})
	if len(erased) != 3 || erased[1].env.ReceivedAt != erasedAt { // edge-a 3 and 6, edge-b 3
		t.Fatalf("the test's own selection: %d erased hooks", len(erased))
	}
	checkHooks(t, got, a.where(func(h replayHook) bool {
		return !h.env.Verification.Quarantined && !(h.env.TenantID == "acme" && h.env.ReceivedAt <= erasedAt)
	}))
	if st.Erased != int64(len(erased)) {
		t.Fatalf("%d hooks counted erased, want %d", st.Erased, len(erased))
	}
	if _, st, _ := replayAll(t, a.dir, a.l, Filter{Tenant: "globex"}); st.Erased != 0 {
		t.Fatalf("replaying globex counts %d erased hooks, want 0 (only hooks the filter keeps count)", st.Erased)
	}

	replayPut(t, a.dir, a.l.TombstoneKey("globex"), []byte(`{"tenant":"globex","erased_at":"yesterday"}`))
	got, _, err = replayAll(t, a.dir, a.l, Filter{})
	if err == nil || !strings.Contains(err.Error(), a.l.TombstoneKey("globex")) || len(got) != 0 {
		t.Fatalf("malformed tombstone: %d hooks, err %v; want none and an error naming %s", len(got), err, a.l.TombstoneKey("globex"))
	}
}

// TestReplayDamage: whatever is wrong with an object, the replay stops
// with an error naming its key, before or instead of passing on hooks it
// cannot vouch for.
func TestReplayDamage(t *testing.T) {
	flip := func(off func(size int) int) func(t *testing.T, a *replayArchive, key string) {
		return func(t *testing.T, a *replayArchive, key string) {
			path := filepath.Join(a.root, filepath.FromSlash(key))
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			data[off(len(data))] ^= 0x20
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	truncate := func(t *testing.T, a *replayArchive, key string) {
		path := filepath.Join(a.root, filepath.FromSlash(key))
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(path, st.Size()-7); err != nil {
			t.Fatal(err)
		}
	}
	rewrite := func(data string) func(t *testing.T, a *replayArchive, key string) {
		return func(t *testing.T, a *replayArchive, key string) {
			if err := os.WriteFile(filepath.Join(a.root, filepath.FromSlash(key)), []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	editCatalogue := func(edit func(c *Catalogue)) func(t *testing.T, a *replayArchive, key string) {
		return func(t *testing.T, a *replayArchive, key string) {
			path := filepath.Join(a.root, filepath.FromSlash(key))
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			c, err := ParseCatalogue(key, data)
			if err != nil {
				t.Fatal(err)
			}
			edit(&c)
			if err := os.WriteFile(path, c.Marshal(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	remove := func(t *testing.T, a *replayArchive, key string) {
		if err := os.Remove(filepath.Join(a.root, filepath.FromSlash(key))); err != nil {
			t.Fatal(err)
		}
	}
	const seg, cat = 0, 1
	for _, tc := range []struct {
		name   string
		object int // of edge-b's segment
		damage func(t *testing.T, a *replayArchive, key string)
		says   string
	}{
		{"flipped byte in the segment", seg, flip(func(n int) int { return n / 2 }), "sha256"},
		{"flipped byte in the footer", seg, flip(func(n int) int { return n - 3 }), "sha256"},
		{"truncated segment", seg, truncate, "bytes"},
		{"missing segment", seg, remove, "no segment object"},
		{"malformed catalogue", cat, rewrite(`{"node":"edge-b","first_seq":1,`), "catalogue object"},
		{"empty catalogue", cat, rewrite(``), "catalogue object"},
		{"catalogue of another node", cat, editCatalogue(func(c *Catalogue) { c.Node = "edge-a" }), `names node "edge-a"`},
		{"catalogue with other seqs", cat, editCatalogue(func(c *Catalogue) { c.LastSeq, c.Count = 5, 5 }), "seqs 1..5"},
		{"catalogue with another size", cat, editCatalogue(func(c *Catalogue) { c.Size++ }), "bytes"},
		{"catalogue with another sha256", cat, editCatalogue(func(c *Catalogue) { c.SHA256 = strings.Repeat("0", 64) }), "sha256"},
		{"catalogue with another time range", cat, editCatalogue(func(c *Catalogue) { c.MaxReceivedAt = c.MaxReceivedAt.Add(time.Nanosecond) }), "footer"},
		{"catalogue with other ids", cat, editCatalogue(func(c *Catalogue) { c.LastID = c.FirstID }), "footer"},
		{"catalogue on another day", cat, editCatalogue(func(c *Catalogue) { c.MinReceivedAt = c.MinReceivedAt.Add(-24 * time.Hour) }), "day"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newReplayArchive(t)
			key := a.keys["edge-b"][0][tc.object]
			tc.damage(t, a, key)
			got, _, err := replayAll(t, a.dir, a.l, Filter{Node: "edge-b"})
			if err == nil || !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("err %v, want one naming %s and saying %q", err, key, tc.says)
			}
			if len(got) != 0 {
				t.Fatalf("%d hooks passed on from a damaged segment", len(got))
			}
		})
	}
}

// TestReplayDamagedBlock: a segment damaged before it was uploaded (its
// catalogue object describes the damaged bytes) is caught by the block
// checksums, with an error naming the key; the hooks of the blocks before
// the damage have been passed on.
func TestReplayDamagedBlock(t *testing.T) {
	d, err := NewDir(filepath.Join(t.TempDir(), "archive"))
	if err != nil {
		t.Fatal(err)
	}
	l := Layout{Prefix: "arch"}
	var envs []envelope.Envelope
	for seq := uint64(1); seq <= 6; seq++ {
		envs = append(envs, replayEnvelope(3, seq, replayBase.Add(time.Duration(seq)*time.Second)))
	}
	var blocks []segment.BlockInfo
	segKey, _ := replayPutSegment(t, d, l, "edge-c", envs, func(data []byte) {
		f, err := segment.OpenReaderAt("seg", bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		blocks = f.Index
		data[blocks[len(blocks)-1].Offset+2] ^= 0x20
	})
	got, _, err := replayAll(t, d, l, Filter{})
	if err == nil || !strings.Contains(err.Error(), segKey) || !errors.Is(err, segment.ErrCorrupt) {
		t.Fatalf("err %v, want a segment.ErrCorrupt naming %s", err, segKey)
	}
	if want := len(envs) - int(blocks[len(blocks)-1].Count); len(got) != want {
		t.Fatalf("%d hooks passed on before the damaged block, want %d", len(got), want)
	}
}

// TestReplayReadsNoLaterDay: segments whose key's day starts at or after
// Until are not read at all (a damaged catalogue object there does not
// matter), and are read when the window reaches them.
func TestReplayReadsNoLaterDay(t *testing.T) {
	a := newReplayArchive(t)
	cat := a.keys["edge-a"][1][1] // seqs 7..10, under the 30th
	if !strings.Contains(cat, "/2026/11/30/") {
		t.Fatalf("%s is not under the 30th", cat)
	}
	if err := os.WriteFile(filepath.Join(a.root, filepath.FromSlash(cat)), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	midnight := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	got, _, err := replayAll(t, a.dir, a.l, Filter{Until: midnight})
	if err != nil {
		t.Fatal(err)
	}
	checkHooks(t, got, a.where(func(h replayHook) bool {
		return h.env.ReceivedAt < midnight.UnixNano() && !h.env.Verification.Quarantined
	}))
	if _, _, err := replayAll(t, a.dir, a.l, Filter{Until: midnight.Add(time.Nanosecond)}); err == nil || !strings.Contains(err.Error(), cat) {
		t.Fatalf("err %v, want one naming %s", err, cat)
	}
}

// TestReplayOrphansAndStrayKeys: a segment object without its catalogue
// object is reported and not replayed; a .cat or .seg key outside the
// layout is an error; other objects are ignored.
func TestReplayOrphansAndStrayKeys(t *testing.T) {
	a := newReplayArchive(t)
	orphan := a.l.NodePrefix("edge-c") + "2026/11/30/00000000000000000001-00000000000000000002.seg"
	replayPut(t, a.dir, orphan, []byte("half an upload"))
	replayPut(t, a.dir, a.l.SegmentsPrefix()+"README", []byte("not a segment"))
	got, st, err := replayAll(t, a.dir, a.l, Filter{Quarantined: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(a.hooks) || len(st.Uncatalogued) != 1 || st.Uncatalogued[0] != orphan {
		t.Fatalf("%d hooks, uncatalogued %q; want %d and [%s]", len(got), st.Uncatalogued, len(a.hooks), orphan)
	}
	stray := a.l.NodePrefix("edge-a") + "2026/11/30/latest.cat"
	replayPut(t, a.dir, stray, []byte("{}"))
	if _, _, err := replayAll(t, a.dir, a.l, Filter{}); err == nil || !strings.Contains(err.Error(), stray) {
		t.Fatalf("err %v, want one naming %s", err, stray)
	}
}

// TestReplaySeqZeroKey: seqs start at 1, so a key whose first seq is 0
// names no segment (segment.ParseStem): it is a key outside the layout,
// an error, not an orphan to report.
func TestReplaySeqZeroKey(t *testing.T) {
	a := newReplayArchive(t)
	stray := a.l.NodePrefix("edge-c") + "2026/11/30/" + segment.FileName(0, 2)
	replayPut(t, a.dir, stray, []byte("half an upload"))
	if _, _, err := replayAll(t, a.dir, a.l, Filter{}); err == nil || !strings.Contains(err.Error(), stray) {
		t.Fatalf("err %v, want one naming %s", err, stray)
	}
}

// TestReplayOverlap: two segments of one node holding the same seqs (two
// nodes configured with one node.name) is an error.
func TestReplayOverlap(t *testing.T) {
	a := newReplayArchive(t)
	var envs []envelope.Envelope
	for seq := uint64(5); seq <= 8; seq++ {
		envs = append(envs, replayEnvelope(9, seq, replayBase.Add(time.Duration(seq)*time.Second)))
	}
	replayPutSegment(t, a.dir, a.l, "edge-b", envs, nil)
	if _, _, err := replayAll(t, a.dir, a.l, Filter{}); err == nil || !strings.Contains(err.Error(), "same seqs") {
		t.Fatalf("err %v, want one about segments holding the same seqs", err)
	}
}

// TestReplayStopsAtFnError: fn's error ends the replay and comes back as
// it is.
func TestReplayStopsAtFnError(t *testing.T) {
	a := newReplayArchive(t)
	stop := errors.New("enough")
	n := 0
	st, err := Replay(context.Background(), a.dir, a.l, Filter{}, func(*envelope.Envelope) error {
		if n++; n == 8 {
			return stop
		}
		return nil
	}, nil)
	if err != stop || st.Hooks != 7 {
		t.Fatalf("err %v after %d hooks, want %v after 7", err, st.Hooks, stop)
	}
	ctx, cancel := context.WithCancel(context.Background())
	st, err = Replay(ctx, a.dir, a.l, Filter{}, func(*envelope.Envelope) error { cancel(); return nil }, nil)
	if !errors.Is(err, context.Canceled) || st.Hooks > 5 {
		t.Fatalf("after cancel: err %v after %d hooks, want context.Canceled within a block", err, st.Hooks)
	}
}

// TestReplayEmptyArchive: an archive with nothing in it (not even the
// segments prefix) replays zero hooks without error.
func TestReplayEmptyArchive(t *testing.T) {
	d, err := NewDir(filepath.Join(t.TempDir(), "archive"))
	if err != nil {
		t.Fatal(err)
	}
	got, st, err := replayAll(t, d, Layout{}, Filter{})
	if err != nil || len(got) != 0 || st.Segments != 0 {
		t.Fatalf("empty archive: %d hooks from %d segments, err %v", len(got), st.Segments, err)
	}
}

// TestReplayS3: the same archive replayed from an S3-compatible server
// gives the same hooks (listing and ranged semantics differ from a Dir).
func TestReplayS3(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b Backend) {
		a := newReplayArchive(t)
		err := a.dir.List(context.Background(), "", func(o Object) error {
			replayPut(t, b, o.Key, getObject(t, a.dir, o.Key))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		got, st, err := replayAll(t, b, a.l, Filter{Source: "stripe"})
		if err != nil {
			t.Fatal(err)
		}
		checkHooks(t, got, a.where(func(h replayHook) bool { return h.env.SourceID == "stripe" && !h.env.Verification.Quarantined }))
		if st.Segments != 3 {
			t.Fatalf("%d segments read, want 3", st.Segments)
		}
	})
}
