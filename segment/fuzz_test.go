package segment_test

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

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/klauspost/compress/zstd"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/segment"
)

// fuzzDec is shared by every run: DecodeAll is safe for concurrent use.
var fuzzDec = segment.NewDecoder()

// Layout of a segment as the fuzz targets need it (see the package doc).
const (
	segHeaderSize = 16
	segEntrySize  = 48
	segFooterSize = 112
	// maxExpansion is how many raw bytes one compressed byte can stand
	// for in a zstd frame: an RLE block is 4 bytes for up to 128 KiB.
	maxExpansion = 128 << 10 / 4
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// FuzzSegmentReader treats its input as a whole segment file: OpenFile,
// Verify, ReadBlock of every block and Records and FindInBlock on what
// they return must not panic, must answer ErrCorrupt for damage, and must
// allocate in proportion to the input. Each input runs twice: as it is,
// and with its checksums recomputed (fixSegmentChecksums) so that the
// fuzzer gets past them to the checks behind. Seeds:
// testdata/fuzz/FuzzSegmentReader (see TestSegmentFuzzSeedsGenerated).
func FuzzSegmentReader(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("ANKUSASG\x00\x00\x00\x01\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkSegment(t, data)
		if fixed := fixSegmentChecksums(data); !bytes.Equal(fixed, data) {
			checkSegment(t, fixed)
		}
	})
}

// FuzzRecords walks raw block bytes with Records and FindInBlock.
func FuzzRecords(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0, 0})
	f.Add(binary.BigEndian.AppendUint32(nil, envelope.FixedSize))
	f.Fuzz(func(t *testing.T, raw []byte) {
		payloads, _ := checkRecords(t, raw)
		for _, p := range payloads {
			var e envelope.Envelope
			_, _ = envelope.Decode(p, &e)
		}
	})
}

// checkSegment opens data as a segment file and reads all of it.
func checkSegment(t *testing.T, data []byte) {
	fs := vfs.NewMem()
	writeMemFile(t, fs, "seg", data)
	before := allocBytes()
	sf, err := segment.OpenFile(fs, "seg")
	checkAlloc(t, "OpenFile", before, 1<<20+4*uint64(len(data)))
	if err != nil {
		if sf != nil || !errors.Is(err, segment.ErrCorrupt) {
			t.Fatalf("OpenFile = %v, %v; want a nil file and ErrCorrupt", sf, err)
		}
		return
	}
	defer sf.Close()
	checkOpened(t, sf, int64(len(data)))
	before = allocBytes()
	verr := sf.Verify(fuzzDec)
	// Verify decodes every envelope too, and an envelope's slices take up
	// to about 16 bytes per encoded byte.
	checkAlloc(t, "Verify", before, 2<<20+32*maxExpansion*uint64(sf.Footer.IndexOffset))
	if verr != nil && !errors.Is(verr, segment.ErrCorrupt) {
		t.Fatalf("Verify = %v, want ErrCorrupt", verr)
	}
	for i := range sf.Index {
		checkBlock(t, sf, i, verr == nil)
	}
}

// checkOpened checks what OpenFile promises of a file it accepts.
func checkOpened(t *testing.T, sf *segment.File, size int64) {
	foot := &sf.Footer
	n := len(sf.Index)
	if n == 0 || n != int(foot.Blocks) || sf.Size != size ||
		foot.IndexOffset+int64(n)*segEntrySize+segFooterSize != size {
		t.Fatalf("opened %d bytes with %d index entries, footer %+v", size, n, *foot)
	}
	if foot.LastSeq-foot.FirstSeq+1 != foot.Count || sf.Index[0].FirstSeq != foot.FirstSeq || sf.Index[0].FirstID != foot.FirstID {
		t.Fatalf("footer %+v does not match the first block %+v", *foot, sf.Index[0])
	}
	var total uint64
	next := int64(segHeaderSize)
	if sf.DictID != 0 {
		// Version 2: the dictionary section (16 bytes and its stored
		// dictionary) comes first.
		if next = sf.BlocksStart(); next <= segHeaderSize+16 || len(sf.Dict()) < 1<<10 || len(sf.Dict()) > segment.DictBytes {
			t.Fatalf("blocks start at %d after a dictionary of %d bytes", next, len(sf.Dict()))
		}
	}
	for i, b := range sf.Index {
		if b.Offset != next || b.CompLen == 0 || b.Count == 0 {
			t.Fatalf("block %d is %+v, want it at offset %d", i, b, next)
		}
		if sf.BlockForSeq(b.FirstSeq) != i || sf.BlockForID(b.FirstID) != i {
			t.Fatalf("block %d is not found by its first seq and id", i)
		}
		next += int64(b.CompLen)
		total += uint64(b.Count)
	}
	if next != foot.IndexOffset || total != foot.Count {
		t.Fatalf("blocks end at %d holding %d records; the footer says %d and %d", next, total, foot.IndexOffset, foot.Count)
	}
}

// checkBlock reads block i and walks its records; a verified file's
// blocks must all read back whole.
func checkBlock(t *testing.T, sf *segment.File, i int, verified bool) {
	b := sf.Index[i]
	prefix := []byte("prefix")
	before := allocBytes()
	out, err := sf.ReadBlock(i, fuzzDec, prefix)
	checkAlloc(t, fmt.Sprintf("ReadBlock(%d) of %d compressed bytes", i, b.CompLen), before, 1<<20+4*maxExpansion*uint64(b.CompLen))
	if err != nil {
		if !errors.Is(err, segment.ErrCorrupt) || verified {
			t.Fatalf("ReadBlock(%d) = %v (file verified: %v)", i, err, verified)
		}
		return
	}
	if !bytes.HasPrefix(out, []byte("prefix")) || len(out)-len(prefix) != int(b.RawLen) {
		t.Fatalf("ReadBlock(%d) appended %d bytes to the prefix %q, want %d", i, len(out)-len(prefix), out[:min(len(out), len(prefix))], b.RawLen)
	}
	raw := out[len(prefix):]
	payloads, rerr := checkRecords(t, raw)
	if _, _, err := segment.FindInBlock(raw, sf.Footer.LastID); (err == nil) != (rerr == nil) {
		t.Fatalf("FindInBlock = %v, Records = %v", err, rerr)
	}
	if verified {
		checkVerifiedBlock(t, b, payloads, rerr)
	}
}

// checkVerifiedBlock checks the records of a block of a verified file.
func checkVerifiedBlock(t *testing.T, b segment.BlockInfo, payloads [][]byte, rerr error) {
	if rerr != nil || len(payloads) != int(b.Count) {
		t.Fatalf("verified block %+v: %d records, %v", b, len(payloads), rerr)
	}
	for j, p := range payloads {
		_, seq, id, _ := envelope.Identity(p)
		if seq != b.FirstSeq+uint64(j) || (j == 0 && id != b.FirstID) {
			t.Fatalf("verified block %+v: record %d has seq %d id %v", b, j, seq, id)
		}
		var e envelope.Envelope
		if _, err := envelope.Decode(p, &e); err != nil {
			t.Fatalf("verified block: record %d: %v", j, err)
		}
	}
}

// checkRecords walks raw with Records, checks each payload against the
// layout (a 4-byte length, then at least an envelope's fixed part, kind
// 1, aliasing raw in order), and checks FindInBlock against the walk. It
// returns the payloads and the walk's error.
func checkRecords(t *testing.T, raw []byte) ([][]byte, error) {
	var payloads [][]byte
	off := 0
	err := segment.Records(raw, func(p []byte) error {
		off += 4
		if len(p) < envelope.FixedSize || p[envelope.OffKind] != envelope.KindEnvelope ||
			off+len(p) > len(raw) || &p[0] != &raw[off] || binary.BigEndian.Uint32(raw[off-4:]) != uint32(len(p)) {
			t.Fatalf("Records passed %d bytes at offset %d of %d", len(p), off, len(raw))
		}
		off += len(p)
		payloads = append(payloads, p)
		return nil
	})
	if err == nil && off != len(raw) {
		t.Fatalf("Records walked %d of %d bytes and returned nil", off, len(raw))
	}
	for _, j := range []int{0, len(payloads) / 2, len(payloads) - 1} {
		if j >= 0 && j < len(payloads) {
			checkFind(t, raw, payloads, j)
		}
	}
	absent := envelope.ID{0xab, 0xcd}
	for _, p := range payloads {
		if bytes.Equal(p[envelope.OffID:envelope.OffID+16], absent[:]) {
			return payloads, err
		}
	}
	if p, ok, ferr := segment.FindInBlock(raw, absent); ok || p != nil || (ferr == nil) != (err == nil) {
		t.Fatalf("FindInBlock(absent id) = %d bytes, %v, %v; Records = %v", len(p), ok, ferr, err)
	}
	return payloads, err
}

// checkFind checks that FindInBlock finds the first record with the id of
// payloads[j].
func checkFind(t *testing.T, raw []byte, payloads [][]byte, j int) {
	_, _, id, _ := envelope.Identity(payloads[j])
	first := j
	for k := range j {
		if _, _, other, _ := envelope.Identity(payloads[k]); other == id {
			first = k
			break
		}
	}
	p, ok, err := segment.FindInBlock(raw, id)
	if !ok || err != nil || len(p) == 0 || &p[0] != &payloads[first][0] || len(p) != len(payloads[first]) {
		t.Fatalf("FindInBlock(id of record %d) = %d bytes, %v, %v; want record %d", j, len(p), ok, err, first)
	}
}

// fixSegmentChecksums returns a copy of data whose block, index and footer
// checksums hold for whatever the index and footer say, as far as they
// point inside data.
func fixSegmentChecksums(data []byte) []byte {
	size := int64(len(data))
	if size < segHeaderSize+segFooterSize {
		return data
	}
	out := bytes.Clone(data)
	if binary.BigEndian.Uint32(out[8:12]) == 2 && size >= segHeaderSize+16+segFooterSize {
		// The dictionary section: id, raw length, stored length, CRC.
		stored := int64(binary.BigEndian.Uint32(out[24:28]))
		if stored <= size-segHeaderSize-16 {
			crc := crc32.Checksum(out[16:28], crcTable)
			crc = crc32.Update(crc, crcTable, out[32:32+stored])
			binary.BigEndian.PutUint32(out[28:32], crc)
		}
	}
	foot := out[size-segFooterSize:]
	idxOff := int64(binary.BigEndian.Uint64(foot[0:]))
	blocks := int64(binary.BigEndian.Uint32(foot[8:]))
	if idxOff >= 0 && idxOff <= size-segFooterSize && blocks*segEntrySize <= size-segFooterSize-idxOff {
		idx := out[idxOff : idxOff+blocks*segEntrySize]
		for e := idx; len(e) >= segEntrySize; e = e[segEntrySize:] {
			off := int64(binary.BigEndian.Uint64(e[0:]))
			n := int64(binary.BigEndian.Uint32(e[8:]))
			if off >= 0 && off <= size && n <= size-off {
				binary.BigEndian.PutUint32(e[16:], crc32.Checksum(out[off:off+n], crcTable))
			}
		}
		binary.BigEndian.PutUint32(foot[12:], crc32.Checksum(idx, crcTable))
	}
	binary.BigEndian.PutUint32(foot[100:], crc32.Checksum(foot[:100], crcTable))
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

func writeMemFile(t testing.TB, fs vfs.FS, path string, data []byte) {
	f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(bytes.Clone(data)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// buildSegment seals n test hooks (bodies up to maxBody bytes) into a
// segment of blockSize blocks and returns the file's bytes.
func buildSegment(t testing.TB, n, blockSize, maxBody int) []byte {
	return buildDictSegment(t, n, blockSize, maxBody, nil)
}

// buildDictSegment is buildSegment with dict as the segment's dictionary
// (version 2; nil: version 1).
func buildDictSegment(t testing.TB, n, blockSize, maxBody int, dict []byte) []byte {
	fs := vfs.NewMem()
	w, err := segment.CreateDict(fs, "seg", segment.NewEncoder(), nil, blockSize, dict)
	if err != nil {
		t.Fatal(err)
	}
	ids := envelope.NewIDGen(3, envelope.ID{})
	for i := range n {
		e := testHook(i, maxBody)
		e.Seq = uint64(100 + i)
		e.ID = ids.Next(1_764_445_200_000+uint64(i), e.Seq)
		e.TenantOrdinal = uint32(1 + i%3)
		if err := w.Append(e.AppendTo(nil)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	f, err := fs.Open("seg")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, st.Size())
	if _, err := f.ReadAt(data, 0); err != nil {
		t.Fatal(err)
	}
	return data
}

// withoutContentSize rewrites a one-block segment with its block as a
// zstd frame that does not declare its content size (the writer's frames
// do), so the fuzzer starts from the reader's other path.
func withoutContentSize(t testing.TB, seg []byte) []byte {
	sf := openSeed(t, seg)
	defer sf.Close()
	raw, err := sf.ReadBlock(0, fuzzDec, nil)
	if err != nil {
		t.Fatal(err)
	}
	var frame bytes.Buffer
	enc, err := zstd.NewWriter(&frame, zstd.WithEncoderCRC(false), zstd.WithSingleSegment(false))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := enc.Write(raw); err != nil {
		t.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	tail := seg[len(seg)-segFooterSize-segEntrySize:]
	out := append(bytes.Clone(seg[:segHeaderSize]), frame.Bytes()...)
	out = append(out, tail...)
	entry, foot := out[len(out)-len(tail):], out[len(out)-segFooterSize:]
	binary.BigEndian.PutUint32(entry[8:], uint32(frame.Len()))
	binary.BigEndian.PutUint64(foot[0:], uint64(segHeaderSize+frame.Len()))
	return fixSegmentChecksums(out)
}

// segmentSeeds are the seed files of FuzzSegmentReader, by name: whole
// segments ("valid_"), and damaged ones that OpenFile or Verify refuses.
func segmentSeeds(t testing.TB) map[string][]byte {
	one := buildSegment(t, 1, 0, 64)
	many := buildSegment(t, 12, 512, 200)
	flip := func(b []byte, off int) []byte {
		b = bytes.Clone(b)
		b[off] ^= 0x10
		return b
	}
	idxOff := int(binary.BigEndian.Uint64(many[len(many)-segFooterSize:]))
	// A version 2 segment whose dictionary is records like its own.
	dict := bytes.Repeat(buildSegment(t, 4, 0, 200)[segHeaderSize:], 8)[:2048]
	withDict := buildDictSegment(t, 12, 512, 200, dict)
	stored := int(binary.BigEndian.Uint32(withDict[24:28]))
	return map[string][]byte{
		"valid_dict":         withDict,
		"dict_flip_section":  flip(withDict, segHeaderSize+16+stored/2),
		"dict_flip_rawlen":   flip(withDict, segHeaderSize+6),
		"dict_flip_block":    flip(withDict, segHeaderSize+16+stored+5),
		"dict_trunc_section": withDict[:segHeaderSize+16+stored/2],
		"dict_version_3":     flip(withDict, 11), // version 2 → 3: unknown

		"valid_one_record":   one,
		"valid_many_blocks":  many,
		"valid_no_fcs":       withoutContentSize(t, one),
		"trunc_last_byte":    many[:len(many)-1],
		"trunc_half":         many[:len(many)/2],
		"trunc_to_footer":    one[len(one)-segFooterSize:],
		"flip_block_byte":    flip(many, segHeaderSize+7),
		"flip_index_rawlen":  flip(many, idxOff+segEntrySize+13),
		"flip_footer_count":  flip(many, len(many)-segFooterSize+23),
		"flip_header_magic":  flip(one, 3),
		"flip_record_in_one": flip(one, segHeaderSize+20),
	}
}

// TestSegmentFuzzSeedsGenerated keeps the checked-in seed corpus what the
// generator makes of the current format; with ANKUSA_WRITE_FUZZ_SEEDS=1
// it rewrites the files instead (after a format change). Seeds added by
// hand (regressions found by fuzzing) are left alone.
func TestSegmentFuzzSeedsGenerated(t *testing.T) {
	seeds := segmentSeeds(t)
	sf := openSeed(t, buildSegment(t, 12, 512, 200))
	defer sf.Close()
	raw, err := sf.ReadBlock(0, fuzzDec, nil)
	if err != nil {
		t.Fatal(err)
	}
	files := map[[2]string][]byte{
		{"FuzzRecords", "valid_block"}: raw,
		{"FuzzRecords", "trunc_block"}: raw[:len(raw)-5],
	}
	for name, data := range seeds {
		files[[2]string{"FuzzSegmentReader", name}] = data
	}
	write := os.Getenv("ANKUSA_WRITE_FUZZ_SEEDS") != ""
	for k, data := range files {
		if write {
			writeCorpusFile(t, k[0], k[1], data)
			continue
		}
		if got := readCorpusFile(t, filepath.Join("testdata", "fuzz", k[0], k[1])); !bytes.Equal(got, data) {
			t.Errorf("testdata/fuzz/%s/%s differs from what the generator makes; rewrite with ANKUSA_WRITE_FUZZ_SEEDS=1 go test -run TestSegmentFuzzSeedsGenerated ./segment", k[0], k[1])
		}
	}
}

// TestSegmentFuzzSeeds keeps the checked-in seeds what their names say:
// "valid_" files open and verify, the others are refused.
func TestSegmentFuzzSeeds(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzSegmentReader")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, ent := range ents {
		data := readCorpusFile(t, filepath.Join(dir, ent.Name()))
		fs := vfs.NewMem()
		writeMemFile(t, fs, "seg", data)
		sf, err := segment.OpenFile(fs, "seg")
		if err == nil {
			err = sf.Verify(fuzzDec)
			sf.Close()
		}
		if valid := strings.HasPrefix(ent.Name(), "valid_"); valid != (err == nil) {
			t.Errorf("%s: open and verify: %v", ent.Name(), err)
		}
	}
}

func openSeed(t testing.TB, data []byte) *segment.File {
	fs := vfs.NewMem()
	writeMemFile(t, fs, "seg", data)
	sf, err := segment.OpenFile(fs, "seg")
	if err != nil {
		t.Fatal(err)
	}
	return sf
}

// writeCorpusFile writes data as testdata/fuzz/<target>/<name> in the
// format of go test -fuzz.
func writeCorpusFile(t *testing.T, target, name string, data []byte) {
	dir := filepath.Join("testdata", "fuzz", target)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	text := "go test fuzz v1\n[]byte(" + strconv.Quote(string(data)) + ")\n"
	if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
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
