package archive

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/segment"
)

// fixture is a node's sealed segments on local disk with their catalogue.
type fixture struct {
	dir     string // segment directory
	meta    *meta.Store
	entries []meta.SegmentEntry
	hooks   []envelope.Envelope // by seq-1
	dicts   int                 // segments written with a dictionary (version 2)
}

// testEnvelope is hook seq of a fixture: every field a function of seq.
func testEnvelope(seq uint64, at time.Time) envelope.Envelope {
	body := fmt.Appendf(nil, `{"id":"evt_%d","n":%d,"pad":"%0*d"}`, seq, seq*7, int(seq%500), 0)
	return envelope.Envelope{
		Seq:          seq,
		ID:           envelope.MakeID(uint64(at.UnixMilli()), 3, seq),
		TenantID:     fmt.Sprintf("t%d", seq%5),
		SourceID:     fmt.Sprintf("s%d", seq%3),
		ReceivedAt:   at.UnixNano(),
		Headers:      []envelope.Header{{Name: "Content-Type", Value: "application/json"}, {Name: "X-Seq", Value: fmt.Sprint(seq)}},
		Body:         body,
		Verification: envelope.Verification{Verifier: "none"},
	}
}

// newFixture writes segs sealed segments of per hooks each (seqs from 1,
// one millisecond apart from base) and catalogues them. As the store does,
// each segment is compressed with the dictionary the one before left
// (segment.Writer.NextDict), when that one was large enough to leave one.
func newFixture(t *testing.T, segs, per int, base time.Time) *fixture {
	t.Helper()
	root := t.TempDir()
	f := &fixture{dir: filepath.Join(root, "segments")}
	if err := vfs.Default.MkdirAll(f.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	m, err := meta.Open(meta.Options{Dir: filepath.Join(root, "meta"), FS: vfs.Default})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	f.meta = m
	enc, denc := segment.NewEncoder(), segment.NewDictEncoder()
	seq := uint64(0)
	var dict []byte
	for range segs {
		first := seq + 1
		tmp := filepath.Join(f.dir, fmt.Sprintf("%020d.partial", first))
		w, err := segment.CreateDict(vfs.Default, tmp, enc, denc, 4<<10, dict)
		if err != nil {
			t.Fatal(err)
		}
		if dict != nil {
			f.dicts++
		}
		for range per {
			seq++
			e := testEnvelope(seq, base.Add(time.Duration(seq)*time.Millisecond))
			p := e.AppendTo(nil)
			envelope.PutIdentity(p, e.Seq, e.ID, uint32(seq%5))
			if err := w.Append(p); err != nil {
				t.Fatal(err)
			}
			f.hooks = append(f.hooks, e)
		}
		foot, err := w.Finish()
		if err != nil {
			t.Fatal(err)
		}
		dict = w.NextDict()
		name := segment.FileName(foot.FirstSeq, foot.LastSeq)
		if err := vfs.Default.Rename(tmp, filepath.Join(f.dir, name)); err != nil {
			t.Fatal(err)
		}
		st, err := vfs.Default.Stat(filepath.Join(f.dir, name))
		if err != nil {
			t.Fatal(err)
		}
		e := meta.SegmentEntry{
			Name: name, Size: st.Size(), FirstSeq: foot.FirstSeq, LastSeq: foot.LastSeq,
			FirstID: foot.FirstID, LastID: foot.LastID, MinReceivedAt: foot.MinReceivedAt, MaxReceivedAt: foot.MaxReceivedAt,
			Count: foot.Count, RawBytes: foot.RawBytes, SealedAt: base.Add(time.Duration(seq) * time.Millisecond).UnixNano(),
		}
		if err := m.PutSegment(e); err != nil {
			t.Fatal(err)
		}
		f.entries = append(f.entries, e)
	}
	return f
}

// catalogue reads the fixture's catalogue back.
func (f *fixture) catalogue(t *testing.T) []meta.SegmentEntry {
	t.Helper()
	var out []meta.SegmentEntry
	if err := f.meta.Segments(0, func(e meta.SegmentEntry) bool { out = append(out, e); return true }); err != nil {
		t.Fatal(err)
	}
	return out
}
