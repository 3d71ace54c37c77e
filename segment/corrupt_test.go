package segment_test

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/segment"
)

// sealedFixture commits count hooks on a fresh MemFS, waits until they
// are all sealed (64 KiB segments of 4 KiB blocks), closes the node and
// returns the file system, the hooks and the catalogue. The store's clock
// stands still while the hooks are committed and jumps past max_age once
// they are all in, so only max_bytes splits them however slow the machine
// is.
func sealedFixture(t *testing.T, count, maxBody int) (vfs.FS, []envelope.Envelope, []meta.SegmentEntry) {
	t.Helper()
	fs := vfs.NewMem()
	var clock atomic.Int64
	clock.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	n := openNode(t, fs, nodeOptions{maxBytes: 64 << 10, maxAge: 20 * time.Millisecond, blockSize: 4 << 10, now: now})
	var hooks []envelope.Envelope
	for i := range count {
		hooks = append(hooks, n.mustCommit(testHook(i, maxBody)))
	}
	// A fetch catches the store up, so the open segment holds every hook
	// and was opened before the jump.
	if _, err := n.store.Fetch(hooks[len(hooks)-1].ID); err != nil {
		t.Fatal(err)
	}
	clock.Add(int64(time.Second)) // past max_age, short of a retention sweep
	n.waitSealed(uint64(count))
	entries := n.catalogue()
	n.close()
	return fs, hooks, entries
}

// idsInBlock returns the ids of the records of block i of a segment.
func idsInBlock(t *testing.T, f *segment.File, i int) []envelope.ID {
	t.Helper()
	raw, err := f.ReadBlock(i, segment.NewDecoder(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var ids []envelope.ID
	err = segment.Records(raw, func(p []byte) error {
		_, _, id, _ := envelope.Identity(p)
		ids = append(ids, id)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestCorruptBlock flips one byte in the middle of a sealed segment's
// second block (as a disk would) and checks that a fetch of a hook in it
// answers an error wrapping ErrCorrupt that names the file and the
// block's offset, that hooks in the segment's other blocks still come
// back, that a scan over the block fails the same way, and that Verify
// finds it.
func TestCorruptBlock(t *testing.T) {
	fs, hooks, entries := sealedFixture(t, 400, 1500)
	e := entries[0]
	path := fs.PathJoin(segDir, e.Name)
	f, err := segment.OpenFile(fs, path)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Index) < 3 {
		t.Fatalf("segment %s has %d blocks; the test needs 3", e.Name, len(f.Index))
	}
	bad := f.Index[1]
	badIDs := idsInBlock(t, f, 1)
	goodIDs := append(idsInBlock(t, f, 0), idsInBlock(t, f, 2)...)
	f.Close()

	data := readMemFile(t, fs, path)
	data[bad.Offset+int64(bad.CompLen)/2] ^= 0x20
	writeSynced(t, fs, path, data)

	n := openNode(t, fs, nodeOptions{maxBytes: 64 << 10, maxAge: time.Hour, blockSize: 4 << 10})
	defer n.close()
	byID := map[envelope.ID]*envelope.Envelope{}
	for i := range hooks {
		byID[hooks[i].ID] = &hooks[i]
	}
	for _, id := range badIDs {
		_, err := n.store.Fetch(id)
		if !errors.Is(err, segment.ErrCorrupt) {
			t.Fatalf("fetch of a hook in the damaged block: %v, want ErrCorrupt", err)
		}
		var ce *segment.CorruptError
		if !errors.As(err, &ce) || ce.Offset != bad.Offset || !strings.HasSuffix(ce.File, e.Name) {
			t.Fatalf("fetch of a hook in the damaged block: %#v, want a CorruptError at %s offset %d", err, e.Name, bad.Offset)
		}
	}
	for _, id := range goodIDs {
		checkFetch(t, n.store, byID[id])
	}
	err = n.store.Scan(e.FirstSeq, e.LastSeq, func(*envelope.Envelope) error { return nil })
	if !errors.Is(err, segment.ErrCorrupt) {
		t.Fatalf("scan over the damaged block: %v, want ErrCorrupt", err)
	}
	// Hooks of other segments are untouched.
	checkFetch(t, n.store, &hooks[len(hooks)-1])

	f, err = segment.OpenFile(fs, path)
	if err != nil {
		t.Fatalf("OpenFile checks footer and index only; the damage is in a block: %v", err)
	}
	defer f.Close()
	err = f.Verify(segment.NewDecoder())
	var ce *segment.CorruptError
	if !errors.As(err, &ce) || !errors.Is(err, segment.ErrCorrupt) || ce.Offset != bad.Offset {
		t.Fatalf("Verify: %v, want a CorruptError at offset %d", err, bad.Offset)
	}
}

// smallSegment builds a whole segment of a few blocks on a MemFS and
// returns its bytes.
func smallSegment(t *testing.T) []byte {
	t.Helper()
	fs, _, entries := sealedFixture(t, 60, 300)
	if len(entries) != 1 {
		t.Fatalf("%d segments, want 1", len(entries))
	}
	data := readMemFile(t, fs, fs.PathJoin(segDir, entries[0].Name))
	f, err := segment.OpenFile(fs, fs.PathJoin(segDir, entries[0].Name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if len(f.Index) < 3 {
		t.Fatalf("%d blocks, want at least 3", len(f.Index))
	}
	return data
}

// openBytes writes data as a segment file and opens it; verify also runs
// Verify on what opens.
func openBytes(t *testing.T, data []byte, verify bool) (*segment.File, error) {
	t.Helper()
	fs := vfs.NewMem()
	if err := fs.MkdirAll(segDir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := fs.PathJoin(segDir, "x.seg")
	writeSynced(t, fs, path, data)
	f, err := segment.OpenFile(fs, path)
	if err != nil || !verify {
		return f, err
	}
	if err := f.Verify(segment.NewDecoder()); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// TestCorruptFooterAndIndex flips each byte of the footer and of the
// block index: OpenFile must refuse every one with a CorruptError that
// says which part is damaged and where.
func TestCorruptFooterAndIndex(t *testing.T) {
	data := smallSegment(t)
	f, err := openBytes(t, data, true)
	if err != nil {
		t.Fatalf("the undamaged segment: %v", err)
	}
	indexOff, size := f.Footer.IndexOffset, f.Size
	f.Close()
	footerOff := size - 112
	for off := indexOff; off < size; off++ {
		for _, mask := range []byte{0x01, 0x80} {
			d := append([]byte(nil), data...)
			d[off] ^= mask
			f, err := openBytes(t, d, false)
			if err == nil {
				f.Close()
				t.Fatalf("byte %d (^%#x) flipped: OpenFile took it", off, mask)
			}
			var ce *segment.CorruptError
			if !errors.As(err, &ce) || !errors.Is(err, segment.ErrCorrupt) {
				t.Fatalf("byte %d flipped: %v is not a CorruptError", off, err)
			}
			part, at := "index", indexOff
			if off >= footerOff {
				part, at = "footer", footerOff
			}
			if !strings.Contains(ce.Reason, part) || ce.Offset != at {
				t.Fatalf("byte %d (in the %s) flipped: %q at offset %d, want a reason naming the %s at offset %d",
					off, part, ce.Reason, ce.Offset, part, at)
			}
		}
	}
}

// TestFlipAnyByte flips each byte of a whole segment in turn: OpenFile or
// Verify must find every one, as the package doc promises ("a flipped
// byte anywhere in a segment is found by Verify").
func TestFlipAnyByte(t *testing.T) {
	data := smallSegment(t)
	var missed []int
	for off := range data {
		d := append([]byte(nil), data...)
		d[off] ^= 0x04
		f, err := openBytes(t, d, true)
		if err == nil {
			f.Close()
			missed = append(missed, off)
			continue
		}
		if !errors.Is(err, segment.ErrCorrupt) {
			t.Fatalf("byte %d flipped: %v does not wrap ErrCorrupt", off, err)
		}
	}
	if len(missed) > 0 {
		t.Fatalf("%d of %d flipped bytes were not found, at offsets %v", len(missed), len(data), missed)
	}
}

// TestTruncatedSegment cuts a whole segment at every length short of its
// size: each must fail OpenFile with a CorruptError, never open, panic,
// or answer a bare I/O error.
func TestTruncatedSegment(t *testing.T) {
	data := smallSegment(t)
	for cut := range len(data) {
		f, err := openBytes(t, data[:cut], true)
		if err == nil {
			f.Close()
			t.Fatalf("cut at %d of %d bytes: the segment opened", cut, len(data))
		}
		var ce *segment.CorruptError
		if !errors.As(err, &ce) {
			t.Fatalf("cut at %d of %d bytes: %v is not a CorruptError", cut, len(data), err)
		}
	}
	// And one with bytes appended after the footer.
	f, err := openBytes(t, append(append([]byte(nil), data...), make([]byte, 40)...), true)
	if err == nil {
		f.Close()
		t.Fatalf("a segment with 40 zero bytes after its footer opened")
	}
	if !errors.Is(err, segment.ErrCorrupt) {
		t.Fatal(fmt.Errorf("trailing bytes: %w is not ErrCorrupt", err))
	}
}
