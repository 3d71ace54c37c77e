package filter

import (
	"errors"
	"strings"
	"testing"

	"github.com/ankusa/ankusa/envelope"
)

func TestMatch(t *testing.T) {
	paid := stripeHook("invoice.paid", 2000)
	charge := stripeHook("charge.succeeded", 2500)
	small := stripeHook("charge.succeeded", 500)
	push := githubHook("push", "")
	opened := githubHook("pull_request", "opened")
	closed := githubHook("pull_request", "closed")
	order := shopifyHook("orders/create")
	refund := shopifyHook("refunds/create")
	for _, tc := range []struct {
		expr string
		hook *envelope.Envelope
		want bool
	}{
		{`event_type == 'push'`, push, true},
		{`event_type == 'push'`, opened, false},
		{`event_type.startsWith('invoice.')`, paid, true},
		{`event_type.startsWith('invoice.')`, charge, false},
		{`event_type.matches('^(invoice|charge)\\.')`, charge, true},
		{`body.data.object.amount > 1000`, charge, true},
		{`body.data.object.amount > 1000`, small, false},
		{`body.data.object.amount == 2000`, paid, true},
		{`event_type == 'charge.succeeded' && body.data.object.metadata.order == 'A-17'`, charge, true},
		{`event_type == 'pull_request' && body.action == 'opened'`, opened, true},
		{`event_type == 'pull_request' && body.action == 'opened'`, closed, false},
		{`event_type == 'pull_request' && body.action == 'opened'`, push, false}, // && stops before body.action
		{`body.pull_request.labels.exists(l, l.name == 'bug')`, opened, true},
		{`!body.pull_request.draft`, opened, true},
		{`headers['x-github-event'] == 'push'`, push, true},
		{`headers['x-shopify-topic'] == 'orders/create'`, order, true},
		{`headers['x-shopify-topic'] == 'orders/create'`, refund, false},
		{`headers['x-shopify-topic'].startsWith('orders/')`, order, true},
		{`'x-shopify-topic' in headers`, order, true},
		{`'x-shopify-topic' in headers`, push, false},
		{`has(headers.x_missing)`, push, false},
		{`headers[?'x-shopify-topic'].orValue('') == 'orders/create'`, order, true},
		{`headers[?'x-shopify-topic'].orValue('') == 'orders/create'`, push, false},
		{`body.line_items.exists(i, i.sku == 'IPOD2008BLACK' && i.quantity >= 2)`, order, true},
		{`double(body.total_price) > 400.0`, order, true},
		{`params.app == 'billing'`, paid, true},
		{`params.app == 'billing'`, push, false},
		{`tenant_id in ['acme', 'globex']`, paid, true},
		{`tenant_id in ['acme', 'globex']`, order, false},
		{`source_id == 'shopify' && event_type != 'refunds/create'`, order, true},
		{`has(body.data) && has(body.data.object.amount)`, paid, true},
		{`has(body.data)`, push, false},
	} {
		p, err := Compile(tc.expr)
		if err != nil {
			t.Fatalf("Compile(%q): %v", tc.expr, err)
		}
		got, err := p.Match(tc.hook)
		if err != nil {
			t.Fatalf("%q on %s %s: %v", tc.expr, tc.hook.SourceID, tc.hook.EventType, err)
		}
		if got != tc.want {
			t.Errorf("%q on %s %s = %v, want %v", tc.expr, tc.hook.SourceID, tc.hook.EventType, got, tc.want)
		}
	}
}

// TestHeaders: names are lower-cased whatever the sender wrote, and a
// repeated field's values are joined by ", " in order.
func TestHeaders(t *testing.T) {
	e := &envelope.Envelope{Headers: []envelope.Header{
		{Name: "X-GitHub-Event", Value: "push"},
		{Name: "x-tag", Value: "a"},
		{Name: "X-Tag", Value: "b"},
		{Name: "X-TAG", Value: "c"},
	}}
	for _, expr := range []string{
		`headers['x-github-event'] == 'push'`,
		`headers['x-tag'] == 'a, b, c'`,
		`headers.size() == 2`,
	} {
		if ok, err := mustCompile(t, expr).Match(e); !ok || err != nil {
			t.Errorf("%q = %v, %v; want true", expr, ok, err)
		}
	}
	// The spelling in the provider's documentation is refused where it is
	// written, rather than never matching at run time.
	for _, expr := range []string{
		`headers['X-GitHub-Event'] == 'push'`,
		`'X-GitHub-Event' in headers`,
		`headers[?'X-GitHub-Event'].orValue('') == 'push'`,
		`has(headers.X_Tag)`,
	} {
		_, err := Compile(expr)
		if err == nil || !strings.Contains(err.Error(), "headers keys are lower case: write headers['x") {
			t.Errorf("Compile(%q) = %v, want the lower-case rule", expr, err)
		}
	}
}

// TestRuntimeErrors: a field or key the hook does not have is an error
// and no match.
func TestRuntimeErrors(t *testing.T) {
	for _, tc := range []struct {
		expr string
		hook *envelope.Envelope
		msg  string
	}{
		{`body.data.object.amount > 1000`, githubHook("push", ""), "no such key: data"},
		{`headers['x-shopify-topic'] == 'orders/create'`, githubHook("push", ""), "no such key: x-shopify-topic"},
		{`params.app == 'x'`, shopifyHook("orders/create"), "no such key: app"},
		{`body.total_price > 100`, shopifyHook("orders/create"), "no such overload"},
	} {
		ok, err := mustCompile(t, tc.expr).Match(tc.hook)
		if ok || err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%q = %v, %v; want false and %q", tc.expr, ok, err, tc.msg)
		}
	}
}

// TestBody: a body that is not JSON is an empty map; JSON that is not an
// object is what it is.
func TestBody(t *testing.T) {
	for _, tc := range []struct {
		body, expr string
		want       bool
	}{
		{`not json`, `has(body.x)`, false},
		{``, `has(body.x)`, false},
		{`not json`, `body.size() == 0`, true},
		{`[1,2,3]`, `body.size() == 3 && body[2] == 3`, true},
		{`"hi"`, `body == 'hi'`, true},
		{`null`, `body == null`, true},
		{`{"x":null}`, `has(body.x) && body.x == null`, true},
		{`{"s":"caf\u00e9"}`, `body.s == 'café'`, true},
		{`{"n":1e3}`, `body.n == 1000`, true},
		{`{"a":1,"b":"x"}`, `body == {'a': 1, 'b': 'x'}`, true},
		{`{"a":1,"b":"x"}`, `body != {'a': 1}`, true},
		{`{"a":1,"b":"x"}`, `{'a': 1.0, 'b': 'x'} == body`, true},
		{`{"a":1,"b":"x"}`, `body.exists(k, k == 'b') && body.all(k, k.size() == 1)`, true},
		{`{"a":1,"b":"x"}`, `'a' in body && !('c' in body) && body.size() == 2`, true},
		{`{"a":1,"b":"x"}`, `type(body) == map && type(body.b) == string && type(body.a) == double`, true},
		{`{"o":{"p":[{"q":true}]}}`, `body.o.p[0].q && body.o == {'p': [{'q': true}]}`, true},
		{`{"o":{"p":[1,2]}}`, `body.o.p.map(x, x * 2.0) == [2.0, 4.0]`, true},
		{`{"e":"a\"b\u00e9"}`, `body.e == 'a"bé'`, true},
	} {
		ok, err := mustCompile(t, tc.expr).Match(&envelope.Envelope{Body: []byte(tc.body)})
		if err != nil || ok != tc.want {
			t.Errorf("%q over %q = %v, %v; want %v", tc.expr, tc.body, ok, err, tc.want)
		}
	}
}

// TestBodyParsedOnce: a Hook parses its body once for every program that
// reads it, and never for one that does not name it.
func TestBodyParsedOnce(t *testing.T) {
	h := NewHook(stripeHook("invoice.paid", 2000))
	typ := mustCompile(t, `event_type == 'invoice.paid'`)
	if typ.UsesBody() {
		t.Fatal("a filter on event_type uses body")
	}
	if ok, err := typ.Eval(t.Context(), h); !ok || err != nil {
		t.Fatalf("event_type filter: %v, %v", ok, err)
	}
	if h.parsed {
		t.Fatal("the body was parsed for a filter that does not name it")
	}
	amt := mustCompile(t, `body.data.object.amount > 1000`)
	if !amt.UsesBody() {
		t.Fatal("a filter on body does not use it")
	}
	if ok, err := amt.Eval(t.Context(), h); !ok || err != nil {
		t.Fatalf("body filter: %v, %v", ok, err)
	}
	first := h.body
	if ok, err := mustCompile(t, `body.data.object.currency == 'usd'`).Eval(t.Context(), h); !ok || err != nil {
		t.Fatalf("second body filter: %v, %v", ok, err)
	}
	if a, b := first.(jsonObject), h.body.(jsonObject); a.v != b.v {
		t.Fatal("the body was parsed again for the second filter")
	}
	h.Release()
	if h.parser != nil || h.parsed {
		t.Fatal("Release kept the parser")
	}
}

func TestCompileErrors(t *testing.T) {
	for _, tc := range []struct{ expr, msg string }{
		{``, "the expression is empty"},
		{`  `, "the expression is empty"},
		{`evnt_type == 'push'`, "ERROR: <input>:1:1: undeclared reference to 'evnt_type'"},
		{`event_type == 'push' && tenant == 'a'`, "ERROR: <input>:1:25: undeclared reference to 'tenant'"},
		{`event_type == `, "ERROR: <input>:1:15: Syntax error"},
		{`event_type = 'push'`, "Syntax error"},
		{`event_type`, "must be a bool expression, it is string"},
		{`body.data.object.amount`, "must be a bool expression, it is dyn"},
		{`1 + 2`, "must be a bool expression, it is int"},
		{`event_type == 1`, "found no matching overload for '_==_' applied to '(string, int)'"},
		{`headers['x-a'] > 1`, "found no matching overload"},
		{strings.Repeat(`event_type == 'a' || `, 300) + `true`, "bytes, at most 4096"},
	} {
		_, err := Compile(tc.expr)
		if err == nil || !errors.Is(err, ErrFilter) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("Compile(%q) = %v, want %q", tc.expr, err, tc.msg)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("Compile(%q): the error is more than one line: %q", tc.expr, err)
		}
	}
}

// TestCache: the same expression is compiled once.
func TestCache(t *testing.T) {
	a := mustCompile(t, `source_id == 'cache-test'`)
	b := mustCompile(t, `source_id == 'cache-test'`)
	if a != b {
		t.Fatal("the same expression compiled twice")
	}
	if a.Expr() != `source_id == 'cache-test'` {
		t.Fatalf("Expr() = %q", a.Expr())
	}
	_, err1 := Compile(`evnt_type == 'cache-test'`)
	_, err2 := Compile(`evnt_type == 'cache-test'`)
	if err1 == nil || err1 != err2 {
		t.Fatalf("a bad expression's error is not cached: %v, %v", err1, err2)
	}
	c := &cache{m: map[string]compiled{}}
	for i := range maxCached + 10 {
		c.put(itoa(i+1), compiled{p: a})
	}
	if len(c.m) != maxCached {
		t.Fatalf("the cache holds %d programs, bound %d", len(c.m), maxCached)
	}
}

func mustCompile(t testing.TB, expr string) *Program {
	t.Helper()
	p, err := Compile(expr)
	if err != nil {
		t.Fatalf("Compile(%q): %v", expr, err)
	}
	return p
}
