package source

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/meta"
)

func openMeta(t *testing.T, dir string) *meta.Store {
	t.Helper()
	m, err := meta.Open(meta.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func testConfig(t *testing.T) *config.Config {
	t.Helper()
	cfg, err := config.Load([]byte(`
route_resolver: {type: token, path: /webhooks/catch/:token}
routes: {enabled: true}
rate_limits: {default: {rate: 10, burst: 10}}
source_store: {type: persistent}
sources:
  seeded: {verify: {type: hmac, header: X-Sig, secret: s3cret}}
`), config.ValidateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func openStore(t *testing.T, m *meta.Store, cfg *config.Config) (*Persistent, []string) {
	t.Helper()
	p, warn, err := OpenPersistent(PersistentOptions{
		Config: cfg, Backend: MetaBackend{m},
		Context: config.SourceContext{Resolver: cfg.RouteResolver.Type, WALType: cfg.WAL.Type, DedupeScope: cfg.Dedupe.Scope},
	})
	if err != nil {
		t.Fatal(err)
	}
	return p, warn
}

func doc(t *testing.T, body string) config.SourceDoc {
	t.Helper()
	d, probs := config.ParseSourceDoc([]byte(body))
	if len(probs) > 0 {
		t.Fatal(probs)
	}
	return d
}

func code(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func TestPersistentSources(t *testing.T) {
	dir := t.TempDir()
	m := openMeta(t, dir)
	cfg := testConfig(t)
	p, _ := openStore(t, m, cfg)
	var published int
	p.OnPublish(func(*Snapshot) { published++ })
	audit := meta.AuditRow{Principal: "ops", Action: "source.create"}

	src, err := p.PutSource(SourceWrite{Tenant: "acme", Create: true, Audit: audit, Doc: doc(t, `{"name": "acme-gh", "verify": {"type": "github", "secret": "ghsecret"}, "sinks": [{"type": "http", "url": "https://example.com/in", "secret": "out"}]}`)})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Snapshot().Lookup([]byte("acme-gh")); got != src || got.TenantID != "acme" || got.FromConfig || published != 1 {
		t.Fatalf("after create: %+v, published %d", got, published)
	}
	// The refusals, each with its code.
	for _, c := range []struct {
		w    SourceWrite
		want string
	}{
		{SourceWrite{Tenant: "globex", Create: true, Doc: doc(t, `{"name": "acme-gh", "verify": {"type": "none"}, "trust_url_tenant": true}`)}, CodeExists},
		{SourceWrite{Tenant: "default", Doc: doc(t, `{"name": "seeded", "verify": {"type": "none"}, "trust_url_tenant": true}`)}, CodeFromConfig},
		{SourceWrite{Tenant: "default", Create: true, Doc: doc(t, `{"name": "open", "verify": {"type": "none"}}`)}, CodeInvalid},
		{SourceWrite{Tenant: "acme", Create: true, Doc: doc(t, `{"name": "x1", "tenant_id": "globex", "verify": {"type": "none"}}`)}, CodeInvalid},
		{SourceWrite{Tenant: "globex", Doc: doc(t, `{"name": "acme-gh", "verify": {"type": "none"}}`)}, CodeNotFound},
		{SourceWrite{Tenant: "acme", Create: true, Doc: doc(t, `{"name": "x2", "verify": {"type": "hmac", "secret": "env:HOME"}}`)}, CodeInvalid},
	} {
		if _, err := p.PutSource(c.w); code(err) != c.want {
			t.Errorf("%+v: %v, want %s", c.w.Doc, err, c.want)
		}
	}
	// The trust_url_tenant refusal says what check-config says.
	_, err = p.PutSource(SourceWrite{Tenant: "default", Create: true, Doc: doc(t, `{"name": "open", "verify": {"type": "none"}}`)})
	fileProbs := config.ValidateSource("open", &config.Source{TenantID: "default", Verify: config.Verify{Type: "none"}, OnVerifyFailure: "reject"}, config.SourceContext{Resolver: "token", WALType: "disk"})
	if len(fileProbs) != 1 || !strings.Contains(err.Error(), fileProbs[0]) {
		t.Fatalf("%v, want %q", err, fileProbs)
	}
	// An update that omits the secrets keeps them, and the sink its id.
	upd, err := p.PutSource(SourceWrite{Tenant: "acme", Doc: doc(t, `{"name": "acme-gh", "verify": {"type": "github"}, "sinks": [{"type": "http", "url": "https://example.com/new"}]}`)})
	if err != nil {
		t.Fatal(err)
	}
	if upd.Spec.Verify.Secret.Value != "ghsecret" || upd.Spec.Sinks[0].Secret.Value != "out" || upd.Spec.Sinks[0].ID != src.Spec.Sinks[0].ID || upd.Spec.Sinks[0].URL != "https://example.com/new" {
		t.Fatalf("update: %+v", upd.Spec)
	}
	minted, err := p.PutSource(SourceWrite{Tenant: "acme", Create: true, Doc: doc(t, `{"verify": {"type": "none"}, "trust_url_tenant": true}`)})
	if err != nil || !strings.HasPrefix(minted.Name, "src-") || len(minted.Name) != 30 {
		t.Fatalf("minted %v %v", minted, err)
	}
	if _, err := p.DeleteSource(SourceDelete{Tenant: "acme", Name: minted.Name}); err != nil {
		t.Fatal(err)
	}
	if p.Snapshot().Lookup([]byte(minted.Name)) != nil {
		t.Fatal("deleted source still served")
	}
	if _, err := p.DeleteSource(SourceDelete{Tenant: "default", Name: "seeded"}); code(err) != CodeFromConfig {
		t.Fatal(err)
	}
	// Reopened, the store serves what was written, secrets and all.
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m = openMeta(t, dir)
	defer m.Close()
	p2, warn := openStore(t, m, cfg)
	got := p2.Snapshot().Lookup([]byte("acme-gh"))
	if len(warn) != 0 || got == nil || got.Spec.Verify.Secret.Value != "ghsecret" || got.Spec.Sinks[0].URL != "https://example.com/new" || p2.Snapshot().Lookup([]byte(minted.Name)) != nil {
		t.Fatalf("reopened: %v %+v", warn, got)
	}
	list, next := p2.Snapshot().Sources("acme", "", 10)
	if len(list) != 1 || next != "" {
		t.Fatalf("list %v next %q", list, next)
	}
	rows, err := m.Audit(time.Time{}, 100)
	if err != nil || len(rows) != 4 || rows[0].SpecSHA256 == "" || rows[0].Entity != "source/acme-gh" || rows[0].Tenant != "acme" {
		t.Fatalf("audit %v %+v", err, rows)
	}
	// Each change's event: its type, the source's name, the tenant, and
	// the source as stored with every secret redacted.
	evs := events(t, m)
	want := []string{"acme io.ankusa.source.created acme-gh", "acme io.ankusa.source.updated acme-gh",
		"acme io.ankusa.source.created " + minted.Name, "acme io.ankusa.source.deleted " + minted.Name}
	if len(evs) != len(want) {
		t.Fatalf("%d events, want %d: %+v", len(evs), len(want), evs)
	}
	for i, ev := range evs {
		if got := ev.Tenant + " " + ev.Type + " " + ev.Subject; got != want[i] {
			t.Errorf("event %d: %s, want %s", i, got, want[i])
		}
		if strings.Contains(string(ev.Data), "ghsecret") || strings.Contains(string(ev.Data), `"out"`) {
			t.Errorf("event %d carries a secret: %s", i, ev.Data)
		}
	}
	var created struct {
		Name   string `json:"name"`
		Verify struct {
			Type   string `json:"type"`
			Secret string `json:"secret"`
		} `json:"verify"`
		Sinks []struct {
			ID, URL, Secret string
		} `json:"sinks"`
		CreatedAt time.Time `json:"created_at"`
		UpdatedAt time.Time `json:"updated_at"`
	}
	if err := json.Unmarshal(evs[0].Data, &created); err != nil {
		t.Fatalf("created event's data %s: %v", evs[0].Data, err)
	}
	if created.Name != "acme-gh" || created.Verify.Type != "github" || created.Verify.Secret != config.Redacted || len(created.Sinks) != 1 ||
		created.Sinks[0].Secret != config.Redacted || created.Sinks[0].URL != "https://example.com/in" || created.Sinks[0].ID != src.Spec.Sinks[0].ID ||
		!created.CreatedAt.Equal(src.Created) || !created.UpdatedAt.Equal(src.Updated) {
		t.Errorf("created event's data %s", evs[0].Data)
	}
	if !strings.Contains(string(evs[1].Data), `"url":"https://example.com/new"`) || !strings.Contains(string(evs[1].Data), `"secret":"redacted"`) {
		t.Errorf("updated event's data %s: want the new url and the kept secret, redacted", evs[1].Data)
	}
}

// events is every durable lifecycle event of m's outbox, in order.
func events(t *testing.T, m *meta.Store) []meta.EventRecord {
	t.Helper()
	var out []meta.EventRecord
	if err := m.Events(0, math.MaxUint64, func(ev *meta.EventRecord) (bool, error) {
		out = append(out, *ev)
		return false, nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// A stored source that fails today's rules keeps serving, named at boot.
func TestPersistentKeepsOldSources(t *testing.T) {
	m := openMeta(t, t.TempDir())
	defer m.Close()
	cfg := testConfig(t)
	s := Build("legacy", config.Source{TenantID: "default", Verify: config.Verify{Type: "none"}, OnVerifyFailure: "reject"}, 1<<20, false)
	if _, err := (MetaBackend{m}).Commit([]Op{{Kind: PutSource, Tenant: "default", Name: "legacy", Record: encodeSourceRecord(s, nil)}}, legacyAudit("default", "legacy")); err != nil {
		t.Fatal(err)
	}
	p, warn := openStore(t, m, cfg)
	if p.Snapshot().Lookup([]byte("legacy")) == nil || len(warn) != 1 || !strings.Contains(warn[0], `"legacy"`) || !strings.Contains(warn[0], "trust_url_tenant") {
		t.Fatalf("%v", warn)
	}
	// A record that does not decode stops the store, naming it.
	if _, err := (MetaBackend{m}).Commit([]Op{{Kind: PutSource, Tenant: "acme", Name: "bad", Record: []byte(`{"v":1,`)}}, legacyAudit("acme", "bad")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := OpenPersistent(PersistentOptions{Config: cfg, Backend: MetaBackend{m}}); err == nil || !strings.Contains(err.Error(), `"bad"`) {
		t.Fatalf("%v", err)
	}
}

// legacyAudit is the audit row, with its event, of a record written
// straight through the backend (as an older node wrote it).
func legacyAudit(tenant, name string) meta.AuditRow {
	return meta.AuditRow{At: time.Now(), Principal: "ops", Action: "source.create", Tenant: tenant,
		Event: meta.Event{Type: meta.EventType("source", "created"), Subject: name}}
}

// The backend refuses a change whose audit row has no event: nothing of
// it is written.
func TestMetaBackendRefusesChangeWithoutEvent(t *testing.T) {
	m := openMeta(t, t.TempDir())
	defer m.Close()
	s := Build("x", config.Source{TenantID: "acme", Verify: config.Verify{Type: "none"}, TrustURLTenant: true}, 1<<20, false)
	row := legacyAudit("acme", "x")
	row.Event = meta.Event{}
	if _, err := (MetaBackend{m}).Commit([]Op{{Kind: PutSource, Tenant: "acme", Name: "x", Record: encodeSourceRecord(s, nil)}}, row); err == nil {
		t.Fatal("a source written with an audit row without its event")
	}
	p, _ := openStore(t, m, testConfig(t))
	if p.Snapshot().Lookup([]byte("x")) != nil {
		t.Fatal("the refused source is stored")
	}
	if rows, err := m.Audit(time.Time{}, 10); err != nil || len(rows) != 0 {
		t.Fatalf("audit rows %+v, %v; want none", rows, err)
	}
}

func TestPersistentRoutes(t *testing.T) {
	m := openMeta(t, t.TempDir())
	defer m.Close()
	p, _ := openStore(t, m, testConfig(t))
	r, tokens, err := p.PutRoute(RouteWrite{Tenant: "acme", Create: true, SourceID: "seeded", Token: TokenAuto})
	if err != nil || len(tokens) != 1 || len(tokens[0]) != 26 {
		t.Fatal(err, tokens)
	}
	if got := p.Snapshot().RouteByToken([]byte(tokens[0])); got != r || got.TenantID != "acme" {
		t.Fatalf("%+v", got)
	}
	// Rotation: a second token, then the first revoked.
	r2, tokens2, err := p.PutRoute(RouteWrite{Tenant: "acme", ID: r.ID, SourceID: "seeded", Token: TokenAuto})
	if err != nil || len(r2.Tokens) != 2 || p.Snapshot().RouteByToken([]byte(tokens[0])) == nil || p.Snapshot().RouteByToken([]byte(tokens2[0])) == nil {
		t.Fatal(err, r2)
	}
	if _, _, err := p.PutRoute(RouteWrite{Tenant: "acme", ID: r.ID, SourceID: "seeded", Token: TokenAuto}); code(err) != CodeInvalidRoute {
		t.Fatal("a third token", err)
	}
	if _, _, err := p.PutRoute(RouteWrite{Tenant: "acme", ID: r.ID, SourceID: "seeded", KeepTokens: []string{r2.Tokens[1].ID}}); err != nil {
		t.Fatal(err)
	}
	if p.Snapshot().RouteByToken([]byte(tokens[0])) != nil || p.Snapshot().RouteByToken([]byte(tokens2[0])) == nil {
		t.Fatal("revoked token still served, or the kept one not")
	}
	for _, c := range []struct {
		w    RouteWrite
		want string
	}{
		{RouteWrite{Tenant: "acme", Create: true, SourceID: "nope", Token: TokenAuto}, CodeInvalidRoute},
		{RouteWrite{Tenant: "acme", Create: true, Token: TokenAuto}, CodeInvalidRoute},
		{RouteWrite{Tenant: "acme", Create: true, SourceID: "seeded"}, CodeInvalidRoute},
		{RouteWrite{Tenant: "acme", Create: true, SourceID: "seeded", Token: "short"}, CodeInvalidRoute},
		{RouteWrite{Tenant: "acme", Create: true, SourceID: "seeded", Path: "no-slash"}, CodeInvalidRoute},
		{RouteWrite{Tenant: "acme", Create: true, ID: r.ID, Path: "/a/:b"}, CodeRouteExists},
		{RouteWrite{Tenant: "globex", ID: r.ID, Path: "/a/:b"}, CodeNotFound},
		{RouteWrite{Tenant: "acme", Create: true, SourceID: "seeded", Token: tokens2[0]}, CodeTokenExists},
	} {
		if _, _, err := p.PutRoute(c.w); code(err) != c.want {
			t.Errorf("%+v: %v, want %s", c.w, err, c.want)
		}
	}
	if _, err := p.DeleteRoute(RouteDelete{Tenant: "acme", ID: r.ID}); err != nil {
		t.Fatal(err)
	}
	if p.Snapshot().RouteByToken([]byte(tokens2[0])) != nil || p.Snapshot().Route("acme", r.ID) != nil {
		t.Fatal("deleted route still served")
	}
	// Each change's event carries the route as RouteJSON: token ids,
	// never a token; the deletion carries the route it removed.
	evs := events(t, m)
	want := []string{"created", "updated", "updated", "deleted"}
	if len(evs) != len(want) {
		t.Fatalf("%d events, want %d: %+v", len(evs), len(want), evs)
	}
	for i, ev := range evs {
		if ev.Tenant != "acme" || ev.Type != "io.ankusa.route."+want[i] || ev.Subject != r.ID {
			t.Errorf("event %d: %s %s %s, want acme io.ankusa.route.%s %s", i, ev.Tenant, ev.Type, ev.Subject, want[i], r.ID)
		}
		for _, tok := range append(tokens, tokens2...) {
			if strings.Contains(string(ev.Data), tok) {
				t.Errorf("event %d carries a token: %s", i, ev.Data)
			}
		}
	}
	if string(evs[0].Data) != string(RouteJSON(r)) || string(evs[1].Data) != string(RouteJSON(r2)) {
		t.Errorf("events' data\n%s\n%s\nwant\n%s\n%s", evs[0].Data, evs[1].Data, RouteJSON(r), RouteJSON(r2))
	}
	var last struct {
		ID     string `json:"id"`
		Tokens []struct {
			ID string `json:"id"`
		} `json:"tokens"`
	}
	if err := json.Unmarshal(evs[3].Data, &last); err != nil || last.ID != r.ID || len(last.Tokens) != 1 || last.Tokens[0].ID != r2.Tokens[1].ID {
		t.Errorf("deleted event's data %s (%v): want the route with its one kept token", evs[3].Data, err)
	}
}

// Concurrent writers each get their answer, and every source is there.
func TestPersistentConcurrentWrites(t *testing.T) {
	m := openMeta(t, t.TempDir())
	defer m.Close()
	p, _ := openStore(t, m, testConfig(t))
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := p.PutSource(SourceWrite{Tenant: "t" + string(rune('a'+i%10)), Create: true, Doc: config.SourceDoc{Spec: config.Source{Verify: config.Verify{Type: "hmac", Secret: config.Secret{Ref: "k"}}}}})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := p.Snapshot().Len(); n != 201 {
		t.Fatalf("%d sources, want 201", n)
	}
}

// The request path's lookups allocate nothing.
func TestSnapshotLookupsDoNotAllocate(t *testing.T) {
	m := openMeta(t, t.TempDir())
	defer m.Close()
	p, _ := openStore(t, m, testConfig(t))
	_, tokens, err := p.PutRoute(RouteWrite{Tenant: "acme", Create: true, SourceID: "seeded", Token: TokenAuto})
	if err != nil {
		t.Fatal(err)
	}
	name, tok := []byte("seeded"), []byte(tokens[0])
	snap := p.Snapshot()
	if n := testing.AllocsPerRun(1000, func() {
		if snap.Lookup(name) == nil || snap.RouteByToken(tok) == nil {
			panic("lost")
		}
	}); n != 0 {
		t.Fatalf("%.1f allocations per lookup", n)
	}
}

// A removed source stays findable for delivery a while, so a hook
// admitted before the removal and committed after it still gets rows.
func TestRetiredSources(t *testing.T) {
	m := openMeta(t, t.TempDir())
	defer m.Close()
	now := time.Unix(1_800_000_000, 0)
	p, _, err := OpenPersistent(PersistentOptions{Config: testConfig(t), Backend: MetaBackend{m}, Now: func() time.Time { return now },
		Context: config.SourceContext{Resolver: "token", WALType: "disk", DedupeScope: "node"}})
	if err != nil {
		t.Fatal(err)
	}
	put := func(name string) *Source {
		src, err := p.PutSource(SourceWrite{Tenant: "acme", Create: true, Doc: doc(t, `{"name": "`+name+`", "verify": {"type": "hmac", "secret": "k"}}`)})
		if err != nil {
			t.Fatal(err)
		}
		return src
	}
	old := put("a")
	if _, err := p.DeleteSource(SourceDelete{Tenant: "acme", Name: "a"}); err != nil {
		t.Fatal(err)
	}
	snap := p.Snapshot()
	if snap.Lookup([]byte("a")) != nil || snap.LookupForDelivery([]byte("a")) != old {
		t.Fatal("a removed source is served, or not found for delivery")
	}
	again := put("a")
	if p.Snapshot().LookupForDelivery([]byte("a")) != again {
		t.Fatal("a re-created source is not the one found for delivery")
	}
	put("b")
	if _, err := p.DeleteSource(SourceDelete{Tenant: "acme", Name: "b"}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(RetiredFor + time.Second)
	put("c") // any write prunes
	if p.Snapshot().LookupForDelivery([]byte("b")) != nil {
		t.Fatal("a source removed long ago is still found for delivery")
	}
}

// Writes are counted by entity and outcome, and the snapshot's size is a
// gauge.
func TestStoreMetrics(t *testing.T) {
	m := openMeta(t, t.TempDir())
	defer m.Close()
	p, _ := openStore(t, m, testConfig(t))
	count := func(name string) string {
		var b bytes.Buffer
		metrics.WritePrometheus(&b, false)
		for _, line := range strings.Split(b.String(), "\n") {
			if strings.HasPrefix(line, name+" ") {
				return strings.TrimPrefix(line, name+" ")
			}
		}
		return ""
	}
	okName := `ankusa_source_store_writes_total{entity="source",outcome="ok"}`
	refusedName := `ankusa_source_store_writes_total{entity="source",outcome="refused"}`
	ok0, refused0 := count(okName), count(refusedName)
	if _, err := p.PutSource(SourceWrite{Tenant: "acme", Create: true, Doc: doc(t, `{"name": "m1", "verify": {"type": "hmac", "secret": "k"}}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.PutSource(SourceWrite{Tenant: "acme", Create: true, Doc: doc(t, `{"name": "m1", "verify": {"type": "hmac", "secret": "k"}}`)}); code(err) != CodeExists {
		t.Fatal(err)
	}
	if count(okName) == ok0 || count(refusedName) == refused0 {
		t.Fatalf("ok %s → %s, refused %s → %s", ok0, count(okName), refused0, count(refusedName))
	}
	if got := count("ankusa_source_store_sources"); got != "2" {
		t.Fatalf("ankusa_source_store_sources %s, want 2 (the seed and m1)", got)
	}
}
