package admin

import (
	"net/http"
	"testing"

	"go.uber.org/zap"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/filter"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/source"
)

// A source written through the API has its sinks' filters compiled as
// the file's are (the store validates with the node's ValidateOptions):
// a bad one is 400 invalid_source naming the sink and CEL's error.
func TestSourceFilterRefused(t *testing.T) {
	cfg, err := config.Load([]byte("route_resolver: {type: tenantpath}\nrate_limits: {default: {rate: 10, burst: 10}}\nsource_store: {type: persistent}\n"), config.ValidateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := meta.Open(meta.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	check := func(expr string) error { _, err := filter.Compile(expr); return err }
	store, _, err := source.OpenPersistent(source.PersistentOptions{Config: cfg, Backend: source.MetaBackend{Store: m},
		Context: config.SourceContext{Resolver: "tenantpath", WALType: "disk", DedupeScope: "node", ValidateOptions: config.ValidateOptions{CheckFilter: check}}})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	if err := Register(mux, Options{Tokens: testTokens(), Sources: store, Backlog: &fakeBacklog{counts: map[string]int64{}}, Resolver: cfg.RouteResolver, Logger: zap.NewNop()}); err != nil {
		t.Fatal(err)
	}
	bad := `{"name": "stripe", "verify": {"type": "none"}, "sinks": [{"type": "http", "url": "https://example.com/in", "filter": "evnt_type == 'invoice.paid'"}]}`
	wantAnswer(t, call(mux, "POST", "/v1/tenants/acme/sources", "acme", bad), 400, `"invalid_source"`,
		`sources.stripe.sinks[0].filter: ERROR: <input>:1:1: undeclared reference to 'evnt_type'`)
	nonBool := `{"name": "stripe", "verify": {"type": "none"}, "sinks": [{"type": "http", "url": "https://example.com/in", "filter": "body.data.object.amount"}]}`
	wantAnswer(t, call(mux, "POST", "/v1/tenants/acme/sources", "acme", nonBool), 400, `"invalid_source"`,
		`sources.stripe.sinks[0].filter: must be a bool expression, it is dyn`)
	good := `{"name": "stripe", "verify": {"type": "none"}, "sinks": [{"type": "http", "url": "https://example.com/in", "filter": "event_type.startsWith('invoice.')"}]}`
	wantAnswer(t, call(mux, "POST", "/v1/tenants/acme/sources", "acme", good), 201, `"filter":"event_type.startsWith('invoice.')"`)
	// An update is held to the same rule.
	wantAnswer(t, call(mux, "PUT", "/v1/tenants/acme/sources/stripe", "acme", bad), 400, `"invalid_source"`, "undeclared reference to 'evnt_type'")
	got := store.Snapshot().Lookup([]byte("stripe"))
	if got == nil || got.Spec.Sinks[0].Filter != "event_type.startsWith('invoice.')" {
		t.Fatalf("after a refused update the source is %+v", got)
	}
}
