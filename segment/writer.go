package segment

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/klauspost/compress/zstd"

	"github.com/ankusa/ankusa/envelope"
)

// DefaultBlockSize is the raw size at which a block is cut.
const DefaultBlockSize = 256 << 10

// BytesPerSync is how much a segment being written may hold in the page
// cache beyond what it has asked the kernel to write out: every time
// this much more is written, the writer starts writeback of what lies
// more than 1 MiB behind (sync_file_range, which waits for nothing and
// promises nothing). Without it the seal's fsync flushes the whole
// segment at once, and a WAL fdatasync that arrives meanwhile waits
// behind megabytes of it: every hook committed in those milliseconds
// answers late. The seal's fsync is what makes the segment durable, as
// before; this only spreads the disk's work (RocksDB's and pebble's
// bytes_per_sync). See bench/RESULTS.md.
const BytesPerSync = 512 << 10

// NewEncoder returns the zstd encoder segments are written with. One
// encoder serves every writer (EncodeAll is safe for concurrent use).
func NewEncoder() *zstd.Encoder {
	enc, err := zstd.NewWriter(nil,
		zstd.WithEncoderLevel(zstd.SpeedFastest),
		zstd.WithEncoderConcurrency(1),
		zstd.WithEncoderCRC(false), // the index holds a CRC of every frame
		zstd.WithZeroFrames(true))
	if err != nil {
		panic("BUG: segment: zstd encoder options: " + err.Error())
	}
	return enc
}

// Writer writes one segment file. Records go in with Append, in seq order;
// Finish writes the index and the footer and syncs the file. A Writer
// belongs to one goroutine, but Block and Pending may be called under the
// owner's lock by readers of the open segment.
type Writer struct {
	fs        vfs.FS
	path      string
	f         vfs.File
	enc       *zstd.Encoder
	blockSize int
	dictID    uint32 // the dictionary's (0: none)
	dict      []byte // the dictionary blocks are compressed with (nil: none)

	raw      []byte // the block being filled
	prevRaw  []byte // the block written last: its buffer, swapped with raw
	olderLen int    // the length of the block before it, whose buffer raw reuses
	cur      BlockInfo
	comp     []byte
	index    []BlockInfo
	off      int64
	foot     Footer
	lastSeq  uint64
	lastID   envelope.ID
	finished bool
}

// Create creates the file at path (which must not exist) and writes its
// header. blockSize 0 means DefaultBlockSize.
func Create(fs vfs.FS, path string, enc *zstd.Encoder, blockSize int) (*Writer, error) {
	return CreateDict(fs, path, enc, nil, blockSize, nil)
}

// CreateDict is Create for a segment whose blocks are compressed with the
// dictionary dict (version 2, the dictionary stored after the header,
// compressed by enc), by de's encoder (nil: one made for this segment);
// a nil dict makes a version 1 segment, as Create. dict is the writer's
// from then on. Its length must be within [1 KiB, DictBytes].
func CreateDict(fs vfs.FS, path string, enc *zstd.Encoder, de *DictEncoder, blockSize int, dict []byte) (*Writer, error) {
	if blockSize <= 0 {
		blockSize = DefaultBlockSize
	}
	if dict != nil && (len(dict) < minDict || len(dict) > DictBytes) {
		return nil, fmt.Errorf("segment %s: a dictionary of %d bytes (%d to %d allowed)", path, len(dict), minDict, DictBytes)
	}
	f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, fmt.Errorf("cannot create segment %q: %w", path, err)
	}
	f = vfs.NewSyncingFile(f, vfs.SyncingFileOptions{BytesPerSync: BytesPerSync, NoSyncOnClose: true})
	w := &Writer{fs: fs, path: path, f: f, enc: enc, blockSize: blockSize}
	w.foot.Version = version
	head := appendHeader(nil, version)
	if dict != nil {
		w.foot.Version = versionDict
		head = appendDictSection(appendHeader(nil, versionDict), dict, enc)
		w.dict, w.dictID, w.enc = dict, dictID(dict), de.with(dict)
	}
	w.off = int64(len(head))
	if _, err := f.Write(head); err != nil {
		w.Abort()
		return nil, fmt.Errorf("cannot write segment %q: %w", path, err)
	}
	return w, nil
}

// Dict is the dictionary the blocks are compressed with, and its id (nil
// and 0 when there is none).
func (w *Writer) Dict() ([]byte, uint32) { return w.dict, w.dictID }

// NextDict is the dictionary this segment leaves for the next one, once
// Finish has returned: a copy of the tail of its last records (see
// dictTail), nil when the segment is too small to make one worth
// carrying.
func (w *Writer) NextDict() []byte {
	if !w.finished || w.foot.IndexOffset == 0 {
		return nil // not finished, or aborted
	}
	// Finish wrote the last block: prevRaw holds it, raw's buffer the one
	// before (untouched since).
	return dictTail(w.raw[:w.olderLen], w.prevRaw, w.foot.RawBytes)
}

// Path is the file being written.
func (w *Writer) Path() string { return w.path }

// Count is the number of records appended so far.
func (w *Writer) Count() uint64 { return w.foot.Count }

// RawBytes is the raw size of the records appended so far.
func (w *Writer) RawBytes() uint64 { return w.foot.RawBytes }

// FirstSeq and LastSeq bound what was appended (0 when nothing was).
func (w *Writer) FirstSeq() uint64 { return w.foot.FirstSeq }
func (w *Writer) LastSeq() uint64  { return w.lastSeq }

// LastID is the event id of the last record appended.
func (w *Writer) LastID() envelope.ID { return w.lastID }

// Append adds one envelope payload (binary form, identity prefix
// included). Seqs must follow each other and event ids grow.
func (w *Writer) Append(payload []byte) error {
	if len(payload) < envelope.FixedSize || payload[envelope.OffKind] != envelope.KindEnvelope {
		return fmt.Errorf("segment %s: not an envelope record", w.path)
	}
	_, seq, id, _ := envelope.Identity(payload)
	recv := int64(binary.BigEndian.Uint64(payload[envelope.OffReceivedAt:]))
	if w.foot.Count == 0 {
		w.foot.FirstSeq, w.foot.FirstID = seq, id
		w.foot.MinReceivedAt, w.foot.MaxReceivedAt = recv, recv
	} else {
		if seq != w.lastSeq+1 {
			return fmt.Errorf("segment %s: seq %d after %d (seqs must follow each other)", w.path, seq, w.lastSeq)
		}
		if bytes.Compare(id[:], w.lastID[:]) <= 0 {
			return fmt.Errorf("segment %s: event id of seq %d does not grow", w.path, seq)
		}
		w.foot.MinReceivedAt = min(w.foot.MinReceivedAt, recv)
		w.foot.MaxReceivedAt = max(w.foot.MaxReceivedAt, recv)
	}
	if w.cur.Count == 0 {
		w.cur.FirstSeq, w.cur.FirstID = seq, id
	}
	w.raw = binary.BigEndian.AppendUint32(w.raw, uint32(len(payload)))
	w.raw = append(w.raw, payload...)
	w.cur.Count++
	w.foot.Count++
	w.foot.RawBytes += uint64(recordLenSize + len(payload))
	w.lastSeq, w.lastID = seq, id
	w.foot.LastSeq, w.foot.LastID = seq, id
	if len(w.raw) >= w.blockSize {
		return w.flushBlock()
	}
	return nil
}

// flushBlock compresses the block being filled and writes it.
func (w *Writer) flushBlock() error {
	if w.cur.Count == 0 {
		return nil
	}
	w.comp = w.enc.EncodeAll(w.raw, w.comp[:0])
	b := w.cur
	b.Offset, b.CompLen, b.RawLen, b.CRC = w.off, uint32(len(w.comp)), uint32(len(w.raw)), checksum(w.comp)
	if _, err := w.f.Write(w.comp); err != nil {
		return fmt.Errorf("cannot write segment %q: %w", w.path, err)
	}
	w.off += int64(len(w.comp))
	w.index = append(w.index, b)
	// The written block's records stay in prevRaw until the next block is
	// written: with the last one they are the next segment's dictionary.
	w.olderLen = len(w.prevRaw)
	w.raw, w.prevRaw, w.cur = w.prevRaw[:0], w.raw, BlockInfo{}
	if cap(w.raw) > 2*w.blockSize+DictBytes {
		// The buffer came back from a block a large record made: let it
		// go rather than hold two such buffers (the next dictionary then
		// draws on the last block alone).
		w.raw, w.olderLen = nil, 0
	}
	return nil
}

// Blocks is the index of the blocks written so far; the slice is the
// writer's and changes with the next Append.
func (w *Writer) Blocks() []BlockInfo { return w.index }

// Pending is the raw records of the block not written yet; it aliases the
// writer's buffer.
func (w *Writer) Pending() []byte { return w.raw }

// File is the file being written, for reading back written blocks.
func (w *Writer) File() vfs.File { return w.f }

// Finish writes the last block, the index and the footer, syncs the file
// and closes it. The caller renames it and syncs the directory.
func (w *Writer) Finish() (Footer, error) {
	if w.foot.Count == 0 {
		return Footer{}, fmt.Errorf("segment %s: nothing to seal", w.path)
	}
	if err := w.flushBlock(); err != nil {
		return Footer{}, err
	}
	idx := make([]byte, 0, len(w.index)*indexEntrySize+footerSize)
	for i := range w.index {
		idx = w.index[i].appendTo(idx)
	}
	w.foot.IndexOffset = w.off
	w.foot.Blocks = uint32(len(w.index))
	w.foot.IndexCRC = checksum(idx)
	idx = w.foot.appendTo(idx)
	if _, err := w.f.Write(idx); err != nil {
		return Footer{}, fmt.Errorf("cannot write segment %q: %w", w.path, err)
	}
	if err := w.f.Sync(); err != nil {
		return Footer{}, fmt.Errorf("cannot fsync segment %q: %w", w.path, err)
	}
	if err := w.f.Close(); err != nil {
		return Footer{}, fmt.Errorf("cannot close segment %q: %w", w.path, err)
	}
	w.finished = true
	return w.foot, nil
}

// Abort closes and removes an unfinished file.
func (w *Writer) Abort() {
	if w.finished {
		return
	}
	w.finished = true
	_ = w.f.Close()
	_ = w.fs.Remove(w.path)
}
