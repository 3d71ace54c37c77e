package wal

import (
	"bytes"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/ankusa/ankusa/envelope"
)

// Meta is what the node's meta store records about the log outside it
// (package meta implements it): the numbering floors that outlive the WAL
// files behind them, and the mirror of the tenant ordinals.
type Meta interface {
	// WALCheckpoint is the floor written at a clean close (wal.type: disk)
	// or reserved ahead (wal.type: none).
	WALCheckpoint() (seq uint64, id envelope.ID, err error)
	// SetWALCheckpoint records a floor with a synced write.
	SetWALCheckpoint(seq uint64, id envelope.ID) error
	// WALClosed is the seq of the last hook at the log's last clean close
	// (wal.type: disk only): a synced lower bound of what the log must
	// hold, which recovery holds a damaged tail against.
	WALClosed() (uint64, error)
	// SetWALClosed records it with a synced write.
	SetWALClosed(seq uint64) error
	// CatalogueFloor is the last seq and event id the segment catalogue
	// holds: it outlives the WAL files sealed into it.
	CatalogueFloor() (seq uint64, id envelope.ID, err error)
	// DispatchCheckpoint is the seq up to which delivery rows are durable:
	// rows are keyed by seq, so no seq at or below it may be given again,
	// even after -wal-recovery=truncate cut the log.
	DispatchCheckpoint() (uint64, error)
	// Tenants is the mirror of every tenant ordinal.
	Tenants() (map[string]uint32, error)
	// SetTenant mirrors a new ordinal without a sync (the WAL's tenant
	// record is the durable one); SetTenantSynced with one (wal.type:
	// none, where no WAL record stands behind it).
	SetTenant(name string, ordinal uint32) error
	SetTenantSynced(name string, ordinal uint32) error
	// ErasedOrdinals is every ordinal an erased tenant's tombstone names
	// (ordinal → tenant): never given again, and never mapped back to its
	// name.
	ErasedOrdinals() (map[uint32]string, error)
}

// Floor is where numbering resumes: the highest seq and event id recorded
// anywhere outside the log, and the tenant ordinals the mirror knows
// (DESIGN.md §6 item 1). A nil m is a node with nothing outside the log.
type Floor struct {
	Seq     uint64
	ID      envelope.ID
	Tenants map[string]uint32
	// NextOrdinal, when above every ordinal of Tenants, is the next one
	// to give: an ordinal that was given once is never given again, even
	// when the name it was given to now holds another (the log's record
	// wins over the mirror's), nor once its tenant is erased.
	NextOrdinal uint32
	// Erased are the ordinals of erased tenants (ordinal → tenant): Open
	// maps no name to one of them, whatever the log's records say.
	Erased map[uint32]string
}

// ReadFloor reads the floor from every record m keeps: max(checkpoint,
// catalogue, dispatch checkpoint) for the seq, the highest of their ids;
// the mirror's tenant ordinals but the erased ones, and a next ordinal
// above every ordinal ever given, erased ones too (their mirror records
// went with the erase, so only the tombstones still name them).
func ReadFloor(m Meta) (Floor, error) {
	f := Floor{Tenants: map[string]uint32{}, Erased: map[uint32]string{}}
	if m == nil {
		return f, nil
	}
	var err error
	if f.Seq, f.ID, err = m.WALCheckpoint(); err != nil {
		return f, err
	}
	catSeq, catID, err := m.CatalogueFloor()
	if err != nil {
		return f, err
	}
	f.raise(catSeq, catID)
	dispSeq, err := m.DispatchCheckpoint()
	if err != nil {
		return f, err
	}
	f.raise(dispSeq, envelope.ID{})
	if f.Tenants, err = m.Tenants(); err != nil {
		return f, err
	}
	if f.Tenants == nil {
		f.Tenants = map[string]uint32{}
	}
	erased, err := m.ErasedOrdinals()
	if err != nil {
		return f, err
	}
	for ord, name := range erased {
		f.Erased[ord] = name
		f.NextOrdinal = max(f.NextOrdinal, ord+1)
	}
	for name, ord := range f.Tenants {
		if _, gone := f.Erased[ord]; gone {
			// A mirror record the erase's final batch should have taken
			// (it does, in the batch that writes the tombstone): the name
			// is free, its ordinal is not.
			delete(f.Tenants, name)
		}
	}
	return f, nil
}

// raise lifts the floor to seq and id where they are above it.
func (f *Floor) raise(seq uint64, id envelope.ID) {
	f.Seq = max(f.Seq, seq)
	if bytes.Compare(id[:], f.ID[:]) > 0 {
		f.ID = id
	}
}

// Numbers allocates identity (DESIGN.md §6 items 1 and 2): seqs, dense and
// monotonic; event ids, monotonic per node and above the floor even when
// the clock steps back; and tenant ordinals, from 1, never reused, at most
// MaxTenants of them. The commit loop owns one (wal.type: disk), and so
// does the direct commit step of wal.type: none: one implementation for
// both.
//
// Next, Tenant and AddTenant are for its owner, which serialises them;
// Ordinal, ForgetTenant, TenantCount and Last are safe for concurrent use.
type Numbers struct {
	node       uint16
	maxTenants int

	seq  uint64
	ids  *envelope.IDGen
	next atomic.Uint32 // the next tenant ordinal; only the owner moves it

	mu      sync.Mutex
	tenants map[string]uint32
	lastID  envelope.ID
	lastSeq atomic.Uint64
}

// NewNumbers returns an allocator for node that resumes above f.
// maxTenants caps the ordinals (0: no cap).
func NewNumbers(node uint16, f Floor, maxTenants int) *Numbers {
	n := &Numbers{node: node, maxTenants: maxTenants, seq: f.Seq, ids: envelope.NewIDGen(node, f.ID),
		tenants: make(map[string]uint32, len(f.Tenants)), lastID: f.ID}
	n.lastSeq.Store(f.Seq)
	next := uint32(1)
	for name, ord := range f.Tenants {
		n.tenants[name] = ord
		next = max(next, ord+1)
	}
	for ord := range f.Erased {
		next = max(next, ord+1)
	}
	n.next.Store(max(next, f.NextOrdinal))
	return n
}

// Next gives the next seq and its event id at nowMs (unix ms).
func (n *Numbers) Next(nowMs uint64) (uint64, envelope.ID) {
	n.seq++
	id := n.ids.Next(nowMs, n.seq)
	return n.seq, id
}

// Rewind makes seq the last one given: the seqs after it, given to a
// batch that was not written, are given again. Event ids are not taken
// back; the next ones stay above every id given.
func (n *Numbers) Rewind(seq uint64) {
	if seq > n.seq || seq < n.lastSeq.Load() {
		panic(fmt.Sprintf("BUG: wal: numbering rewound to seq %d, outside the published %d and the given %d", seq, n.lastSeq.Load(), n.seq))
	}
	n.seq = seq
}

// Publish makes seq and id, the last ones given and made durable, what
// Last reports.
func (n *Numbers) Publish(seq uint64, id envelope.ID) {
	n.mu.Lock()
	n.lastID = id
	n.mu.Unlock()
	n.lastSeq.Store(seq)
}

// LastSeq is the last published seq (the floor's before any).
func (n *Numbers) LastSeq() uint64 { return n.lastSeq.Load() }

// LastID is the last published event id (the floor's before any).
func (n *Numbers) LastID() envelope.ID {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.lastID
}

// Tenant returns the ordinal of the tenant called name; for a tenant
// without one, the ordinal it would get and isNew, or ErrTenantLimit when
// MaxTenants are taken. A new ordinal is taken only by AddTenant, once its
// owner has made the tenant durable with it (or will, in the same batch).
func (n *Numbers) Tenant(name []byte) (ord uint32, isNew bool, err error) {
	n.mu.Lock()
	o, ok := n.tenants[string(name)]
	n.mu.Unlock()
	if ok {
		return o, false, nil
	}
	next := n.next.Load()
	if n.maxTenants > 0 && int(next-1) >= n.maxTenants {
		return 0, false, ErrTenantLimit
	}
	return next, true, nil
}

// AddTenant takes ordinal ord, which Tenant offered, for name.
func (n *Numbers) AddTenant(name string, ord uint32) {
	if next := n.next.Load(); ord != next {
		panic(fmt.Sprintf("BUG: wal: tenant %q added with ordinal %d, the next is %d", name, ord, next))
	}
	n.next.Add(1)
	n.mu.Lock()
	n.tenants[name] = ord
	n.mu.Unlock()
}

// DropTenant gives back ord, the last ordinal AddTenant took, for name:
// the batch that would have made it durable was not written.
func (n *Numbers) DropTenant(name string, ord uint32) {
	if last := n.next.Load() - 1; ord != last {
		panic(fmt.Sprintf("BUG: wal: tenant %q dropped with ordinal %d, the last given is %d", name, ord, last))
	}
	n.next.Add(^uint32(0))
	n.mu.Lock()
	delete(n.tenants, name)
	n.mu.Unlock()
}

// Ordinal returns a tenant's ordinal, if it has one.
func (n *Numbers) Ordinal(tenant string) (uint32, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	o, ok := n.tenants[tenant]
	return o, ok
}

// ForgetTenant makes name stop naming ordinal ord (the tenant's erase):
// its next hook is a new tenant's, with a new ordinal. A name that names
// another ordinal by now keeps it. ord itself is never given again.
func (n *Numbers) ForgetTenant(name string, ord uint32) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if o, ok := n.tenants[name]; ok && o == ord {
		delete(n.tenants, name)
	}
}

// TenantCount is the number of ordinals ever given on this node, those of
// erased tenants included (ordinals are never reused, and tenants.max
// counts them all).
func (n *Numbers) TenantCount() int { return int(n.next.Load() - 1) }

// Full reports whether a new tenant would be refused (tenants.max).
func (n *Numbers) Full() bool {
	return n.maxTenants > 0 && n.TenantCount() >= n.maxTenants
}
