package meta

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/cockroachdb/pebble/v2"

	"github.com/ankusa/ankusa/envelope"
)

// The lifecycle outbox (DESIGN.md §2.10): every operator change writes its
// audit row and its lifecycle event in its own synced batch, so there is
// never an event without its change nor a change without its event.
//
// An event's number (its outbox seq) is allocated when its batch commits,
// in commit order: outbox batches go through one committer at a time
// (commitEvents), which numbers the events of every batch queued behind it,
// merges the batches into one and commits that with one sync. A reader that
// follows the outbox in seq order (the publisher) therefore never sees an
// event appear behind one it has passed, and it reads only up to the last
// seq whose sync returned (EventsDurable).

// Event is the lifecycle event of one change, as its writer gives it with
// the change's audit row (AuditRow.Event): the tenant and the time come
// from the store (the audit row's tenant; the commit's time).
type Event struct {
	// Type is "io.ankusa.<entity>.<verb>" (EventType).
	Type string
	// Subject is the entity's name or id.
	Subject string
	// Data is the entity as stored with every secret redacted (JSON); nil
	// is null.
	Data json.RawMessage
}

// EventType is the type of an event of entity (source, route, rate_limit,
// tenant, delivery, quarantine) and verb (created, updated, deleted...).
func EventType(entity, verb string) string { return "io.ankusa." + entity + "." + verb }

// EventRecord is one event of the outbox as stored.
type EventRecord struct {
	// Seq is the event's place in the node's outbox: dense, from 1, in
	// commit order.
	Seq uint64 `json:"-"`
	// ID is the event's id: EventID(Time, node ordinal, Seq).
	ID      envelope.ID     `json:"-"`
	Time    time.Time       `json:"time"`
	Tenant  string          `json:"tenant"`
	Type    string          `json:"type"`
	Subject string          `json:"subject"`
	Data    json.RawMessage `json:"data"`
}

type eventValue struct {
	ID string `json:"id"`
	EventRecord
}

// eventSeqBit marks an event id's sequence part: hook ids hold a WAL seq
// there, which never reaches 2^63, so no lifecycle event id is ever a
// hook's id.
const eventSeqBit = 1 << 63

// EventID is the id of the outbox's event seq committed at t on node: an
// event id (envelope.ID: 48-bit ms, node ordinal, 64 bits), strictly
// increasing with seq, whose text form is that of hook ids.
func EventID(t time.Time, node uint16, seq uint64) envelope.ID {
	return envelope.MakeID(uint64(max(t.UnixMilli(), 0)), node, seq|eventSeqBit)
}

// EventSeqOf is the outbox seq of a lifecycle event id; ok is false for an
// id that is not one (a hook's).
func EventSeqOf(id envelope.ID) (seq uint64, ok bool) {
	s := id.Seq()
	return s &^ eventSeqBit, s&eventSeqBit != 0
}

// outbox is the store's side of the lifecycle outbox.
type outbox struct {
	node uint16

	mu      sync.Mutex
	queue   []*outboxWaiter
	leading bool
	last    uint64    // the last seq allocated (committed, or being committed by the leader)
	lastAt  time.Time // its time: event times never go back
	durable atomic.Uint64
	// wake is closed and replaced at every commit of events.
	wake chan struct{}
}

type outboxWaiter struct {
	b    *Batch
	done chan error
}

// errLead hands the committer's role to a waiter.
var errLead = errors.New("meta: lead")

// Outbox metrics: events written (committed) and swept.
var (
	eventsWritten = metrics.NewCounter(`ankusa_lifecycle_events_written_total`)
	eventsSwept   = metrics.NewCounter(`ankusa_lifecycle_events_swept_total`)
)

// openOutbox reads where the outbox stands: the last seq allocated is the
// larger of the persisted floor and the last event's.
func (s *Store) openOutbox() error {
	s.ob.wake = make(chan struct{})
	var last uint64
	var lastAt time.Time
	_, err := s.getKey("the lifecycle outbox's floor", func(dst []byte) []byte { return append(dst, keyEventLast...) }, func(v []byte) error {
		if len(v) != 16 {
			return fmt.Errorf("%w: %s holds %d bytes, not 16", ErrBadRecord, keyEventLast, len(v))
		}
		last, lastAt = binary.BigEndian.Uint64(v), time.Unix(0, int64(binary.BigEndian.Uint64(v[8:])))
		return nil
	})
	if err != nil {
		return err
	}
	lo, hi := prefixRange(prefixEventSeq)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return fmt.Errorf("cannot read the lifecycle outbox: %w", err)
	}
	if it.Last() {
		seq, at, _, ok := parseEventSeqEntry(it.Key(), it.Value())
		if !ok {
			it.Close()
			return fmt.Errorf("%w: lifecycle outbox index entry %x", ErrBadRecord, it.Key())
		}
		if seq > last {
			last, lastAt = seq, at
		}
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return fmt.Errorf("cannot read the lifecycle outbox: %w", err)
	}
	s.ob.last, s.ob.lastAt = last, lastAt
	s.ob.durable.Store(last)
	return nil
}

// SetEventNode sets the node ordinal of the lifecycle event ids the store
// numbers from now on (EventID); the node calls it once it has claimed
// its identity, before any change is written.
func (s *Store) SetEventNode(ord uint16) {
	s.ob.mu.Lock()
	s.ob.node = ord
	s.ob.mu.Unlock()
}

// EventsDurable is the seq of the last event whose batch is durable: the
// outbox holds every event from the oldest kept up to it, and no event
// above it is visible to a reader that stops there.
func (s *Store) EventsDurable() uint64 { return s.ob.durable.Load() }

// EventsWake returns a channel closed when the next batch of events is
// durable.
func (s *Store) EventsWake() <-chan struct{} {
	s.ob.mu.Lock()
	defer s.ob.mu.Unlock()
	return s.ob.wake
}

// commitEvents commits b, which holds events, through the outbox's
// committer: b waits in the queue; the first writer to find no committer
// becomes it, and commits the whole queue as one synced batch, numbering
// the events in queue order; then it hands the role to the first writer
// that queued meanwhile.
func (s *Store) commitEvents(b *Batch) error {
	w := &outboxWaiter{b: b, done: make(chan error, 1)}
	s.ob.mu.Lock()
	s.ob.queue = append(s.ob.queue, w)
	lead := !s.ob.leading
	s.ob.leading = true
	s.ob.mu.Unlock()
	if !lead {
		if err := <-w.done; err != errLead {
			return err
		}
	}
	s.ob.mu.Lock()
	group := s.ob.queue
	s.ob.queue = nil
	s.ob.mu.Unlock()
	s.commitGroup(group)
	s.ob.mu.Lock()
	if len(s.ob.queue) == 0 {
		s.ob.leading = false
	} else {
		s.ob.queue[0].done <- errLead
	}
	s.ob.mu.Unlock()
	return <-w.done
}

// commitGroup numbers the events of the group's batches, merges the
// batches into one with the outbox's floor, commits it synced and tells
// every writer how it went.
func (s *Store) commitGroup(group []*outboxWaiter) {
	s.ob.mu.Lock()
	last, lastAt, node := s.ob.last, s.ob.lastAt, s.ob.node
	s.ob.mu.Unlock()
	g := s.db.NewBatch()
	defer g.Close()
	var err error
	n := 0
	for _, w := range group {
		for i := range w.b.events {
			last++
			at := time.Now().UTC()
			if at.Before(lastAt) {
				at = lastAt
			}
			lastAt = at
			if err = w.b.writeEvent(&w.b.events[i], last, at, node); err != nil {
				break
			}
			n++
		}
		if err == nil {
			err = g.Apply(w.b.b, nil)
		}
		if err != nil {
			break
		}
	}
	if err == nil {
		v := binary.BigEndian.AppendUint64(nil, last)
		v = binary.BigEndian.AppendUint64(v, uint64(lastAt.UnixNano()))
		err = g.Set([]byte(keyEventLast), v, nil)
	}
	if err == nil {
		err = g.Commit(pebble.Sync)
	}
	if err == nil {
		s.ob.mu.Lock()
		s.ob.last, s.ob.lastAt = last, lastAt
		s.ob.durable.Store(last)
		close(s.ob.wake)
		s.ob.wake = make(chan struct{})
		s.ob.mu.Unlock()
		eventsWritten.Add(n)
	}
	for _, w := range group {
		w.done <- err
	}
}

// pendingEvent is an event a batch holds until the committer numbers it.
type pendingEvent struct {
	tenant string
	ev     Event
	seq    uint64 // set by the committer
}

// addEvent queues the event of a change of tenant; it is written when the
// batch commits (Commit then goes through the outbox's committer).
func (b *Batch) addEvent(tenant string, ev Event) error {
	if ev.Type == "" {
		return fmt.Errorf("BUG: meta: a change of tenant %q without its lifecycle event", tenant)
	}
	if tenant == "" {
		return fmt.Errorf("BUG: meta: lifecycle event %s without a tenant", ev.Type)
	}
	b.events = append(b.events, pendingEvent{tenant: tenant, ev: ev})
	return nil
}

// writeEvent spells the numbered event into the batch: its record under
// the tenant's range and its entry in the outbox's order.
func (b *Batch) writeEvent(p *pendingEvent, seq uint64, at time.Time, node uint16) error {
	rec := eventValue{EventRecord: EventRecord{Time: at, Tenant: p.tenant, Type: p.ev.Type, Subject: p.ev.Subject, Data: p.ev.Data}}
	rec.ID = EventID(at, node, seq).String()
	if rec.Data == nil {
		rec.Data = json.RawMessage("null")
	}
	v, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("cannot encode lifecycle event %s of tenant %s: %w", p.ev.Type, p.tenant, err)
	}
	p.seq = seq
	b.set(eventKey(p.tenant, seq), v)
	b.set(eventSeqKey(seq), eventSeqValue(at, p.tenant))
	return nil
}

// BadEventError is a stored event that does not decode (ErrBadRecord),
// with its seq, so that a reader can step over it.
type BadEventError struct {
	Seq uint64
	Err error
}

func (e *BadEventError) Error() string { return e.Err.Error() }
func (e *BadEventError) Unwrap() error { return e.Err }

// decodeEvent reads an event's stored value.
func decodeEvent(seq uint64, v []byte) (EventRecord, error) {
	var ev eventValue
	if err := json.Unmarshal(v, &ev); err != nil {
		return EventRecord{}, &BadEventError{Seq: seq, Err: fmt.Errorf("%w: lifecycle event %d: %v", ErrBadRecord, seq, err)}
	}
	id, err := envelope.ParseID([]byte(ev.ID))
	if got, ok := EventSeqOf(id); err != nil || !ok || got != seq {
		return EventRecord{}, &BadEventError{Seq: seq, Err: fmt.Errorf("%w: lifecycle event %d: id %q is not its own", ErrBadRecord, seq, ev.ID)}
	}
	ev.EventRecord.Seq, ev.EventRecord.ID = seq, id
	return ev.EventRecord, nil
}

// Events calls fn with every event whose seq is in (after, upTo], in seq
// order, until fn says stop; upTo above EventsDurable is EventsDurable.
// An index entry whose event is gone (a redacted tenant's) is skipped.
func (s *Store) Events(after, upTo uint64, fn func(ev *EventRecord) (stop bool, err error)) error {
	upTo = min(upTo, s.EventsDurable())
	if after >= upTo {
		return nil
	}
	lo, hi := eventSeqKey(after+1), eventSeqKey(upTo+1)
	return s.scan("the lifecycle outbox", lo, hi, func(k, v []byte) (bool, error) {
		seq, _, tenant, ok := parseEventSeqEntry(k, v)
		if !ok {
			return true, fmt.Errorf("%w: lifecycle outbox index entry %x", ErrBadRecord, k)
		}
		var ev EventRecord
		found, err := s.getKey("a lifecycle event", func(dst []byte) []byte { return appendEventKey(dst, tenant, seq) }, func(v []byte) (err error) {
			ev, err = decodeEvent(seq, v)
			return err
		})
		if err != nil || !found {
			return false, err
		}
		return fn(&ev)
	})
}

// TenantEvents calls fn with every event of tenant whose seq is in
// (after, EventsDurable()], in seq order, until fn says stop.
func (s *Store) TenantEvents(tenant string, after uint64, fn func(ev *EventRecord) (stop bool, err error)) error {
	upTo := s.EventsDurable()
	if after >= upTo {
		return nil
	}
	lo, hi := eventKey(tenant, after+1), eventKey(tenant, upTo+1)
	return s.scan("the lifecycle events of tenant "+tenant, lo, hi, func(k, v []byte) (bool, error) {
		seq, ok := parseEventKey(tenant, k)
		if !ok {
			return true, fmt.Errorf("%w: lifecycle event key %x", ErrBadRecord, k)
		}
		ev, err := decodeEvent(seq, v)
		if err != nil {
			return true, err
		}
		return fn(&ev)
	})
}

// LastTenantEvent is the seq of tenant's last durable event (0: none).
func (s *Store) LastTenantEvent(tenant string) (uint64, error) {
	p := entityPrefix(prefixEvent, tenant)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: eventKey(tenant, s.EventsDurable()+1)})
	if err != nil {
		return 0, fmt.Errorf("cannot read the lifecycle events of tenant %s: %w", tenant, err)
	}
	var seq uint64
	if it.Last() {
		var ok bool
		if seq, ok = parseEventKey(tenant, it.Key()); !ok {
			it.Close()
			return 0, fmt.Errorf("%w: lifecycle event key %x", ErrBadRecord, it.Key())
		}
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return 0, fmt.Errorf("cannot read the lifecycle events of tenant %s: %w", tenant, err)
	}
	return seq, nil
}

// EventsPublished is the publisher's checkpoint: every event up to it
// was acknowledged by the lifecycle sink (0: none yet).
func (s *Store) EventsPublished() (uint64, error) {
	var seq uint64
	_, err := s.getKey("the lifecycle publisher's checkpoint", func(dst []byte) []byte { return append(dst, keyEventPublished...) }, func(v []byte) error {
		if len(v) != 8 {
			return fmt.Errorf("%w: %s holds %d bytes, not 8", ErrBadRecord, keyEventPublished, len(v))
		}
		seq = binary.BigEndian.Uint64(v)
		return nil
	})
	return seq, err
}

// SetEventsPublished moves the publisher's checkpoint to seq, unsynced: a
// crash may lose it, and the events after the one that survived are sent
// again (at least once).
func (s *Store) SetEventsPublished(seq uint64) error {
	return s.set([]byte(keyEventPublished), binary.BigEndian.AppendUint64(nil, seq), NoSync)
}

// SweepEvents deletes, with range deletes, the oldest events while they
// were written before before and their seq is at most upTo (the
// publisher's checkpoint, or EventsDurable on a node without a
// publisher), looking at most limit of them; it returns how many went.
// The floor of the numbering stays, so no id is used twice.
func (s *Store) SweepEvents(before time.Time, upTo uint64, limit int) (int, error) {
	upTo = min(upTo, s.EventsDurable())
	lo, hi := prefixRange(prefixEventSeq)
	tenants := map[string]bool{}
	var last uint64
	n := 0
	err := s.scan("the lifecycle outbox", lo, hi, func(k, v []byte) (bool, error) {
		seq, at, tenant, ok := parseEventSeqEntry(k, v)
		if !ok {
			return true, fmt.Errorf("%w: lifecycle outbox index entry %x", ErrBadRecord, k)
		}
		if seq > upTo || !at.Before(before) || n >= limit {
			return true, nil
		}
		tenants[tenant] = true
		last = seq
		n++
		return false, nil
	})
	if err != nil || n == 0 {
		return 0, err
	}
	b := s.db.NewBatch()
	defer b.Close()
	_ = b.DeleteRange([]byte(prefixEventSeq), eventSeqKey(last+1), nil)
	for t := range tenants {
		_ = b.DeleteRange(entityPrefix(prefixEvent, t), eventKey(t, last+1), nil)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return 0, fmt.Errorf("cannot sweep the lifecycle outbox: %w", err)
	}
	eventsSwept.Add(n)
	return n, nil
}

func eventKey(tenant string, seq uint64) []byte { return appendEventKey(nil, tenant, seq) }

func appendEventKey(dst []byte, tenant string, seq uint64) []byte {
	dst = append(append(append(dst, prefixEvent...), tenant...), 0)
	return binary.BigEndian.AppendUint64(dst, seq)
}

func parseEventKey(tenant string, k []byte) (uint64, bool) {
	p := len(prefixEvent) + len(tenant) + 1
	if len(k) != p+8 || !bytes.HasPrefix(k, []byte(prefixEvent)) {
		return 0, false
	}
	return binary.BigEndian.Uint64(k[p:]), true
}

func eventSeqKey(seq uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte(prefixEventSeq), seq)
}

func eventSeqValue(at time.Time, tenant string) []byte {
	return append(binary.BigEndian.AppendUint64(nil, uint64(at.UnixNano())), tenant...)
}

func parseEventSeqEntry(k, v []byte) (seq uint64, at time.Time, tenant string, ok bool) {
	if len(k) != len(prefixEventSeq)+8 || len(v) < 8 {
		return 0, time.Time{}, "", false
	}
	return binary.BigEndian.Uint64(k[len(prefixEventSeq):]), time.Unix(0, int64(binary.BigEndian.Uint64(v))).UTC(), string(v[8:]), true
}
