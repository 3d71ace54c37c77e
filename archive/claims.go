package archive

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/envelope"
)

// Errors of Claims.
var (
	// ErrUnknownStore: a claim names a store that is not under
	// claims.stores.
	ErrUnknownStore = errors.New("archive: no such claim store")
	// ErrClaimMismatch: the bytes a claim names do not have its SHA-256.
	ErrClaimMismatch = errors.New("archive: claimed bytes do not match the claim's sha256")
	// ErrClaimTooLong: a claim longer than any this node reads
	// (ClaimsOptions.MaxReadBytes): no body of this node is that long.
	ErrClaimTooLong = errors.New("archive: claim longer than any claimed body")
	// ErrClaimsClosed: Claim after Close.
	ErrClaimsClosed = errors.New("archive: claim stores are closed")
)

// ClaimsOptions open the claim stores of a node.
type ClaimsOptions struct {
	// Stores is claims.stores.
	Stores map[string]config.ClaimStore
	// Backends, when set, replaces the backend of the stores it names
	// (tests, tools); the others are opened from their spec.
	Backends map[string]Backend
	// Node is node.name: it names the packs this node writes, and
	// retention deletes those alone.
	Node string
	// OldestPending is the receipt time of the oldest hook the node still
	// has to deliver (or holds as a dead letter), ok false when there is
	// none: retention keeps every pack written since. nil: none.
	OldestPending func() (time.Time, bool)
	// MaxReadBytes bounds the length of a claim Read accepts (a reference
	// comes from outside); default the largest pack_bytes of the stores,
	// and at least 64 MiB.
	MaxReadBytes int64
	// MaxOpenBytes bounds the bytes held in open and uploading packs;
	// Claim waits for room past it. Default 4 x the largest pack_bytes,
	// at least 64 MiB.
	MaxOpenBytes int64
	// CacheEntries bounds the (store, event id) -> reference cache that
	// lets a retried delivery reuse the reference its first attempt made
	// (default 16384 entries, about 3 MiB).
	CacheEntries int
	// UploadTimeout bounds one pack's upload (default 2 minutes).
	UploadTimeout time.Duration
	Logger        *zap.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Claims are a node's claim stores (DESIGN.md §2.6): it keeps large
// bodies in packs, reads them back by reference, deletes a tenant's
// packs, and deletes the node's packs past their retention. All methods
// are safe for concurrent use.
type Claims struct {
	o      ClaimsOptions
	stores map[string]*claimStore
	room   *room
	cache  *refCache
	packN  atomic.Uint32
	wg     sync.WaitGroup // uploads

	mu     sync.Mutex
	closed bool
}

// claimStore is one store and its open packs.
type claimStore struct {
	name      string
	b         Backend
	layout    Layout
	packBytes int64
	packDelay time.Duration
	retain    time.Duration

	mu   sync.Mutex
	open map[packOwner]*pack
	// inPack are the bodies in open and uploading packs, by event id: a
	// second claim of a hook while its first is waiting (two sinks of one
	// source) waits on the same pack instead of packing the body again.
	inPack map[envelope.ID]packed
}

// packed is where a body waiting for its pack's upload is.
type packed struct {
	p      *pack
	tenant string
	off, n int64
}

// packOwner is whose bodies a pack holds.
type packOwner struct{ tenant, source string }

// OpenClaims opens every store of o.Stores. It does not contact them; see
// Check.
func OpenClaims(o ClaimsOptions) (*Claims, error) {
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Node == "" {
		return nil, errors.New("archive: claims: no node name")
	}
	if o.CacheEntries <= 0 {
		o.CacheEntries = 16384
	}
	if o.UploadTimeout <= 0 {
		o.UploadTimeout = 2 * time.Minute
	}
	c := &Claims{o: o, stores: make(map[string]*claimStore, len(o.Stores))}
	var largest int64
	for _, name := range slices.Sorted(maps.Keys(o.Stores)) {
		spec := o.Stores[name]
		b, layout, err := Open(spec.ArchiveSpec())
		if tb := o.Backends[name]; tb != nil {
			b, err = tb, nil
		}
		if err != nil {
			return nil, fmt.Errorf("claims.stores.%s: %w", name, err)
		}
		if b == nil {
			return nil, fmt.Errorf("claims.stores.%s.type: %q must be s3 or dir", name, spec.Type)
		}
		st := &claimStore{name: name, b: b, layout: layout, packBytes: int64(spec.PackBytes),
			packDelay: time.Duration(spec.PackDelay), retain: time.Duration(spec.Retain), open: map[packOwner]*pack{}, inPack: map[envelope.ID]packed{}}
		if st.packBytes <= 0 {
			st.packBytes = config.DefaultClaimPackBytes
		}
		if st.packDelay <= 0 {
			st.packDelay = config.DefaultClaimPackDelay
		}
		if st.retain <= 0 {
			st.retain = config.DefaultClaimRetain
		}
		largest = max(largest, st.packBytes)
		c.stores[name] = st
	}
	if c.o.MaxOpenBytes <= 0 {
		c.o.MaxOpenBytes = max(4*largest, 64<<20)
	}
	if c.o.MaxReadBytes <= 0 {
		c.o.MaxReadBytes = max(largest, 64<<20)
	}
	c.room = newRoom(c.o.MaxOpenBytes)
	c.cache = newRefCache(o.CacheEntries)
	return c, nil
}

// Check asks every s3 store whether its bucket is there, naming the store
// that fails (claims.stores.<name>).
func (c *Claims) Check(ctx context.Context) error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(c.stores)) {
		if s3, ok := c.stores[name].b.(*S3); ok {
			if err := s3.Check(ctx); err != nil {
				errs = append(errs, fmt.Errorf("claims.stores.%s: %w", name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Stores names the stores and their backends, for the log.
func (c *Claims) Stores() map[string]string {
	m := make(map[string]string, len(c.stores))
	for name, st := range c.stores {
		m[name] = st.b.String()
	}
	return m
}

// Claim puts e's body in a pack of the named store and returns its
// reference once the pack is uploaded, checked (the store verifies the
// pack's SHA-256 before it exists) and durable. Bodies of one (store,
// tenant, source) share a pack, closed at the store's pack_bytes or
// pack_delay after its first body. An upload failure fails every Claim
// waiting on the pack (a retry makes a new pack); ctx done returns
// ctx.Err() at once (the pack may still land). The body is copied: e is
// not kept.
func (c *Claims) Claim(ctx context.Context, store string, e *envelope.Envelope) (envelope.Claim, error) {
	st := c.stores[store]
	if st == nil {
		return envelope.Claim{}, fmt.Errorf("%w: %q", ErrUnknownStore, store)
	}
	if len(e.Body) == 0 {
		return envelope.Claim{}, errors.New("archive: an empty body cannot be claimed")
	}
	if ref, ok := c.cache.get(store, e.ID, e.TenantID); ok && ref.Length == int64(len(e.Body)) {
		// A retry reuses its hook's pack while the pack is there: a
		// pack deleted since (retention, a tenant's claims deleted) is
		// never named again; the body goes into a new one.
		_, err := st.b.Stat(ctx, ref.Key)
		switch {
		case err == nil:
			claimCacheHits.Inc()
			return ref, nil
		case errors.Is(err, ErrNotExist):
			c.cache.drop(store, e.ID)
		default:
			return envelope.Claim{}, fmt.Errorf("cannot check claim pack %s in claims.stores.%s (%s): %w", ref.Key, store, st.b, err)
		}
	}
	sum := sha256.Sum256(e.Body)
	n := int64(len(e.Body))
	p, off, ok := st.waiting(e, n)
	if !ok {
		if err := c.room.take(ctx, n); err != nil {
			return envelope.Claim{}, err
		}
		var (
			err    error
			joined bool
		)
		if p, off, joined, err = c.add(st, e, n); err != nil || joined {
			// Joined: a claim of the same hook packed it meanwhile.
			c.room.give(n)
		}
		if err != nil {
			return envelope.Claim{}, err
		}
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		return envelope.Claim{}, ctx.Err()
	}
	if p.err != nil {
		return envelope.Claim{}, p.err
	}
	ref := envelope.Claim{Store: store, Key: p.key, Offset: off, Length: n, SHA256: hex.EncodeToString(sum[:])}
	c.cache.put(store, e.ID, e.TenantID, ref)
	return ref, nil
}

// add appends e's body (n bytes, room taken) to the open pack of its
// tenant and source, opening one when there is none or the body does not
// fit, and returns the pack and the body's offset in it. joined: a claim
// of the same hook had packed it since the caller looked (waiting), and
// the body was not packed again: the caller gives its room back.
func (c *Claims) add(st *claimStore, e *envelope.Envelope, n int64) (p *pack, off int64, joined bool, err error) {
	c.mu.Lock()
	closed := c.closed
	if !closed {
		c.wg.Add(1) // the pack's upload, or undone below
	}
	c.mu.Unlock()
	if closed {
		return nil, 0, false, ErrClaimsClosed
	}
	owner := packOwner{e.TenantID, e.SourceID}
	st.mu.Lock()
	defer st.mu.Unlock()
	if w, ok := st.inPack[e.ID]; ok && w.tenant == e.TenantID && w.n == n {
		// Two sinks' claims of one hook at once: both looked before
		// either packed it; the second joins the first.
		c.wg.Done()
		return w.p, w.off, true, nil
	}
	p = st.open[owner]
	if p != nil && int64(len(p.buf))+n > st.packBytes {
		c.sealLocked(st, p)
		p = nil
	}
	if p == nil {
		p = c.newPackLocked(st, owner)
	} else {
		c.wg.Done() // the pack's upload is counted already
	}
	off = int64(len(p.buf))
	p.buf = append(p.buf, e.Body...)
	p.held += n
	p.ids = append(p.ids, e.ID)
	st.inPack[e.ID] = packed{p: p, tenant: e.TenantID, off: off, n: n}
	if int64(len(p.buf)) >= st.packBytes {
		c.sealLocked(st, p)
	}
	return p, off, false, nil
}

// waiting finds e's body in a pack not uploaded yet (a claim of the same
// hook is waiting on it).
func (st *claimStore) waiting(e *envelope.Envelope, n int64) (*pack, int64, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	w, ok := st.inPack[e.ID]
	if !ok || w.tenant != e.TenantID || w.n != n {
		return nil, 0, false
	}
	return w.p, w.off, true
}

// Close seals every open pack at once and waits for the uploads; Claim
// fails after it.
func (c *Claims) Close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	for _, st := range c.stores {
		st.mu.Lock()
		for _, p := range st.open {
			c.sealLocked(st, p)
		}
		st.mu.Unlock()
	}
	c.wg.Wait()
}
