package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/klauspost/compress/zstd"
	"golang.org/x/sys/unix"

	"github.com/ankusa/ankusa/internal/vfsutil"
	"github.com/ankusa/ankusa/segment"
)

// segmentBytes cuts segments where the store does by default
// (segment.max_bytes).
const segmentBytes = 64 << 20

// codec is one way of compressing blocks: a klauspost/compress level and
// an optional dictionary.
type codec struct {
	name  string
	level zstd.EncoderLevel
	dict  []byte
}

// encoder returns the encoder of c: the segment package's own for the
// format's codec, else the same options with c's level and dictionary.
func (c codec) encoder() (*zstd.Encoder, error) {
	if c.level == zstd.SpeedFastest && c.dict == nil {
		return segment.NewEncoder(), nil
	}
	opts := []zstd.EOption{zstd.WithEncoderLevel(c.level), zstd.WithEncoderConcurrency(1),
		zstd.WithEncoderCRC(false), zstd.WithZeroFrames(true)}
	if c.dict != nil {
		opts = append(opts, zstd.WithEncoderDict(c.dict))
	}
	return zstd.NewWriter(nil, opts...)
}

// decoder returns a decoder for blocks c wrote.
func (c codec) decoder() (*zstd.Decoder, error) {
	if c.dict == nil {
		return segment.NewDecoder(), nil
	}
	return zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(segment.MaxRawBlock),
		zstd.WithDecoderMaxWindow(segment.MaxRawBlock), zstd.WithDecoderDicts(c.dict))
}

// sealed is what one pass of sealing payloads into segment files took
// and made.
type sealed struct {
	files     []string
	wall, cpu time.Duration
	raw, comp int64 // record bytes in, block bytes out
	fileBytes int64
	blocks    int
}

// seal writes payloads (seqs first.. in order) into segment files in dir
// as the store's sealer does: cut at segmentBytes, each one written as
// "<first>.partial", fsynced, renamed to its final name, the directory
// fsynced. Catalogue writes are not included.
func seal(dir string, payloads [][]byte, enc *zstd.Encoder, blockSize int) (sealed, error) {
	var s sealed
	fs := vfs.Default
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return s, fmt.Errorf("cannot create %q: %w", dir, err)
	}
	cpu0, start := cpuTime(), time.Now()
	var w *segment.Writer
	for i, p := range payloads {
		if w == nil {
			var err error
			if w, err = segment.Create(fs, filepath.Join(dir, fmt.Sprintf("%020d.partial", i+1)), enc, blockSize); err != nil {
				return s, err
			}
		}
		if err := w.Append(p); err != nil {
			w.Abort()
			return s, err
		}
		if int64(w.RawBytes()) >= segmentBytes || i == len(payloads)-1 {
			if err := s.finish(fs, dir, w); err != nil {
				return s, err
			}
			w = nil
		}
	}
	s.wall, s.cpu = time.Since(start), cpuTime()-cpu0
	return s, nil
}

func (s *sealed) finish(fs vfs.FS, dir string, w *segment.Writer) error {
	foot, err := w.Finish()
	if err != nil {
		w.Abort()
		return err
	}
	for _, b := range w.Blocks() {
		s.raw += int64(b.RawLen)
		s.comp += int64(b.CompLen)
	}
	s.blocks += len(w.Blocks())
	final := filepath.Join(dir, segment.FileName(foot.FirstSeq, foot.LastSeq))
	if err := fs.Rename(w.Path(), final); err != nil {
		return fmt.Errorf("cannot rename segment %q: %w", w.Path(), err)
	}
	if err := vfsutil.SyncDir(fs, dir); err != nil {
		return err
	}
	st, err := os.Stat(final)
	if err != nil {
		return err
	}
	s.fileBytes += st.Size()
	s.files = append(s.files, final)
	return nil
}

// cpuTime is the CPU time (user and system) the process has used.
func cpuTime() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rawBlocks reads back every block of the segment files, decompressed: the
// same raw blocks for every codec at one block size.
func rawBlocks(files []string, dec *zstd.Decoder) ([][]byte, error) {
	var out [][]byte
	for _, path := range files {
		f, err := segment.OpenFile(vfs.Default, path)
		if err != nil {
			return nil, err
		}
		for i := range f.Index {
			raw, err := f.ReadBlock(i, dec, nil)
			if err != nil {
				f.Close()
				return nil, err
			}
			out = append(out, raw)
		}
		f.Close()
	}
	return out, nil
}
