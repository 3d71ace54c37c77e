package meta

import (
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"
)

// AuditRow is one operator action that changed what the node holds, kept
// for the record: who, what, on which tenant and entity. It never holds a
// body or a secret. Its key is AuditKey(At, n); value: JSON.
type AuditRow struct {
	At        time.Time `json:"at"`
	Principal string    `json:"principal"`
	Action    string    `json:"action"`
	Tenant    string    `json:"tenant,omitempty"`
	Entity    string    `json:"entity,omitempty"`
	Detail    string    `json:"detail,omitempty"`
	// SpecSHA256 is the hex SHA-256 of the entity's stored spec with its
	// secrets removed, after the change (empty for a removal).
	SpecSHA256 string `json:"spec_sha256,omitempty"`
	// Outcome is what came of the change ("ok").
	Outcome string `json:"outcome,omitempty"`
}

// auditN tells apart audit rows written in the same nanosecond.
var auditN atomic.Uint32

// AddAudit adds an audit row to the batch: it becomes durable with the
// change it records.
func (b *Batch) AddAudit(row AuditRow) error {
	v, err := json.Marshal(row)
	if err != nil {
		return fmt.Errorf("cannot encode audit row: %w", err)
	}
	b.set(AuditKey(row.At.UnixNano(), auditN.Add(1)), v)
	return nil
}

// Audit lists the audit rows from since on (the zero time: from the
// first), oldest first, at most limit.
func (s *Store) Audit(since time.Time, limit int) ([]AuditRow, error) {
	lo, hi := prefixRange(prefixAudit)
	if !since.IsZero() && since.Unix() > 0 {
		lo = AuditKey(since.UnixNano(), 0)
	}
	var out []AuditRow
	if limit <= 0 {
		return out, nil
	}
	err := s.scan("the audit log", lo, hi, func(k, v []byte) (bool, error) {
		var r AuditRow
		if err := json.Unmarshal(v, &r); err != nil {
			return true, fmt.Errorf("%w: audit row %x: %v", ErrBadRecord, k, err)
		}
		out = append(out, r)
		return len(out) >= limit, nil
	})
	return out, err
}
