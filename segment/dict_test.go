package segment_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/klauspost/compress/zstd"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/segment"
)

// jsonHook is hook number i of the dictionary tests: a webhook-like JSON
// body whose keys and shape recur and whose ids and amounts do not, as a
// provider's events do.
func jsonHook(i int) envelope.Envelope {
	kinds := []string{"payment_intent.succeeded", "charge.refunded", "invoice.paid", "customer.updated"}
	body := fmt.Sprintf(`{"id":"evt_%08d%x","object":"event","api_version":"2024-06-20","created":%d,"data":{"object":{"id":"pi_%x","object":"payment_intent","amount":%d,"currency":"usd","customer":"cus_%06d","description":"Order %d","metadata":{"order_id":"%d","channel":"web"},"status":"succeeded"}},"livemode":false,"pending_webhooks":1,"request":{"id":"req_%x","idempotency_key":null},"type":"%s"}`,
		i, i*7919, 1764445200+i, i*104729, 100+i%9000, i%500, i, i*31, i*15485863, kinds[i%len(kinds)])
	return envelope.Envelope{
		TenantID: fmt.Sprintf("t%d", i%16), SourceID: "stripe",
		ReceivedAt: 1_764_445_200_000_000_000 + int64(i)*20_000,
		Headers: []envelope.Header{
			{Name: "Content-Type", Value: "application/json"},
			{Name: "Stripe-Signature", Value: fmt.Sprintf("t=%d,v1=%064x", 1764445200+i, uint64(i)*0x9e3779b97f4a7c15)},
		},
		Body:         []byte(body),
		Verification: envelope.Verification{Verifier: "stripe", Verified: true},
	}
}

// readCatalogueOf reads the catalogue of the closed node on fs.
func readCatalogueOf(t *testing.T, fs vfs.FS) []meta.SegmentEntry {
	t.Helper()
	m, err := meta.Open(meta.Options{Dir: "data/meta", FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	return readCatalogue(t, m)
}

// segmentFiles opens every catalogued segment of n.
func segmentFiles(t *testing.T, n *node) []*segment.File {
	t.Helper()
	var out []*segment.File
	for _, e := range n.catalogue() {
		f, err := segment.OpenFile(n.fs, n.fs.PathJoin(segDir, e.Name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		out = append(out, f)
	}
	return out
}

// rawRecords is every block of f decompressed, one after the other.
func rawRecords(t *testing.T, f *segment.File, dec *segment.Decoder) []byte {
	t.Helper()
	var raw []byte
	for i := range f.Index {
		var err error
		if raw, err = f.ReadBlock(i, dec, raw); err != nil {
			t.Fatal(err)
		}
	}
	return raw
}

// TestSegmentsCarryDictionary: after the first segment, each one is
// version 2, compressed with a dictionary that is exactly the tail of the
// records of the segment before (min(128 KiB, raw/16) bytes), and every
// hook reads back by id and by scan, before and after a restart (a new
// Decoder). The same hooks without dictionaries (NoDict) take more
// bytes.
func TestSegmentsCarryDictionary(t *testing.T) {
	const hooks = 6000
	sizes := map[bool]int64{}
	for _, noDict := range []bool{false, true} {
		fs := vfs.NewMem()
		// 4 KiB blocks: a dictionary matters most where a block holds few
		// hooks to learn from (the ratio at the default 256 KiB is what
		// make bench-segment measures, on a corpus).
		o := nodeOptions{maxBytes: 512 << 10, maxAge: time.Hour, blockSize: 4 << 10, noDict: noDict}
		n := openNode(t, fs, o)
		var want []envelope.Envelope
		for i := range hooks {
			want = append(want, n.mustCommit(jsonHook(i)))
		}
		n.close()
		// The restart's first segment: the first of its process, with no
		// segment before it to learn from.
		restarted := len(readCatalogueOf(t, fs))
		o.maxAge = 20 * time.Millisecond // the last segment too
		n = openNode(t, fs, o)
		n.waitSealed(uint64(hooks))
		files := segmentFiles(t, n)
		if len(files) < 5 {
			t.Fatalf("%d segments: the test needs several", len(files))
		}
		dec := segment.NewDecoder()
		var prev []byte
		var prevTail int // raw bytes of the last two blocks of the segment before
		for k, f := range files {
			raw := rawRecords(t, f, dec)
			sizes[noDict] += f.Size
			switch {
			case noDict || k == 0 || k == restarted:
				if f.DictID != 0 || f.Dict() != nil || f.Footer.Version != 1 {
					t.Fatalf("segment %d (%d sealed before the restart): dictionary %d (%d bytes), version %d; want none and version 1", k, restarted, f.DictID, len(f.Dict()), f.Footer.Version)
				}
			default:
				wantLen := min(segment.DictBytes, len(prev)/16, prevTail)
				if f.Footer.Version != 2 || !bytes.Equal(f.Dict(), prev[len(prev)-wantLen:]) {
					t.Fatalf("segment %d: version %d, dictionary of %d bytes; want version 2 and the last %d bytes of the segment before", k, f.Footer.Version, len(f.Dict()), wantLen)
				}
			}
			if err := f.Verify(dec); err != nil {
				t.Fatalf("segment %d: %v", k, err)
			}
			prev = raw
			prevTail = int(f.Index[len(f.Index)-1].RawLen)
			if len(f.Index) > 1 {
				prevTail += int(f.Index[len(f.Index)-2].RawLen)
			}
		}
		for _, w := range want {
			got, err := n.store.Fetch(w.ID)
			if err != nil {
				t.Fatalf("fetch seq %d: %v", w.Seq, err)
			}
			if !bytes.Equal(got.Body, w.Body) || got.Seq != w.Seq {
				t.Fatalf("fetch seq %d: got seq %d, body %q", w.Seq, got.Seq, got.Body)
			}
		}
		next := uint64(1)
		if err := n.store.Scan(1, 1<<62, func(e *envelope.Envelope) error {
			if e.Seq != next || !bytes.Equal(e.Body, want[next-1].Body) {
				return fmt.Errorf("scan: seq %d, want %d", e.Seq, next)
			}
			next++
			return nil
		}); err != nil || next != hooks+1 {
			t.Fatalf("scan: %v, ended at %d", err, next)
		}
		n.close()
	}
	t.Logf("segment bytes: %d with dictionaries, %d without (%.2f×)", sizes[false], sizes[true], float64(sizes[true])/float64(sizes[false]))
	if sizes[false] >= sizes[true]*3/4 {
		t.Fatalf("segments with dictionaries take %d bytes, without %d: want at least 25%% less", sizes[false], sizes[true])
	}
}

// TestOpenSegmentReadsWithDictionary: blocks of the segment being written
// (flushed, not sealed) read back through the store with the segment's
// dictionary.
func TestOpenSegmentReadsWithDictionary(t *testing.T) {
	fs := vfs.NewMem()
	n := openNode(t, fs, nodeOptions{maxBytes: 256 << 10, maxAge: time.Hour, blockSize: 8 << 10})
	defer n.close()
	var want []envelope.Envelope
	for i := range 1200 {
		want = append(want, n.mustCommit(jsonHook(i)))
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(n.catalogue()) < 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	files := segmentFiles(t, n)
	if len(files) < 2 || files[len(files)-1].DictID == 0 {
		t.Fatalf("%d segments sealed, the last without a dictionary: the open one needs one before it", len(files))
	}
	last := files[len(files)-1].Footer.LastSeq
	if last >= uint64(len(want)) {
		t.Fatal("nothing left in the open segment")
	}
	for _, w := range want[last:] {
		got, err := n.store.Fetch(w.ID)
		if err != nil || !bytes.Equal(got.Body, w.Body) {
			t.Fatalf("fetch seq %d from the open segment: %v", w.Seq, err)
		}
	}
}

// TestDictionaryNotCarriedAcrossIdleTime: a segment begun more than
// segment.max_age after the last seal has no dictionary, so an old
// segment's records do not live on in one begun much later.
func TestDictionaryNotCarriedAcrossIdleTime(t *testing.T) {
	fs := vfs.NewMem()
	const maxAge = 100 * time.Millisecond
	n := openNode(t, fs, nodeOptions{maxBytes: 128 << 10, maxAge: maxAge, blockSize: 16 << 10})
	defer n.close()
	i := 0
	for ; i < 1000; i++ {
		n.mustCommit(jsonHook(i))
	}
	n.waitSealed(n.wal.LastSeq())
	before := len(n.catalogue())
	// Idle for several max_age, then a burst: its first segment has no
	// dictionary.
	time.Sleep(4 * maxAge)
	for range 50 {
		n.mustCommit(jsonHook(i))
		i++
	}
	n.waitSealed(n.wal.LastSeq())
	files := segmentFiles(t, n)
	if len(files) <= before {
		t.Fatal("the burst was not sealed")
	}
	withDict := 0
	for _, f := range files[:before] {
		if f.DictID != 0 {
			withDict++
		}
	}
	if withDict == 0 {
		t.Fatal("no segment before the idle time has a dictionary: the test proves nothing")
	}
	if f := files[before]; f.DictID != 0 {
		t.Fatalf("the segment begun %v after the last seal carries dictionary %d", 4*maxAge, f.DictID)
	}
}

// TestDictionarySectionDamage: every byte of the dictionary section
// matters: a flipped one, a cut section or lengths that do not fit make
// OpenFile refuse the segment as corrupt at the section's offset (16),
// and a block read without its dictionary fails instead of decoding
// to something else.
func TestDictionarySectionDamage(t *testing.T) {
	dict := bytes.Repeat([]byte(`{"object":"event","type":"invoice.paid","currency":"usd"}`), 40)
	data := buildDictSegment(t, 40, 4<<10, 600, dict)
	stored := int(binary.BigEndian.Uint32(data[24:28]))
	start := segHeaderSize + 16 + stored
	for off := segHeaderSize; off < start; off++ {
		bad := bytes.Clone(data)
		bad[off] ^= 0x01
		fs := vfs.NewMem()
		writeMemFile(t, fs, "seg", bad)
		_, err := segment.OpenFile(fs, "seg")
		var ce *segment.CorruptError
		if !errors.As(err, &ce) || ce.Offset != segHeaderSize {
			t.Fatalf("byte %d of the dictionary section flipped: OpenFile = %v, want corrupt at offset %d", off, err, segHeaderSize)
		}
	}
	for _, c := range []struct {
		name string
		edit func(b []byte) []byte
	}{
		{"cut inside the section", func(b []byte) []byte { return b[:segHeaderSize+16+stored/2] }},
		{"raw length zero", func(b []byte) []byte { binary.BigEndian.PutUint32(b[20:], 0); return b }},
		{"raw length past DictBytes", func(b []byte) []byte { binary.BigEndian.PutUint32(b[20:], segment.DictBytes+1); return b }},
		{"stored length past the file", func(b []byte) []byte { binary.BigEndian.PutUint32(b[24:], uint32(len(b))); return b }},
		{"version 1 header on a version 2 file", func(b []byte) []byte { b[11] = 1; return b }},
	} {
		bad := fixSegmentChecksums(c.edit(bytes.Clone(data)))
		fs := vfs.NewMem()
		writeMemFile(t, fs, "seg", bad)
		if _, err := segment.OpenFile(fs, "seg"); !errors.Is(err, segment.ErrCorrupt) {
			t.Errorf("%s: OpenFile = %v, want ErrCorrupt", c.name, err)
		}
	}
	// The frames name their dictionary: a decoder without it refuses them.
	f := openSeed(t, data)
	defer f.Close()
	b := f.Index[0]
	comp := data[b.Offset : b.Offset+int64(b.CompLen)]
	plain, _ := zstd.NewReader(nil)
	defer plain.Close()
	if _, err := plain.DecodeAll(comp, nil); !errors.Is(err, zstd.ErrUnknownDictionary) {
		t.Fatalf("a block decoded without its dictionary: %v, want ErrUnknownDictionary", err)
	}
}

// TestDecoderManyDictionaries: one Decoder reads more segments, each with
// its own dictionary, than it keeps decoders for, from several
// goroutines at once, and every block comes back right.
func TestDecoderManyDictionaries(t *testing.T) {
	const segments = 12
	dec := segment.NewDecoder()
	defer dec.Close()
	type seg struct {
		f    *segment.File
		want [][]byte
	}
	var segs []seg
	plainDec := segment.NewDecoder()
	for k := range segments {
		dict := bytes.Repeat([]byte(fmt.Sprintf(`{"segment":%d,"type":"charge.succeeded","amount":`, k)), 64)[:2048+k]
		f := openSeed(t, buildDictSegment(t, 30, 2<<10, 800, dict))
		defer f.Close()
		s := seg{f: f}
		for i := range f.Index {
			raw, err := f.ReadBlock(i, plainDec, nil)
			if err != nil {
				t.Fatal(err)
			}
			s.want = append(s.want, raw)
		}
		segs = append(segs, s)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := range 20 {
				for k := range segs {
					s := segs[(k*7+g+round)%segments]
					for i := range s.f.Index {
						raw, err := s.f.ReadBlock(i, dec, nil)
						if err != nil || !bytes.Equal(raw, s.want[i]) {
							errs <- fmt.Errorf("goroutine %d: block %d: %v", g, i, err)
							return
						}
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestNextDictAfterLargeRecords: a record far larger than a block (whose
// buffer the writer lets go of after it) leaves the next segment a
// dictionary that is still the tail of this segment's records, and the
// next segment written with it reads back whole.
func TestNextDictAfterLargeRecords(t *testing.T) {
	fs := vfs.NewMem()
	w, err := segment.Create(fs, "a", segment.NewEncoder(), 4<<10)
	if err != nil {
		t.Fatal(err)
	}
	ids := envelope.NewIDGen(3, envelope.ID{})
	var stream []byte // every record as the blocks hold it
	seq := uint64(0)
	add := func(w *segment.Writer, body int) {
		t.Helper()
		seq++
		e := jsonHook(int(seq))
		if body > 0 {
			e.Body = bytes.Repeat([]byte(`{"k":"v"},`), body/10)
		}
		e.Seq, e.ID, e.TenantOrdinal = seq, ids.Next(1_764_445_200_000+seq, seq), 1
		p := e.AppendTo(nil)
		stream = binary.BigEndian.AppendUint32(stream, uint32(len(p)))
		stream = append(stream, p...)
		if err := w.Append(p); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 60 {
		switch i {
		case 10, 11, 40: // two in a row: both buffers grow past the bound
			add(w, 600<<10)
		default:
			add(w, 0)
		}
	}
	if _, err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	dict := w.NextDict()
	if len(dict) < 1<<10 || !bytes.HasSuffix(stream, dict) { // stream: this segment's records so far
		t.Fatalf("a dictionary of %d bytes that is not the tail of the segment's %d bytes of records", len(dict), len(stream))
	}
	next, err := segment.CreateDict(fs, "b", segment.NewEncoder(), nil, 4<<10, dict)
	if err != nil {
		t.Fatal(err)
	}
	for range 30 {
		add(next, 0)
	}
	if _, err := next.Finish(); err != nil {
		t.Fatal(err)
	}
	f, err := segment.OpenFile(fs, "b")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.DictID == 0 || !bytes.Equal(f.Dict(), dict) {
		t.Fatal("the next segment does not carry the dictionary")
	}
	if err := f.Verify(segment.NewDecoder()); err != nil {
		t.Fatal(err)
	}
}
