package meta

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// AuditRow is one operator action that changed what the node holds, kept
// for the record: who, what, on which tenant and entity. It never holds a
// body or a secret. Value: JSON.
type AuditRow struct {
	At        time.Time `json:"at"`
	Principal string    `json:"principal"`
	Action    string    `json:"action"`
	Tenant    string    `json:"tenant,omitempty"`
	Entity    string    `json:"entity,omitempty"`
	Detail    string    `json:"detail,omitempty"`
}

// auditN tells apart audit rows written in the same nanosecond.
var auditN atomic.Uint32

// AuditKey is the key of an audit row written at at (unix ns): au/<at u64><n u32>.
func AuditKey(at int64, n uint32) []byte {
	k := binary.BigEndian.AppendUint64([]byte(PrefixAudit), uint64(at))
	return binary.BigEndian.AppendUint32(k, n)
}

// AddAudit adds an audit row to b: it becomes durable with the change it
// records, in the same batch.
func AddAudit(b *pebble.Batch, row AuditRow) error {
	v, err := json.Marshal(row)
	if err != nil {
		return fmt.Errorf("cannot encode audit row: %w", err)
	}
	return b.Set(AuditKey(row.At.UnixNano(), auditN.Add(1)), v, nil)
}

// Audit lists the audit rows from since on (the zero time: from the
// first), oldest first, at most limit.
func (s *Store) Audit(since time.Time, limit int) ([]AuditRow, error) {
	lo := []byte(PrefixAudit)
	if !since.IsZero() && since.Unix() > 0 {
		lo = AuditKey(since.UnixNano(), 0)
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: upperBound(PrefixAudit)})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []AuditRow
	for ok := it.First(); ok && len(out) < limit; ok = it.Next() {
		var r AuditRow
		if err := json.Unmarshal(it.Value(), &r); err != nil {
			return out, fmt.Errorf("%w: audit row %x: %v", ErrBadRecord, it.Key(), err)
		}
		out = append(out, r)
	}
	return out, it.Error()
}
