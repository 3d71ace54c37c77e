package wal

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/ankusa/ankusa/envelope"
)

// Frame layout constants.
const (
	FrameHeaderSize = 16
	fileHeaderSize  = 16
	fileMagic       = "ANKUSAWL"
	fileVersion     = 1
	// maxPayload bounds a record's declared length when scanning.
	maxPayload = 1 << 30
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Checksum is CRC-32C.
func Checksum(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// SealPayload finishes a record in buf (frame header space then payload) on
// the submitting goroutine: it writes the payload length and the payload's
// CRC. The identity prefix and the header CRC are the loop's.
func SealPayload(buf []byte) {
	payload := buf[FrameHeaderSize:]
	binary.BigEndian.PutUint32(buf[0:4], uint32(len(payload)))
	binary.BigEndian.PutUint32(buf[4:8], Checksum(payload[envelope.IdentSize:]))
}

// sealHeader writes the record's batch number and the header CRC, after
// the identity is written.
func sealHeader(buf []byte, batch uint32) {
	binary.BigEndian.PutUint32(buf[8:12], batch)
	c := crc32.Update(0, castagnoli, buf[0:12])
	c = crc32.Update(c, castagnoli, buf[FrameHeaderSize:FrameHeaderSize+envelope.IdentSize])
	binary.BigEndian.PutUint32(buf[12:16], c)
}

// headerValid reports whether b starts with a frame whose header CRC holds.
// It needs FrameHeaderSize+IdentSize bytes.
func headerValid(b []byte) (n uint32, ok bool) {
	if len(b) < FrameHeaderSize+envelope.IdentSize {
		return 0, false
	}
	n = binary.BigEndian.Uint32(b[0:4])
	if n < envelope.IdentSize || n > maxPayload {
		return 0, false
	}
	c := crc32.Update(0, castagnoli, b[0:12])
	c = crc32.Update(c, castagnoli, b[FrameHeaderSize:FrameHeaderSize+envelope.IdentSize])
	return n, c == binary.BigEndian.Uint32(b[12:16])
}

// appendFileHeader appends the 16-byte header every WAL file starts with.
func appendFileHeader(dst []byte) []byte {
	dst = append(dst, fileMagic...)
	dst = binary.BigEndian.AppendUint32(dst, fileVersion)
	return append(dst, 0, 0, 0, 0)
}

// frameBatch is the batch number of a frame whose header is valid.
func frameBatch(b []byte) uint32 { return binary.BigEndian.Uint32(b[8:12]) }

// Record is one record as read back from the log.
type Record struct {
	File   string
	Offset int64
	// Batch is the number of the commit batch that wrote the record.
	Batch   uint32
	Kind    byte
	Seq     uint64
	ID      envelope.ID
	Ordinal uint32
	// Payload is the whole payload (identity prefix included). It aliases the
	// reader's buffer and is valid only during the callback.
	Payload []byte
}

// TenantName is the tenant name of a tenant record.
func (r *Record) TenantName() []byte { return r.Payload[envelope.IdentSize:] }

// appendTenantRecord appends a whole, sealed tenant record frame.
func appendTenantRecord(dst []byte, ordinal uint32, name []byte, batch uint32) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, FrameHeaderSize+envelope.IdentSize)...)
	dst = append(dst, name...)
	rec := dst[start:]
	rec[FrameHeaderSize+envelope.OffKind] = envelope.KindTenant
	envelope.PutIdentity(rec[FrameHeaderSize:], 0, envelope.ID{}, ordinal)
	SealPayload(rec)
	sealHeader(rec, batch)
	return dst
}

// tenantOf reads the tenant id of an envelope payload without allocating.
func tenantOf(payload []byte) ([]byte, bool) {
	t, _, ok := envelope.Names(payload)
	return t, ok
}
