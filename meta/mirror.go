package meta

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
)

// The redis source store's local copies (source_store: redis): the last
// mirror of the shared store this node applied, so a later boot can
// serve while Redis is down, and the changes it sent to Redis whose audit
// row is not written yet.

// MirrorState is how far the local mirror follows the shared store: its
// namespace, the store's epoch (a random id the namespace got when it was
// first used) and the store version every entity of the mirror is at.
type MirrorState struct {
	Namespace string `json:"namespace"`
	Epoch     string `json:"epoch"`
	Version   uint64 `json:"version"`
}

// MirrorKind tells the mirror's sources from its routes.
type MirrorKind uint8

// The kinds of mirrored entity.
const (
	MirrorSource MirrorKind = iota
	MirrorRoute
)

func mirrorPrefix(kind MirrorKind) string {
	if kind == MirrorRoute {
		return prefixMirrorRoute
	}
	return prefixMirrorSource
}

// PutMirrored adds the write of a mirrored entity of tenant (a source by
// its name, a route by its id) at the shared store's version.
func (b *Batch) PutMirrored(kind MirrorKind, tenant, name string, version uint64, record []byte) {
	v := make([]byte, 8, 8+len(record))
	binary.BigEndian.PutUint64(v, version)
	b.set(entityKey(mirrorPrefix(kind), tenant, name), append(v, record...))
}

// DeleteMirrored adds the removal of a mirrored entity.
func (b *Batch) DeleteMirrored(kind MirrorKind, tenant, name string) {
	b.del(entityKey(mirrorPrefix(kind), tenant, name))
}

// ClearMirror adds the removal of every mirrored entity and of the
// mirror's state (the shared store changed epoch: the mirror is rebuilt).
func (b *Batch) ClearMirror() {
	for _, p := range []string{prefixMirrorSource, prefixMirrorRoute} {
		lo, hi := prefixRange(p)
		_ = b.b.DeleteRange(lo, hi, nil)
	}
	b.del([]byte(keyMirrorState))
}

// SetMirrorState adds the mirror's state to the batch: written in the
// batch of the entities it describes.
func (b *Batch) SetMirrorState(st MirrorState) {
	v, err := json.Marshal(st)
	if err != nil {
		panic("BUG: meta: cannot encode the mirror state: " + err.Error())
	}
	b.set([]byte(keyMirrorState), v)
}

// Mirror returns the local mirror's state; found is false when the node
// never mirrored a shared store.
func (s *Store) Mirror() (st MirrorState, found bool, err error) {
	found, err = s.getKey("the source store mirror's state", func(dst []byte) []byte { return append(dst, keyMirrorState...) }, func(v []byte) error {
		if err := json.Unmarshal(v, &st); err != nil {
			return fmt.Errorf("the source store mirror's state does not decode: %v", err)
		}
		return nil
	})
	return st, found, err
}

// Mirrored calls fn with every mirrored entity of kind, by tenant then
// name. A value too short to hold its version stops it, naming the key.
// record is valid only during the call.
func (s *Store) Mirrored(kind MirrorKind, fn func(tenant, name string, version uint64, record []byte) error) error {
	p := mirrorPrefix(kind)
	lo, hi := prefixRange(p)
	return s.scan("the source store mirror", lo, hi, func(k, v []byte) (bool, error) {
		tenant, name, ok := parseEntityKey(p, k)
		if !ok || len(v) < 8 {
			return true, fmt.Errorf("the source store mirror holds a damaged entry %q", k)
		}
		return false, fn(tenant, name, binary.BigEndian.Uint64(v), v[8:])
	})
}

// PendingChange is a change a writable shared store is sending: its audit
// row and lifecycle event, kept until the store says whether the change
// happened (then the row is added) or not (then it is dropped).
type PendingChange struct {
	ID    string   `json:"id"`
	Audit AuditRow `json:"audit"`
	Event struct {
		Type    string          `json:"type"`
		Subject string          `json:"subject"`
		Data    json.RawMessage `json:"data"`
	} `json:"event"`
}

// NewPendingChange is the pending change id of row (with its event).
func NewPendingChange(id string, row AuditRow) PendingChange {
	pc := PendingChange{ID: id, Audit: row}
	pc.Event.Type, pc.Event.Subject, pc.Event.Data = row.Event.Type, row.Event.Subject, row.Event.Data
	return pc
}

// Row is the change's audit row with its event.
func (pc *PendingChange) Row() AuditRow {
	row := pc.Audit
	row.Event = Event{Type: pc.Event.Type, Subject: pc.Event.Subject, Data: pc.Event.Data}
	return row
}

// PutPendingChange adds a pending change to the batch.
func (b *Batch) PutPendingChange(pc PendingChange) {
	v, err := json.Marshal(pc)
	if err != nil {
		panic("BUG: meta: cannot encode a pending change: " + err.Error())
	}
	b.set(append([]byte(prefixPendingChange), pc.ID...), v)
}

// DeletePendingChange adds the removal of a pending change.
func (b *Batch) DeletePendingChange(id string) { b.del(append([]byte(prefixPendingChange), id...)) }

// PendingChanges calls fn with every pending change, by id. One that does
// not decode stops it, naming its id.
func (s *Store) PendingChanges(fn func(pc PendingChange) error) error {
	lo, hi := prefixRange(prefixPendingChange)
	return s.scan("the pending source store changes", lo, hi, func(k, v []byte) (bool, error) {
		var pc PendingChange
		if err := json.Unmarshal(v, &pc); err != nil {
			return true, fmt.Errorf("pending source store change %q does not decode: %v", k[len(prefixPendingChange):], err)
		}
		return false, fn(pc)
	})
}
