package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"golang.org/x/sys/unix"

	"github.com/ankusa/ankusa/internal/vfsutil"
	"github.com/ankusa/ankusa/segment"
)

// segmentBytes cuts segments where the store does by default
// (segment.max_bytes).
const segmentBytes = 64 << 20

// sealedDir is where a round's segments are sealed, in its directory;
// adopt moves them into the store's.
const sealedDir = "sealed"

// sealed is what one pass of sealing the hooks into segment files took
// and made.
type sealed struct {
	files     []string
	wall, cpu time.Duration
	raw, comp int64 // record bytes in, block bytes out
	blocks    int
}

// sealResult is the median of the sealing rounds.
type sealResult struct {
	rounds   int
	mbs      float64 // MB/s of raw records, fsync included
	cpuPerMB time.Duration
	raw      int64
	comp     int64
	blocks   int
	segments int
}

func (s sealResult) ratio() float64 { return float64(s.raw) / float64(max(1, s.comp)) }

// sealRounds seals the hooks o.rounds times, each into a fresh directory
// under dir, and keeps the median speed and CPU cost in res. The last
// round's directory stays, for the fetches: it is returned.
func sealRounds(ctx context.Context, o *options, h *hooks, dir string, res *sealResult) (string, error) {
	var speeds []float64
	var cpus []time.Duration
	var last string
	for round := range o.rounds {
		if err := o.alone.Wait(ctx); err != nil {
			return "", err
		}
		if last != "" {
			removeAll(last)
		}
		last = filepath.Join(dir, fmt.Sprintf("round%d", round))
		s, err := seal(filepath.Join(last, sealedDir), h.payloads, segmentBytes)
		if err != nil {
			return "", err
		}
		speeds = append(speeds, float64(s.raw)/1e6/s.wall.Seconds())
		cpus = append(cpus, s.cpu/time.Duration(max(1, s.raw/1e6)))
		res.raw, res.comp, res.blocks, res.segments = s.raw, s.comp, s.blocks, len(s.files)
		fmt.Printf("round %d: sealed %.1f MB at %.0f MB/s\n", round+1, float64(s.raw)/1e6, speeds[round])
	}
	slices.Sort(speeds)
	slices.Sort(cpus)
	res.rounds, res.mbs, res.cpuPerMB = o.rounds, speeds[len(speeds)/2], cpus[len(cpus)/2]
	return last, nil
}

// seal writes payloads (seqs 1.. in order) into segment files in dir as
// the store's sealer does: cut at cutBytes of records, each one written
// to a scratch file, fsynced, renamed to its segment name
// (segment.FileName), the directory fsynced. Catalogue writes are not
// included.
func seal(dir string, payloads [][]byte, cutBytes int) (sealed, error) {
	var s sealed
	fs := vfs.Default
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return s, fmt.Errorf("cannot create %q: %w", dir, err)
	}
	enc := segment.NewEncoder()
	cpu0, start := cpuTime(), time.Now()
	var w *segment.Writer
	for i, p := range payloads {
		if w == nil {
			var err error
			if w, err = segment.Create(fs, filepath.Join(dir, "sealing"), enc, segment.DefaultBlockSize); err != nil {
				return s, err
			}
		}
		if err := w.Append(p); err != nil {
			w.Abort()
			return s, err
		}
		if w.RawBytes() >= uint64(cutBytes) || i == len(payloads)-1 {
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

func removeAll(dir string) {
	if err := os.RemoveAll(dir); err != nil {
		fmt.Fprintln(os.Stderr, "bench-segment:", err)
	}
}
