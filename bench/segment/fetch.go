package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/klauspost/compress/zstd"
	"golang.org/x/sys/unix"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/segment"
)

// latency is a distribution of fetch times.
type latency struct {
	p50, p99 time.Duration
	n        int
}

func percentiles(d []time.Duration) latency {
	if len(d) == 0 {
		return latency{}
	}
	slices.Sort(d)
	at := func(q float64) time.Duration { return d[min(len(d)-1, int(q*float64(len(d))))] }
	return latency{p50: at(0.50), p99: at(0.99), n: len(d)}
}

// fetched are the fetch latencies of one layout.
type fetched struct {
	cold, warm, disk latency
}

// sampleIDs draws n ids of the hooks at random (repeats allowed).
func sampleIDs(h *hooks, from, n int, seed uint64) []envelope.ID {
	r := rand.New(rand.NewPCG(seed, 3))
	ids := make([]envelope.ID, n)
	for i := range ids {
		ids[i] = h.envs[from+r.IntN(len(h.envs)-from)].ID
	}
	return ids
}

// storeFetch measures Store.Fetch on the node in dir, whose segments
// directory holds files the store adopts on its first open:
//   - cold: a store with no block cache (CacheBytes 1, where no block fits),
//     so that every fetch reads and decompresses its block, the file
//     pages being in the page cache;
//   - disk: the same, with the files' pages dropped before each fetch
//     (posix_fadvise DONTNEED), so the block is read from the disk;
//   - warm: a store with the default 64 MiB cache, after one pass over
//     the same ids, so every block is in the cache.
func storeFetch(dir string, files []string, ids []envelope.ID, diskN int) (fetched, error) {
	var out fetched
	n, err := openNode(dir, &segment.Options{CacheBytes: 1})
	if err != nil {
		return out, err
	}
	defer n.close()
	fetch := func(id envelope.ID) error {
		e, err := n.store.Fetch(id)
		if err == nil && e.ID != id {
			err = fmt.Errorf("fetched %x for %x", e.ID, id)
		}
		return err
	}
	if out.cold, err = timeEach(ids, nil, fetch); err != nil {
		return out, err
	}
	drop, closeAll, err := pageDropper(files)
	if err != nil {
		return out, err
	}
	out.disk, err = timeEach(ids[:min(diskN, len(ids))], drop, fetch)
	closeAll()
	if err != nil {
		return out, err
	}
	if err := n.closeStore(); err != nil {
		return out, err
	}
	if err := n.openStore(segment.Options{}); err != nil {
		return out, err
	}
	if _, err := timeEach(ids, nil, fetch); err != nil {
		return out, err
	}
	out.warm, err = timeEach(ids, nil, fetch)
	return out, err
}

// fileFetch measures the store's cold path without the store: find the
// file, its block (index search), read and decompress the block with dec,
// find the record, decode the envelope. It reads segments written with a
// dictionary, which the store's decoder cannot.
func fileFetch(files []string, ids []envelope.ID, dec *zstd.Decoder) (latency, error) {
	var segs []*segment.File
	defer func() {
		for _, f := range segs {
			f.Close()
		}
	}()
	for _, path := range files {
		f, err := segment.OpenFile(vfs.Default, path)
		if err != nil {
			return latency{}, err
		}
		segs = append(segs, f)
	}
	return timeEach(ids, nil, func(id envelope.ID) error {
		for _, f := range segs {
			if bytes.Compare(id[:], f.Footer.FirstID[:]) < 0 || bytes.Compare(id[:], f.Footer.LastID[:]) > 0 {
				continue
			}
			raw, err := f.ReadBlock(f.BlockForID(id), dec, nil)
			if err != nil {
				return err
			}
			p, ok, err := segment.FindInBlock(raw, id)
			if err != nil || !ok {
				return fmt.Errorf("id %x not in its block: %v", id, err)
			}
			var e envelope.Envelope
			_, err = envelope.Decode(p, &e)
			return err
		}
		return fmt.Errorf("id %x in no segment", id)
	})
}

// timeEach times fn on every id, calling before (untimed) first.
func timeEach(ids []envelope.ID, before func() error, fn func(envelope.ID) error) (latency, error) {
	d := make([]time.Duration, 0, len(ids))
	for _, id := range ids {
		if before != nil {
			if err := before(); err != nil {
				return latency{}, err
			}
		}
		start := time.Now()
		if err := fn(id); err != nil {
			return latency{}, err
		}
		d = append(d, time.Since(start))
	}
	return percentiles(d), nil
}

// pageDropper returns a function that drops the files' pages from the page
// cache, and one that closes them.
func pageDropper(paths []string) (drop func() error, closeAll func(), err error) {
	var fs []*os.File
	closeAll = func() {
		for _, f := range fs {
			f.Close()
		}
	}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		fs = append(fs, f)
	}
	drop = func() error {
		for _, f := range fs {
			if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
				return fmt.Errorf("cannot drop the pages of %q: %w", f.Name(), err)
			}
		}
		return nil
	}
	return drop, closeAll, nil
}
