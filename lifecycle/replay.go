package lifecycle

import (
	"errors"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/meta"
)

// Query selects events of the outbox for a replay.
type Query struct {
	// Tenant, when not "", keeps only that tenant's events (read from its
	// own range of the outbox).
	Tenant string
	// Type, when not "", keeps only events of that type; a type ending in
	// ".*" keeps every type under that prefix (io.ankusa.source.*).
	Type string
	// Since, when not zero, keeps only events written at or after it.
	Since time.Time
	// After, when not "", starts after that event id (a cursor: the id of
	// the last event a replay gave).
	After string
	// Limit is the most events one call gives (at least 1).
	Limit int
}

// ErrBadCursor: After is not the id of a lifecycle event.
var ErrBadCursor = errors.New("lifecycle: after is not a lifecycle event id")

// ParseEventID reads a lifecycle event id, as After takes it, and returns
// its outbox seq.
func ParseEventID(text string) (uint64, error) {
	id, err := envelope.ParseID([]byte(text))
	if err != nil {
		return 0, ErrBadCursor
	}
	seq, ok := meta.EventSeqOf(id)
	if !ok {
		return 0, ErrBadCursor
	}
	return seq, nil
}

// scanBudget bounds the events one replay call looks at when its filters
// skip most of them: it may then give fewer than Limit with a next.
const scanBudget = 10000

// Replay calls fn with each event q selects, in outbox order (the order
// the changes committed), in its CloudEvents JSON form, at most q.Limit;
// next is the After of the call that goes on ("" when the outbox holds no
// more). Only durable events are given. A replay resumes with After
// across restarts without gaps or repeats: ids never change and are never
// reused.
func (l *Lifecycle) Replay(q Query, fn func(event []byte) error) (next string, err error) {
	var after uint64
	if q.After != "" {
		if after, err = ParseEventID(q.After); err != nil {
			return "", err
		}
	}
	if q.Limit <= 0 {
		return "", nil
	}
	prefix, exact := "", q.Type
	if strings.HasSuffix(q.Type, ".*") {
		prefix, exact = strings.TrimSuffix(q.Type, "*"), ""
	}
	n, seen := 0, 0
	var last envelope.ID
	visit := func(ev *meta.EventRecord) (bool, error) {
		seen++
		last = ev.ID
		match := (exact == "" || ev.Type == exact) && (prefix == "" || strings.HasPrefix(ev.Type, prefix)) &&
			(q.Since.IsZero() || !ev.Time.Before(q.Since))
		if match {
			if err := fn(Render(ev, l.o.Node)); err != nil {
				return true, err
			}
			n++
		}
		return n >= q.Limit || seen >= scanBudget, nil
	}
	for {
		if q.Tenant != "" {
			err = l.o.Store.TenantEvents(q.Tenant, after, visit)
		} else {
			err = l.o.Store.Events(after, l.o.Store.EventsDurable(), visit)
		}
		// A stored event that does not decode is stepped over, as the
		// publisher does, so that a replay can pass it.
		var bad *meta.BadEventError
		if !errors.As(err, &bad) {
			break
		}
		l.o.Log.Error("a lifecycle event in the outbox does not decode; the replay steps over it", zap.Uint64("seq", bad.Seq), zap.Error(bad.Err))
		seen++
		after, last, err = bad.Seq, meta.EventID(time.Time{}, 0, bad.Seq), nil
		if n >= q.Limit || seen >= scanBudget {
			break
		}
	}
	if err != nil {
		return "", err
	}
	if n >= q.Limit || seen >= scanBudget {
		next = last.String()
	}
	return next, nil
}
