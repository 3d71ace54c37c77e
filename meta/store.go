package meta

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/envelope"
)

// Options configure the store.
type Options struct {
	Dir string
	FS  vfs.FS
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

// Store is the node's meta store.
type Store struct {
	db *pebble.DB
	// catMu serialises read-modify-writes of catalogue entries (the
	// retention sweep marks removed, the archive marks archived).
	catMu sync.Mutex
}

type logger struct{ o *Options }

func (l logger) Infof(format string, args ...any)  { l.o.Logf(format, args...) }
func (l logger) Errorf(format string, args ...any) { l.o.Errorf(format, args...) }
func (l logger) Fatalf(format string, args ...any) {
	l.o.Fatalf(format, args...)
	panic(fmt.Sprintf("BUG: meta: Fatalf returned: "+format, args...))
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
	po := &pebble.Options{FS: o.FS, Logger: logger{&o}, Cache: cache}
	db, err := pebble.Open(o.Dir, po)
	if err != nil {
		return nil, fmt.Errorf("cannot open meta store %q: %w", o.Dir, err)
	}
	return &Store{db: db}, nil
}

// Close closes the store.
func (s *Store) Close() error { return s.db.Close() }

// DB is the underlying pebble database, for stages that own a key prefix.
func (s *Store) DB() *pebble.DB { return s.db }

// Node is the node's persisted identity.
type Node struct {
	Name      string    `json:"name"`
	Ordinal   uint16    `json:"ordinal"`
	CreatedAt time.Time `json:"created_at"`
}

// NodeIdentity returns the stored identity, if any.
func (s *Store) NodeIdentity() (Node, bool, error) {
	var n Node
	v, closer, err := s.db.Get([]byte(keyNode))
	if errors.Is(err, pebble.ErrNotFound) {
		return n, false, nil
	}
	if err != nil {
		return n, false, fmt.Errorf("cannot read node identity: %w", err)
	}
	defer closer.Close()
	if err := json.Unmarshal(v, &n); err != nil {
		return n, false, fmt.Errorf("cannot decode node identity %q: %w", v, err)
	}
	return n, true, nil
}

// SetNodeIdentity stores the identity, synced.
func (s *Store) SetNodeIdentity(n Node) error {
	b, _ := json.Marshal(n)
	if err := s.db.Set([]byte(keyNode), b, pebble.Sync); err != nil {
		return fmt.Errorf("cannot write node identity: %w", err)
	}
	return nil
}

// WALCheckpoint returns the stored numbering floor.
func (s *Store) WALCheckpoint() (seq uint64, id envelope.ID, err error) {
	v, closer, err := s.db.Get([]byte(keyWALCheckpoint))
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, id, nil
	}
	if err != nil {
		return 0, id, fmt.Errorf("cannot read wal checkpoint: %w", err)
	}
	defer closer.Close()
	if len(v) != 24 {
		return 0, id, fmt.Errorf("cannot decode wal checkpoint: %d bytes, want 24", len(v))
	}
	copy(id[:], v[:16])
	return binary.BigEndian.Uint64(v[16:]), id, nil
}

// SetWALCheckpoint stores the numbering floor, synced.
func (s *Store) SetWALCheckpoint(seq uint64, id envelope.ID) error {
	var v [24]byte
	copy(v[:16], id[:])
	binary.BigEndian.PutUint64(v[16:], seq)
	if err := s.db.Set([]byte(keyWALCheckpoint), v[:], pebble.Sync); err != nil {
		return fmt.Errorf("cannot write wal checkpoint: %w", err)
	}
	return nil
}

// SetTenant mirrors a tenant ordinal. It is not synced: the WAL's tenant
// record is the durable one and recovery replays it.
func (s *Store) SetTenant(name string, ordinal uint32) error {
	return s.setTenant(name, ordinal, pebble.NoSync)
}

// SetTenantSynced records a tenant ordinal with a synced write: with
// wal.type: none there is no WAL record behind it.
func (s *Store) SetTenantSynced(name string, ordinal uint32) error {
	return s.setTenant(name, ordinal, pebble.Sync)
}

func (s *Store) setTenant(name string, ordinal uint32, o *pebble.WriteOptions) error {
	var v [4]byte
	binary.BigEndian.PutUint32(v[:], ordinal)
	if err := s.db.Set(tenantKey(name), v[:], o); err != nil {
		return fmt.Errorf("cannot write tenant %q: %w", name, err)
	}
	return nil
}

// Tenants returns every mirrored tenant ordinal.
func (s *Store) Tenants() (map[string]uint32, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte(prefixTenant), UpperBound: []byte(prefixTenant[:1] + string(rune(prefixTenant[1]+1)))})
	if err != nil {
		return nil, fmt.Errorf("cannot list tenants: %w", err)
	}
	defer it.Close()
	out := map[string]uint32{}
	for ok := it.First(); ok; ok = it.Next() {
		v := it.Value()
		if len(v) != 4 {
			return nil, fmt.Errorf("cannot decode tenant %q: %d bytes, want 4", it.Key(), len(v))
		}
		out[string(it.Key()[len(prefixTenant):])] = binary.BigEndian.Uint32(v)
	}
	return out, it.Error()
}
