package admin

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/lifecycle"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/source"
	"github.com/ankusa/ankusa/tenant"
)

// GET /v1/events against a real meta store and lifecycle (no sink): the
// events are those of real writes through the admin API.

// wantEvent is what a write's event must say.
type wantEvent struct{ tenant, typ, subject string }

// eventNode is an admin mux over a persistent source store, the rate-limit
// routes and the lifecycle replay, all on one meta store on disk.
type eventNode struct {
	mux  *http.ServeMux
	meta *meta.Store
	// want is every event the writes made, in the order they were made;
	// later is the index of the first one written after a pause (a since
	// between the two halves).
	want  []wantEvent
	later int
}

func newEventNode(t *testing.T) *eventNode {
	t.Helper()
	cfg, err := config.Load([]byte(`
route_resolver: {type: token, path: /webhooks/catch/:token}
routes: {enabled: true}
rate_limits: {default: {rate: 10, burst: 10}}
source_store: {type: persistent}
`), config.ValidateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ms, err := meta.Open(meta.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ms.Close() })
	ms.SetEventNode(3)
	store, _, err := source.OpenPersistent(source.PersistentOptions{Config: cfg, Backend: source.MetaBackend{Store: ms},
		Context: config.SourceContext{Resolver: "token", WALType: "disk", DedupeScope: "node"}})
	if err != nil {
		t.Fatal(err)
	}
	lc, err := lifecycle.New(lifecycle.Options{Store: ms, Node: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	n := &eventNode{mux: http.NewServeMux(), meta: ms}
	if err := Register(n.mux, Options{Tokens: testTokens(), Sources: store, Resolver: cfg.RouteResolver,
		Limits: tenant.NewPolicy(config.RateLimits{}), Overrides: ms, Events: lc}); err != nil {
		t.Fatal(err)
	}
	return n
}

// write makes one change through the API as root, and records its event.
func (n *eventNode) write(t *testing.T, method, path, body string, want wantEvent) {
	t.Helper()
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	r.Header.Set("Authorization", "Bearer tok-root")
	w := httptest.NewRecorder()
	n.mux.ServeHTTP(w, r)
	if w.Code >= 300 {
		t.Fatalf("%s %s: %d %s", method, path, w.Code, w.Body)
	}
	n.want = append(n.want, want)
}

// writeAll makes the changes of two tenants: each a source, a route and a
// rate limit set twice; then, after a pause, an update, a delete of each
// kind.
func (n *eventNode) writeAll(t *testing.T) {
	t.Helper()
	const rl = `{"rate": 5, "burst": 10, "max_queue": 100, "max_queue_bytes": 1048576}`
	for _, tn := range []string{"acme", "globex"} {
		T := "/v1/tenants/" + tn
		n.write(t, "POST", T+"/sources", fmt.Sprintf(`{"name": "%s-api", "verify": {"type": "hmac", "header": "X-Sig", "secret": "k"}, "sinks": [{"id": "out", "type": "http", "url": "https://example.com/%s"}]}`, tn, tn),
			wantEvent{tn, "io.ankusa.source.created", tn + "-api"})
		n.write(t, "POST", T+"/routes", fmt.Sprintf(`{"id": "%s-route", "source_id": "%s-api", "token": "auto"}`, tn, tn),
			wantEvent{tn, "io.ankusa.route.created", tn + "-route"})
		n.write(t, "PUT", T+"/rate_limit", rl, wantEvent{tn, "io.ankusa.rate_limit.created", tn})
		n.write(t, "PUT", T+"/rate_limit", strings.Replace(rl, "5", "7", 1), wantEvent{tn, "io.ankusa.rate_limit.updated", tn})
	}
	time.Sleep(20 * time.Millisecond)
	n.later = len(n.want)
	n.write(t, "PUT", "/v1/tenants/acme/sources/acme-api", `{"verify": {"type": "hmac", "header": "X-Sig-2"}}`,
		wantEvent{"acme", "io.ankusa.source.updated", "acme-api"})
	n.write(t, "DELETE", "/v1/tenants/globex/rate_limit", "", wantEvent{"globex", "io.ankusa.rate_limit.deleted", "globex"})
	n.write(t, "DELETE", "/v1/tenants/acme/routes/acme-route", "", wantEvent{"acme", "io.ankusa.route.deleted", "acme-route"})
}

// cloudEvent is a replayed event as a client reads it.
type cloudEvent struct {
	SpecVersion     string          `json:"specversion"`
	ID              string          `json:"id"`
	Source          string          `json:"source"`
	Type            string          `json:"type"`
	Subject         string          `json:"subject"`
	Time            time.Time       `json:"time"`
	Tenant          string          `json:"tenant"`
	DataContentType string          `json:"datacontenttype"`
	Data            json.RawMessage `json:"data"`
}

func (e cloudEvent) want() wantEvent { return wantEvent{e.Tenant, e.Type, e.Subject} }

// replayAnswer is one answer of GET /v1/events.
type replayAnswer struct {
	code    int
	header  http.Header
	body    string
	events  []cloudEvent
	raw     []string // each event as sent
	next    string
	errCode string
}

// get asks the mux for target as bearer, with accept ("" for none).
func (n *eventNode) get(t *testing.T, target, bearer, accept string) replayAnswer {
	t.Helper()
	r := httptest.NewRequest("GET", target, nil)
	if bearer != "" {
		r.Header.Set("Authorization", "Bearer "+bearer)
	}
	if accept != "" {
		r.Header.Set("Accept", accept)
	}
	w := httptest.NewRecorder()
	n.mux.ServeHTTP(w, r)
	a := replayAnswer{code: w.Code, header: w.Header(), body: w.Body.String()}
	if w.Code != 200 {
		var e errorBody
		_ = json.Unmarshal(w.Body.Bytes(), &e)
		a.errCode = e.Error
		return a
	}
	if ct := w.Header().Get("Content-Type"); ct == mediaNDJSON {
		for _, line := range strings.SplitAfter(a.body, "\n") {
			if line == "" {
				continue
			}
			if !strings.HasSuffix(line, "\n") {
				t.Fatalf("%s: an NDJSON line without its newline: %q", target, line)
			}
			a.raw = append(a.raw, strings.TrimSuffix(line, "\n"))
		}
		a.next = w.Header().Get(headerNextCursor)
	} else {
		var page struct {
			Events     []json.RawMessage `json:"events"`
			NextCursor *string           `json:"next_cursor"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &page); err != nil || page.Events == nil {
			t.Fatalf("%s: not a page (%v): %s", target, err, a.body)
		}
		if page.NextCursor != nil {
			if *page.NextCursor == "" {
				t.Fatalf("%s: an empty next_cursor (it must be absent): %s", target, a.body)
			}
			a.next = *page.NextCursor
		}
		if h := w.Header().Get(headerNextCursor); h != a.next {
			t.Fatalf("%s: %s %q, next_cursor %q", target, headerNextCursor, h, a.next)
		}
		for _, ev := range page.Events {
			a.raw = append(a.raw, string(ev))
		}
	}
	for _, s := range a.raw {
		var ev cloudEvent
		if err := json.Unmarshal([]byte(s), &ev); err != nil {
			t.Fatalf("%s: an event that is not JSON: %v: %s", target, err, s)
		}
		a.events = append(a.events, ev)
	}
	return a
}

// all follows the replay from after (may be "") with query q (its limit,
// filters) to its end, checking that ids only grow; it returns every
// event and the number of pages.
func (n *eventNode) all(t *testing.T, q url.Values, bearer, after string) ([]cloudEvent, int) {
	t.Helper()
	var out []cloudEvent
	pages := 0
	for {
		q := cloneQuery(q)
		if after != "" {
			q.Set("after", after)
		}
		a := n.get(t, "/v1/events?"+q.Encode(), bearer, "")
		if a.code != 200 {
			t.Fatalf("page %d of %v: %d %s", pages, q, a.code, a.body)
		}
		pages++
		out = append(out, a.events...)
		if a.next == "" {
			break
		}
		if pages > 1000 {
			t.Fatalf("%v: the cursor never ends", q)
		}
		after = a.next
	}
	for i := 1; i < len(out); i++ {
		if idLess(out[i].ID, out[i-1].ID) || out[i].ID == out[i-1].ID {
			t.Fatalf("%v: event %d's id %s is not above the one before, %s", q, i, out[i].ID, out[i-1].ID)
		}
	}
	return out, pages
}

// cloneQuery copies q.
func cloneQuery(q url.Values) url.Values {
	out := url.Values{}
	for k, v := range q {
		out[k] = slices.Clone(v)
	}
	return out
}

// idLess orders two event ids as the outbox does (by seq).
func idLess(a, b string) bool {
	sa, errA := lifecycle.ParseEventID(a)
	sb, errB := lifecycle.ParseEventID(b)
	if errA != nil || errB != nil {
		panic(fmt.Sprintf("not event ids: %q %q", a, b))
	}
	return sa < sb
}

func wants(evs []cloudEvent) []wantEvent {
	out := make([]wantEvent, len(evs))
	for i, e := range evs {
		out[i] = e.want()
	}
	return out
}

func only(ws []wantEvent, keep func(wantEvent) bool) []wantEvent {
	var out []wantEvent
	for _, w := range ws {
		if keep(w) {
			out = append(out, w)
		}
	}
	return out
}

// TestEventsScopes: tenants:read replays every tenant's events, in the
// order the writes made them, each a whole CloudEvent; a tenant scope
// must name its tenant and then sees only that tenant's; another
// tenant, or none, is 403 naming the scope; no token 401.
func TestEventsScopes(t *testing.T) {
	n := newEventNode(t)
	n.writeAll(t)
	for _, bearer := range []string{"tok-reader", "tok-root"} {
		all := n.get(t, "/v1/events", bearer, "")
		if all.code != 200 || !slices.Equal(wants(all.events), n.want) || all.next != "" {
			t.Fatalf("%s: %d next %q\n%v\nwant %v", bearer, all.code, all.next, wants(all.events), n.want)
		}
	}
	all := n.get(t, "/v1/events", "tok-reader", "")
	for i, ev := range all.events {
		if ev.SpecVersion != "1.0" || ev.Source != "ankusa://n1" || ev.DataContentType != "application/json" || ev.Time.IsZero() ||
			!strings.HasPrefix(ev.ID, "evt_") || i > 0 && !idLess(all.events[i-1].ID, ev.ID) {
			t.Fatalf("event %d: %+v", i, ev)
		}
	}
	// The source's event carries its spec with the secret redacted.
	if d := string(all.events[0].Data); !strings.Contains(d, `"redacted"`) || strings.Contains(d, `"k"`) {
		t.Fatalf("source.created data: %s", d)
	}
	isAcme := func(w wantEvent) bool { return w.tenant == "acme" }
	for _, c := range []struct {
		target, bearer string
		want           []wantEvent
	}{
		{"/v1/events?tenant=acme", "tok-acme", only(n.want, isAcme)},
		{"/v1/events?tenant=globex", "tok-reader", only(n.want, func(w wantEvent) bool { return w.tenant == "globex" })},
		{"/v1/events?tenant=initech", "tok-globex", nil}, // its own tenant, no events
	} {
		a := n.get(t, c.target, c.bearer, "")
		if a.code != 200 || !slices.Equal(wants(a.events), c.want) || len(c.want) > 0 && len(a.events) == 0 {
			t.Fatalf("%s as %s: %d %v, want %v", c.target, c.bearer, a.code, wants(a.events), c.want)
		}
		if c.bearer == "tok-acme" && strings.Contains(a.body, "globex") {
			t.Fatalf("acme's replay names globex: %s", a.body)
		}
	}
	for _, c := range []struct {
		target, bearer string
		code           int
	}{
		{"/v1/events", "tok-acme", 403},
		{"/v1/events?tenant=globex", "tok-acme", 403},
		{"/v1/events?tenant=acme", "tok-globex", 403},
		{"/v1/events?tenant=acme", "tok-writer", 403},
		{"/v1/events?tenant=acme", "tok-none", 403},
		{"/v1/events?tenant=acme", "", 401},
		{"/v1/events?tenant=acme", "tok-nobody", 401},
	} {
		a := n.get(t, c.target, c.bearer, "")
		if a.code != c.code || a.code == 403 && !strings.Contains(a.body, "lacks the scope tenants:read (or the tenant's scope, with ?tenant=<tenant>)") {
			t.Fatalf("%s as %q: %d %s, want %d", c.target, c.bearer, a.code, a.body, c.code)
		}
	}
}

// TestEventsFilters: type keeps one type, or with .* every type under
// the prefix; since keeps the events written at or after it; each combines
// with tenant.
func TestEventsFilters(t *testing.T) {
	n := newEventNode(t)
	n.writeAll(t)
	all := n.get(t, "/v1/events", "tok-reader", "")
	since := all.events[n.later].Time
	if !all.events[n.later-1].Time.Before(since) {
		t.Fatalf("the pause did not separate the halves: %v, %v", all.events[n.later-1].Time, since)
	}
	typ := func(t string) func(wantEvent) bool { return func(w wantEvent) bool { return w.typ == t } }
	prefix := func(p string) func(wantEvent) bool {
		return func(w wantEvent) bool { return strings.HasPrefix(w.typ, p) }
	}
	for _, c := range []struct {
		query string
		want  []wantEvent
	}{
		{"type=io.ankusa.rate_limit.updated", only(n.want, typ("io.ankusa.rate_limit.updated"))},
		{"type=io.ankusa.rate_limit.*", only(n.want, prefix("io.ankusa.rate_limit."))},
		{"type=io.ankusa.route.*&tenant=acme", only(n.want, func(w wantEvent) bool { return w.tenant == "acme" && strings.HasPrefix(w.typ, "io.ankusa.route.") })},
		{"type=io.ankusa.*", n.want},
		{"type=io.ankusa.source", nil}, // exact: not a prefix
		{"type=io.ankusa.tenant.deleted", nil},
		{"since=" + url.QueryEscape(since.Format(time.RFC3339Nano)), n.want[n.later:]},
		{"since=" + url.QueryEscape(since.Format(time.RFC3339Nano)) + "&tenant=globex", only(n.want[n.later:], func(w wantEvent) bool { return w.tenant == "globex" })},
		{"since=" + url.QueryEscape(since.Add(time.Hour).Format(time.RFC3339)), nil},
		{"since=2000-01-01T00:00:00Z&type=io.ankusa.source.*", only(n.want, prefix("io.ankusa.source."))},
	} {
		a := n.get(t, "/v1/events?"+c.query, "tok-reader", "")
		if a.code != 200 || !slices.Equal(wants(a.events), c.want) {
			t.Errorf("%s: %d %v, want %v", c.query, a.code, wants(a.events), c.want)
		}
	}
	// The filters select something and leave something out.
	if n := len(only(n.want, prefix("io.ankusa.rate_limit."))); n == 0 || n == len(all.events) {
		t.Fatalf("rate_limit events: %d of %d", n, len(all.events))
	}
}

// TestEventsPaging: following next_cursor as after, with any limit and
// filter, gives every event exactly once, in order, and the last page has
// no next_cursor; an after from the middle resumes right after it.
func TestEventsPaging(t *testing.T) {
	n := newEventNode(t)
	n.writeAll(t)
	full := n.get(t, "/v1/events", "tok-reader", "")
	for _, c := range []struct {
		query  url.Values
		bearer string
		want   []wantEvent
		pages  int
	}{
		{url.Values{"limit": {"1"}}, "tok-reader", n.want, len(n.want) + 1}, // the last full page has a cursor to an empty one
		{url.Values{"limit": {"2"}}, "tok-reader", n.want, len(n.want)/2 + 1},
		{url.Values{"limit": {strconv.Itoa(len(n.want))}}, "tok-reader", n.want, 2},
		{url.Values{"limit": {strconv.Itoa(len(n.want) + 1)}}, "tok-reader", n.want, 1},
		{url.Values{"limit": {"2"}, "tenant": {"acme"}}, "tok-acme", only(n.want, func(w wantEvent) bool { return w.tenant == "acme" }), 4},
		{url.Values{"limit": {"2"}, "type": {"io.ankusa.rate_limit.*"}}, "tok-reader", only(n.want, func(w wantEvent) bool { return strings.HasPrefix(w.typ, "io.ankusa.rate_limit.") }), 3},
	} {
		got, pages := n.all(t, c.query, c.bearer, "")
		if !slices.Equal(wants(got), c.want) || pages != c.pages {
			t.Errorf("%v: %d pages %v, want %d pages %v", c.query, pages, wants(got), c.pages, c.want)
		}
	}
	// Resume from the middle: exactly the events after it.
	for i, ev := range full.events {
		rest, _ := n.all(t, url.Values{"limit": {"3"}}, "tok-reader", ev.ID)
		if !slices.Equal(wants(rest), n.want[i+1:]) {
			t.Fatalf("after event %d: %v, want %v", i, wants(rest), n.want[i+1:])
		}
	}
	// A tenant's replay resumes after another tenant's event id too.
	g := full.events[n.later] // acme's source update, among globex's
	rest, _ := n.all(t, url.Values{"tenant": {"globex"}}, "tok-globex", g.ID)
	if g.Tenant != "acme" || !slices.Equal(wants(rest), only(n.want[n.later+1:], func(w wantEvent) bool { return w.tenant == "globex" })) || len(rest) != 1 {
		t.Fatalf("globex after %s: %v", g.ID, wants(rest))
	}
}

// TestEventsLimit: limit is 1 to 1000, 100 when absent.
func TestEventsLimit(t *testing.T) {
	n := newEventNode(t)
	at := time.Now().UTC()
	for i := range 105 {
		rl := config.RateLimit{Rate: float64(i + 1), Burst: 1}
		if err := n.meta.SetRateLimitOverride("initech", rl, meta.AuditRow{At: at, Principal: "test", Action: "tenant.rate_limit.set", Tenant: "initech"}); err != nil {
			t.Fatal(err)
		}
	}
	a := n.get(t, "/v1/events", "tok-reader", "")
	if len(a.events) != 100 || a.next != a.events[99].ID {
		t.Fatalf("no limit: %d events, next %q", len(a.events), a.next)
	}
	rest := n.get(t, "/v1/events?after="+a.next, "tok-reader", "")
	if len(rest.events) != 5 || rest.next != "" || rest.events[0].Type != "io.ankusa.rate_limit.updated" || !strings.Contains(string(rest.events[4].Data), `"rate":105`) {
		t.Fatalf("the rest: %d events, next %q: %s", len(rest.events), rest.next, rest.body)
	}
	if a := n.get(t, "/v1/events?limit=1000", "tok-reader", ""); len(a.events) != 105 || a.next != "" {
		t.Fatalf("limit=1000: %d events, next %q", len(a.events), a.next)
	}
	if a := n.get(t, "/v1/events?limit=1", "tok-reader", ""); len(a.events) != 1 || a.next != a.events[0].ID {
		t.Fatalf("limit=1: %d events, next %q", len(a.events), a.next)
	}
	for _, l := range []string{"0", "1001", "-1", "x", ""} {
		if a := n.get(t, "/v1/events?limit="+l, "tok-reader", ""); a.code != 400 || !strings.Contains(a.body, `"limit: \"`+l+`\" must be a whole number from 1 to 1000"`) {
			t.Errorf("limit=%s: %d %s", l, a.code, a.body)
		}
	}
}

// TestEventsNDJSON: Accept: application/x-ndjson or ?format=ndjson answers
// one CloudEvent per line, the same events as the JSON page, and the
// cursor in X-Next-Cursor; ?format=json wins over the header.
func TestEventsNDJSON(t *testing.T) {
	n := newEventNode(t)
	n.writeAll(t)
	page := n.get(t, "/v1/events?limit=4", "tok-reader", "")
	if len(page.raw) != 4 || page.next == "" || page.header.Get("Content-Type") != "application/json" {
		t.Fatalf("page: %d events, next %q, %q", len(page.raw), page.next, page.header.Get("Content-Type"))
	}
	for _, c := range []struct{ target, accept string }{
		{"/v1/events?limit=4", "application/x-ndjson"},
		{"/v1/events?limit=4", "text/plain;q=0.5, application/x-ndjson; charset=utf-8"},
		{"/v1/events?limit=4&format=ndjson", ""},
		{"/v1/events?limit=4&format=ndjson", "application/json"},
	} {
		a := n.get(t, c.target, "tok-reader", c.accept)
		if a.code != 200 || a.header.Get("Content-Type") != mediaNDJSON || a.header.Get("Cache-Control") != "no-store" || a.header.Get("Vary") != "Accept" {
			t.Fatalf("%s (Accept %q): %d %v", c.target, c.accept, a.code, a.header)
		}
		if !slices.Equal(a.raw, page.raw) || a.next != page.next || strings.Count(a.body, "\n") != 4 {
			t.Fatalf("%s (Accept %q): next %q\n%s\nwant next %q\n%v", c.target, c.accept, a.next, a.body, page.next, page.raw)
		}
	}
	if a := n.get(t, "/v1/events?limit=4&format=json", "tok-reader", mediaNDJSON); a.header.Get("Content-Type") != "application/json" || !slices.Equal(a.raw, page.raw) {
		t.Fatalf("format=json with Accept ndjson: %v %s", a.header, a.body)
	}
	// The end: no cursor header; nothing left: an empty body.
	last := n.get(t, "/v1/events?format=ndjson&after="+page.events[3].ID, "tok-reader", "")
	if _, has := last.header[headerNextCursor]; has || len(last.events) != len(n.want)-4 {
		t.Fatalf("last page: %v, %d events", last.header, len(last.events))
	}
	end := n.get(t, "/v1/events?format=ndjson&after="+last.events[len(last.events)-1].ID, "tok-reader", "")
	if end.code != 200 || end.body != "" || end.header.Get(headerNextCursor) != "" {
		t.Fatalf("past the end: %d %q %v", end.code, end.body, end.header)
	}
}

// TestEventsBadQuery: every malformed parameter is 400 invalid_query
// naming it.
func TestEventsBadQuery(t *testing.T) {
	n := newEventNode(t)
	n.writeAll(t)
	hookID := envelope.MakeID(uint64(time.Now().UnixMilli()), 3, 1).String()
	for _, c := range []struct{ query, names string }{
		{"tenant=ACME", `tenant: \"ACME\" is not a tenant name`},
		{"tenant=", `tenant: \"\" is not a tenant name`},
		{"type=source.created", `type: \"source.created\" is not an event type`},
		{"type=io.ankusa.*.created", `type: \"io.ankusa.*.created\" is not an event type`},
		{"type=*", `type: \"*\" is not an event type`},
		{"type=", `type: \"\" is not an event type`},
		{"since=yesterday", `since: \"yesterday\" is not an RFC 3339 time`},
		{"since=2025-11-29", `since: \"2025-11-29\" is not an RFC 3339 time`},
		{"after=" + hookID, `after: \"` + hookID + `\" is not a lifecycle event id`},
		{"after=evt_nope", `after: \"evt_nope\" is not a lifecycle event id`},
		{"after=", `after: \"\" is not a lifecycle event id`},
		{"limit=0", `limit: \"0\" must be a whole number from 1 to 1000`},
		{"format=xml", `format: \"xml\" is neither json nor ndjson`},
		{"cursor=abc", `cursor: not a parameter here (the parameters are [tenant type since after limit format])`},
		{"until=2025-11-29T00:00:00Z", `until: not a parameter here`},
		{"type=io.ankusa.source.*&type=io.ankusa.route.*", `type: given 2 times; give it once`},
		{"limit=1&limit=2", `limit: given 2 times; give it once`},
		{"x=%zz", `query: cannot parse the query string`},
	} {
		a := n.get(t, "/v1/events?"+c.query, "tok-reader", "")
		if a.code != 400 || a.errCode != "invalid_query" || !strings.Contains(a.body, `"message":"`+c.names) {
			t.Errorf("%s: %d %s, want 400 invalid_query %s", c.query, a.code, a.body, c.names)
		}
	}
	// A good event id of no event of this outbox (past its end) is no
	// error: an empty page.
	future := meta.EventID(time.Now(), 3, 1<<40).String()
	if a := n.get(t, "/v1/events?after="+future, "tok-reader", ""); a.code != 200 || len(a.events) != 0 || a.next != "" {
		t.Fatalf("after a future id: %d %s", a.code, a.body)
	}
}

// TestEventsPageBytes: a page ends after the event that reaches the byte
// bound, short of limit, with the cursor of that event; following it
// loses nothing.
func TestEventsPageBytes(t *testing.T) {
	n := newEventNode(t)
	n.writeAll(t)
	lc, err := lifecycle.New(lifecycle.Options{Store: n.meta, Node: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	h := &eventHandlers{events: lc, pageBytes: 1}
	var got []wantEvent
	after := ""
	for range len(n.want) + 1 {
		page, next, err := h.page(lifecycle.Query{After: after, Limit: 100})
		if err != nil || len(page) > 1 {
			t.Fatalf("after %q: %d events, %v", after, len(page), err)
		}
		for _, raw := range page {
			var ev cloudEvent
			if err := json.Unmarshal(raw, &ev); err != nil {
				t.Fatal(err)
			}
			if next != ev.ID {
				t.Fatalf("a full page's next %q, its event %q", next, ev.ID)
			}
			got = append(got, ev.want())
		}
		if next == "" {
			break
		}
		after = next
	}
	if !slices.Equal(got, n.want) {
		t.Fatalf("one event a page: %v, want %v", got, n.want)
	}
}

// TestEventsRouteNeedsLog: without Options.Events there is no replay
// route.
func TestEventsRouteNeedsLog(t *testing.T) {
	mux := http.NewServeMux()
	if err := Register(mux, Options{Tokens: testTokens()}); err != nil {
		t.Fatal(err)
	}
	if w := do(mux, "GET", "/v1/events", "tok-reader"); w.Code != 404 {
		t.Fatalf("GET /v1/events without Events: %d %s", w.Code, w.Body)
	}
}

// TestEventsFollowWhileWriting: a client that follows the replay (the
// cursor, or at the end the last id it read) while writers commit
// concurrently reads every event exactly once, in commit order: the
// seqs are dense and each tenant's changes come in the order it made
// them.
func TestEventsFollowWhileWriting(t *testing.T) {
	n := newEventNode(t)
	const writers, each = 4, 40
	done := make(chan error, writers)
	for w := range writers {
		go func() {
			tn := fmt.Sprintf("t%d", w)
			for i := range each {
				rl := config.RateLimit{Rate: float64(i + 1), Burst: 1}
				if err := n.meta.SetRateLimitOverride(tn, rl, meta.AuditRow{At: time.Now().UTC(), Principal: "test", Action: "tenant.rate_limit.set", Tenant: tn}); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	var got []cloudEvent
	after, finished, pages, whileWriting := "", 0, 0, 0
	for {
		// An empty page asked for once every writer was done is the end.
		drained := finished == writers
		q := "/v1/events?limit=7"
		if after != "" {
			q += "&after=" + after
		}
		a := n.get(t, q, "tok-reader", "")
		if a.code != 200 {
			t.Fatalf("%s: %d %s", q, a.code, a.body)
		}
		got = append(got, a.events...)
		if pages++; !drained {
			whileWriting = len(got)
		}
		if a.next != "" {
			after = a.next
		} else if len(a.events) > 0 {
			after = a.events[len(a.events)-1].ID
		} else if drained {
			break
		}
		for more := true; more && finished < writers; {
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
				finished++
			default:
				more = false
			}
		}
	}
	t.Logf("%d pages, %d events read while the writers wrote", pages, whileWriting)
	if len(got) != writers*each {
		t.Fatalf("read %d events, want %d", len(got), writers*each)
	}
	next := map[string]int{}
	for i, ev := range got {
		seq, err := lifecycle.ParseEventID(ev.ID)
		if err != nil || seq != uint64(i+1) {
			t.Fatalf("event %d: id %s (seq %d, %v): not the next seq", i, ev.ID, seq, err)
		}
		next[ev.Tenant]++
		if !strings.Contains(string(ev.Data), fmt.Sprintf(`"rate":%d,`, next[ev.Tenant])) {
			t.Fatalf("event %d of %s: %s, want its change %d", i, ev.Tenant, ev.Data, next[ev.Tenant])
		}
	}
}
