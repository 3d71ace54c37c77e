package meta

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"
)

// AuditRow is one operator action that changed what the node holds, kept
// for the record: who, what, on which tenant and entity, the hash of what
// was stored and how it went. It never holds a body or a secret. Its key
// is AuditKey(At, n); value: JSON.
type AuditRow struct {
	At        time.Time `json:"at"`
	Principal string    `json:"principal"`
	Action    string    `json:"action"`
	Tenant    string    `json:"tenant,omitempty"`
	Entity    string    `json:"entity,omitempty"`
	Detail    string    `json:"detail,omitempty"`
	// SpecSHA256 is the hex SHA-256 of the stored spec JSON with its
	// secrets removed (a rate-limit override's JSON, a source's), when
	// the action stored one.
	SpecSHA256 string `json:"spec_sha256,omitempty"`
	// Outcome is how the action went ("ok").
	Outcome string `json:"outcome,omitempty"`
	// Event is the change's lifecycle event, written with the row (in the
	// tenant's range of the outbox): every audit row has one.
	Event Event `json:"-"`
}

// auditN tells apart audit rows written in the same nanosecond.
var auditN atomic.Uint32

// AddAudit adds an audit row and its lifecycle event (row.Event, of
// row.Tenant) to the batch: both become durable with the change they
// record, in one synced commit (Commit).
func (b *Batch) AddAudit(row AuditRow) error {
	if err := b.addEvent(row.Tenant, row.Event); err != nil {
		return err
	}
	v, err := json.Marshal(row)
	if err != nil {
		return fmt.Errorf("cannot encode audit row: %w", err)
	}
	b.set(AuditKey(row.At.UnixNano(), auditN.Add(1)), v)
	return nil
}

// AuditQuery selects audit rows.
type AuditQuery struct {
	// Since (inclusive) and Until (exclusive) bound the rows' times; zero
	// is unbounded.
	Since, Until time.Time
	// Tenant, when not "", keeps only that tenant's rows.
	Tenant string
	// Cursor is a Next an earlier page returned ("": from the first).
	Cursor string
	// Limit is the most rows a page holds (at least 1).
	Limit int
}

// ErrBadAuditCursor: a cursor AuditPage did not hand out.
var ErrBadAuditCursor = errors.New("meta: malformed audit cursor")

// auditScanBudget bounds the rows one page looks at when a tenant filter
// skips most of them: a page may then end short, with a Next to go on.
const auditScanBudget = 10000

// AuditPage lists the rows q selects, oldest first, at most q.Limit; next
// is the cursor of the page after ("" at the end: the hex of the last key
// looked at). A page may hold fewer than q.Limit rows and still have a
// next (the tenant filter skipped many). A row that does not decode is
// ErrBadRecord, with the rows before it.
func (s *Store) AuditPage(q AuditQuery) (rows []AuditRow, next string, err error) {
	lo, hi := prefixRange(prefixAudit)
	if !q.Since.IsZero() && q.Since.Unix() > 0 {
		lo = AuditKey(auditNanos(q.Since), 0)
	}
	if !q.Until.IsZero() {
		hi = AuditKey(auditNanos(q.Until), 0)
	}
	if q.Cursor != "" {
		after, err := hex.DecodeString(q.Cursor)
		if err != nil || !bytes.HasPrefix(after, []byte(prefixAudit)) {
			return nil, "", ErrBadAuditCursor
		}
		if after = append(after, 0); bytes.Compare(after, lo) > 0 {
			lo = after
		}
	}
	rows = []AuditRow{}
	if q.Limit <= 0 || bytes.Compare(lo, hi) >= 0 {
		return rows, "", nil
	}
	seen := 0
	var last []byte
	err = s.scan("the audit log", lo, hi, func(k, v []byte) (bool, error) {
		var r AuditRow
		if err := json.Unmarshal(v, &r); err != nil {
			return true, fmt.Errorf("%w: audit row %x: %v", ErrBadRecord, k, err)
		}
		if q.Tenant == "" || r.Tenant == q.Tenant {
			rows = append(rows, r)
		}
		seen++
		last = append(last[:0], k...)
		return len(rows) >= q.Limit || seen >= auditScanBudget, nil
	})
	if err != nil {
		return rows, "", err // the rows before a damaged one
	}
	if last != nil && (len(rows) >= q.Limit || seen >= auditScanBudget) {
		next = hex.EncodeToString(last)
	}
	return rows, next, nil
}

// auditNanos is t in unix ns, clamped to what a key can hold (UnixNano
// is undefined outside 1678 to 2262).
func auditNanos(t time.Time) int64 {
	switch {
	case t.Unix() <= 0:
		return 0
	case t.Year() >= 2262:
		return math.MaxInt64
	}
	return t.UnixNano()
}

// Audit lists the audit rows from since on (the zero time: from the
// first), oldest first, at most limit.
func (s *Store) Audit(since time.Time, limit int) ([]AuditRow, error) {
	rows, _, err := s.AuditPage(AuditQuery{Since: since, Limit: limit})
	return rows, err
}
