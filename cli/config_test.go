package cli

import (
	"slices"
	"strings"
	"testing"

	"github.com/ankusa/ankusa/config"
)

// Sink filters through the binary's own checks: every sink type takes a
// filter (dispatch evaluates it before the sink is reached), and a bad one
// is refused at load with CEL's message and position under its key.
func TestConfigSinkFilters(t *testing.T) {
	const good = `
route_resolver: {type: tenantpath}
rate_limits: {default: {rate: 10, burst: 10}}
sources:
  stripe:
    verify: {type: none}
    trust_url_tenant: true
    sinks:
      - {type: http, url: 'https://hooks.example/in', filter: "event_type.startsWith('invoice.')"}
      - {type: rabbitmq, url: 'amqp://guest:guest@127.0.0.1:5672/', exchange: hooks, filter: "body.data.object.amount > 1000"}
      - {type: kafka, brokers: ['k1:9092'], topic: hooks, filter: "headers['stripe-signature'] != ''"}
      - {type: nats, url: 'nats://127.0.0.1:4222', stream: HOOKS, filter: "tenant_id in ['acme', 'globex'] && params.app == 'billing'"}
`
	cfg, err := config.Load([]byte(good), validateOptions())
	if err != nil {
		t.Fatalf("filters on every sink type: %v", err)
	}
	if got := cfg.Sources["stripe"].Sinks[2].Filter; got != "headers['stripe-signature'] != ''" {
		t.Fatalf("the kafka sink's filter is %q", got)
	}
	bad := strings.NewReplacer(
		"event_type.startsWith('invoice.')", "evnt_type == 'push'",
		"body.data.object.amount > 1000", "body.data.object.amount",
		"headers['stripe-signature'] != ''", "headers['Stripe-Signature'] != ''",
		"params.app == 'billing'", "params.app ==",
	).Replace(good)
	_, err = config.Load([]byte(bad), validateOptions())
	probs, ok := err.(config.Problems)
	if !ok {
		t.Fatalf("bad filters: %v", err)
	}
	want := []string{
		"sources.stripe.sinks[0].filter: ERROR: <input>:1:1: undeclared reference to 'evnt_type' (did you mean 'event_type'?)",
		"sources.stripe.sinks[1].filter: must be a bool expression, it is dyn",
		"sources.stripe.sinks[2].filter: headers keys are lower case: write headers['stripe-signature'], not headers['Stripe-Signature']",
		"sources.stripe.sinks[3].filter: ERROR: <input>:1:49: Syntax error: mismatched input",
	}
	for _, w := range want {
		if !slices.ContainsFunc(probs, func(p string) bool { return strings.HasPrefix(p, w) }) {
			t.Errorf("no problem %q in\n%s", w, strings.Join(probs, "\n"))
		}
	}
	if len(probs) != len(want) {
		t.Errorf("%d problems, want %d:\n%s", len(probs), len(want), strings.Join(probs, "\n"))
	}
}

// The admin API's source writes are validated with sourceContext, so a
// stored source's filter is compiled as the file's is.
func TestSourceContextChecksFilters(t *testing.T) {
	cfg, err := config.Load([]byte("route_resolver: {type: tenantpath}\nrate_limits: {default: {rate: 10, burst: 10}}\n"), validateOptions())
	if err != nil {
		t.Fatal(err)
	}
	ctx := sourceContext(cfg)
	if ctx.CheckFilter == nil {
		t.Fatal("sourceContext has no CheckFilter: admin writes would store filters unchecked")
	}
	src := config.Source{TenantID: "acme", Verify: config.Verify{Type: "none"},
		Sinks: []config.Sink{{Type: "http", URL: "https://a.example/h", Filter: "event_type == 1"}}}
	config.ApplySourceDefaults(&src, 0)
	probs := config.ValidateSource("stripe", &src, ctx)
	want := "sources.stripe.sinks[0].filter: ERROR: <input>:1:12: found no matching overload for '_==_' applied to '(string, int)'"
	if !slices.Contains(probs, want) {
		t.Fatalf("problems %q, want %q among them", probs, want)
	}
}

// The admin API's source writes may not name a file on the node: a file
// sink is the config file's only. check-config's sinks check builds one.
func TestSourceContextRefusesFileSinks(t *testing.T) {
	cfg, err := config.Load(config.DefaultYAML(), validateOptions())
	if err != nil {
		t.Fatal(err)
	}
	src := config.Source{TenantID: "default", Verify: config.Verify{Type: "none"},
		Sinks: []config.Sink{{Type: "file", Path: "./data/wal/0000000001.wal"}}}
	config.DefaultSource(&src, cfg.Dedupe.TTL)
	probs := config.ValidateSource("mine", &src, sourceContext(cfg))
	want := "sources.mine.sinks[0].type: file sinks are set in the config file only: the path names a file on the node, which the admin API does not let a caller choose"
	if !slices.Equal(probs, config.Problems{want}) {
		t.Fatalf("problems %q, want %q", probs, want)
	}
	if err := validateOptions().CheckSink(config.Sink{Type: "file"}); err == nil || !strings.HasPrefix(err.Error(), "path: required") {
		t.Fatalf("CheckSink of a file sink without path: %v", err)
	}
}
