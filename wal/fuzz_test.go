package wal_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/wal"
)

// walFileHeaderSize is the size of a WAL file's header (see the package doc).
const walFileHeaderSize = 16

var walCRC = crc32.MakeTable(crc32.Castagnoli)

// FuzzWALReader treats its input as the only file of a log (file 1):
// ReadDir, a Tail reading it in one go and frame by frame, and Open in
// strict and in truncate recovery must not panic, must answer ErrCorrupt
// for damage, must agree with each other, and must allocate in
// proportion to the input. Recovery must leave a log that reads cleanly
// and opens again in strict mode. Each input runs twice: as it is, and
// with its frame checksums recomputed (fixFrameChecksums) so that the
// fuzzer gets past them to the checks behind. Seeds:
// testdata/fuzz/FuzzWALReader (see TestWALFuzzSeedsGenerated).
func FuzzWALReader(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("ANKUSAWL\x00\x00\x00\x01\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkWALFile(t, data)
		if fixed := fixFrameChecksums(data); !bytes.Equal(fixed, data) {
			checkWALFile(t, fixed)
		}
	})
}

func checkWALFile(t *testing.T, data []byte) {
	recs, rerr := fuzzReadDir(t, data)
	got, terr := fuzzTail(t, data, recs, rerr)
	fuzzTailSteps(t, data, recs, got, terr)
	fuzzRecover(t, data, recs, wal.RecoverStrict)
	fuzzRecover(t, data, recs, wal.RecoverTruncate)
}

// scanned is a record as ReadDir or a Tail passed it on.
type scanned struct {
	Offset  int64
	Kind    byte
	Seq     uint64
	Payload []byte
}

// memLog returns a file system holding data as file 1 of the log in dir.
func memLog(t *testing.T, data []byte) vfs.FS {
	fs := vfs.NewMem()
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, fs, fs.PathJoin(dir, wal.FileName(1)), data)
	return fs
}

// fuzzReadDir reads the log with ReadDir and checks that every record is
// the frame at its offset, frames following each other from the header.
func fuzzReadDir(t *testing.T, data []byte) ([]scanned, error) {
	fs := memLog(t, data)
	var recs []scanned
	next := int64(walFileHeaderSize)
	before := allocBytes()
	err := wal.ReadDir(fs, dir, func(r *wal.Record) error {
		end := r.Offset + wal.FrameHeaderSize + int64(len(r.Payload))
		if r.Offset != next || end > int64(len(data)) || len(r.Payload) < envelope.IdentSize ||
			!bytes.Equal(r.Payload, data[r.Offset+wal.FrameHeaderSize:end]) ||
			(r.Kind != envelope.KindEnvelope && r.Kind != envelope.KindTenant) {
			t.Fatalf("ReadDir passed a %d-byte record of kind %d at offset %d, want one at %d", len(r.Payload), r.Kind, r.Offset, next)
		}
		recs = append(recs, scanned{Offset: r.Offset, Kind: r.Kind, Seq: r.Seq, Payload: bytes.Clone(r.Payload)})
		next = end
		return nil
	})
	checkAlloc(t, "ReadDir", before, 1<<20+8*uint64(len(data)))
	var ce *wal.CorruptError
	switch {
	case err == nil && next != int64(len(data)):
		t.Fatalf("ReadDir read %d of %d bytes and returned nil", next, len(data))
	case err != nil && (!errors.Is(err, wal.ErrCorrupt) || !errors.As(err, &ce)):
		t.Fatalf("ReadDir = %v, want a *CorruptError", err)
	case err != nil && ce.Offset != next && !(ce.Offset == 0 && len(recs) == 0):
		t.Fatalf("ReadDir stopped at offset %d after the record ending at %d", ce.Offset, next)
	}
	return recs, err
}

// fuzzTail reads the log with a Tail up to its end in one Read. A Tail
// passes on what ReadDir does, but skips hooks of seq 0 (at or below
// afterSeq) and stops at a seq that does not follow the last.
func fuzzTail(t *testing.T, data []byte, recs []scanned, rerr error) ([]scanned, error) {
	tail := wal.NewTail(memLog(t, data), dir, 0, 0)
	defer tail.Close()
	before := allocBytes()
	got, err := tailRead(t, tail, int64(len(data)), nil)
	checkAlloc(t, "Tail.Read", before, 1<<20+4*uint64(len(data)))
	var want []scanned
	for _, r := range recs {
		if r.Kind == envelope.KindTenant || r.Seq > 0 {
			want = append(want, r)
		}
	}
	if err != nil && !errors.Is(err, wal.ErrCorrupt) {
		t.Fatalf("Tail.Read = %v, want ErrCorrupt", err)
	}
	if len(got) > len(want) || (err == nil && (rerr != nil || len(got) != len(want))) {
		t.Fatalf("Tail.Read passed %d records (%v); ReadDir %d of them (%v)", len(got), err, len(want), rerr)
	}
	for i := range got {
		if got[i].Offset != want[i].Offset || !bytes.Equal(got[i].Payload, want[i].Payload) {
			t.Fatalf("Tail.Read record %d is at offset %d; ReadDir's at %d", i, got[i].Offset, want[i].Offset)
		}
	}
	return got, err
}

// tailRead reads up to size bytes of file 1 with tail, appending what it
// passes on to got.
func tailRead(t *testing.T, tail *wal.Tail, size int64, got []scanned) ([]scanned, error) {
	err := tail.Read(wal.Position{File: 1, Size: size}, func(r *wal.Record) error {
		got = append(got, scanned{Offset: r.Offset, Kind: r.Kind, Seq: r.Seq, Payload: bytes.Clone(r.Payload)})
		return nil
	}, func(file, lastSeq uint64) error {
		t.Fatalf("fileDone(%d, %d) for the only file of the log", file, lastSeq)
		return nil
	})
	return got, err
}

// fuzzTailSteps reads the log with a Tail whose durable end moves frame
// by frame; it must pass on what one Read does.
func fuzzTailSteps(t *testing.T, data []byte, recs []scanned, want []scanned, werr error) {
	tail := wal.NewTail(memLog(t, data), dir, 0, 0)
	defer tail.Close()
	var got []scanned
	var err error
	for _, r := range recs {
		if got, err = tailRead(t, tail, r.Offset+wal.FrameHeaderSize+int64(len(r.Payload)), got); err != nil {
			break
		}
	}
	if err == nil {
		got, err = tailRead(t, tail, int64(len(data)), got)
	}
	if (err == nil) != (werr == nil) || len(got) != len(want) {
		t.Fatalf("a Tail read frame by frame passed %d records (%v); in one Read %d (%v)", len(got), err, len(want), werr)
	}
	for i := range got {
		if got[i].Offset != want[i].Offset {
			t.Fatalf("a Tail read frame by frame passed record %d at offset %d; in one Read at %d", i, got[i].Offset, want[i].Offset)
		}
	}
}

// fuzzRecover opens the log in the recovery mode given. Truncate always
// opens; strict opens or refuses with ErrCorrupt. What it keeps reads
// back cleanly as a prefix of the records, and opens again in strict mode
// at the same seq.
func fuzzRecover(t *testing.T, data []byte, recs []scanned, mode string) {
	fs := memLog(t, data)
	before := allocBytes()
	w, err := wal.Open(fuzzOptions(fs, mode))
	checkAlloc(t, "Open", before, 4<<20+16*uint64(len(data)))
	if err != nil {
		if mode == wal.RecoverTruncate || !errors.Is(err, wal.ErrCorrupt) {
			t.Fatalf("Open(-wal-recovery=%s) = %v", mode, err)
		}
		return
	}
	lastSeq := w.LastSeq()
	if err := w.Close(); err != nil {
		t.Fatalf("Close after Open(-wal-recovery=%s): %v", mode, err)
	}
	kept, err := readKept(fs)
	if err != nil || len(kept) > len(recs) {
		t.Fatalf("after Open(-wal-recovery=%s) the log reads %d records (%v); it had %d", mode, len(kept), err, len(recs))
	}
	var keptSeq uint64
	for i, k := range kept {
		if k.File != fs.PathJoin(dir, wal.FileName(1)) || k.Offset != recs[i].Offset || !bytes.Equal(k.Payload, recs[i].Payload) {
			t.Fatalf("after Open(-wal-recovery=%s) record %d is %s@%d, was @%d", mode, i, k.File, k.Offset, recs[i].Offset)
		}
		if k.Kind == envelope.KindEnvelope {
			keptSeq = k.Seq
		}
	}
	if lastSeq != keptSeq {
		t.Fatalf("Open(-wal-recovery=%s) resumed at seq %d; the last hook it kept is seq %d", mode, lastSeq, keptSeq)
	}
	w, err = wal.Open(fuzzOptions(fs, wal.RecoverStrict))
	if err != nil {
		t.Fatalf("a log recovered with -wal-recovery=%s does not open again: %v", mode, err)
	}
	if w.LastSeq() != lastSeq {
		t.Fatalf("reopened at seq %d, recovered at %d", w.LastSeq(), lastSeq)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// keptRec is a record of a recovered log.
type keptRec struct {
	scanned
	File string
}

// readKept reads every record of the log with ReadDir.
func readKept(fs vfs.FS) ([]keptRec, error) {
	var kept []keptRec
	err := wal.ReadDir(fs, dir, func(r *wal.Record) error {
		kept = append(kept, keptRec{scanned{r.Offset, r.Kind, r.Seq, bytes.Clone(r.Payload)}, r.File})
		return nil
	})
	return kept, err
}

func fuzzOptions(fs vfs.FS, mode string) wal.Options {
	return wal.Options{FS: fs, Dir: dir, Node: testNode, Recovery: mode, Now: newClock(1_764_445_200_000, time.Millisecond).Now}
}

// fixFrameChecksums returns a copy of data whose frames, as far as their
// lengths chain from the file header, carry checksums that hold.
func fixFrameChecksums(data []byte) []byte {
	out := bytes.Clone(data)
	for off := walFileHeaderSize; off+wal.FrameHeaderSize+envelope.IdentSize <= len(out); {
		frame := out[off:]
		n := int(binary.BigEndian.Uint32(frame))
		if n < envelope.IdentSize || n > len(frame)-wal.FrameHeaderSize {
			break
		}
		payload := frame[wal.FrameHeaderSize : wal.FrameHeaderSize+n]
		binary.BigEndian.PutUint32(frame[4:], crc32.Checksum(payload[envelope.IdentSize:], walCRC))
		c := crc32.Update(0, walCRC, frame[:12])
		c = crc32.Update(c, walCRC, payload[:envelope.IdentSize])
		binary.BigEndian.PutUint32(frame[12:], c)
		off += wal.FrameHeaderSize + n
	}
	return out
}

// allocBytes is how many bytes the process has allocated on the heap so
// far (small objects are counted a span at a time).
func allocBytes() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// checkAlloc fails if more than limit bytes were allocated since before.
func checkAlloc(t *testing.T, what string, before, limit uint64) {
	if n := allocBytes() - before; n > limit {
		t.Fatalf("%s allocated %d bytes, more than %d for its input", what, n, limit)
	}
}

// buildSeedLog commits n small hooks of three tenants, one batch each,
// and returns the bytes of the log's first file.
func buildSeedLog(t *testing.T, n int) []byte {
	fs := vfs.NewMem()
	w := openWAL(t, fuzzOptions(fs, wal.RecoverStrict))
	for i := range n {
		e := envelope.Envelope{
			TenantID:     fmt.Sprintf("t%d", i%3),
			SourceID:     "src",
			ReceivedAt:   1_764_445_200_000_000_000 + int64(i),
			Headers:      []envelope.Header{{Name: "Content-Type", Value: "application/json"}},
			Body:         fmt.Appendf(nil, `{"i":%d}`, i),
			Verification: envelope.Verification{Verifier: "none"},
			DedupeKey:    fmt.Sprintf("k%d", i),
		}
		req := wal.AcquireRequest()
		req.Buf = e.AppendTo(req.Buf)
		wal.SealPayload(req.Buf)
		if err := w.Commit(req); err != nil {
			t.Fatal(err)
		}
		wal.ReleaseRequest(req)
	}
	closeWAL(t, w)
	return readFile(t, fs, fs.PathJoin(dir, wal.FileName(1)))
}

// walSeeds are the seed files of FuzzWALReader, by name: whole logs
// ("valid_"), and damaged ones that ReadDir or a strict Open refuses.
func walSeeds(t *testing.T) map[string][]byte {
	one := buildSeedLog(t, 1)
	many := buildSeedLog(t, 8)
	recs, err := fuzzReadDir(t, many)
	if err != nil || len(recs) != 11 {
		t.Fatalf("seed log: %d records, %v", len(recs), err)
	}
	flip := func(b []byte, off int64) []byte {
		b = bytes.Clone(b)
		b[off] ^= 0x04
		return b
	}
	// A hook whose seq jumps, with checksums that hold: only the seq
	// check of recovery and of a Tail finds it.
	gap := bytes.Clone(many)
	binary.BigEndian.PutUint64(gap[recs[6].Offset+wal.FrameHeaderSize+envelope.OffSeq:], recs[6].Seq+5)
	return map[string][]byte{
		"valid_one_hook":     one,
		"valid_three_tenant": many,
		"trunc_torn_tail":    many[:len(many)-7],
		"trunc_file_header":  many[:10],
		"flip_first_payload": flip(many, recs[1].Offset+wal.FrameHeaderSize+int64(len(recs[1].Payload))-3),
		"flip_frame_length":  flip(many, recs[2].Offset+3),
		"fixed_seq_gap":      fixFrameChecksums(gap),
	}
}

// TestWALFuzzSeedsGenerated keeps the checked-in seed corpus of
// FuzzWALReader what the generator makes of the current format; with
// ANKUSA_WRITE_FUZZ_SEEDS=1 it rewrites the files instead (after a format
// change).
func TestWALFuzzSeedsGenerated(t *testing.T) {
	target := filepath.Join("testdata", "fuzz", "FuzzWALReader")
	write := os.Getenv("ANKUSA_WRITE_FUZZ_SEEDS") != ""
	if write {
		if err := os.MkdirAll(target, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, data := range walSeeds(t) {
		path := filepath.Join(target, name)
		if !write {
			if got := readCorpusFile(t, path); !bytes.Equal(got, data) {
				t.Errorf("%s differs from what the generator makes; rewrite with ANKUSA_WRITE_FUZZ_SEEDS=1 go test -run TestWALFuzzSeedsGenerated ./wal", path)
			}
			continue
		}
		text := "go test fuzz v1\n[]byte(" + strconv.Quote(string(data)) + ")\n"
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWALFuzzSeeds keeps the checked-in seeds what their names say:
// "valid_" logs read cleanly and open in strict mode as they are; the
// others are refused by ReadDir or by a strict Open, or cut by it.
func TestWALFuzzSeeds(t *testing.T) {
	target := filepath.Join("testdata", "fuzz", "FuzzWALReader")
	ents, err := os.ReadDir(target)
	if err != nil {
		t.Fatal(err)
	}
	for _, ent := range ents {
		data := readCorpusFile(t, filepath.Join(target, ent.Name()))
		fs := memLog(t, data)
		_, rerr := readKept(fs)
		var oerr error
		if w, err := wal.Open(fuzzOptions(fs, wal.RecoverStrict)); err != nil {
			oerr = err
		} else if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		after := readFile(t, fs, fs.PathJoin(dir, wal.FileName(1)))
		refused := rerr != nil || oerr != nil || !bytes.Equal(after, data)
		if valid := strings.HasPrefix(ent.Name(), "valid_"); valid == refused {
			t.Errorf("%s: ReadDir: %v; strict Open: %v", ent.Name(), rerr, oerr)
		}
	}
}

// readCorpusFile reads a one-[]byte corpus file of go test -fuzz.
func readCorpusFile(t *testing.T, path string) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text, ok := strings.CutPrefix(string(b), "go test fuzz v1\n[]byte(")
	text, ok2 := strings.CutSuffix(strings.TrimSpace(text), ")")
	s, err := strconv.Unquote(text)
	if !ok || !ok2 || err != nil {
		t.Fatalf("%s is not a corpus file of one []byte: %v", path, err)
	}
	return []byte(s)
}
