package meta

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Options configure the store.
type Options struct {
	Dir string
	FS  vfs.FS
	// noCompactions turns pebble's automatic compactions off: a test that
	// counts what a flush wrote reads it before a compaction moves it.
	noCompactions bool
	// CacheBytes is pebble's block cache (default 64 MiB).
	CacheBytes int64
	// Logf receives pebble's informational messages, Errorf its errors
	// (default: Logf).
	Logf   func(format string, args ...any)
	Errorf func(format string, args ...any)
	// Fatalf is called for what pebble reports as fatal; it must not return
	// (DESIGN.md §6 item 8). The default panics, which still stops the node.
	Fatalf func(format string, args ...any)
}

// Store is the node's meta store. It is safe for concurrent use.
type Store struct {
	db *pebble.DB
	// catMu serialises read-modify-writes of catalogue entries (the
	// retention sweep marks removed, the archive marks archived).
	catMu sync.Mutex
	// ckpt is the dispatch checkpoint as last synced (checkpoint.go).
	ckpt atomic.Uint64
	// ob is the lifecycle outbox's committer (outbox.go).
	ob outbox
	// due remembers where each tenant's due index starts (duecursor.go).
	due dueCursors
}

// ErrBadRecord is a stored value that does not decode.
var ErrBadRecord = errors.New("meta: stored record does not decode")

// Durability is how a write commits.
type Durability bool

const (
	// NoSync: the write is in pebble's log, not yet on disk; a later
	// synced write makes it durable with itself (pebble syncs its log in
	// commit order).
	NoSync Durability = false
	// Sync: the write is on disk when Commit returns.
	Sync Durability = true
)

func (d Durability) opts() *pebble.WriteOptions {
	if d {
		return pebble.Sync
	}
	return pebble.NoSync
}

// Open opens (creating if needed) the store.
func Open(o Options) (*Store, error) {
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.Errorf == nil {
		o.Errorf = o.Logf
	}
	if o.Fatalf == nil {
		o.Fatalf = func(format string, args ...any) { panic(fmt.Sprintf("meta: fatal: "+format, args...)) }
	}
	if o.CacheBytes == 0 {
		o.CacheBytes = 64 << 20
	}
	// Delivery rows, their due index and the catalogue are read on every
	// retry: a block cache larger than pebble's 8 MiB default keeps them
	// off the disk.
	cache := pebble.NewCache(o.CacheBytes)
	defer cache.Unref()
	l := newLogger(&o)
	po := &pebble.Options{FS: o.FS, Logger: l, Cache: cache, EventListener: l.events(), Cleaner: removeCleaner{}}
	po.DisableAutomaticCompactions = o.noCompactions
	db, err := pebble.Open(o.Dir, po)
	if err != nil {
		return nil, fmt.Errorf("cannot open meta store %q: %w", o.Dir, err)
	}
	s := &Store{db: db}
	// A checkpoint that does not decode reads as 0 here, the value that
	// keeps everything; DispatchCheckpoint reports it to dispatch.
	if ckpt, err := s.DispatchCheckpoint(); err == nil {
		s.ckpt.Store(ckpt)
	}
	if err := s.openOutbox(); err != nil {
		_ = db.Close()
		return nil, err
	}
	return s, nil
}

// Close closes the store.
func (s *Store) Close() error { return s.db.Close() }

// removeCleaner removes pebble's obsolete files, as its default cleaner
// does (Clean and String are DeleteCleaner's, the shallower embedding),
// but also tells pebble not to recycle its log files (the marker method
// of ArchiveCleaner, which only the deeper embedding has): a recycled log
// keeps the bytes of old writes past where it is written again, and a
// secret stored in clear before secrets.kek was set must leave the files
// once a rewrap has sealed it (CompactSourceRecords).
type removeCleaner struct {
	pebble.DeleteCleaner
	noRecycle
}

type noRecycle struct{ pebble.ArchiveCleaner }

// CompactSourceRecords rewrites the stored and mirrored source records
// (src/, xs/) through a compaction, after flushing what is in memory: the
// older values of a rewritten record (secrets in clear, or sealed under
// a key since retired) leave the store's files, which a key that is still
// only shadowed does not.
func (s *Store) CompactSourceRecords() error {
	for _, p := range []string{prefixSource, prefixMirrorSource} {
		lo, hi := prefixRange(p)
		if err := s.db.Compact(context.Background(), lo, hi, false); err != nil {
			return fmt.Errorf("cannot compact the stored sources: %w", err)
		}
	}
	return nil
}

// keyBuf is a pooled key buffer for reads: pebble keeps the key of a Get
// until its closer is closed, so a buffer on the stack would escape.
type keyBuf struct{ b []byte }

var keyBufs = sync.Pool{New: func() any { return &keyBuf{b: make([]byte, 0, 128)} }}

// get reads key. found is false when it is absent; v is valid until c is
// closed.
func (s *Store) get(key []byte) (v []byte, c io.Closer, found bool, err error) {
	v, c, err = s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil, false, nil
	}
	if err != nil {
		return nil, nil, false, err
	}
	return v, c, true, nil
}

// getKey reads the key that spell appends to its argument (a pooled
// buffer) and hands its value to decode; found is false when the key is
// absent or its value does not decode. A read error is "cannot read
// what"; decode's error is returned as it is.
func (s *Store) getKey(what string, spell func(dst []byte) []byte, decode func(v []byte) error) (found bool, err error) {
	kb := keyBufs.Get().(*keyBuf)
	defer keyBufs.Put(kb)
	kb.b = spell(kb.b[:0])
	v, c, found, err := s.get(kb.b)
	if err != nil {
		return false, fmt.Errorf("cannot read %s: %w", what, err)
	}
	if !found {
		return false, nil
	}
	defer c.Close()
	if err := decode(v); err != nil {
		return false, err
	}
	return true, nil
}

// existsKey reports whether the key that spell appends to its argument (a
// pooled buffer) is in the store, whatever it holds.
func (s *Store) existsKey(what string, spell func(dst []byte) []byte) (bool, error) {
	return s.getKey(what, spell, func([]byte) error { return nil })
}

// scan calls fn with every key in [lo, hi) in order (nil bounds: the
// whole store) until fn says stop, and returns fn's error as it is. k and
// v are valid during the call; fn may write to the store (the scan sees
// the store as it was when it began). A read error is "cannot read what".
func (s *Store) scan(what string, lo, hi []byte, fn func(k, v []byte) (stop bool, err error)) error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return fmt.Errorf("cannot read %s: %w", what, err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		stop, err := fn(it.Key(), it.Value())
		if err != nil {
			it.Close()
			return err
		}
		if stop {
			break
		}
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return fmt.Errorf("cannot read %s: %w", what, err)
	}
	return nil
}

// set writes one key.
func (s *Store) set(key, v []byte, d Durability) error { return s.db.Set(key, v, d.opts()) }
