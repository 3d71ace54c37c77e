package admin

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/source"
)

// Event ids the fake pen answers with an error, or holds for the
// conflicts a release runs into (goodID, globexID, brokenID and unknownID
// are hooks_test.go's).
var (
	penStillID   = envelope.MakeID(1_764_445_200_400, 7, 80)
	penSrcGone   = envelope.MakeID(1_764_445_200_401, 7, 81)
	penBusyID    = envelope.MakeID(1_764_445_200_402, 7, 82)
	penExpired   = envelope.MakeID(1_764_445_200_403, 7, 83)
	penRemovedID = envelope.MakeID(1_764_445_200_404, 7, 84)
	penAt        = time.Date(2025, 11, 29, 19, 40, 0, 0, time.UTC)
	fakePenHeld  = fakePenItems()
	// fakePenOthers are held too, but not listed: a release of each runs
	// into a conflict (still invalid, source gone, its hook unreadable).
	fakePenOthers = []dispatch.PenItem{
		{Tenant: "acme", Source: "stripe", ID: penStillID, Seq: 80, ReceivedAt: penAt, Bytes: 9, Failure: "mismatch"},
		{Tenant: "acme", Source: "retired", ID: penSrcGone, Seq: 81, ReceivedAt: penAt, Bytes: 9, Failure: "mismatch"},
		{Tenant: "acme", Source: "stripe", ID: penExpired, Seq: 83, ReceivedAt: penAt, Bytes: 9, Failure: "expired"},
		{Tenant: "acme", Source: "stripe", ID: penRemovedID, Seq: 84, ReceivedAt: penAt, Bytes: 9, Failure: "mismatch"},
	}
	// penHooks are the stored hooks of fakePenOthers the fetcher serves:
	// one signed with another secret, one signed an hour before it was
	// received.
	penHooks = map[envelope.ID]*envelope.Envelope{
		penStillID: penHook(penStillID, "whsec_other", 0),
		penExpired: penHook(penExpired, penSecret, -time.Hour),
	}
)

// penSecret is the secret of the sources the quarantine tests verify
// with (stripe's scheme; penSources).
const penSecret = "whsec_pen"

// penSources are acme's sources: stripe and gh. A hook of source
// "retired" has none any more.
func penSources() source.Store {
	verify := config.Verify{Type: "stripe", Secret: config.Secret{Value: penSecret}}
	return source.NewStatic(&config.Config{Sources: map[string]config.Source{
		"stripe": {TenantID: "acme", Verify: verify},
		"gh":     {TenantID: "acme", Verify: config.Verify{Type: "github", Secret: config.Secret{Value: penSecret}}},
	}})
}

// stripeSig is a Stripe-Signature value for body signed with secret at
// unix second ts.
func stripeSig(secret string, ts int64, body string) string {
	m := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(m, "%d.%s", ts, body)
	return fmt.Sprintf("t=%d,v1=%s", ts, hex.EncodeToString(m.Sum(nil)))
}

// penHook is a stored hook of acme's source stripe received at penAt,
// signed with secret skew from then.
func penHook(id envelope.ID, secret string, skew time.Duration) *envelope.Envelope {
	body := fmt.Sprintf(`{"held":%q}`, id)
	return &envelope.Envelope{ID: id, TenantID: "acme", SourceID: "stripe", ReceivedAt: penAt.UnixNano(), Body: []byte(body),
		Headers: []envelope.Header{{Name: "stripe-signature", Value: stripeSig(secret, penAt.Add(skew).Unix(), body)}}}
}

// fakePenItems are the hooks the fake pen holds: four of acme's, in seq
// order, and one of globex's.
func fakePenItems() []dispatch.PenItem {
	items := []dispatch.PenItem{{
		Tenant: "acme", Source: "stripe", ID: goodID, Seq: 42, Bytes: 512, Failure: "mismatch",
		ReceivedAt: time.Date(2025, 11, 29, 20, 40, 0, 123456789, time.FixedZone("+01:00", 3600)),
	}}
	for i, src := range []string{"gh", "stripe", "gh"} {
		seq := uint64(70 + i)
		items = append(items, dispatch.PenItem{
			Tenant: "acme", Source: src, ID: envelope.MakeID(1_764_445_200_500, 7, seq), Seq: seq,
			ReceivedAt: penAt.Add(time.Duration(i+1) * time.Hour), Bytes: 100 + i, Failure: []string{"expired", "missing", "malformed"}[i],
		})
	}
	return append(items, dispatch.PenItem{Tenant: "globex", Source: "gh", ID: globexID, Seq: 43, ReceivedAt: penAt, Bytes: 7, Failure: "mismatch"})
}

// fakePen serves fakePenHeld (and looks up fakePenOthers); it records
// every change it gets, the audit rows that come with them, and every
// lookup.
type fakePen struct {
	mu      sync.Mutex
	calls   []string // "Method tenant ... principal"
	filters []dispatch.Filter
	audits  []meta.AuditRow
	lookups []string // "tenant id"
	leak    bool     // Quarantined lists globex's hook to everyone
}

func (f *fakePen) record(call string, filter *dispatch.Filter) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
	if filter != nil {
		f.filters = append(f.filters, *filter)
	}
}

func (f *fakePen) recorded() ([]string, []dispatch.Filter) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls), slices.Clone(f.filters)
}

func (f *fakePen) lookedUp() ([]string, []meta.AuditRow) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.lookups), slices.Clone(f.audits)
}

func (f *fakePen) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls, f.filters, f.audits, f.lookups = nil, nil, nil, nil
}

func (f *fakePen) matching(tenant string, filter dispatch.Filter) []dispatch.PenItem {
	var out []dispatch.PenItem
	for _, it := range fakePenHeld {
		r := dispatch.Row{Source: it.Source, ReceivedAt: it.ReceivedAt}
		if (it.Tenant == tenant || f.leak) && filter.Match(&r) {
			out = append(out, it)
		}
	}
	return out
}

// Quarantined pages like the fake deliveries: the cursor is "c" and the
// index of the next item.
func (f *fakePen) Quarantined(_ context.Context, tenant string, filter dispatch.Filter, cursor string, limit int) ([]dispatch.PenItem, string, error) {
	f.record(fmt.Sprintf("Quarantined %s %q %d", tenant, cursor, limit), &filter)
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
	items := f.matching(tenant, filter)[from:]
	if len(items) <= limit {
		return items, "", nil
	}
	return items[:limit], "c" + strconv.Itoa(from+limit), nil
}

// QuarantinedHook answers as the dispatcher's: the tenant's held hook,
// or one of its errors.
func (f *fakePen) QuarantinedHook(_ context.Context, tenant string, id envelope.ID) (dispatch.PenItem, error) {
	f.mu.Lock()
	f.lookups = append(f.lookups, tenant+" "+id.String())
	f.mu.Unlock()
	switch id {
	case penBusyID:
		return dispatch.PenItem{}, dispatch.ErrBusy
	case brokenID:
		return dispatch.PenItem{}, errBroken
	}
	for _, it := range append(slices.Clone(fakePenHeld), fakePenOthers...) {
		if it.Tenant == tenant && it.ID == id {
			return it, nil
		}
	}
	return dispatch.PenItem{}, dispatch.ErrNotQuarantined
}

// change records a change to one hook and its audit row. A hook whose
// source is gone cannot be released by any mode (the fake says so for a
// drop too, so the handler's answer to it is pinned on both routes).
func (f *fakePen) change(call string, id envelope.ID, audit meta.AuditRow) error {
	f.record(call+" by "+audit.Principal, nil)
	if id == penSrcGone {
		return dispatch.ErrSourceGone
	}
	f.mu.Lock()
	f.audits = append(f.audits, audit)
	f.mu.Unlock()
	return nil
}

func (f *fakePen) Release(_ context.Context, tenant string, id envelope.ID, mode dispatch.ReleaseMode, audit meta.AuditRow) (dispatch.Released, error) {
	call := fmt.Sprintf("Release %s %s force=%v", tenant, id, mode == dispatch.ReleaseForced)
	if err := f.change(call, id, audit); err != nil {
		return dispatch.Released{}, err
	}
	return dispatch.Released{Verified: mode == dispatch.ReleaseVerified, Rows: 2}, nil
}

func (f *fakePen) DropQuarantined(_ context.Context, tenant string, id envelope.ID, audit meta.AuditRow) error {
	return f.change(fmt.Sprintf("Drop %s %s", tenant, id), id, audit)
}

// DropAllQuarantined drops what matches in one batch.
func (f *fakePen) DropAllQuarantined(_ context.Context, tenant string, filter dispatch.Filter, audit func(n int) meta.AuditRow) (int, error) {
	n := len(f.matching(tenant, filter))
	row := audit(n)
	f.record(fmt.Sprintf("DropAll %s by %s", tenant, row.Principal), &filter)
	if filter.Source == "broken" {
		return 0, errBroken
	}
	if n > 0 {
		f.mu.Lock()
		f.audits = append(f.audits, row)
		f.mu.Unlock()
	}
	return n, nil
}

// penNow is the fake clock of the audit rows.
var penNow = time.Date(2025, 11, 30, 8, 0, 0, 5, time.FixedZone("+01:00", 3600))

func newPenMux(t *testing.T) (*http.ServeMux, *fakePen, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zapcore.InfoLevel)
	q := &fakePen{}
	mux := http.NewServeMux()
	o := Options{Tokens: testTokens(), Hooks: &fakeFetcher{}, Quarantine: q, Sources: penSources(), Logger: zap.New(core),
		Now: func() time.Time { return penNow }}
	if err := Register(mux, o); err != nil {
		t.Fatal(err)
	}
	return mux, q, logs
}

const (
	acmePen         = "/v1/tenants/acme/quarantine"
	penInternalBody = `{"error":"internal","message":"the quarantine pen could not be read or changed; the node's log says why"}` + "\n"
)

// penRoutes is one request of each route that succeeds for acme, and its
// status.
var penRoutes = []struct {
	method, path string
	status       int
}{
	{"GET", acmePen, 200},
	{"POST", acmePen + "/drop?all=true", 200},
	{"POST", acmePen + "/" + goodID.String() + "/release", 200},
	{"DELETE", acmePen + "/" + goodID.String(), 204},
}

// TestQuarantineAuth: no token is 401, another tenant's token is the
// guard's 403, and neither reaches the pen; acme's and the root token get
// through with the same call.
func TestQuarantineAuth(t *testing.T) {
	mux, q, _ := newPenMux(t)
	for _, rt := range penRoutes {
		name := rt.method + " " + rt.path
		w := do(mux, rt.method, rt.path, "")
		if w.Code != 401 || w.Header().Get("WWW-Authenticate") != "Bearer" || !strings.HasPrefix(w.Body.String(), `{"error":"unauthorized","message":"send the header Authorization: Bearer`) {
			t.Errorf("%s without a token: %d %v %s", name, w.Code, w.Header(), w.Body)
		}
		w = do(mux, rt.method, rt.path, "tok-wrong")
		if w.Code != 401 || !strings.Contains(w.Body.String(), "not one of admin.tokens") {
			t.Errorf("%s with an unknown token: %d %s", name, w.Code, w.Body)
		}
		w = do(mux, rt.method, rt.path, "tok-globex")
		if w.Code != 403 || w.Body.String() != `{"error":"forbidden","message":"token \"globex\" lacks the scope tenant:acme (or tenant:*)"}`+"\n" {
			t.Errorf("%s with globex's token: %d %s", name, w.Code, w.Body)
		}
		if w = do(mux, rt.method, rt.path, "tok-reader"); w.Code != 403 {
			t.Errorf("%s with a tenants:read token: %d %s", name, w.Code, w.Body)
		}
		if calls, _ := q.recorded(); len(calls) != 0 {
			t.Fatalf("%s: refused requests reached the pen: %q", name, calls)
		}
		if lookups, _ := q.lookedUp(); len(lookups) != 0 {
			t.Fatalf("%s: refused requests reached the pen: %q", name, lookups)
		}
		for _, tok := range []string{"tok-acme", "tok-root"} {
			w = do(mux, rt.method, rt.path, tok)
			if w.Code != rt.status {
				t.Errorf("%s with %s: %d %s, want %d", name, tok, w.Code, w.Body, rt.status)
			}
			if w.Header().Get("Cache-Control") != "no-store" {
				t.Errorf("%s: Cache-Control %q, want no-store", name, w.Header().Get("Cache-Control"))
			}
			if ct := w.Header().Get("Content-Type"); rt.status == 200 && ct != "application/json" {
				t.Errorf("%s: Content-Type %q", name, ct)
			}
		}
		calls, _ := q.recorded()
		if len(calls) != 2 || !strings.Contains(calls[0], " acme ") {
			t.Errorf("%s: calls %q, want two for acme", name, calls)
		}
		q.reset()
	}
}

// TestQuarantinePrincipal: the token's name reaches the pen, which writes
// it into the audit row.
func TestQuarantinePrincipal(t *testing.T) {
	mux, q, _ := newPenMux(t)
	for _, tok := range []string{"tok-acme", "tok-root"} {
		do(mux, "POST", acmePen+"/"+goodID.String()+"/release", tok)
		do(mux, "POST", acmePen+"/"+goodID.String()+"/release?force=true", tok)
		do(mux, "DELETE", acmePen+"/"+goodID.String(), tok)
		do(mux, "POST", acmePen+"/drop?source=gh", tok)
	}
	calls, _ := q.recorded()
	var want []string
	for _, p := range []string{"acme", "root"} {
		want = append(want,
			"Release acme "+goodID.String()+" force=false by "+p,
			"Release acme "+goodID.String()+" force=true by "+p,
			"Drop acme "+goodID.String()+" by "+p,
			"DropAll acme by "+p)
	}
	if !slices.Equal(calls, want) {
		t.Fatalf("calls\n%q\nwant\n%q", calls, want)
	}
}

func TestQuarantineListJSON(t *testing.T) {
	mux, q, logs := newPenMux(t)
	w := do(mux, "GET", acmePen+"?limit=3", "tok-acme")
	want := `{"hooks":[` +
		`{"event_id":"` + goodID.String() + `","seq":42,"source":"stripe","received_at":"2025-11-29T19:40:00.123456789Z","bytes":512,"failure":"mismatch"},` +
		`{"event_id":"` + fakePenHeld[1].ID.String() + `","seq":70,"source":"gh","received_at":"2025-11-29T20:40:00.000000000Z","bytes":100,"failure":"expired"},` +
		`{"event_id":"` + fakePenHeld[2].ID.String() + `","seq":71,"source":"stripe","received_at":"2025-11-29T21:40:00.000000000Z","bytes":101,"failure":"missing"}` +
		`],"next_cursor":"c3"}` + "\n"
	if w.Code != 200 || w.Body.String() != want || w.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("got %d %v\n%s\nwant\n%s", w.Code, w.Header(), w.Body, want)
	}
	// The last page has no next_cursor.
	w = do(mux, "GET", acmePen+"?cursor=c3", "tok-acme")
	want = `{"hooks":[{"event_id":"` + fakePenHeld[3].ID.String() + `","seq":72,"source":"gh","received_at":"2025-11-29T22:40:00.000000000Z","bytes":102,"failure":"malformed"}]}` + "\n"
	if w.Code != 200 || w.Body.String() != want {
		t.Fatalf("last page: %d\n%s\nwant\n%s", w.Code, w.Body, want)
	}
	// An empty pen is [], not null.
	w = do(mux, "GET", "/v1/tenants/initech/quarantine", "tok-globex")
	if w.Code != 200 || w.Body.String() != `{"hooks":[]}`+"\n" {
		t.Fatalf("empty listing: %d %s", w.Code, w.Body)
	}
	calls, _ := q.recorded()
	if want := []string{`Quarantined acme "" 3`, `Quarantined acme "c3" 100`, `Quarantined initech "" 100`}; !slices.Equal(calls, want) {
		t.Fatalf("calls %q, want %q (the default limit is 100)", calls, want)
	}
	if logs.Len() != 0 {
		t.Fatalf("a listing logged %+v", logs.All())
	}
}

// TestQuarantinePaging walks the pen two hooks at a time.
func TestQuarantinePaging(t *testing.T) {
	mux, _, _ := newPenMux(t)
	var got []string
	cursor, pages := "", 0
	for {
		path := acmePen + "?limit=2"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		w := do(mux, "GET", path, "tok-acme")
		var page struct {
			Hooks []struct {
				EventID string `json:"event_id"`
			} `json:"hooks"`
			NextCursor *string `json:"next_cursor"`
		}
		if w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &page) != nil {
			t.Fatalf("%s: %d %s", path, w.Code, w.Body)
		}
		pages++
		for _, h := range page.Hooks {
			got = append(got, h.EventID)
		}
		if page.NextCursor == nil {
			break
		}
		if *page.NextCursor == "" || pages > 4 {
			t.Fatalf("page %d: next_cursor %q", pages, *page.NextCursor)
		}
		cursor = *page.NextCursor
	}
	var want []string
	for _, it := range fakePenHeld[:4] {
		want = append(want, it.ID.String())
	}
	if pages != 2 || !slices.Equal(got, want) {
		t.Fatalf("%d pages of %q, want 2 of %q", pages, got, want)
	}
}

// TestQuarantineFilters: source, since and until reach the pen as a filter
// in UTC, on the listing and on drop.
func TestQuarantineFilters(t *testing.T) {
	mux, q, _ := newPenMux(t)
	since := time.Date(2025, 11, 29, 20, 0, 0, 0, time.UTC)
	until := time.Date(2025, 11, 29, 22, 0, 0, 5, time.UTC)
	query := "source=gh&since=2025-11-29T21:00:00%2B01:00&until=2025-11-29T22:00:00.000000005Z"
	f := func(method, path, want string) {
		t.Helper()
		q.reset()
		w := do(mux, method, path, "tok-acme")
		if w.Code != 200 || w.Body.String() != want {
			t.Fatalf("%s %s: %d %s, want %s", method, path, w.Code, w.Body, want)
		}
		_, filters := q.recorded()
		if len(filters) != 1 {
			t.Fatalf("%s %s: filters %+v", method, path, filters)
		}
		got := filters[0]
		if got.Source != "gh" || !got.Since.Equal(since) || !got.Until.Equal(until) ||
			got.Since.Location() != time.UTC || got.Until.Location() != time.UTC {
			t.Fatalf("%s %s: filter %+v, want gh from %v until %v in UTC", method, path, got, since, until)
		}
	}
	// fakePenHeld[1] (gh, 20:40) is the one in the window.
	f("GET", acmePen+"?"+query+"&limit=1000", `{"hooks":[{"event_id":"`+fakePenHeld[1].ID.String()+
		`","seq":70,"source":"gh","received_at":"2025-11-29T20:40:00.000000000Z","bytes":100,"failure":"expired"}]}`+"\n")
	f("POST", acmePen+"/drop?"+query, `{"dropped":1}`+"\n")
	f("POST", acmePen+"/drop?all=false&"+query, `{"dropped":1}`+"\n")
	f("POST", acmePen+"/drop?all=true&"+query, `{"dropped":1}`+"\n")
}

// TestQuarantineBadRequest: every parameter that is wrong is a 400 naming
// it, and never reaches the pen.
func TestQuarantineBadRequest(t *testing.T) {
	mux, q, logs := newPenMux(t)
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
	list := acmePen + "?"
	f("GET", list+"state=dead", "state", "not a parameter", "[source since until cursor limit]")
	f("GET", list+"all=true", "all", "not a parameter")
	f("GET", list+"limit=5&limit=5", "limit", "given 2 times")
	f("GET", list+"source=gh&source=gh", "source", "given 2 times")
	f("GET", list+"limit=0", "limit", "1 to 1000")
	f("GET", list+"limit=1001", "limit", "1 to 1000")
	f("GET", list+"limit=-1", "limit")
	f("GET", list+"limit=ten", "limit", `\"ten\"`)
	f("GET", list+"limit=", "limit")
	f("GET", list+"since=yesterday", "since", "RFC 3339")
	f("GET", list+"since=2025-11-29T19:00:00+01:00", "since", "%2B") // + is a space in a query
	f("GET", list+"until=2025-13-01T00:00:00Z", "until")
	f("GET", list+"since=2025-11-29T00:00:00Z&until=2025-11-29T00:00:00Z", "since", "before until")
	f("GET", list+"since=2025-11-30T00:00:00Z&until=2025-11-29T00:00:00Z", "since", "before until")
	f("GET", list+"source=Stripe", "source", "must match")
	f("GET", list+"source=", "source")
	f("GET", list+"x=%zz", "query")

	release := acmePen + "/" + goodID.String() + "/release?"
	f("POST", release+"force=yes", "force", `\"yes\" must be true or false`)
	f("POST", release+"force=1", "force")
	f("POST", release+"force=", "force")
	f("POST", release+"force=TRUE", "force")
	f("POST", release+"force=true&force=true", "force", "given 2 times")
	f("POST", release+"all=true", "all", "not a parameter", "[force]")

	drop := acmePen + "/drop"
	f("POST", drop, "all", "all=true", "give source, since or until")
	f("POST", drop+"?all=false", "all", "all=true")
	f("POST", drop+"?all=maybe", "all", `\"maybe\" must be true or false`)
	f("POST", drop+"?all=maybe&source=gh", "all", "true or false")
	f("POST", drop+"?all=true&all=true", "all", "given 2 times")
	f("POST", drop+"?limit=5&all=true", "limit", "not a parameter")
	f("POST", drop+"?cursor=c1&all=true", "cursor", "not a parameter")
	f("POST", drop+"?since=bad&all=true", "since")
	f("POST", drop+"?until=2025-11-29T00:00:00Z&since=2025-11-29T01:00:00Z", "since", "before until")
	f("POST", drop+"?source=GH", "source")
	if calls, _ := q.recorded(); len(calls) != 0 {
		t.Fatalf("bad requests reached the pen: %q", calls)
	}
	if logs.Len() != 0 {
		t.Fatalf("a 400 is an answer, not a failure: %+v", logs.All())
	}
}

// TestQuarantineRelease: a release answers what it did, and force reaches
// the pen only as true or false.
func TestQuarantineRelease(t *testing.T) {
	mux, q, _ := newPenMux(t)
	f := func(query string, force bool, want string) {
		t.Helper()
		q.reset()
		w := do(mux, "POST", acmePen+"/"+strings.ToLower(goodID.String())+"/release"+query, "tok-acme")
		if w.Code != 200 || w.Body.String() != want || w.Header().Get("Content-Type") != "application/json" {
			t.Fatalf("release%s: %d %s, want %s", query, w.Code, w.Body, want)
		}
		calls, _ := q.recorded()
		if wantCall := fmt.Sprintf("Release acme %s force=%v by acme", goodID, force); !slices.Equal(calls, []string{wantCall}) {
			t.Fatalf("release%s: calls %q, want %q", query, calls, wantCall)
		}
	}
	f("", false, `{"deliveries":2,"released":1,"verified":true}`+"\n")
	f("?force=false", false, `{"deliveries":2,"released":1,"verified":true}`+"\n")
	f("?force=true", true, `{"deliveries":2,"released":1,"verified":false}`+"\n")
}

func TestQuarantineDrop(t *testing.T) {
	mux, q, _ := newPenMux(t)
	w := do(mux, "DELETE", acmePen+"/"+fakePenHeld[2].ID.String(), "tok-acme")
	if w.Code != 204 || w.Body.Len() != 0 || w.Header().Get("Cache-Control") != "no-store" {
		t.Fatalf("drop: %d %v %q", w.Code, w.Header(), w.Body)
	}
	calls, _ := q.recorded()
	if want := []string{"Drop acme " + fakePenHeld[2].ID.String() + " by acme"}; !slices.Equal(calls, want) {
		t.Fatalf("calls %q, want %q", calls, want)
	}
	for _, rt := range []struct{ method, path string }{
		{"PUT", acmePen + "/" + goodID.String()},
		{"GET", acmePen + "/" + goodID.String() + "/release"},
		{"DELETE", acmePen},
		{"POST", acmePen},
	} {
		if w := do(mux, rt.method, rt.path, "tok-acme"); w.Code != http.StatusMethodNotAllowed {
			t.Errorf("%s %s: %d, want 405", rt.method, rt.path, w.Code)
		}
	}
}

// TestQuarantineDropAll: the count of what was dropped, and a drop of the
// whole pen only with all=true.
func TestQuarantineDropAll(t *testing.T) {
	mux, q, _ := newPenMux(t)
	f := func(query, want string) {
		t.Helper()
		if w := do(mux, "POST", acmePen+"/drop"+query, "tok-acme"); w.Code != 200 || w.Body.String() != want {
			t.Fatalf("drop%s: %d %s, want %s", query, w.Code, w.Body, want)
		}
	}
	f("?all=true", `{"dropped":4}`+"\n")
	f("?source=stripe", `{"dropped":2}`+"\n")
	f("?since=2025-11-29T21:00:00Z", `{"dropped":2}`+"\n")
	f("?until=2025-11-29T21:00:00Z", `{"dropped":2}`+"\n")
	f("?source=none", `{"dropped":0}`+"\n")
	_, filters := q.recorded()
	if len(filters) != 5 || filters[0] != (dispatch.Filter{}) || filters[1].Source != "stripe" || !filters[1].Since.IsZero() ||
		filters[2].Since.IsZero() || !filters[2].Until.IsZero() || filters[3].Until.IsZero() || filters[3].Source != "" {
		t.Fatalf("filters %+v", filters)
	}
	// globex's drop of everything is globex's only.
	q.reset()
	if w := do(mux, "POST", "/v1/tenants/globex/quarantine/drop?all=true", "tok-globex"); w.Code != 200 || w.Body.String() != `{"dropped":1}`+"\n" {
		t.Fatalf("globex drop: %d %s", w.Code, w.Body)
	}
	if calls, _ := q.recorded(); !slices.Equal(calls, []string{"DropAll globex by globex"}) {
		t.Fatalf("calls %q", calls)
	}
}

// TestQuarantineNotFoundIdentical: an unknown, a malformed and another
// tenant's event id, and an invalid tenant name, all get the hook fetch's
// 404, byte for byte, headers included.
func TestQuarantineNotFoundIdentical(t *testing.T) {
	mux, q, logs := newPenMux(t)
	reqs := []struct{ method, path, token string }{
		{"GET", "/v1/tenants/acme/hooks/" + unknownID.String(), "tok-acme"}, // the hook fetch
		{"POST", acmePen + "/" + unknownID.String() + "/release", "tok-acme"},
		{"POST", acmePen + "/" + unknownID.String() + "/release?force=true", "tok-acme"},
		{"POST", acmePen + "/" + globexID.String() + "/release", "tok-acme"},
		{"POST", acmePen + "/evt_nope/release", "tok-acme"},
		{"POST", acmePen + "/evt_8ZZZZZZZZZZZZZZZZZZZZZZZZZ/release", "tok-acme"},
		{"DELETE", acmePen + "/" + unknownID.String(), "tok-acme"},
		{"DELETE", acmePen + "/" + globexID.String(), "tok-root"},
		{"DELETE", acmePen + "/not-an-id", "tok-acme"},
		{"DELETE", acmePen + "/drop", "tok-acme"},
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
	// What does not parse never reaches the pen; what does is looked up
	// for the tenant asked about, and changes nothing.
	calls, _ := q.recorded()
	lookups, _ := q.lookedUp()
	want := []string{
		"acme " + unknownID.String(), // release
		"acme " + unknownID.String(), // release?force=true
		"acme " + globexID.String(),  // release
		"acme " + unknownID.String(), // drop
		"acme " + globexID.String(),  // drop, with the root token
	}
	if len(calls) != 0 || !slices.Equal(lookups, want) {
		t.Fatalf("changes %q, lookups\n%q\nwant none, and\n%q", calls, lookups, want)
	}
	if logs.Len() != 0 {
		t.Fatalf("a 404 is an answer, not a failure: %+v", logs.All())
	}
}

// TestQuarantineConflicts: the pen's own refusals are 409 and 503 answers
// with stable codes, never logged as failures.
func TestQuarantineConflicts(t *testing.T) {
	mux, _, logs := newPenMux(t)
	still := func(reason string) string {
		return `{"error":"signature_invalid","message":"the hook does not verify with the source's current secrets (reason: ` + reason +
			`); fix the secret and release it again, or release it with force=true to deliver it flagged"}` + "\n"
	}
	gone := `{"error":"source_gone","message":"the hook's source no longer exists, so nothing could deliver it; drop it"}` + "\n"
	busy := `{"error":"unavailable","message":"the hook was quarantined a moment ago; retry in a second"}` + "\n"
	cases := []struct {
		method, path string
		status       int
		body         string
	}{
		{"POST", acmePen + "/" + penStillID.String() + "/release", 409, still("mismatch")},
		{"POST", acmePen + "/" + penExpired.String() + "/release", 409, still("expired")},
		{"POST", acmePen + "/" + penSrcGone.String() + "/release", 409, gone},
		{"POST", acmePen + "/" + penSrcGone.String() + "/release?force=true", 409, gone},
		{"DELETE", acmePen + "/" + penSrcGone.String(), 409, gone},
		{"POST", acmePen + "/" + penBusyID.String() + "/release", 503, busy},
		{"DELETE", acmePen + "/" + penBusyID.String(), 503, busy},
	}
	for _, c := range cases {
		w := do(mux, c.method, c.path, "tok-acme")
		if w.Code != c.status || w.Body.String() != c.body || w.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%s %s: %d %s, want %d %s", c.method, c.path, w.Code, w.Body, c.status, c.body)
		}
		if ra := w.Header().Get("Retry-After"); (c.status == 503) != (ra == "1") || (c.status != 503 && ra != "") {
			t.Errorf("%s %s: Retry-After %q", c.method, c.path, ra)
		}
	}
	// A cursor the pen did not issue is the client's mistake.
	w := do(mux, "GET", acmePen+"?cursor=bogus", "tok-acme")
	if w.Code != 400 || w.Body.String() != `{"error":"invalid_query","message":"cursor: not a next_cursor this listing returned; start again without cursor"}`+"\n" {
		t.Errorf("bad cursor: %d %s", w.Code, w.Body)
	}
	if logs.Len() != 0 {
		t.Fatalf("a refusal is an answer, not a failure: %+v", logs.All())
	}
}

// TestQuarantineInternalError: any other error is a 500 that says nothing
// of its cause; the cause goes to the log with the tenant.
func TestQuarantineInternalError(t *testing.T) {
	mux, q, logs := newPenMux(t)
	reqs := []struct{ method, path, msg string }{
		{"GET", acmePen + "?source=broken", "cannot list quarantined hooks"},
		{"POST", acmePen + "/drop?source=broken", "cannot drop quarantined hooks"},
		{"POST", acmePen + "/" + brokenID.String() + "/release", "cannot release a quarantined hook"},
		{"POST", acmePen + "/" + brokenID.String() + "/release?force=true", "cannot release a quarantined hook"},
		{"DELETE", acmePen + "/" + brokenID.String(), "cannot drop a quarantined hook"},
	}
	for _, r := range reqs {
		w := do(mux, r.method, r.path, "tok-acme")
		if w.Code != 500 || w.Body.String() != penInternalBody || w.Header().Get("Retry-After") != "" {
			t.Errorf("%s %s: %d %s, want 500 %s", r.method, r.path, w.Code, w.Body, penInternalBody)
		}
	}
	entries := logs.All()
	if len(entries) != len(reqs) {
		t.Fatalf("%d log entries, want %d: %+v", len(entries), len(reqs), entries)
	}
	for i, e := range entries {
		fields := e.ContextMap()
		if e.Level != zapcore.ErrorLevel || e.Message != reqs[i].msg || fields["tenant"] != "acme" || fields["error"] != errBroken.Error() {
			t.Errorf("log entry %d: %s %v", i, e.Message, fields)
		}
		if one := strings.Contains(reqs[i].path, brokenID.String()); one && fields["id"] != brokenID.String() {
			t.Errorf("log entry %d names id %v, want %s", i, fields["id"], brokenID)
		}
	}
	// A pen that lists another tenant's hook is a bug, not a leak.
	q.leak = true
	logs.TakeAll()
	w := do(mux, "GET", acmePen+"?limit=1000", "tok-acme")
	if w.Code != 500 || w.Body.String() != penInternalBody || strings.Contains(w.Body.String(), "globex") {
		t.Fatalf("foreign hook: %d %s", w.Code, w.Body)
	}
	entries = logs.All()
	if len(entries) != 1 || !strings.Contains(fmt.Sprint(entries[0].ContextMap()["error"]), `BUG: the pen listed a hook of tenant "globex" for "acme"`) {
		t.Fatalf("foreign hook: log %+v", entries)
	}
	// With the leak on, a page short of the foreign hook is still fine.
	if w := do(mux, "GET", acmePen+"?limit=4", "tok-acme"); w.Code != 200 {
		t.Fatalf("acme's own hooks: %d %s", w.Code, w.Body)
	}
}

// TestQuarantineLeftOut: without Options.Quarantine the routes do not
// exist.
func TestQuarantineLeftOut(t *testing.T) {
	mux := http.NewServeMux()
	if err := Register(mux, Options{Tokens: testTokens(), Hooks: &fakeFetcher{}, Deliveries: &fakeDeliveries{}}); err != nil {
		t.Fatal(err)
	}
	// The routes cannot be had without what a release verifies with.
	for _, o := range []Options{{Tokens: testTokens(), Quarantine: &fakePen{}, Sources: penSources()}, {Tokens: testTokens(), Quarantine: &fakePen{}, Hooks: &fakeFetcher{}}} {
		if err := Register(http.NewServeMux(), o); err == nil || !strings.Contains(err.Error(), "Options.Hooks and Options.Sources") {
			t.Errorf("Quarantine without Hooks or Sources: %v", err)
		}
	}
	for _, rt := range penRoutes {
		if w := do(mux, rt.method, rt.path, "tok-acme"); w.Code != http.StatusNotFound || strings.Contains(w.Body.String(), `"error"`) {
			t.Errorf("%s %s without Quarantine: %d %s, want the mux's 404", rt.method, rt.path, w.Code, w.Body)
		}
	}
}
