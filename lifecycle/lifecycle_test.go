package lifecycle_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
	"github.com/ankusa/ankusa/lifecycle"
	"github.com/ankusa/ankusa/meta"
)

// sink records what it is sent; fail decides an attempt's error.
type sink struct {
	mu   sync.Mutex
	got  []delivered
	fail func(id string, attempt int) error
}

type delivered struct {
	id, tenant, source, contentType string
	attempt                         int
	body                            []byte
}

func (s *sink) Deliver(ctx context.Context, d *dispatch.Delivery) error {
	e := d.Envelope
	s.mu.Lock()
	fail := s.fail
	s.mu.Unlock()
	if fail != nil {
		if err := fail(e.ID.String(), d.Attempt); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, delivered{id: e.ID.String(), tenant: e.TenantID, source: e.SourceID, contentType: e.Headers[0].Value,
		attempt: d.Attempt, body: append([]byte(nil), e.Body...)})
	return nil
}

func (s *sink) Durable() bool { return false }
func (s *sink) Close() error  { return nil }

func (s *sink) received() []delivered {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]delivered(nil), s.got...)
}

func openStore(t *testing.T) *meta.Store {
	t.Helper()
	s, err := meta.Open(meta.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// write commits a rate-limit override of tenant: a change with its
// audit row and its event (rate_limit.created, then .updated).
func write(t testing.TB, s *meta.Store, tenant string, rate float64) {
	t.Helper()
	row := meta.AuditRow{At: time.Now(), Principal: "ops", Action: "tenant.rate_limit.set", Tenant: tenant, Entity: "rate_limit", Outcome: "ok"}
	if err := s.SetRateLimitOverride(tenant, config.RateLimit{Rate: rate, Burst: 1}, row); err != nil {
		t.Fatal(err)
	}
}

func start(t *testing.T, o lifecycle.Options) *lifecycle.Lifecycle {
	t.Helper()
	if o.Spec.RetryBase == 0 {
		o.Spec.RetryBase, o.Spec.RetryMax = config.Duration(time.Millisecond), config.Duration(20*time.Millisecond)
	}
	if o.Node == "" {
		o.Node = "edge-1"
	}
	l, err := lifecycle.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go l.Run(ctx)
	t.Cleanup(func() { cancel(); <-l.Done() })
	return l
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// cloudEvent is what a receiver decodes.
type cloudEvent struct {
	SpecVersion, ID, Source, Type, Subject, Time, Tenant, DataContentType string
	Data                                                                  json.RawMessage
}

func decode(t *testing.T, body []byte) cloudEvent {
	t.Helper()
	var ev cloudEvent
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ev); err != nil {
		t.Fatalf("event %s: %v", body, err)
	}
	return ev
}

// The publisher sends every event once, in outbox order, while writers
// race it, as CloudEvents 1.0 JSON with the node's source, the tenant
// extension and the entity as data.
func TestPublisherInOrder(t *testing.T) {
	s := openStore(t)
	sk := &sink{}
	l := start(t, lifecycle.Options{Store: s, Sink: sk})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				write(t, s, fmt.Sprintf("t%d", w), float64(i+1))
			}
		}()
	}
	wg.Wait()
	waitFor(t, "100 events published", func() bool { return l.Published() == 100 })
	got := sk.received()
	if len(got) != 100 {
		t.Fatalf("the sink got %d deliveries, want 100", len(got))
	}
	rates := map[string]float64{}
	for i, d := range got {
		ev := decode(t, d.body)
		if ev.ID != d.id || d.contentType != lifecycle.ContentType || d.source != lifecycle.SourceID || d.tenant != ev.Tenant || d.attempt != 1 {
			t.Fatalf("delivery %d: %+v of %+v", i, d, ev)
		}
		if i > 0 && ev.ID <= got[i-1].id {
			t.Fatalf("delivery %d (%s) is not after %s", i, ev.ID, got[i-1].id)
		}
		if ev.SpecVersion != "1.0" || ev.Source != "ankusa://edge-1" || ev.DataContentType != "application/json" || ev.Subject != ev.Tenant {
			t.Fatalf("event %d: %+v", i, ev)
		}
		if _, err := time.Parse(time.RFC3339Nano, ev.Time); err != nil {
			t.Fatalf("event %d: time %q: %v", i, ev.Time, err)
		}
		want := "io.ankusa.rate_limit.updated"
		if _, seen := rates[ev.Tenant]; !seen {
			want = "io.ankusa.rate_limit.created"
		}
		var data struct{ Rate float64 }
		if err := json.Unmarshal(ev.Data, &data); err != nil || ev.Type != want || data.Rate != rates[ev.Tenant]+1 {
			t.Fatalf("event %d of %s: type %s data %s, want %s with rate %v (per-entity order)", i, ev.Tenant, ev.Type, ev.Data, want, rates[ev.Tenant]+1)
		}
		rates[ev.Tenant] = data.Rate
	}
	if l.LagEvents() != 0 || l.LagSeconds() != 0 {
		t.Fatalf("lag %d events, %.3f s after catching up", l.LagEvents(), l.LagSeconds())
	}
	if cp, err := s.EventsPublished(); err != nil || cp != 100 {
		t.Fatalf("stored checkpoint %d, %v", cp, err)
	}
}

// A sink that fails holds the outbox: the event is sent again until it is
// taken (a permanent error included), nothing behind it goes first, and
// the lag shows meanwhile.
func TestPublisherRetriesInOrder(t *testing.T) {
	s := openStore(t)
	var mu sync.Mutex
	down := true
	sk := &sink{fail: func(id string, attempt int) error {
		mu.Lock()
		defer mu.Unlock()
		if down {
			return &dispatch.Error{Status: 410, Permanent: true, Err: errors.New("gone")}
		}
		return nil
	}}
	l := start(t, lifecycle.Options{Store: s, Sink: sk})
	for i := range 5 {
		write(t, s, "acme", float64(i+1))
	}
	waitFor(t, "a lag of 5", func() bool { return l.LagEvents() == 5 && l.LagSeconds() > 0 })
	time.Sleep(50 * time.Millisecond)
	if got := sk.received(); len(got) != 0 || l.Published() != 0 {
		t.Fatalf("delivered %d while the sink failed", len(got))
	}
	mu.Lock()
	down = false
	mu.Unlock()
	waitFor(t, "the outbox drained", func() bool { return l.Published() == 5 })
	got := sk.received()
	if len(got) != 5 || got[0].attempt < 2 {
		t.Fatalf("deliveries %+v: want 5, the first after retries", got)
	}
	for i := 1; i < len(got); i++ {
		if got[i].id <= got[i-1].id {
			t.Fatalf("out of order: %s then %s", got[i-1].id, got[i].id)
		}
	}
	if l.LagEvents() != 0 {
		t.Fatalf("lag %d after draining", l.LagEvents())
	}
}

// The checkpoint moves only after the sink took an event: a publisher
// stopped while its sink failed sends everything at the next start, and
// one whose checkpoint was lost (a crash after the ack) sends the events
// after the one that survived again: at least once.
func TestPublisherAtLeastOnce(t *testing.T) {
	s := openStore(t)
	failing := &sink{fail: func(string, int) error { return errors.New("connection refused") }}
	o := lifecycle.Options{Store: s, Sink: failing}
	o.Spec.RetryBase, o.Spec.RetryMax = config.Duration(time.Millisecond), config.Duration(time.Millisecond)
	l, err := lifecycle.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go l.Run(ctx)
	for i := range 3 {
		write(t, s, "acme", float64(i+1))
	}
	time.Sleep(30 * time.Millisecond)
	cancel()
	<-l.Done()
	if cp, _ := s.EventsPublished(); cp != 0 {
		t.Fatalf("checkpoint %d with nothing taken", cp)
	}
	sk := &sink{}
	l2 := start(t, lifecycle.Options{Store: s, Sink: sk})
	waitFor(t, "3 published", func() bool { return l2.Published() == 3 })
	if n := len(sk.received()); n != 3 {
		t.Fatalf("sent %d after the restart, want 3", n)
	}
	// The checkpoint written after event 1's ack survives, the others' do not.
	if err := s.SetEventsPublished(1); err != nil {
		t.Fatal(err)
	}
	again := &sink{}
	l3 := start(t, lifecycle.Options{Store: s, Sink: again})
	waitFor(t, "3 published again", func() bool { return l3.Published() == 3 })
	if got := again.received(); len(got) != 2 || got[0].id != sk.received()[1].id {
		t.Fatalf("after a lost checkpoint: %+v", got)
	}
}

// An erase waits for the publisher to pass the tenant's events, then its
// final batch leaves the final event alone in the tenant's replay; the
// publisher sends the final one too.
func TestEraseWaitsForPublisher(t *testing.T) {
	s := openStore(t)
	var mu sync.Mutex
	down := true
	sk := &sink{fail: func(string, int) error {
		mu.Lock()
		defer mu.Unlock()
		if down {
			return &dispatch.Error{Status: 503, Err: errors.New("unavailable")}
		}
		return nil
	}}
	l := start(t, lifecycle.Options{Store: s, Sink: sk})
	write(t, s, "acme", 1)
	write(t, s, "globex", 1)
	write(t, s, "acme", 2)
	final := meta.AuditRow{At: time.Now(), Principal: "ops", Action: "tenant.delete", Entity: "tenant/acme", Outcome: "ok",
		Event: meta.Event{Type: meta.EventType("tenant", "deleted"), Subject: "acme", Data: json.RawMessage(`{"tenant":"acme"}`)}}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := l.WaitTenantPublished(ctx, "acme"); !errors.Is(err, lifecycle.ErrNotPublished) {
		t.Fatalf("WaitTenantPublished with the sink down: %v", err)
	}
	mu.Lock()
	down = false
	mu.Unlock()
	upTo, err := l.WaitTenantPublished(context.Background(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	if l.Published() < upTo {
		t.Fatalf("WaitTenantPublished returned %d before the publisher passed it (%d)", upTo, l.Published())
	}
	if n, err := s.DeleteTenantEvents("acme", upTo); err != nil || n != 2 {
		t.Fatalf("DeleteTenantEvents = %d, %v; want acme's 2 events", n, err)
	}
	_, rec, err := s.FinishErase(meta.Tombstone{Tenant: "acme", ErasedAt: time.Now().UTC()}, 0, false, upTo, final)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Type != "io.ankusa.tenant.deleted" || rec.Tenant != "acme" {
		t.Fatalf("final %+v", rec)
	}
	var replay []cloudEvent
	if _, err := l.Replay(lifecycle.Query{Tenant: "acme", Limit: 100}, func(b []byte) error { replay = append(replay, decode(t, b)); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(replay) != 1 || replay[0].Type != "io.ankusa.tenant.deleted" || replay[0].ID != rec.ID.String() {
		t.Fatalf("acme's replay after the erase: %+v", replay)
	}
	var all []string
	if _, err := l.Replay(lifecycle.Query{Limit: 100}, func(b []byte) error { ev := decode(t, b); all = append(all, ev.Tenant+" "+ev.Type); return nil }); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(all) != "[globex io.ankusa.rate_limit.created acme io.ankusa.tenant.deleted]" {
		t.Fatalf("the whole replay after acme's erase: %v", all)
	}
	waitFor(t, "the final event published", func() bool { return l.Published() == rec.Seq })
	got := sk.received()
	if last := decode(t, got[len(got)-1].body); last.Type != "io.ankusa.tenant.deleted" {
		t.Fatalf("the last event sent: %+v", last)
	}
}

// The sweep takes events past lifecycle.retain that the sink took, and
// never one it has not; without a sink, every event past retain.
func TestSweep(t *testing.T) {
	s := openStore(t)
	later := func() time.Time { return time.Now().Add(48 * time.Hour) }
	for i := range 4 {
		write(t, s, "acme", float64(i+1))
	}
	if err := s.SetEventsPublished(2); err != nil {
		t.Fatal(err)
	}
	failing := &sink{fail: func(string, int) error { return errors.New("down") }}
	l, err := lifecycle.New(lifecycle.Options{Store: s, Sink: failing, Retain: 24 * time.Hour, Now: later})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := l.Sweep(); err != nil || n != 2 {
		t.Fatalf("sweep with a checkpoint at 2: %d, %v", n, err)
	}
	keep, err := lifecycle.New(lifecycle.Options{Store: s, Retain: 72 * time.Hour, Now: later})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := keep.Sweep(); err != nil || n != 0 {
		t.Fatalf("sweep of events younger than retain: %d, %v", n, err)
	}
	none, err := lifecycle.New(lifecycle.Options{Store: s, Retain: 24 * time.Hour, Now: later})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := none.Sweep(); err != nil || n != 2 {
		t.Fatalf("sweep without a sink: %d, %v", n, err)
	}
}

// Replay filters by tenant, type (exact or .*) and time, pages with
// after, and refuses a cursor that is not a lifecycle event id.
func TestReplay(t *testing.T) {
	s := openStore(t)
	l, err := lifecycle.New(lifecycle.Options{Store: s, Node: "edge-1"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		write(t, s, fmt.Sprintf("t%d", i%2), float64(i+1))
	}
	mid := time.Now()
	write(t, s, "t0", 99)
	if err := s.DeleteRateLimitOverride("t1", meta.AuditRow{At: time.Now(), Principal: "ops", Action: "tenant.rate_limit.clear", Tenant: "t1"}); err != nil {
		t.Fatal(err)
	}
	replay := func(q lifecycle.Query) (got []string, next string) {
		t.Helper()
		next, err := l.Replay(q, func(b []byte) error {
			ev := decode(t, b)
			got = append(got, ev.Tenant+":"+strings.TrimPrefix(ev.Type, "io.ankusa.rate_limit."))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return got, next
	}
	if got, next := replay(lifecycle.Query{Tenant: "t1", Limit: 10}); fmt.Sprint(got) != "[t1:created t1:updated t1:updated t1:deleted]" || next != "" {
		t.Fatalf("t1's replay: %v next %q", got, next)
	}
	if got, _ := replay(lifecycle.Query{Type: "io.ankusa.rate_limit.deleted", Limit: 10}); fmt.Sprint(got) != "[t1:deleted]" {
		t.Fatalf("type filter: %v", got)
	}
	if got, _ := replay(lifecycle.Query{Type: "io.ankusa.rate_limit.*", Limit: 100}); len(got) != 8 {
		t.Fatalf("type prefix: %v", got)
	}
	if got, _ := replay(lifecycle.Query{Type: "io.ankusa.source.*", Limit: 100}); len(got) != 0 {
		t.Fatalf("another prefix: %v", got)
	}
	if got, _ := replay(lifecycle.Query{Since: mid, Limit: 10}); fmt.Sprint(got) != "[t0:updated t1:deleted]" {
		t.Fatalf("since: %v", got)
	}
	var pages []string
	after := ""
	for range 10 {
		got, next := replay(lifecycle.Query{After: after, Limit: 3})
		pages = append(pages, got...)
		if next == "" {
			break
		}
		after = next
	}
	if len(pages) != 8 {
		t.Fatalf("paging by 3 gave %d events: %v", len(pages), pages)
	}
	for _, bad := range []string{"x", "evt_01KB8J283M003G000000000026"} {
		if _, err := l.Replay(lifecycle.Query{After: bad, Limit: 1}, func([]byte) error { return nil }); !errors.Is(err, lifecycle.ErrBadCursor) {
			t.Fatalf("after=%s: %v", bad, err)
		}
	}
}

// A stored event that does not decode cannot be sent; the publisher
// sends the events before it, steps over it (counted, logged) and goes
// on with the ones after it, rather than hold every later event for good.
func TestPublisherStepsOverADamagedEvent(t *testing.T) {
	dir := t.TempDir()
	s, err := meta.Open(meta.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		write(t, s, "acme", float64(i+1))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := pebble.Open(dir, &pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	key := binary.BigEndian.AppendUint64([]byte("ev/acme\x00"), 2)
	if err := db.Set(key, []byte(`{"id":`), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = meta.Open(meta.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	sk := &sink{}
	l := start(t, lifecycle.Options{Store: s, Sink: sk})
	waitFor(t, "the outbox passed", func() bool { return l.Published() == 4 })
	var rates []string
	for _, d := range sk.received() {
		rates = append(rates, string(decode(t, d.body).Data))
	}
	if want := `[{"rate":1,"burst":1,"max_queue":0,"max_queue_bytes":0} {"rate":3,"burst":1,"max_queue":0,"max_queue_bytes":0} {"rate":4,"burst":1,"max_queue":0,"max_queue_bytes":0}]`; fmt.Sprint(rates) != want {
		t.Fatalf("sent %v, want events 1, 3 and 4:\n%s", rates, want)
	}
	if l.LagEvents() != 0 {
		t.Fatalf("lag %d after stepping over the damaged event", l.LagEvents())
	}
	// A replay steps over it too: whole, by tenant, and page by page.
	for _, tenant := range []string{"", "acme"} {
		var got []string
		after := ""
		for range 10 {
			next, err := l.Replay(lifecycle.Query{Tenant: tenant, After: after, Limit: 1}, func(b []byte) error {
				got = append(got, string(decode(t, b).Data))
				return nil
			})
			if err != nil {
				t.Fatalf("replay of %q after %q: %v", tenant, after, err)
			}
			if next == "" {
				break
			}
			after = next
		}
		if fmt.Sprint(got) != fmt.Sprint(rates) {
			t.Fatalf("replay of %q page by page gave %v, want %v", tenant, got, rates)
		}
	}
}
