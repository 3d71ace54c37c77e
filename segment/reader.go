package segment

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"sort"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/klauspost/compress/zstd"

	"github.com/ankusa/ankusa/envelope"
)

// File is an open, sealed segment: its footer and index are read and
// checked; blocks are read on demand.
type File struct {
	Path   string
	Size   int64
	Footer Footer
	Index  []BlockInfo
	DictID uint32      // the dictionary's id (0: a version 1 segment)
	dict   []byte      // the dictionary its blocks are compressed with
	start  int64       // where the blocks begin: after the header and the dictionary
	r      io.ReaderAt // blocks are read through it
	f      vfs.File    // the local file, closed by Close (nil: remote)

	refs    int  // readers holding it (fileCache)
	evicted bool // out of the fileCache: closed when refs reaches 0
}

// OpenFile opens the segment at path and checks its header, footer and
// index. Damage is a *CorruptError.
func OpenFile(fs vfs.FS, path string) (*File, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot open segment %q: %w", path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("cannot stat segment %q: %w", path, err)
	}
	sf, err := OpenReaderAt(path, f, st.Size())
	if err != nil {
		f.Close()
		return nil, err
	}
	sf.f = f
	return sf, nil
}

// OpenReaderAt opens a segment of size bytes read through r (an archived
// one, read with ranged reads) and checks its header, footer and index.
// path names it in errors. Damage is a *CorruptError.
func OpenReaderAt(path string, r io.ReaderAt, size int64) (*File, error) {
	f := r
	corrupt := func(off int64, reason string) error {
		return &CorruptError{File: path, Offset: off, Reason: reason}
	}
	if size < headerSize+footerSize {
		return nil, corrupt(0, fmt.Sprintf("%d bytes is too short for a segment", size))
	}
	// The header and, in version 2, the dictionary section's header, in
	// one read (one request for an archived segment).
	var hdr [headerSize + dictHeaderSize]byte
	head := hdr[:min(int64(len(hdr)), size-footerSize)]
	if _, err := f.ReadAt(head, 0); err != nil {
		return nil, fmt.Errorf("cannot read segment %q: %w", path, err)
	}
	v, reason := checkHeader(head)
	if reason != "" {
		return nil, corrupt(0, reason)
	}
	var did uint32
	var dict []byte
	start := int64(headerSize)
	if v == versionDict {
		var err error
		did, dict, start, reason, err = readDictSection(f, size, head[headerSize:])
		if err != nil {
			return nil, fmt.Errorf("cannot read segment %q: %w", path, err)
		}
		if reason != "" {
			return nil, corrupt(headerSize, reason)
		}
	}
	var fb [footerSize]byte
	if _, err := f.ReadAt(fb[:], size-footerSize); err != nil {
		return nil, fmt.Errorf("cannot read segment %q: %w", path, err)
	}
	foot, reason := decodeFooter(fb[:], size, v, start)
	if reason != "" {
		return nil, corrupt(size-footerSize, reason)
	}
	// decodeFooter bounded the index by the file's size.
	raw := make([]byte, int(foot.Blocks)*indexEntrySize)
	if _, err := f.ReadAt(raw, foot.IndexOffset); err != nil {
		return nil, fmt.Errorf("cannot read segment %q: %w", path, err)
	}
	if checksum(raw) != foot.IndexCRC {
		return nil, corrupt(foot.IndexOffset, "block index checksum mismatch")
	}
	idx := make([]BlockInfo, foot.Blocks)
	for i := range idx {
		idx[i] = decodeBlockInfo(raw[i*indexEntrySize:])
	}
	if reason := checkIndex(idx, &foot, start); reason != "" {
		return nil, corrupt(foot.IndexOffset, reason)
	}
	return &File{Path: path, Size: size, Footer: foot, Index: idx, DictID: did, dict: dict, start: start, r: r}, nil
}

// Close closes the file.
func (s *File) Close() error {
	if s.f == nil {
		return nil
	}
	return s.f.Close()
}

// BlockForSeq is the index of the block that would hold seq.
func (s *File) BlockForSeq(seq uint64) int {
	return blockForSeq(s.Index, seq)
}

// BlockForID is the index of the block that would hold id.
func (s *File) BlockForID(id envelope.ID) int {
	return blockForID(s.Index, id)
}

func blockForSeq(idx []BlockInfo, seq uint64) int {
	i := sort.Search(len(idx), func(i int) bool { return idx[i].FirstSeq > seq })
	return max(i-1, 0)
}

func blockForID(idx []BlockInfo, id envelope.ID) int {
	i := sort.Search(len(idx), func(i int) bool { return bytes.Compare(idx[i].FirstID[:], id[:]) > 0 })
	return max(i-1, 0)
}

// ReadBlock reads block i, checks its CRC and decompresses it, appending
// the raw records to dst.
func (s *File) ReadBlock(i int, dec *Decoder, dst []byte) ([]byte, error) {
	return readBlock(s.Path, s.r, &s.Index[i], dec.forDict(s.DictID, s.dict), dst)
}

func readBlock(path string, f io.ReaderAt, b *BlockInfo, dec *zstd.Decoder, dst []byte) ([]byte, error) {
	comp := make([]byte, b.CompLen)
	if _, err := f.ReadAt(comp, b.Offset); err != nil {
		return dst, fmt.Errorf("cannot read segment %q: %w", path, err)
	}
	return decodeBlock(path, comp, b, dec, dst)
}

func decodeBlock(path string, comp []byte, b *BlockInfo, dec *zstd.Decoder, dst []byte) ([]byte, error) {
	corrupt := func(reason string) error { return &CorruptError{File: path, Offset: b.Offset, Reason: reason} }
	if checksum(comp) != b.CRC {
		return dst, corrupt("block checksum mismatch")
	}
	var h zstd.Header
	if err := h.Decode(comp); err != nil {
		return dst, corrupt("block is not a zstd frame: " + err.Error())
	}
	if h.HasFCS && h.FrameContentSize != uint64(b.RawLen) {
		return dst, corrupt(fmt.Sprintf("block declares %d raw bytes, the index %d", h.FrameContentSize, b.RawLen))
	}
	// Room up front for what the block usually decompresses to, never more
	// than a few times its compressed size: a damaged index claiming a huge
	// RawLen must not make a small file allocate it. DecodeAll grows dst
	// as the frame really decodes (zstd bounds that by its input), and the
	// length is checked after.
	start := len(dst)
	if want := min(int(b.RawLen), 8*len(comp)+64<<10); cap(dst)-start < want {
		dst = append(dst[:start:start], make([]byte, want)...)[:start]
	}
	out, err := dec.DecodeAll(comp, dst)
	if err != nil {
		return dst, corrupt("block does not decompress: " + err.Error())
	}
	if len(out)-start != int(b.RawLen) {
		return dst, corrupt(fmt.Sprintf("block decompressed to %d bytes, the index says %d", len(out)-start, b.RawLen))
	}
	return out, nil
}

// Verify reads every block and checks everything the index and footer say:
// checksums, record counts, dense seqs, growing ids and the received_at
// range. It is what boot runs before adopting a segment the catalogue
// lacks, and what `ankusa inspect segment` reports.
func (s *File) Verify(dec *Decoder) error {
	var raw []byte
	seq := s.Footer.FirstSeq
	var lastID envelope.ID
	minRecv, maxRecv := s.Footer.MinReceivedAt, s.Footer.MaxReceivedAt
	for i := range s.Index {
		b := &s.Index[i]
		var err error
		raw, err = s.ReadBlock(i, dec, raw[:0])
		if err != nil {
			return err
		}
		n := uint32(0)
		err = Records(raw, func(p []byte) error {
			_, pseq, id, _ := envelope.Identity(p)
			recv := int64(binary.BigEndian.Uint64(p[envelope.OffReceivedAt:]))
			switch {
			case pseq != seq:
				return fmt.Errorf("seq %d where %d was due", pseq, seq)
			case n == 0 && id != b.FirstID:
				return fmt.Errorf("first event id differs from the index")
			case seq > s.Footer.FirstSeq && bytes.Compare(id[:], lastID[:]) <= 0:
				return fmt.Errorf("event id of seq %d does not grow", pseq)
			case recv < minRecv || recv > maxRecv:
				return fmt.Errorf("received_at of seq %d outside the footer's range", pseq)
			}
			var e envelope.Envelope
			if _, err := envelope.Decode(p, &e); err != nil {
				return fmt.Errorf("seq %d: %w", pseq, err)
			}
			seq++
			n++
			lastID = id
			return nil
		})
		if err == nil && n != b.Count {
			err = fmt.Errorf("%d records where the index says %d", n, b.Count)
		}
		if err != nil {
			return &CorruptError{File: s.Path, Offset: b.Offset, Reason: fmt.Sprintf("block %d: %v", i, err)}
		}
	}
	if lastID != s.Footer.LastID {
		return &CorruptError{File: s.Path, Offset: s.Footer.IndexOffset, Reason: "last event id differs from the footer's"}
	}
	return nil
}

// FindInBlock returns the payload of the record with id in the raw block,
// aliasing raw.
func FindInBlock(raw []byte, id envelope.ID) ([]byte, bool, error) {
	var found []byte
	err := Records(raw, func(p []byte) error {
		if bytes.Equal(p[envelope.OffID:envelope.OffID+16], id[:]) {
			found = p
			return errStop
		}
		return nil
	})
	if err == errStop {
		return found, true, nil
	}
	return nil, false, err
}

// errStop ends a Records walk early.
var errStop = fmt.Errorf("stop")
