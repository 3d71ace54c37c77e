package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"golang.org/x/sys/unix"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/internal/vfsutil"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/segment"
	"github.com/ankusa/ankusa/wal"
)

// measure seals the hooks -rounds times and fetches from the last
// round's segments.
func measure(ctx context.Context, o *options) (*report, error) {
	dir, err := os.MkdirTemp(o.tmp, "bench-segment-")
	if err != nil {
		return nil, fmt.Errorf("cannot create a directory for the segments (set -tmp): %w", err)
	}
	defer os.RemoveAll(dir)
	h, err := makeHooks(o.hooks, o.kind, o.sizes)
	if err != nil {
		return nil, err
	}
	rep := newReport(o, h)
	fmt.Println(rep.hooks)
	if o.corpus != "" {
		if rep.corpus, err = corpusRatios(ctx, o, dir); err != nil {
			return nil, err
		}
	}
	last, err := sealRounds(ctx, o, h, dir, &rep.seal)
	if err == nil {
		err = o.alone.Wait(ctx)
	}
	if err == nil {
		rep.fetch, err = storeFetch(last, sampleIDs(h, o.fetches), o.diskFetches)
	}
	rep.busy = o.alone.Busy
	return rep, err
}

// corpusResult is the corpus sealed held-out: its first tenth as the
// segment before, the rest measured, with and without a dictionary.
type corpusResult struct {
	hooks, warm int
	dict, plain sealed
	all         sealed // the whole corpus in one segment, no dictionary
	raw         int64
}

// corpusRatios seals the corpus three ways (see corpusResult).
func corpusRatios(ctx context.Context, o *options, dir string) (*corpusResult, error) {
	evs, err := loadCorpus(o.corpus)
	if err != nil {
		return nil, err
	}
	h := wrapCorpus(evs)
	r := &corpusResult{hooks: len(h.payloads), warm: len(h.payloads) / 10, raw: h.raw}
	for _, c := range []struct {
		into *sealed
		o    sealOptions
	}{
		{&r.all, sealOptions{cutBytes: segmentBytes}},
		{&r.plain, sealOptions{cutBytes: segmentBytes, warm: r.warm}},
		{&r.dict, sealOptions{cutBytes: segmentBytes, warm: r.warm, dict: true}},
	} {
		if err := o.alone.Wait(ctx); err != nil {
			return nil, err
		}
		d := filepath.Join(dir, "corpus")
		s, err := seal(d, h.payloads, c.o)
		removeAll(d)
		if err != nil {
			return nil, err
		}
		*c.into = s
	}
	fmt.Printf("corpus: %d hooks, held-out ratio %.2f without a dictionary, %.2f with\n", r.hooks,
		float64(r.plain.raw)/float64(r.plain.file), float64(r.dict.raw)/float64(r.dict.file))
	return r, nil
}

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
	file      int64 // segment file bytes: blocks, dictionary, index, footer
	blocks    int
	dicts     int // segments written with a dictionary
}

// sealOptions say where seal cuts segments and whether each segment
// leaves its dictionary to the next, as the store does
// (segment.dictionary).
type sealOptions struct {
	cutBytes int
	dict     bool
	// warm hooks are sealed first, as a segment of their own, and not
	// counted: the segment a running node sealed before, whose last
	// records are the next one's dictionary.
	warm int
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
		s, err := seal(filepath.Join(last, sealedDir), h.payloads, sealOptions{cutBytes: segmentBytes, dict: true})
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
// the store's sealer does: cut at o.cutBytes of records, each one written
// to a scratch file, fsynced, renamed to its segment name
// (segment.FileName), the directory fsynced, its last records the next
// one's dictionary when o.dict. Catalogue writes are not included.
func seal(dir string, payloads [][]byte, o sealOptions) (sealed, error) {
	var s sealed
	fs := vfs.Default
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return s, fmt.Errorf("cannot create %q: %w", dir, err)
	}
	enc, denc := segment.NewEncoder(), segment.NewDictEncoder()
	cpu0, start := cpuTime(), time.Now()
	var w *segment.Writer
	var dict []byte
	counted := o.warm == 0
	for i, p := range payloads {
		if w == nil {
			var err error
			if w, err = segment.CreateDict(fs, filepath.Join(dir, "sealing"), enc, denc, segment.DefaultBlockSize, dict); err != nil {
				return s, err
			}
		}
		if err := w.Append(p); err != nil {
			w.Abort()
			return s, err
		}
		if w.RawBytes() >= uint64(o.cutBytes) || i == len(payloads)-1 || i == o.warm-1 {
			if err := s.finish(fs, dir, w, counted); err != nil {
				return s, err
			}
			if dict = nil; o.dict {
				dict = w.NextDict()
			}
			w, counted = nil, i >= o.warm-1
		}
	}
	s.wall, s.cpu = time.Since(start), cpuTime()-cpu0
	return s, nil
}

// finish seals w; counted adds it to what s measured.
func (s *sealed) finish(fs vfs.FS, dir string, w *segment.Writer, counted bool) error {
	foot, err := w.Finish()
	if err != nil {
		w.Abort()
		return err
	}
	if counted {
		for _, b := range w.Blocks() {
			s.raw += int64(b.RawLen)
			s.comp += int64(b.CompLen)
		}
		s.blocks += len(w.Blocks())
		s.file += foot.FileSize()
		if d, _ := w.Dict(); d != nil {
			s.dicts++
		}
	}
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

// fetched are the fetch latencies: cold (no block cache), disk (the
// file's pages dropped too) and warm (every block cached).
type fetched struct {
	cold, disk, warm benchkit.Latency
}

// emptyLog is a WAL directory with nothing in it, as the store's Log: the
// store opened for the fetches serves the segments it adopted at Open and
// has nothing to tail.
type emptyLog struct{ dir string }

func (l emptyLog) Durable() wal.Position      { return wal.Position{} }
func (l emptyLog) Committed() <-chan struct{} { return nil }
func (l emptyLog) Dir() string                { return l.dir }
func (l emptyLog) FS() vfs.FS                 { return vfs.Default }

// openStore opens a segment store on dir/segments, its catalogue in
// dir/meta, and a block cache of cacheBytes (0: the default 64 MiB).
// close closes both.
func openStore(dir string, cacheBytes int64) (s *segment.Store, close func() error, err error) {
	logDir := filepath.Join(dir, "wal")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, nil, err
	}
	m, err := meta.Open(meta.Options{Dir: filepath.Join(dir, "meta"), FS: vfs.Default})
	if err != nil {
		return nil, nil, err
	}
	s, err = segment.Open(segment.Options{
		FS: vfs.Default, Dir: filepath.Join(dir, "segments"), Log: emptyLog{logDir}, Meta: m, CacheBytes: cacheBytes,
		Keeper: m, // as the node wires it; no retain_local and an empty log: nothing is removed
	})
	if err != nil {
		return nil, nil, errors.Join(err, m.Close())
	}
	return s, func() error { return errors.Join(s.Close(), m.Close()) }, nil
}

// adopt hands the segments sealed in dir/sealed to the store of dir the
// way a boot takes the whole segments a crash left uncatalogued: a store
// adopts at Open only the segment that follows its catalogue, and lists
// its directory in no particular order, so they go in one at a time, in
// seq order, each adopted by an Open of its own.
func adopt(dir string) error {
	names, err := filepath.Glob(filepath.Join(dir, sealedDir, "*.seg"))
	if err != nil {
		return err
	}
	slices.Sort(names) // zero-padded seqs: name order is seq order
	if err := os.MkdirAll(filepath.Join(dir, "segments"), 0o755); err != nil {
		return err
	}
	for _, name := range names {
		if err := os.Rename(name, filepath.Join(dir, "segments", filepath.Base(name))); err != nil {
			return err
		}
		_, closeStore, err := openStore(dir, 0)
		if err != nil {
			return fmt.Errorf("cannot adopt %s: %w", filepath.Base(name), err)
		}
		if err := closeStore(); err != nil {
			return err
		}
	}
	return nil
}

// storeFetch measures Store.Fetch of ids from the segments sealed in dir
// (dir/sealed, which it adopts first):
//   - cold: a store with no block cache (CacheBytes 1, where no block
//     fits), so that every fetch reads and decompresses its block, the
//     file's pages being in the page cache;
//   - disk: the same, with the files' pages dropped before each fetch
//     (posix_fadvise DONTNEED), so the block is read from the disk;
//   - warm: a store with the default cache, after one pass over the same
//     ids, so every block is in the cache.
func storeFetch(dir string, ids []envelope.ID, diskN int) (fetched, error) {
	var out fetched
	if err := adopt(dir); err != nil {
		return out, err
	}
	s, closeStore, err := openStore(dir, 1)
	if err != nil {
		return out, err
	}
	fetch := func(id envelope.ID) error { return fetchOne(s, id) }
	if out.cold, err = timeEach(ids, nil, fetch); err == nil {
		out.disk, err = diskFetch(filepath.Join(dir, "segments"), ids[:min(diskN, len(ids))], fetch)
	}
	if err = errors.Join(err, closeStore()); err != nil {
		return out, err
	}
	if s, closeStore, err = openStore(dir, 0); err != nil {
		return out, err
	}
	defer closeStore()
	if _, err := timeEach(ids, nil, fetch); err != nil {
		return out, err
	}
	out.warm, err = timeEach(ids, nil, fetch)
	return out, err
}

func fetchOne(s *segment.Store, id envelope.ID) error {
	e, err := s.Fetch(id)
	if err == nil && e.ID != id {
		err = fmt.Errorf("fetched %x for %x", e.ID, id)
	}
	return err
}

// diskFetch times fetch on each id with the pages of every segment file
// in dir dropped from the page cache first.
func diskFetch(dir string, ids []envelope.ID, fetch func(envelope.ID) error) (benchkit.Latency, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.seg"))
	if err != nil {
		return benchkit.Latency{}, err
	}
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	for _, name := range names {
		f, err := os.Open(name)
		if err != nil {
			return benchkit.Latency{}, err
		}
		files = append(files, f)
	}
	drop := func() error {
		for _, f := range files {
			if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
				return fmt.Errorf("cannot drop the pages of %q: %w", f.Name(), err)
			}
		}
		return nil
	}
	return timeEach(ids, drop, fetch)
}

// timeEach times fn on every id, calling before (untimed) first.
func timeEach(ids []envelope.ID, before func() error, fn func(envelope.ID) error) (benchkit.Latency, error) {
	d := make([]time.Duration, 0, len(ids))
	for _, id := range ids {
		if before != nil {
			if err := before(); err != nil {
				return benchkit.Latency{}, err
			}
		}
		start := time.Now()
		if err := fn(id); err != nil {
			return benchkit.Latency{}, err
		}
		d = append(d, time.Since(start))
	}
	return benchkit.Percentiles(d), nil
}
