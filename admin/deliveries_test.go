package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/ankusa/ankusa/dispatch"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/meta"
)

var (
	pendingID  = envelope.MakeID(1_764_445_200_200, 7, 50)
	noTriesID  = envelope.MakeID(1_764_445_200_201, 7, 51)
	plus1      = time.FixedZone("+01:00", 3600)
	deadAt     = time.Date(2025, 11, 29, 19, 40, 0, 0, time.UTC)
	fakeDead   = fakeDeadRows()
	fakeTrials = []dispatch.Attempt{
		{Sink: "http-acme", N: 1, At: deadAt.In(plus1), Status: 503, Latency: 12500 * time.Microsecond, Outcome: "retry", Error: `upstream said "no" <b>`},
		{Sink: "rabbit", N: 1, At: deadAt.Add(time.Second), Status: 0, Latency: 3 * time.Millisecond, Outcome: "delivered"},
	}
)

// fakeDeadRows are the dead letters the fake holds: five of acme's, in
// (seq, sink) order, and one of globex's.
func fakeDeadRows() []dispatch.Row {
	rows := []dispatch.Row{{
		Tenant: "acme", Seq: 42, EventID: goodID, Source: "stripe", Sink: "http-acme", State: dispatch.Dead, Attempts: 8,
		ReceivedAt:    time.Date(2025, 11, 29, 20, 40, 0, 123456789, plus1),
		LastAttemptAt: time.Date(2025, 11, 29, 19, 41, 0, 500_000_000, time.UTC),
		LastStatus:    503, LastError: `upstream said "no" <b>`,
	}}
	for i, src := range []string{"stripe", "gh", "gh", "stripe"} {
		seq := uint64(60 + i)
		rows = append(rows, dispatch.Row{
			Tenant: "acme", Seq: seq, EventID: envelope.MakeID(1_764_445_200_300, 7, seq), Source: src, Sink: "rabbit",
			State: dispatch.Dead, Attempts: 1, ReceivedAt: deadAt.Add(time.Duration(i) * time.Hour),
		})
	}
	rows[1].Due = deadAt.Add(time.Minute)         // a due time is shown
	rows[2].LastAttemptAt = deadAt.Add(time.Hour) // rows[3] has no attempt: omitted
	return append(rows, dispatch.Row{Tenant: "globex", Seq: 43, EventID: globexID, Source: "gh", Sink: "http-globex", State: dispatch.Dead})
}

// fakeDeliveries serves fakeDead; it records every call it gets.
type fakeDeliveries struct {
	mu      sync.Mutex
	calls   []string // "method tenant ..."
	filters []dispatch.Filter
	leak    bool // Dead returns globex's row to everyone
	audits  []meta.AuditRow
}

func (f *fakeDeliveries) audited(row meta.AuditRow) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.audits = append(f.audits, row)
}

func (f *fakeDeliveries) record(call string, filter *dispatch.Filter) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
	if filter != nil {
		f.filters = append(f.filters, *filter)
	}
}

func (f *fakeDeliveries) recorded() ([]string, []dispatch.Filter) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...), append([]dispatch.Filter(nil), f.filters...)
}

func (f *fakeDeliveries) matching(tenant string, filter dispatch.Filter) []dispatch.Row {
	var rows []dispatch.Row
	for _, r := range fakeDead {
		if (r.Tenant == tenant || f.leak) && filter.Match(&r) {
			rows = append(rows, r)
		}
	}
	return rows
}

// The cursor is "c" and the index of the next row.
func (f *fakeDeliveries) Dead(_ context.Context, tenant string, filter dispatch.Filter, cursor string, limit int) ([]dispatch.Row, string, error) {
	f.record(fmt.Sprintf("Dead %s %q %d", tenant, cursor, limit), &filter)
	if filter.Source == "broken" {
		return nil, "", errBroken
	}
	from := 0
	if cursor != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(cursor, "c"))
		if err != nil || !strings.HasPrefix(cursor, "c") {
			return nil, "", fmt.Errorf("dispatch: cursor %q: %w", cursor, dispatch.ErrBadCursor)
		}
		from = n
	}
	rows := f.matching(tenant, filter)[from:]
	if len(rows) <= limit {
		return rows, "", nil
	}
	return rows[:limit], "c" + strconv.Itoa(from+limit), nil
}

func (f *fakeDeliveries) one(method, tenant string, id envelope.ID, sink string) error {
	f.record(fmt.Sprintf("%s %s %s %s", method, tenant, id, sink), nil)
	switch id {
	case pendingID:
		return fmt.Errorf("dispatch: %s/%s is pending: %w", id, sink, dispatch.ErrNotDead)
	case brokenID:
		return errBroken
	}
	for _, r := range fakeDead {
		if r.Tenant == tenant && r.EventID == id && r.Sink == sink {
			return nil
		}
	}
	return fmt.Errorf("dispatch: %s/%s: %w", id, sink, dispatch.ErrNoDelivery)
}

func (f *fakeDeliveries) Retry(_ context.Context, tenant string, id envelope.ID, sink string, audit meta.AuditRow) error {
	err := f.one("Retry", tenant, id, sink)
	if err == nil {
		f.audited(audit)
	}
	return err
}

// Redeliver answers as Retry, with a pending delivery as ErrPending and
// sink "nope" unknown to the hook's source.
func (f *fakeDeliveries) Redeliver(_ context.Context, tenant string, id envelope.ID, sink string, audit meta.AuditRow) error {
	if sink == "nope" {
		f.record(fmt.Sprintf("Redeliver %s %s %s", tenant, id, sink), nil)
		return dispatch.ErrNoSink
	}
	err := f.one("Redeliver", tenant, id, sink)
	if errors.Is(err, dispatch.ErrNotDead) {
		return fmt.Errorf("dispatch: %s/%s: %w", id, sink, dispatch.ErrPending)
	}
	if err == nil {
		f.audited(audit)
	}
	return err
}

func (f *fakeDeliveries) Drop(_ context.Context, tenant string, id envelope.ID, sink string, audit meta.AuditRow) error {
	err := f.one("Drop", tenant, id, sink)
	if err == nil {
		f.audited(audit)
	}
	return err
}

func (f *fakeDeliveries) many(method, tenant string, filter dispatch.Filter) (int, error) {
	f.record(method+" "+tenant, &filter)
	if filter.Source == "broken" {
		return 0, errBroken
	}
	return len(f.matching(tenant, filter)), nil
}

func (f *fakeDeliveries) RetryAll(_ context.Context, tenant string, filter dispatch.Filter, audit func(int) meta.AuditRow) (int, error) {
	n, err := f.many("RetryAll", tenant, filter)
	if err == nil && n > 0 {
		f.audited(audit(n))
	}
	return n, err
}

func (f *fakeDeliveries) DropAll(_ context.Context, tenant string, filter dispatch.Filter, audit func(int) meta.AuditRow) (int, error) {
	n, err := f.many("DropAll", tenant, filter)
	if err == nil && n > 0 {
		f.audited(audit(n))
	}
	return n, err
}

// Every dead-letter change hands dispatch its audit row: who, what, which
// tenant and entity, how it went, and the change's lifecycle event.
func TestDeliveriesAuditRows(t *testing.T) {
	d := &fakeDeliveries{}
	mux := http.NewServeMux()
	at := time.Date(2025, 11, 29, 19, 40, 0, 0, time.UTC)
	if err := Register(mux, Options{Tokens: testTokens(), Hooks: &fakeFetcher{}, Deliveries: d, Now: func() time.Time { return at }}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ method, path string }{
		{"POST", acmeDeliveries + "/" + goodID.String() + "/http-acme/retry"},
		{"DELETE", acmeDeliveries + "/" + goodID.String() + "/http-acme"},
		{"POST", acmeDeliveries + "/retry?source=stripe"},
		{"POST", acmeDeliveries + "/drop?all=true"},
		{"DELETE", acmeDeliveries + "/" + unknownID.String() + "/http-acme"}, // 404: no change, no row
		{"POST", "/v1/tenants/acme/hooks/" + goodID.String() + "/sinks/http-acme/redeliver"},
		{"POST", "/v1/tenants/acme/hooks/" + goodID.String() + "/sinks/nope/redeliver"}, // 404: no change, no row
	} {
		do(mux, c.method, c.path, "tok-acme")
	}
	var got []string
	for _, r := range d.audits {
		if !r.At.Equal(at) {
			t.Errorf("row at %s", r.At)
		}
		got = append(got, strings.Join([]string{r.Principal, r.Action, r.Tenant, r.Entity, r.Detail, r.Outcome, r.Event.Type, r.Event.Subject, string(r.Event.Data)}, "|"))
	}
	id := goodID.String()
	want := []string{
		"acme|deliveries.retry|acme|" + id + "|sink http-acme|ok|io.ankusa.delivery.retried|" + id + `|{"event_id":"` + id + `","sink":"http-acme"}`,
		"acme|deliveries.drop|acme|" + id + "|sink http-acme|ok|io.ankusa.delivery.dropped|" + id + `|{"event_id":"` + id + `","sink":"http-acme"}`,
		`acme|deliveries.retry_all|acme||3 dead letters, source stripe|ok|io.ankusa.delivery.bulk_retried|acme|{"count":3,"source":"stripe"}`,
		`acme|deliveries.drop_all|acme||5 dead letters|ok|io.ankusa.delivery.bulk_dropped|acme|{"count":5}`,
		"acme|hooks.redeliver|acme|" + id + "|sink http-acme|ok|io.ankusa.delivery.redelivered|" + id + `|{"event_id":"` + id + `","sink":"http-acme"}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("audit rows:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func (f *fakeDeliveries) Attempts(_ context.Context, tenant string, id envelope.ID) ([]dispatch.Attempt, error) {
	f.record(fmt.Sprintf("Attempts %s %s", tenant, id), nil)
	switch {
	case id == brokenID:
		return nil, errBroken
	case tenant == "acme" && id == goodID:
		return fakeTrials, nil
	case tenant == "acme" && id == noTriesID:
		return nil, nil
	}
	return nil, fmt.Errorf("dispatch: hook %s: %w", id, dispatch.ErrNoDelivery)
}

func newDeliveriesMux(t *testing.T) (*http.ServeMux, *fakeDeliveries, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zapcore.InfoLevel)
	d := &fakeDeliveries{}
	mux := http.NewServeMux()
	if err := Register(mux, Options{Tokens: testTokens(), Hooks: &fakeFetcher{}, Deliveries: d, Logger: zap.New(core)}); err != nil {
		t.Fatal(err)
	}
	return mux, d, logs
}

// do sends method path with the bearer token (none when "").
func do(mux http.Handler, method, path, token string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, nil)
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, r)
	return w
}

const (
	acmeDeliveries = "/v1/tenants/acme/deliveries"
	internalBody   = `{"error":"internal","message":"the deliveries could not be read or changed; the node's log says why"}` + "\n"
)

// deliveryRoutes is one request of each route that succeeds for acme.
var deliveryRoutes = []struct{ method, path string }{
	{"GET", acmeDeliveries + "?state=dead"},
	{"POST", acmeDeliveries + "/retry"},
	{"POST", acmeDeliveries + "/drop?all=true"},
	{"POST", acmeDeliveries + "/" + goodID.String() + "/http-acme/retry"},
	{"DELETE", acmeDeliveries + "/" + goodID.String() + "/http-acme"},
	{"GET", "/v1/tenants/acme/hooks/" + goodID.String() + "/attempts"},
	{"POST", "/v1/tenants/acme/hooks/" + goodID.String() + "/sinks/http-acme/redeliver"},
}

func TestDeliveriesAuth(t *testing.T) {
	mux, d, _ := newDeliveriesMux(t)
	for _, rt := range deliveryRoutes {
		name := rt.method + " " + rt.path
		w := do(mux, rt.method, rt.path, "")
		if w.Code != 401 || w.Header().Get("WWW-Authenticate") != "Bearer" || !strings.Contains(w.Body.String(), `"error":"unauthorized"`) {
			t.Errorf("%s without a token: %d %v %s", name, w.Code, w.Header(), w.Body)
		}
		w = do(mux, rt.method, rt.path, "tok-globex")
		if w.Code != 403 || w.Body.String() != `{"error":"forbidden","message":"token \"globex\" lacks the scope tenant:acme (or tenant:*)"}`+"\n" {
			t.Errorf("%s with globex's token: %d %s", name, w.Code, w.Body)
		}
		if calls, _ := d.recorded(); len(calls) != 0 {
			t.Fatalf("%s: refused requests reached the stage: %q", name, calls)
		}
		for _, tok := range []string{"tok-acme", "tok-root"} {
			w = do(mux, rt.method, rt.path, tok)
			want := http.StatusOK
			if rt.method == "DELETE" {
				want = http.StatusNoContent
			}
			if w.Code != want {
				t.Errorf("%s with %s: %d %s, want %d", name, tok, w.Code, w.Body, want)
			}
			if ct := w.Header().Get("Content-Type"); want == 200 && ct != "application/json" {
				t.Errorf("%s: Content-Type %q", name, ct)
			}
		}
		calls, _ := d.recorded()
		if len(calls) != 2 || !strings.Contains(calls[0], " acme") || calls[0] != calls[1] {
			t.Errorf("%s: calls %q, want the same one twice for acme", name, calls)
		}
		d.calls, d.filters = nil, nil
	}
}

func TestDeliveriesListJSON(t *testing.T) {
	mux, d, _ := newDeliveriesMux(t)
	w := do(mux, "GET", acmeDeliveries+"?state=dead&limit=4", "tok-acme")
	want := `{"deliveries":[` +
		`{"event_id":"` + goodID.String() + `","seq":42,"source":"stripe","sink":"http-acme","state":"dead","attempts":8,` +
		`"received_at":"2025-11-29T19:40:00.123456789Z","last_attempt_at":"2025-11-29T19:41:00.500000000Z","last_status":503,"last_error":"upstream said \"no\" <b>"},` +
		`{"event_id":"` + fakeDead[1].EventID.String() + `","seq":60,"source":"stripe","sink":"rabbit","state":"dead","attempts":1,` +
		`"received_at":"2025-11-29T19:40:00.000000000Z","due_at":"2025-11-29T19:41:00.000000000Z","last_status":0,"last_error":""},` +
		`{"event_id":"` + fakeDead[2].EventID.String() + `","seq":61,"source":"gh","sink":"rabbit","state":"dead","attempts":1,` +
		`"received_at":"2025-11-29T20:40:00.000000000Z","last_attempt_at":"2025-11-29T20:40:00.000000000Z","last_status":0,"last_error":""},` +
		`{"event_id":"` + fakeDead[3].EventID.String() + `","seq":62,"source":"gh","sink":"rabbit","state":"dead","attempts":1,` +
		`"received_at":"2025-11-29T21:40:00.000000000Z","last_status":0,"last_error":""}` +
		`],"next_cursor":"c4"}` + "\n"
	if w.Code != 200 || w.Body.String() != want {
		t.Fatalf("got %d\n%s\nwant\n%s", w.Code, w.Body, want)
	}
	// A listing of nothing is [], not null, and has no next_cursor.
	w = do(mux, "GET", "/v1/tenants/initech/deliveries?state=dead", "tok-globex")
	if w.Code != 200 || w.Body.String() != `{"deliveries":[]}`+"\n" {
		t.Fatalf("empty listing: %d %s", w.Code, w.Body)
	}
	calls, _ := d.recorded()
	if want := []string{`Dead acme "" 4`, `Dead initech "" 100`}; fmt.Sprint(calls) != fmt.Sprint(want) {
		t.Fatalf("calls %q, want %q (the default limit is 100)", calls, want)
	}
}

func TestDeliveriesPaging(t *testing.T) {
	mux, d, _ := newDeliveriesMux(t)
	var got []string
	cursor, pages := "", 0
	for {
		path := acmeDeliveries + "?state=dead&limit=2"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		w := do(mux, "GET", path, "tok-acme")
		var page struct {
			Deliveries []struct {
				EventID string `json:"event_id"`
				Sink    string `json:"sink"`
			} `json:"deliveries"`
			NextCursor *string `json:"next_cursor"`
		}
		if w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &page) != nil {
			t.Fatalf("%s: %d %s", path, w.Code, w.Body)
		}
		pages++
		for _, r := range page.Deliveries {
			got = append(got, r.EventID+"/"+r.Sink)
		}
		if page.NextCursor == nil {
			break
		}
		if *page.NextCursor == "" || pages > 5 {
			t.Fatalf("page %d: next_cursor %q", pages, *page.NextCursor)
		}
		cursor = *page.NextCursor
	}
	var want []string
	for _, r := range fakeDead[:5] {
		want = append(want, r.EventID.String()+"/"+r.Sink)
	}
	if pages != 3 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%d pages of %q, want 3 of %q", pages, got, want)
	}
	calls, _ := d.recorded()
	if want := []string{`Dead acme "" 2`, `Dead acme "c2" 2`, `Dead acme "c4" 2`}; fmt.Sprint(calls) != fmt.Sprint(want) {
		t.Fatalf("calls %q, want %q", calls, want)
	}
	// A cursor the stage did not issue is the client's mistake.
	w := do(mux, "GET", acmeDeliveries+"?state=dead&cursor=bogus", "tok-acme")
	if w.Code != 400 || !strings.HasPrefix(w.Body.String(), `{"error":"invalid_query","message":"cursor: `) {
		t.Fatalf("bad cursor: %d %s", w.Code, w.Body)
	}
}

func TestDeliveriesFilters(t *testing.T) {
	mux, d, _ := newDeliveriesMux(t)
	since := time.Date(2025, 11, 29, 18, 0, 0, 0, time.UTC)
	until := time.Date(2025, 11, 29, 21, 0, 0, 5, time.UTC)
	q := "source=gh&since=2025-11-29T19:00:00%2B01:00&until=2025-11-29T21:00:00.000000005Z"
	f := func(method, path, want string) {
		t.Helper()
		d.calls, d.filters = nil, nil
		w := do(mux, method, path, "tok-acme")
		if w.Code != 200 || w.Body.String() != want {
			t.Fatalf("%s %s: %d %s, want %s", method, path, w.Code, w.Body, want)
		}
		_, filters := d.recorded()
		if len(filters) != 1 {
			t.Fatalf("%s %s: filters %+v", method, path, filters)
		}
		got := filters[0]
		if got.Source != "gh" || !got.Since.Equal(since) || !got.Until.Equal(until) ||
			got.Since.Location() != time.UTC || got.Until.Location() != time.UTC {
			t.Fatalf("%s %s: filter %+v, want gh from %v until %v in UTC", method, path, got, since, until)
		}
	}
	// fakeDead[2] (gh, 20:40) is the one in the window.
	f("GET", acmeDeliveries+"?state=dead&"+q+"&limit=1000", `{"deliveries":[`+string(mustDeliveryJSON(t, fakeDead[2]))+`]}`+"\n")
	f("POST", acmeDeliveries+"/retry?"+q, `{"retried":1}`+"\n")
	f("POST", acmeDeliveries+"/drop?"+q, `{"dropped":1}`+"\n")
	f("POST", acmeDeliveries+"/drop?all=false&"+q, `{"dropped":1}`+"\n")
}

func mustDeliveryJSON(t *testing.T, r dispatch.Row) []byte {
	t.Helper()
	w := httptest.NewRecorder()
	writeValue(w, 200, newDeliveryList([]dispatch.Row{r}, "").Deliveries[0])
	return []byte(strings.TrimSuffix(w.Body.String(), "\n"))
}

func TestDeliveriesBadRequest(t *testing.T) {
	mux, d, _ := newDeliveriesMux(t)
	f := func(method, path, param string, more ...string) {
		t.Helper()
		w := do(mux, method, path, "tok-acme")
		prefix := `{"error":"invalid_query","message":"` + param + `: `
		if w.Code != 400 || !strings.HasPrefix(w.Body.String(), prefix) || w.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%s %s: %d %s, want 400 naming %s", method, path, w.Code, w.Body, param)
		}
		for _, m := range more {
			if !strings.Contains(w.Body.String(), m) {
				t.Errorf("%s %s: %s, want it to say %q", method, path, w.Body, m)
			}
		}
	}
	list := acmeDeliveries + "?"
	f("GET", acmeDeliveries, "state", "state=dead")
	f("GET", list+"state=pending", "state", "not offered", "pending")
	f("GET", list+"state=in_flight", "state")
	f("GET", list+"state=", "state")
	f("GET", list+"state=dead&state=dead", "state", "given 2 times")
	f("GET", list+"state=dead&limit=0", "limit", "1 to 1000")
	f("GET", list+"state=dead&limit=1001", "limit")
	f("GET", list+"state=dead&limit=-1", "limit")
	f("GET", list+"state=dead&limit=ten", "limit")
	f("GET", list+"state=dead&limit=", "limit")
	f("GET", list+"state=dead&since=yesterday", "since", "RFC 3339")
	f("GET", list+"state=dead&since=2025-11-29T19:00:00+01:00", "since", "%2B") // + is a space in a query
	f("GET", list+"state=dead&until=2025-13-01T00:00:00Z", "until")
	f("GET", list+"state=dead&since=2025-11-29T00:00:00Z&until=2025-11-29T00:00:00Z", "since", "before until")
	f("GET", list+"state=dead&source=Stripe", "source", "must match")
	f("GET", list+"state=dead&source=", "source")
	f("GET", list+"state=dead&source=a%2Fb", "source")
	f("GET", list+"state=dead&sources=gh", "sources", "not a parameter")
	f("GET", list+"state=dead&x=%zz", "query")
	f("POST", acmeDeliveries+"/retry?limit=5", "limit", "not a parameter")
	f("POST", acmeDeliveries+"/retry?source=GH", "source")
	f("POST", acmeDeliveries+"/retry?until=never", "until")
	f("POST", acmeDeliveries+"/retry?all=yes", "all")
	f("POST", acmeDeliveries+"/drop", "all", "all=true")
	f("POST", acmeDeliveries+"/drop?all=false", "all", "all=true")
	f("POST", acmeDeliveries+"/drop?all=yes&source=gh", "all", "true or false")
	f("POST", acmeDeliveries+"/drop?since=bad&all=true", "since")
	f("POST", acmeDeliveries+"/drop?state=dead", "state", "not a parameter")
	if calls, _ := d.recorded(); len(calls) != 0 {
		t.Fatalf("bad requests reached the stage: %q", calls)
	}
}

// TestDeliveriesNotFoundIdentical checks that an unknown, a malformed and
// another tenant's delivery or hook get the hook fetch's 404, byte for
// byte, headers included.
func TestDeliveriesNotFoundIdentical(t *testing.T) {
	mux, d, _ := newDeliveriesMux(t)
	hooks := "/v1/tenants/acme/hooks/"
	reqs := []struct{ method, path, token string }{
		{"GET", hooks + unknownID.String(), "tok-acme"}, // the hook fetch
		{"POST", acmeDeliveries + "/" + unknownID.String() + "/http-acme/retry", "tok-acme"},
		{"POST", acmeDeliveries + "/" + goodID.String() + "/rabbit/retry", "tok-acme"},
		{"POST", acmeDeliveries + "/evt_nope/http-acme/retry", "tok-acme"},
		{"POST", acmeDeliveries + "/" + globexID.String() + "/http-globex/retry", "tok-acme"},
		{"DELETE", acmeDeliveries + "/" + unknownID.String() + "/http-acme", "tok-acme"},
		{"DELETE", acmeDeliveries + "/evt_8ZZZZZZZZZZZZZZZZZZZZZZZZZ/http-acme", "tok-acme"},
		{"DELETE", acmeDeliveries + "/" + globexID.String() + "/http-globex", "tok-acme"},
		{"GET", hooks + unknownID.String() + "/attempts", "tok-acme"},
		{"GET", hooks + "not-an-id/attempts", "tok-acme"},
		{"GET", hooks + globexID.String() + "/attempts", "tok-acme"},
	}
	var first *httptest.ResponseRecorder
	for _, r := range reqs {
		w := do(mux, r.method, r.path, r.token)
		if first == nil {
			first = w
			if w.Code != 404 || w.Body.String() != notFoundBody {
				t.Fatalf("the hook fetch's 404 is %d %s", w.Code, w.Body)
			}
			continue
		}
		if w.Code != first.Code || w.Body.String() != first.Body.String() || fmt.Sprint(w.Header()) != fmt.Sprint(first.Header()) {
			t.Errorf("%s %s: %d %v %s\ndiffers from the hook fetch's %d %v %s", r.method, r.path, w.Code, w.Header(), w.Body, first.Code, first.Header(), first.Body)
		}
	}
	// What does not parse never reaches the stage.
	calls, _ := d.recorded()
	want := []string{
		"Retry acme " + unknownID.String() + " http-acme",
		"Retry acme " + goodID.String() + " rabbit",
		"Retry acme " + globexID.String() + " http-globex",
		"Drop acme " + unknownID.String() + " http-acme",
		"Drop acme " + globexID.String() + " http-globex",
		"Attempts acme " + unknownID.String(),
		"Attempts acme " + globexID.String(),
	}
	if fmt.Sprint(calls) != fmt.Sprint(want) {
		t.Fatalf("calls\n%q\nwant\n%q", calls, want)
	}
}

func TestDeliveriesOne(t *testing.T) {
	mux, d, _ := newDeliveriesMux(t)
	w := do(mux, "POST", acmeDeliveries+"/"+strings.ToLower(goodID.String())+"/http-acme/retry", "tok-acme")
	if w.Code != 200 || w.Body.String() != `{"retried":1}`+"\n" {
		t.Fatalf("retry: %d %s", w.Code, w.Body)
	}
	w = do(mux, "DELETE", acmeDeliveries+"/"+fakeDead[4].EventID.String()+"/rabbit", "tok-acme")
	if w.Code != 204 || w.Body.Len() != 0 {
		t.Fatalf("drop: %d %s", w.Code, w.Body)
	}
	calls, _ := d.recorded()
	want := []string{"Retry acme " + goodID.String() + " http-acme", "Drop acme " + fakeDead[4].EventID.String() + " rabbit"}
	if fmt.Sprint(calls) != fmt.Sprint(want) {
		t.Fatalf("calls %q, want %q", calls, want)
	}
	for _, rt := range []struct{ method, path string }{
		{"PUT", acmeDeliveries + "/" + goodID.String() + "/http-acme"},
		{"GET", acmeDeliveries + "/retry"},
		{"DELETE", acmeDeliveries},
	} {
		if w := do(mux, rt.method, rt.path, "tok-acme"); w.Code != http.StatusMethodNotAllowed {
			t.Errorf("%s %s: %d, want 405", rt.method, rt.path, w.Code)
		}
	}
}

func TestDeliveriesNotDead(t *testing.T) {
	mux, _, logs := newDeliveriesMux(t)
	want := `{"error":"delivery_not_dead","message":"this delivery is pending or in flight; only a dead letter can be retried or dropped"}` + "\n"
	for _, rt := range []struct{ method, path string }{
		{"POST", acmeDeliveries + "/" + pendingID.String() + "/http-acme/retry"},
		{"DELETE", acmeDeliveries + "/" + pendingID.String() + "/http-acme"},
	} {
		if w := do(mux, rt.method, rt.path, "tok-acme"); w.Code != 409 || w.Body.String() != want {
			t.Errorf("%s %s: %d %s, want 409 %s", rt.method, rt.path, w.Code, w.Body, want)
		}
	}
	if logs.Len() != 0 {
		t.Fatalf("a 409 is an answer, not a failure: %+v", logs.All())
	}
}

func TestDeliveriesDropAllGuard(t *testing.T) {
	mux, d, _ := newDeliveriesMux(t)
	w := do(mux, "POST", acmeDeliveries+"/drop", "tok-acme")
	if w.Code != 400 || !strings.Contains(w.Body.String(), "all=true") {
		t.Fatalf("drop without a filter: %d %s", w.Code, w.Body)
	}
	if calls, _ := d.recorded(); len(calls) != 0 {
		t.Fatalf("an unguarded drop reached the stage: %q", calls)
	}
	f := func(query, want string) {
		t.Helper()
		if w := do(mux, "POST", acmeDeliveries+"/drop"+query, "tok-acme"); w.Code != 200 || w.Body.String() != want {
			t.Fatalf("drop%s: %d %s, want %s", query, w.Code, w.Body, want)
		}
	}
	f("?all=true", `{"dropped":5}`+"\n")
	f("?source=stripe", `{"dropped":3}`+"\n")
	f("?since=2025-11-29T20:00:00Z", `{"dropped":3}`+"\n")
	f("?until=2025-11-29T20:00:00Z", `{"dropped":2}`+"\n")
	f("?source=none", `{"dropped":0}`+"\n")
	_, filters := d.recorded()
	if len(filters) != 5 || filters[0] != (dispatch.Filter{}) || filters[1].Source != "stripe" || filters[2].Since.IsZero() || filters[3].Until.IsZero() {
		t.Fatalf("filters %+v", filters)
	}
}

func TestDeliveriesRetryAll(t *testing.T) {
	mux, d, _ := newDeliveriesMux(t)
	f := func(query, want string) {
		t.Helper()
		if w := do(mux, "POST", acmeDeliveries+"/retry"+query, "tok-acme"); w.Code != 200 || w.Body.String() != want {
			t.Fatalf("retry%s: %d %s, want %s", query, w.Code, w.Body, want)
		}
	}
	f("", `{"retried":5}`+"\n") // retrying needs no guard
	f("?all=true", `{"retried":5}`+"\n")
	f("?source=gh", `{"retried":2}`+"\n")
	f("?source=gh&until=2025-11-29T21:00:00Z", `{"retried":1}`+"\n")
	calls, _ := d.recorded()
	if len(calls) != 4 || calls[0] != "RetryAll acme" {
		t.Fatalf("calls %q", calls)
	}
}

func TestDeliveriesAttemptsJSON(t *testing.T) {
	mux, _, _ := newDeliveriesMux(t)
	w := do(mux, "GET", "/v1/tenants/acme/hooks/"+goodID.String()+"/attempts", "tok-acme")
	want := `{"attempts":[` +
		`{"sink":"http-acme","attempt":1,"at":"2025-11-29T19:40:00.000000000Z","status":503,"latency_ms":12.5,"outcome":"retry","error":"upstream said \"no\" <b>"},` +
		`{"sink":"rabbit","attempt":1,"at":"2025-11-29T19:40:01.000000000Z","status":0,"latency_ms":3,"outcome":"delivered"}` +
		`]}` + "\n"
	if w.Code != 200 || w.Body.String() != want || w.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("got %d %v\n%s\nwant\n%s", w.Code, w.Header(), w.Body, want)
	}
	// A known hook without attempts is [], not a 404.
	w = do(mux, "GET", "/v1/tenants/acme/hooks/"+noTriesID.String()+"/attempts", "tok-acme")
	if w.Code != 200 || w.Body.String() != `{"attempts":[]}`+"\n" {
		t.Fatalf("no attempts: %d %s", w.Code, w.Body)
	}
}

func TestDeliveriesInternalError(t *testing.T) {
	mux, d, logs := newDeliveriesMux(t)
	reqs := []struct{ method, path string }{
		{"GET", acmeDeliveries + "?state=dead&source=broken"},
		{"POST", acmeDeliveries + "/retry?source=broken"},
		{"POST", acmeDeliveries + "/drop?source=broken"},
		{"POST", acmeDeliveries + "/" + brokenID.String() + "/http-acme/retry"},
		{"DELETE", acmeDeliveries + "/" + brokenID.String() + "/http-acme"},
		{"GET", "/v1/tenants/acme/hooks/" + brokenID.String() + "/attempts"},
	}
	for _, r := range reqs {
		w := do(mux, r.method, r.path, "tok-acme")
		if w.Code != 500 || w.Body.String() != internalBody || strings.Contains(w.Body.String(), "checksum") {
			t.Errorf("%s %s: %d %s, want 500 %s", r.method, r.path, w.Code, w.Body, internalBody)
		}
	}
	entries := logs.All()
	if len(entries) != len(reqs) {
		t.Fatalf("%d log entries, want %d: %+v", len(entries), len(reqs), entries)
	}
	for _, e := range entries {
		fields := e.ContextMap()
		if e.Level != zapcore.ErrorLevel || fields["tenant"] != "acme" || fields["error"] != errBroken.Error() {
			t.Errorf("log entry %s %v", e.Message, fields)
		}
	}
	// A stage that shows another tenant's row is a bug, not a leak.
	d.leak = true
	w := do(mux, "GET", acmeDeliveries+"?state=dead", "tok-acme")
	if w.Code != 500 || w.Body.String() != internalBody || strings.Contains(w.Body.String(), "globex") {
		t.Fatalf("foreign row: %d %s", w.Code, w.Body)
	}
}

func TestDeliveriesLeftOut(t *testing.T) {
	mux := http.NewServeMux()
	if err := Register(mux, Options{Tokens: testTokens(), Hooks: &fakeFetcher{}}); err != nil {
		t.Fatal(err)
	}
	for _, rt := range deliveryRoutes {
		if w := do(mux, rt.method, rt.path, "tok-acme"); w.Code != http.StatusNotFound || strings.Contains(w.Body.String(), `"error"`) {
			t.Errorf("%s %s without Deliveries: %d %s, want the mux's 404", rt.method, rt.path, w.Code, w.Body)
		}
	}
}

// Redeliver: 200 with the count, 409 delivery_pending naming the sink, the
// one 404 for another tenant's or an unknown hook, a 404 naming a sink the
// source does not have, and the 500 that tells the client nothing.
func TestDeliveriesRedeliver(t *testing.T) {
	mux, d, _ := newDeliveriesMux(t)
	path := func(tenant string, id envelope.ID, sink string) string {
		return "/v1/tenants/" + tenant + "/hooks/" + id.String() + "/sinks/" + sink + "/redeliver"
	}
	for _, c := range []struct {
		path   string
		status int
		body   string
	}{
		{path("acme", goodID, "http-acme"), 200, `{"redelivered":1}`},
		{path("acme", pendingID, "http-acme"), 409, `"error":"delivery_pending","message":"a delivery of this hook to sink \"http-acme\" is pending`},
		{path("acme", unknownID, "http-acme"), 404, `"error":"not_found"`},
		{path("acme", goodID, "nope"), 404, `the hook's source has no sink \"nope\"`},
		{path("acme", brokenID, "http-acme"), 500, internalBody[:40]},
		{path("acme", goodID, "Bad%20Sink"), 400, `"error":"invalid_name"`},
	} {
		w := do(mux, "POST", c.path, "tok-acme")
		if w.Code != c.status || !strings.Contains(w.Body.String(), c.body) {
			t.Errorf("POST %s: %d %s, want %d with %s", c.path, w.Code, w.Body, c.status, c.body)
		}
	}
	if w := do(mux, "POST", path("acme", goodID, "http-acme"), "tok-globex"); w.Code != 403 {
		t.Errorf("globex's token redelivers acme's hook: %d %s, want 403", w.Code, w.Body)
	}
	calls, _ := d.recorded()
	for _, c := range calls {
		if strings.Contains(c, "globex") || strings.Contains(c, "Bad") {
			t.Errorf("dispatch was called for a refused request: %s", c)
		}
	}
}
