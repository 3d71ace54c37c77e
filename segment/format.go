package segment

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/ankusa/ankusa/envelope"
)

// Layout constants; see the package comment.
const (
	headerSize     = 16
	indexEntrySize = 48
	footerSize     = 112
	version        = 1 // a segment without a dictionary
	versionDict    = 2 // a segment whose blocks are compressed with its dictionary
	headerMagic    = "ANKUSASG"
	footerMagic    = "ANKUSASF"
	recordLenSize  = 4

	// MaxRawBlock bounds a block's raw length as read back: the largest
	// record the appliance accepts (limits.max_body_bytes is at most
	// 512 MiB, headers and metadata add little) fits.
	MaxRawBlock = 600 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func checksum(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

func crc32Update(crc uint32, b []byte) uint32 { return crc32.Update(crc, castagnoli, b) }

// ErrCorrupt is wrapped by every error about damaged segment bytes.
var ErrCorrupt = errors.New("segment: corrupt")

// CorruptError says where a segment is damaged.
type CorruptError struct {
	File   string
	Offset int64
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("segment %s: corrupt at offset %d: %s", e.File, e.Offset, e.Reason)
}

func (e *CorruptError) Unwrap() error { return ErrCorrupt }

// BlockInfo is one block index entry.
type BlockInfo struct {
	Offset   int64
	CompLen  uint32
	RawLen   uint32
	CRC      uint32
	Count    uint32
	FirstSeq uint64
	FirstID  envelope.ID
}

// Footer is what a segment's footer says about it.
type Footer struct {
	Version       uint32 // 1, or 2 when a dictionary follows the header
	IndexOffset   int64
	Blocks        uint32
	IndexCRC      uint32
	Count         uint64
	RawBytes      uint64
	FirstSeq      uint64
	LastSeq       uint64
	FirstID       envelope.ID
	LastID        envelope.ID
	MinReceivedAt int64
	MaxReceivedAt int64
}

func appendHeader(dst []byte, v uint32) []byte {
	dst = append(dst, headerMagic...)
	dst = binary.BigEndian.AppendUint32(dst, v)
	return binary.BigEndian.AppendUint32(dst, 0)
}

// checkHeader checks the file header and returns the format version.
func checkHeader(b []byte) (uint32, string) {
	if len(b) < headerSize {
		return 0, "file header is short"
	}
	v := binary.BigEndian.Uint32(b[8:12])
	switch {
	case string(b[:8]) != headerMagic:
		return 0, "bad file magic"
	case v != version && v != versionDict:
		return 0, fmt.Sprintf("unknown version %d", v)
	case binary.BigEndian.Uint32(b[12:16]) != 0:
		return 0, fmt.Sprintf("unknown flags %#x (reserved, zero in versions 1 and 2)", binary.BigEndian.Uint32(b[12:16]))
	}
	return v, ""
}

func (bi *BlockInfo) appendTo(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(bi.Offset))
	dst = binary.BigEndian.AppendUint32(dst, bi.CompLen)
	dst = binary.BigEndian.AppendUint32(dst, bi.RawLen)
	dst = binary.BigEndian.AppendUint32(dst, bi.CRC)
	dst = binary.BigEndian.AppendUint32(dst, bi.Count)
	dst = binary.BigEndian.AppendUint64(dst, bi.FirstSeq)
	return append(dst, bi.FirstID[:]...)
}

func decodeBlockInfo(b []byte) BlockInfo {
	bi := BlockInfo{
		Offset:   int64(binary.BigEndian.Uint64(b[0:])),
		CompLen:  binary.BigEndian.Uint32(b[8:]),
		RawLen:   binary.BigEndian.Uint32(b[12:]),
		CRC:      binary.BigEndian.Uint32(b[16:]),
		Count:    binary.BigEndian.Uint32(b[20:]),
		FirstSeq: binary.BigEndian.Uint64(b[24:]),
	}
	copy(bi.FirstID[:], b[32:48])
	return bi
}

// FileSize is the size of the segment file the footer ends: everything
// before the index, the index and the footer.
func (f *Footer) FileSize() int64 {
	return f.IndexOffset + int64(f.Blocks)*indexEntrySize + footerSize
}

func (f *Footer) appendTo(dst []byte) []byte {
	start := len(dst)
	dst = binary.BigEndian.AppendUint64(dst, uint64(f.IndexOffset))
	dst = binary.BigEndian.AppendUint32(dst, f.Blocks)
	dst = binary.BigEndian.AppendUint32(dst, f.IndexCRC)
	dst = binary.BigEndian.AppendUint64(dst, f.Count)
	dst = binary.BigEndian.AppendUint64(dst, f.RawBytes)
	dst = binary.BigEndian.AppendUint64(dst, f.FirstSeq)
	dst = binary.BigEndian.AppendUint64(dst, f.LastSeq)
	dst = append(dst, f.FirstID[:]...)
	dst = append(dst, f.LastID[:]...)
	dst = binary.BigEndian.AppendUint64(dst, uint64(f.MinReceivedAt))
	dst = binary.BigEndian.AppendUint64(dst, uint64(f.MaxReceivedAt))
	dst = binary.BigEndian.AppendUint32(dst, f.Version)
	dst = binary.BigEndian.AppendUint32(dst, checksum(dst[start:]))
	return append(dst, footerMagic...)
}

// decodeFooter checks and decodes the last footerSize bytes of a file of
// fileSize bytes whose header says version v and whose blocks start at
// start; the reason is empty when it holds.
func decodeFooter(b []byte, fileSize int64, v uint32, start int64) (Footer, string) {
	var f Footer
	if len(b) != footerSize {
		return f, "footer is short"
	}
	if string(b[104:112]) != footerMagic {
		return f, "bad footer magic (not a whole segment)"
	}
	if checksum(b[:100]) != binary.BigEndian.Uint32(b[100:104]) {
		return f, "footer checksum mismatch"
	}
	if fv := binary.BigEndian.Uint32(b[96:100]); fv != v {
		return f, fmt.Sprintf("footer version %d, the header says %d", fv, v)
	}
	f = Footer{
		Version:       v,
		IndexOffset:   int64(binary.BigEndian.Uint64(b[0:])),
		Blocks:        binary.BigEndian.Uint32(b[8:]),
		IndexCRC:      binary.BigEndian.Uint32(b[12:]),
		Count:         binary.BigEndian.Uint64(b[16:]),
		RawBytes:      binary.BigEndian.Uint64(b[24:]),
		FirstSeq:      binary.BigEndian.Uint64(b[32:]),
		LastSeq:       binary.BigEndian.Uint64(b[40:]),
		MinReceivedAt: int64(binary.BigEndian.Uint64(b[80:])),
		MaxReceivedAt: int64(binary.BigEndian.Uint64(b[88:])),
	}
	copy(f.FirstID[:], b[48:64])
	copy(f.LastID[:], b[64:80])
	// The footer's own checksum holds; what it says must still fit the file
	// (a footer written by a bug, or bytes that happen to check).
	switch {
	case f.IndexOffset < start || f.IndexOffset > fileSize-footerSize:
		return f, fmt.Sprintf("index offset %d outside the file", f.IndexOffset)
	case int64(f.Blocks)*indexEntrySize != fileSize-footerSize-f.IndexOffset:
		return f, fmt.Sprintf("%d blocks do not fill the index of %d bytes", f.Blocks, fileSize-footerSize-f.IndexOffset)
	case f.Count == 0 || f.Blocks == 0:
		return f, "empty segment"
	case f.LastSeq < f.FirstSeq || f.LastSeq-f.FirstSeq+1 != f.Count:
		return f, fmt.Sprintf("seqs %d..%d do not match the count %d", f.FirstSeq, f.LastSeq, f.Count)
	case bytes.Compare(f.LastID[:], f.FirstID[:]) < 0:
		return f, "last event id below the first"
	}
	return f, ""
}

// checkIndex checks the decoded index against the footer: blocks in file
// order from start (after the header and the dictionary), without
// overlap, before the index, seqs and ids ascending from the footer's
// first, counts adding up.
func checkIndex(idx []BlockInfo, f *Footer, start int64) string {
	next := start
	seq := f.FirstSeq
	var total uint64
	for i := range idx {
		b := &idx[i]
		switch {
		case b.Offset != next:
			return fmt.Sprintf("block %d at offset %d, want %d", i, b.Offset, next)
		case b.CompLen == 0 || b.Offset+int64(b.CompLen) > f.IndexOffset:
			return fmt.Sprintf("block %d of %d bytes runs past the index", i, b.CompLen)
		case b.RawLen > MaxRawBlock || b.Count == 0 || uint64(b.RawLen) < uint64(b.Count)*(recordLenSize+envelope.FixedSize):
			return fmt.Sprintf("block %d: raw length %d cannot hold %d records", i, b.RawLen, b.Count)
		case b.FirstSeq != seq:
			return fmt.Sprintf("block %d starts at seq %d, want %d", i, b.FirstSeq, seq)
		case i > 0 && bytes.Compare(b.FirstID[:], idx[i-1].FirstID[:]) <= 0:
			return fmt.Sprintf("block %d: event ids do not grow", i)
		}
		next = b.Offset + int64(b.CompLen)
		seq += uint64(b.Count)
		total += uint64(b.Count)
	}
	switch {
	case next != f.IndexOffset:
		return fmt.Sprintf("blocks end at %d, the index starts at %d", next, f.IndexOffset)
	case total != f.Count:
		return fmt.Sprintf("blocks hold %d records, the footer says %d", total, f.Count)
	case idx[0].FirstID != f.FirstID:
		return "first block's event id differs from the footer's"
	}
	return ""
}

// Records calls fn for each record payload of a decompressed block, in
// order. The payloads alias raw.
func Records(raw []byte, fn func(payload []byte) error) error {
	for len(raw) > 0 {
		if len(raw) < recordLenSize {
			return errors.New("record length is short")
		}
		n := binary.BigEndian.Uint32(raw)
		raw = raw[recordLenSize:]
		if uint64(n) > uint64(len(raw)) || n < envelope.FixedSize {
			return fmt.Errorf("record of %d bytes does not fit the block", n)
		}
		if raw[envelope.OffKind] != envelope.KindEnvelope {
			return fmt.Errorf("record kind %d", raw[envelope.OffKind])
		}
		if err := fn(raw[:n]); err != nil {
			return err
		}
		raw = raw[n:]
	}
	return nil
}
