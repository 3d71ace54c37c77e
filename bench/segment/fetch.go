package main

import (
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
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/segment"
	"github.com/ankusa/ankusa/wal"
)

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
