// Package outboxcrash crashes a meta store at every sync point of one
// operator change and checks the lifecycle outbox's promise (DESIGN.md
// §2.10, §6 item 7): after any crash, the change, its audit row and its
// lifecycle event are all there, or none of them is; and the outbox's
// numbering goes on above every event that survived.
//
// Tests open the store under test on Wrap(a vfs.NewCrashableMem) and hand
// each change to Rig.Write, which takes crash clones of the memory file
// system before and after every sync made while the change is written,
// and once more after it returned, then opens a store on each clone and
// checks it.
package outboxcrash

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/meta"
)

// Change is one operator change as a crash test sees it: the audit row
// and the event it must write, and the state it changes.
type Change struct {
	// Name says which change a failure is about.
	Name string
	// Tenant, Action and Entity select its audit row (Entity "" matches
	// any); Tenant, EventType and Subject its lifecycle event.
	Tenant, Action, Entity string
	EventType, Subject     string
	// State reads what the change changes from a store, as text: it must
	// read differently before and after the change.
	State func(s *meta.Store) (string, error)
}

// Rig is a live store on a crashable memory file system, and how to open
// another on a crash clone of it.
type Rig struct {
	Mem *vfs.MemFS // the file system under the store
	FS  *FS        // the store's view of Mem, with sync points
	// Dir is the store's directory, Node the ordinal its events carry.
	Dir  string
	Node uint16
	// Store is the live store, opened on FS.
	Store *meta.Store
	// Random is how many more clones each sync point takes, each keeping
	// a random share of the unsynced data (torn writes), drawn from RNG.
	Random int
	RNG    *rand.Rand
	// Settle, when not nil, makes what the store holds before a change
	// durable, with a synced write that changes nothing the change reads.
	// A node writes some rows unsynced (dispatch's delivery and pen rows:
	// a crash loses them and the rebuild from the log brings them back);
	// the rig reopens only the store, so the state a change starts from
	// must be on disk first.
	Settle func() error
}

// Result counts the crash points of one change and how each came out.
type Result struct {
	Points, Applied, Absent int
}

// point is one crash clone and where it was taken.
type point struct {
	fs    *vfs.MemFS
	where string
	// mustApply: taken after the write returned, so the change is
	// durable in it.
	mustApply bool
}

// outcome is what the live store shows of c before or after it: its state,
// how many audit rows and events match it, and the outbox's last seq.
type outcome struct {
	state          string
	audits, events int
	last           uint64
}

func (r *Rig) look(s *meta.Store, c *Change) (outcome, []meta.EventRecord, error) {
	var o outcome
	var err error
	if o.state, err = c.State(s); err != nil {
		return o, nil, fmt.Errorf("state: %w", err)
	}
	rows, err := s.Audit(time.Time{}, math.MaxInt32)
	if err != nil {
		return o, nil, fmt.Errorf("audit log: %w", err)
	}
	for _, a := range rows {
		if a.Tenant == c.Tenant && a.Action == c.Action && (c.Entity == "" || a.Entity == c.Entity) {
			o.audits++
		}
	}
	var evs []meta.EventRecord
	err = s.Events(0, math.MaxUint64, func(ev *meta.EventRecord) (bool, error) {
		if ev.Tenant == c.Tenant && ev.Type == c.EventType && ev.Subject == c.Subject {
			evs = append(evs, *ev)
		}
		return false, nil
	})
	o.events, o.last = len(evs), s.EventsDurable()
	return o, evs, err
}

// Write writes c with write, crashing the store at each of its sync
// points, and checks every crash clone: all of c (its state as after, one
// more audit row, its event exactly as the live store holds it) or none
// of it (its state as before, no new row, no event at its seq). It fails
// the test unless the change synced at least once, some clone holds none
// of it and the clone taken after write returned holds all of it.
func (r *Rig) Write(t testing.TB, c Change, write func() error) Result {
	t.Helper()
	if r.Settle != nil {
		if err := r.Settle(); err != nil {
			t.Fatalf("%s: cannot settle the store before the write: %v", c.Name, err)
		}
	}
	before, _, err := r.look(r.Store, &c)
	if err != nil {
		t.Fatalf("%s: before the write: %v", c.Name, err)
	}
	var mu sync.Mutex
	var points []point
	done := false // a hook called late (its sync began before Disarm) takes nothing
	take := func(where string) {
		mu.Lock()
		defer mu.Unlock()
		if done {
			return
		}
		points = append(points, point{fs: r.Mem.CrashClone(vfs.CrashCloneCfg{}), where: where})
		for i := range r.Random {
			cfg := vfs.CrashCloneCfg{UnsyncedDataPercent: r.RNG.IntN(101), RNG: r.RNG}
			points = append(points, point{fs: r.Mem.CrashClone(cfg), where: fmt.Sprintf("%s (random clone %d, %d%% unsynced kept)", where, i, cfg.UnsyncedDataPercent)})
		}
	}
	r.FS.Arm(&Hooks{Before: func(p string) { take("before sync " + p) }, After: func(p string) { take("after sync " + p) }})
	err = write()
	r.FS.Disarm()
	mu.Lock()
	done = true
	mu.Unlock()
	if err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
	syncs := len(points)
	points = append(points, point{fs: r.Mem.CrashClone(vfs.CrashCloneCfg{}), where: "after the write returned", mustApply: true})
	after, evs, err := r.look(r.Store, &c)
	if err != nil {
		t.Fatalf("%s: after the write: %v", c.Name, err)
	}
	if after.state == before.state || after.audits != before.audits+1 || after.events != before.events+1 {
		t.Fatalf("%s: the live store shows state %s (before %s), %d audit rows (before %d), %d events (before %d); want a change, one more row and one more event",
			c.Name, show(after.state), show(before.state), after.audits, before.audits, after.events, before.events)
	}
	want := evs[len(evs)-1]
	if want.Seq <= before.last {
		t.Fatalf("%s: the new event has seq %d, at or below the outbox's last before the write (%d)", c.Name, want.Seq, before.last)
	}
	if syncs == 0 {
		t.Fatalf("%s: the write returned without syncing the store once", c.Name)
	}
	res := Result{Points: len(points)}
	for _, p := range points {
		applied := r.checkClone(t, &c, p, before, after, &want)
		if applied {
			res.Applied++
		} else {
			res.Absent++
		}
	}
	if res.Absent == 0 {
		t.Fatalf("%s: every one of %d crash clones holds the change: none was taken before it was durable", c.Name, res.Points)
	}
	return res
}

// checkClone opens a store on p's clone and checks it holds all of c or
// none of it; then it writes one more change and checks its event is
// numbered above every event the clone holds. It reports whether the
// clone holds c.
func (r *Rig) checkClone(t testing.TB, c *Change, p point, before, after outcome, want *meta.EventRecord) bool {
	t.Helper()
	s, err := meta.Open(meta.Options{Dir: r.Dir, FS: p.fs})
	if err != nil {
		t.Fatalf("%s, crash %s: the store does not open: %v", c.Name, p.where, err)
	}
	defer s.Close()
	s.SetEventNode(r.Node)
	got, evs, err := r.look(s, c)
	if err != nil {
		t.Fatalf("%s, crash %s: %v", c.Name, p.where, err)
	}
	var applied bool
	switch got.state {
	case after.state:
		applied = true
		if got.audits != after.audits || got.events != after.events {
			t.Fatalf("%s, crash %s: the change is there with %d audit rows and %d events; want %d and %d (row and event in the change's batch)",
				c.Name, p.where, got.audits, got.events, after.audits, after.events)
		}
		if err := sameEvent(&evs[len(evs)-1], want); err != nil {
			t.Fatalf("%s, crash %s: %v", c.Name, p.where, err)
		}
	case before.state:
		if got.audits != before.audits || got.events != before.events || got.last >= want.Seq {
			t.Fatalf("%s, crash %s: the change is not there, but %d audit rows (before: %d), %d events (before: %d), outbox at seq %d (the change's event is %d)",
				c.Name, p.where, got.audits, before.audits, got.events, before.events, got.last, want.Seq)
		}
	default:
		t.Fatalf("%s, crash %s: state %s is neither the one before (%s) nor after (%s) the change", c.Name, p.where, show(got.state), show(before.state), show(after.state))
	}
	if p.mustApply && !applied {
		t.Fatalf("%s, crash %s: the change is lost, though the write had returned", c.Name, p.where)
	}
	checkNumbering(t, s, c.Name+", crash "+p.where)
	return applied
}

// show is a state as a failure names it: quoted, or by its digest when
// long (a stored source's record holds its secrets).
func show(state string) string {
	if len(state) <= 80 {
		return strconv.Quote(state)
	}
	return fmt.Sprintf("%d bytes, sha256 %x", len(state), sha256.Sum256([]byte(state)))
}

// sameEvent compares an event read from a clone with the live store's.
func sameEvent(got, want *meta.EventRecord) error {
	if got.Seq != want.Seq || got.ID != want.ID || !got.Time.Equal(want.Time) || got.Tenant != want.Tenant ||
		got.Type != want.Type || got.Subject != want.Subject || !bytes.Equal(got.Data, want.Data) {
		return fmt.Errorf("the event is\n%+v\nafter the crash, but\n%+v\nwhen written", *got, *want)
	}
	return nil
}

// probeTenant is the tenant of the change checkNumbering writes.
const probeTenant = "crash-probe"

// checkNumbering reads every event of s, writes one more change and
// checks its event comes after all of them: seq one above the outbox's
// last, an id above every id, a time not before any.
func checkNumbering(t testing.TB, s *meta.Store, what string) {
	t.Helper()
	var last meta.EventRecord
	n := 0
	err := s.Events(0, math.MaxUint64, func(ev *meta.EventRecord) (bool, error) {
		if n++; ev.Seq <= last.Seq || bytes.Compare(ev.ID[:], last.ID[:]) <= 0 || ev.Time.Before(last.Time) {
			return true, fmt.Errorf("event %d (%s, %s) does not come after event %d (%s, %s)", ev.Seq, ev.ID, ev.Time, last.Seq, last.ID, last.Time)
		}
		last = *ev
		return false, nil
	})
	if err != nil || last.Seq != s.EventsDurable() {
		t.Fatalf("%s: reading the outbox: %v; the last event read is %d, the outbox's last %d", what, err, last.Seq, s.EventsDurable())
	}
	audit := meta.AuditRow{At: time.Now().UTC(), Principal: "crash-test", Action: "tenant.rate_limit.set", Tenant: probeTenant}
	rl := config.RateLimit{Rate: float64(n + 1), Burst: 1}
	if err := s.SetRateLimitOverride(probeTenant, rl, audit); err != nil {
		t.Fatalf("%s: a change after the crash: %v", what, err)
	}
	var probe []meta.EventRecord
	err = s.Events(last.Seq, math.MaxUint64, func(ev *meta.EventRecord) (bool, error) {
		probe = append(probe, *ev)
		return false, nil
	})
	if err != nil || len(probe) != 1 {
		t.Fatalf("%s: after one change the outbox holds %d new events (%v), want 1", what, len(probe), err)
	}
	p := probe[0]
	if p.Seq != last.Seq+1 || bytes.Compare(p.ID[:], last.ID[:]) <= 0 || p.Time.Before(last.Time) || p.Tenant != probeTenant {
		t.Fatalf("%s: the event of a change after the crash is %d (%s, %s, tenant %s); the last that survived the crash is %d (%s, %s)",
			what, p.Seq, p.ID, p.Time, p.Tenant, last.Seq, last.ID, last.Time)
	}
}
