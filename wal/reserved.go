package wal

import (
	"fmt"
	"sync"
	"time"

	"github.com/ankusa/ankusa/envelope"
)

// Reserved is the numbering of wal.type: none (DESIGN.md §6 items 1 and
// 2 without a log): the same allocator as the commit loop (Numbers), made
// durable by synced records in the meta store where the log's records
// would have been.
//
//   - Seqs and ids are reserved ahead: before a number past the reserved
//     floor is given, a floor reserveSeqs seqs and reserveTime ahead (of
//     the clock, or of the last id where ids run ahead of it) is written,
//     synced, as the WAL checkpoint. After a crash numbering
//     resumes above it, so no seq or id is given twice however the clock
//     stands.
//   - A new tenant's ordinal is written, synced, to the tenant mirror
//     before its first number is given (with no WAL record behind it, the
//     mirror is the durable one); ordinals are never reused.
//   - Close records the last numbers given, so a clean restart resumes
//     right above them.
//
// Reserved is safe for concurrent use; Assign serialises.
type Reserved struct {
	m    Meta
	node uint16

	mu            sync.Mutex
	num           *Numbers
	resSeq, resMs uint64 // the reserved floor: numbers up to it need no write
}

// Numbers are reserved ahead in the meta store so that none is given twice
// after a crash: a synced floor every reserveSeqs hooks or reserveTime.
const (
	reserveSeqs = 4096
	reserveTime = time.Second
)

// OpenReserved starts numbering for node above what m recorded (the
// reserved floor after a crash, the last numbers after a clean stop).
// maxTenants caps the tenant ordinals (tenants.max; 0: no cap).
func OpenReserved(m Meta, node uint16, maxTenants int) (*Reserved, error) {
	f, err := ReadFloor(m)
	if err != nil {
		return nil, fmt.Errorf("cannot read the numbering floor: %w", err)
	}
	return &Reserved{m: m, node: node, num: NewNumbers(node, f, maxTenants)}, nil
}

// Assign gives a hook of tenant received at nowMs (unix ms) its seq,
// event id and tenant ordinal, each durable before it is returned: a
// caller may acknowledge the hook as soon as it is delivered. A new
// tenant past maxTenants is ErrTenantLimit; a failed meta write is
// returned and nothing is given.
func (r *Reserved) Assign(tenant string, nowMs uint64) (seq uint64, id envelope.ID, ord uint32, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ord, err = r.ordinal(tenant); err != nil {
		return 0, id, 0, err
	}
	// Ids never go back, so after a clock step back they run ahead of the
	// clock, at the last id's millisecond: the reservation counts from
	// whichever is later.
	ms := max(nowMs, r.num.LastID().Millis())
	if last := r.num.LastSeq(); last+1 > r.resSeq || ms >= r.resMs {
		// The floor is past every number given before the next
		// reservation: its id is reserveTime ahead of them.
		resSeq, resMs := last+reserveSeqs, ms+uint64(reserveTime.Milliseconds())
		if err := r.m.SetWALCheckpoint(resSeq, envelope.MakeID(resMs, r.node, resSeq)); err != nil {
			return 0, id, 0, err
		}
		r.resSeq, r.resMs = resSeq, resMs
	}
	seq, id = r.num.Next(nowMs)
	r.num.Publish(seq, id)
	return seq, id, ord, nil
}

// ordinal returns the tenant's ordinal, recording a new one with a synced
// write before it is taken. Under r.mu.
func (r *Reserved) ordinal(tenant string) (uint32, error) {
	o, isNew, err := r.num.Tenant([]byte(tenant))
	if err != nil || !isNew {
		return o, err
	}
	if err := r.m.SetTenantSynced(tenant, o); err != nil {
		return 0, err
	}
	r.num.AddTenant(tenant, o)
	return o, nil
}

// Ordinal returns a tenant's ordinal, if it has one.
func (r *Reserved) Ordinal(tenant string) (uint32, bool) { return r.num.Ordinal(tenant) }

// TenantsFull reports whether a new tenant would be refused (tenants.max).
func (r *Reserved) TenantsFull() bool { return r.num.Full() }

// ForgetTenant makes name stop naming ordinal ord, if it still does (the
// tenant's erase): its next hook is a new tenant's, with a new ordinal
// recorded as any new one. ord is never given again: the floor of the
// next boot is above it (ReadFloor reads the tombstones).
func (r *Reserved) ForgetTenant(name string, ord uint32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.num.ForgetTenant(name, ord)
}

// LastSeq is the last seq given.
func (r *Reserved) LastSeq() uint64 { return r.num.LastSeq() }

// Close records the last numbers given as the floor (a synced write).
func (r *Reserved) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.m.SetWALCheckpoint(r.num.LastSeq(), r.num.LastID())
}
