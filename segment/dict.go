package segment

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// A segment of version 2 carries the dictionary its blocks are compressed
// with, right after the header (see the package comment): a segment is
// read with nothing but its own bytes, wherever it is (local, archived,
// restored, replayed with no node running), and the dictionary goes when
// the segment goes.
//
// The dictionary is raw content (zstd's "raw content" dictionary: history
// that every block's matches may point into), not a trained one: the tail
// of the records of the segment sealed just before, which holds the same
// sources' and event types' recent hooks. On the checked-in corpus
// (make bench-segment) a 256 KiB tail takes 256 KiB blocks from 6.69:1
// to 8.35:1 for less sealing CPU; a 128 KiB one makes 8.04, and
// dictionaries trained by zstd's builder did worse (bench/RESULTS.md).
const (
	// DictBytes is the most a segment's dictionary holds.
	DictBytes = 256 << 10
	// dictShare bounds a dictionary by the segment it comes from: at most
	// 1/dictShare of its raw bytes, so a small segment (little traffic)
	// does not carry a dictionary worth more than its blocks save.
	dictShare = 16
	// minDict is the smallest dictionary worth writing.
	minDict = 1 << 10
	// maxDictStored bounds the stored (compressed) dictionary a reader
	// accepts: zstd never expands content by more than a little.
	maxDictStored = DictBytes + DictBytes/8 + 1<<10

	dictHeaderSize = 16
	// dictIDBase keeps dictionary ids out of the ranges the zstd format
	// reserves (below 32768 and from 2^31).
	dictIDBase  = 1 << 15
	dictIDRange = 1<<31 - dictIDBase
)

// dictID is the id the block frames of a segment name its dictionary by:
// derived from its content, so a reader checks the content it loaded is
// the one the frames were written with.
func dictID(content []byte) uint32 {
	return dictIDBase + checksum(content)%dictIDRange
}

// appendDictSection appends the dictionary section for content, stored
// compressed by enc (an encoder without a dictionary).
func appendDictSection(dst, content []byte, enc *zstd.Encoder) []byte {
	start := len(dst)
	dst = binary.BigEndian.AppendUint32(dst, dictID(content))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(content)))
	dst = binary.BigEndian.AppendUint32(dst, 0) // stored length, below
	dst = binary.BigEndian.AppendUint32(dst, 0) // checksum, below
	dst = enc.EncodeAll(content, dst)
	stored := dst[start+dictHeaderSize:]
	binary.BigEndian.PutUint32(dst[start+8:], uint32(len(stored)))
	crc := crc32Update(checksum(dst[start:start+12]), stored)
	binary.BigEndian.PutUint32(dst[start+12:], crc)
	return dst
}

// readDictSection reads the dictionary section at headerSize of a version 2
// segment of size bytes, whose first bytes (up to dictHeaderSize, as far
// as the file holds them) the caller read into h: the dictionary's id and
// content, and the offset its blocks start at. The reason is empty when
// the section holds; err is a failure to read.
func readDictSection(r io.ReaderAt, size int64, h []byte) (id uint32, content []byte, start int64, reason string, err error) {
	if size < headerSize+dictHeaderSize+footerSize || len(h) < dictHeaderSize {
		return 0, nil, 0, "too short for a dictionary section", nil
	}
	id = binary.BigEndian.Uint32(h[0:])
	rawLen := binary.BigEndian.Uint32(h[4:])
	stored := binary.BigEndian.Uint32(h[8:])
	start = headerSize + dictHeaderSize + int64(stored)
	switch {
	case rawLen < minDict || rawLen > DictBytes:
		return 0, nil, 0, fmt.Sprintf("dictionary of %d bytes (%d to %d allowed)", rawLen, minDict, DictBytes), nil
	case stored == 0 || stored > maxDictStored || start > size-footerSize:
		return 0, nil, 0, fmt.Sprintf("stored dictionary of %d bytes does not fit the file", stored), nil
	}
	buf := make([]byte, stored)
	if _, err := r.ReadAt(buf, headerSize+dictHeaderSize); err != nil {
		return 0, nil, 0, "", err
	}
	if crc32Update(checksum(h[:12]), buf) != binary.BigEndian.Uint32(h[12:]) {
		return 0, nil, 0, "dictionary checksum mismatch", nil
	}
	// Room for what the section says, never more than its stored bytes
	// can stand for: DecodeAll grows it as the frame really decodes.
	content, derr := plainDecoder().DecodeAll(buf, make([]byte, 0, min(int(rawLen), 8*len(buf)+1<<10)))
	switch {
	case derr != nil:
		return 0, nil, 0, "dictionary does not decompress: " + derr.Error(), nil
	case len(content) != int(rawLen):
		return 0, nil, 0, fmt.Sprintf("dictionary decompressed to %d bytes, the section says %d", len(content), rawLen), nil
	case dictID(content) != id:
		return 0, nil, 0, fmt.Sprintf("dictionary id %d does not match its content (%d)", id, dictID(content)), nil
	}
	return id, content, start, "", nil
}

var (
	plainOnce sync.Once
	plainDec  *zstd.Decoder
)

// plainDecoder decodes dictionary sections: small frames without a
// dictionary, bounded by maxDictStored.
func plainDecoder() *zstd.Decoder {
	plainOnce.Do(func() {
		var err error
		plainDec, err = zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(0),
			zstd.WithDecoderMaxMemory(DictBytes),
			zstd.WithDecoderMaxWindow(DictBytes))
		if err != nil {
			panic("BUG: segment: zstd decoder options: " + err.Error())
		}
	})
	return plainDec
}

// DictEncoder keeps the zstd encoder of version 2 segments from one
// segment to the next: making one allocates several MiB of tables, and a
// node begins a segment a second at full rate. It serves one writer at a
// time (the store's sealer: a segment is finished or aborted before the
// next one begins).
type DictEncoder struct{ enc *zstd.Encoder }

// NewDictEncoder returns an empty DictEncoder.
func NewDictEncoder() *DictEncoder { return &DictEncoder{} }

// with returns the encoder set to compress with content (a nil
// DictEncoder makes a new one). Its tables are rebuilt for every new
// content (klauspost keys them by the dictionary it was given, not by
// id).
func (d *DictEncoder) with(content []byte) *zstd.Encoder {
	if d == nil {
		return newDictEncoder(content)
	}
	if d.enc == nil {
		d.enc = newDictEncoder(content)
		return d.enc
	}
	if err := d.enc.ResetWithOptions(nil, zstd.WithEncoderDictRaw(dictID(content), content)); err != nil {
		panic("BUG: segment: zstd encoder dictionary: " + err.Error())
	}
	return d.enc
}

// newDictEncoder is NewEncoder's encoder with content as its dictionary.
func newDictEncoder(content []byte) *zstd.Encoder {
	enc, err := zstd.NewWriter(nil,
		zstd.WithEncoderLevel(zstd.SpeedFastest),
		zstd.WithEncoderConcurrency(1),
		zstd.WithEncoderCRC(false),
		zstd.WithZeroFrames(true),
		zstd.WithEncoderDictRaw(dictID(content), content))
	if err != nil {
		panic("BUG: segment: zstd encoder options: " + err.Error())
	}
	return enc
}

// Dict is the dictionary the blocks are compressed with (nil for a
// version 1 segment); the slice is the File's.
func (s *File) Dict() []byte { return s.dict }

// BlocksStart is the offset of the first block: after the header, and
// after the dictionary section in a version 2 segment.
func (s *File) BlocksStart() int64 { return s.start }

// Decoder decompresses blocks: those without a dictionary with one zstd
// decoder, those of a version 2 segment with a decoder made for that
// segment's dictionary, of which it keeps the few used last. It is safe
// for concurrent use.
type Decoder struct {
	plain *zstd.Decoder

	mu    sync.Mutex
	dicts []*dictDecoder // most recently used first
}

type dictDecoder struct {
	id      uint32
	content []byte
	dec     *zstd.Decoder
}

// dictDecoders is how many dictionaries' decoders a Decoder keeps: every
// segment has a dictionary of its own, and reads go mostly to the newest
// few.
const dictDecoders = 8

// NewDecoder returns the decoder segments are read with.
func NewDecoder() *Decoder {
	return &Decoder{plain: newZstdDecoder(runtime.GOMAXPROCS(0))}
}

// newZstdDecoder returns a decoder that decodes up to concurrent blocks
// at once.
func newZstdDecoder(concurrent int, opts ...zstd.DOption) *zstd.Decoder {
	opts = append([]zstd.DOption{
		zstd.WithDecoderConcurrency(concurrent),
		zstd.WithDecoderMaxMemory(MaxRawBlock),
		zstd.WithDecoderMaxWindow(MaxRawBlock)}, opts...)
	dec, err := zstd.NewReader(nil, opts...)
	if err != nil {
		panic("BUG: segment: zstd decoder options: " + err.Error())
	}
	return dec
}

// Close releases the decoders; the Decoder must not be used after.
func (d *Decoder) Close() {
	d.plain.Close()
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, dd := range d.dicts {
		dd.dec.Close()
	}
	d.dicts = nil
}

// forDict returns the zstd decoder for a block compressed with the
// dictionary content of id (none when content is nil).
func (d *Decoder) forDict(id uint32, content []byte) *zstd.Decoder {
	if content == nil {
		return d.plain
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, dd := range d.dicts {
		if dd.id != id || len(dd.content) != len(content) {
			continue
		}
		if &dd.content[0] != &content[0] {
			if !bytes.Equal(dd.content, content) {
				continue
			}
			// The same dictionary from another copy (the open segment's
			// writer, then its sealed File, or a File opened again): the
			// next read through this copy compares no bytes.
			dd.content = content
		}
		copy(d.dicts[1:i+1], d.dicts[:i])
		d.dicts[0] = dd
		return dd.dec
	}
	// An evicted decoder is dropped, not closed: a read may still be
	// decoding with it, and a decoder used only through DecodeAll holds
	// no goroutine. At most 4 blocks decode at once per dictionary: each
	// decoding holds a window of history, and a Decoder keeps
	// dictDecoders of them.
	dd := &dictDecoder{id: id, content: content,
		dec: newZstdDecoder(min(runtime.GOMAXPROCS(0), 4), zstd.WithDecoderDictRaw(id, content))}
	if len(d.dicts) < dictDecoders {
		d.dicts = append(d.dicts, nil)
	}
	copy(d.dicts[1:], d.dicts[:len(d.dicts)-1])
	d.dicts[0] = dd
	return dd.dec
}

// dictTail is the dictionary a segment of rawBytes whose last written
// blocks are prev and last leaves for the next one: the last
// min(DictBytes, rawBytes/dictShare) bytes of its records (at most those
// two blocks: all of them at the default block size), copied; nil when
// that is under minDict.
func dictTail(prev, last []byte, rawBytes uint64) []byte {
	n := min(int(min(uint64(DictBytes), rawBytes/dictShare)), len(prev)+len(last))
	if n < minDict {
		return nil
	}
	out := make([]byte, n)
	k := copy(out[max(n-len(last), 0):], last[max(len(last)-n, 0):])
	copy(out[:n-k], prev[len(prev)-(n-k):])
	return out
}
