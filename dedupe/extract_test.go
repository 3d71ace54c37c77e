package dedupe

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/valyala/fasthttp"
)

// *fasthttp.RequestHeader is what the edge passes.
var _ Headers = (*fasthttp.RequestHeader)(nil)

// xHeader is a request header as the edge sees it, with the header
// pairs kv.
func xHeader(kv ...string) *fasthttp.RequestHeader {
	h := &fasthttp.RequestHeader{}
	h.SetMethod(fasthttp.MethodPost)
	h.SetRequestURI("/webhooks/test")
	for i := 0; i < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

func mustExtractor(t testing.TB, spec, verifier string) *Extractor {
	t.Helper()
	x, err := NewExtractor(spec, verifier)
	if err != nil {
		t.Fatalf("NewExtractor(%q, %q): %v", spec, verifier, err)
	}
	return x
}

type keyCase struct {
	name   string
	spec   string
	header []string // pairs
	body   string
	want   string // the key; "" means ok false
}

func runKeyCases(t *testing.T, verifier string, cases []keyCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x := mustExtractor(t, c.spec, verifier)
			prefix := []byte("prefix/")
			got, ok := x.Key(prefix, xHeader(c.header...), []byte(c.body))
			if !bytes.HasPrefix(got, []byte("prefix/")) {
				t.Fatalf("Key lost dst: %q", got)
			}
			got = got[len(prefix):]
			switch {
			case c.want == "" && ok:
				t.Fatalf("Key = %q, ok; want no key", got)
			case c.want == "" && len(got) != 0:
				t.Fatalf("no key, but dst grew by %q", got)
			case c.want != "" && !ok:
				t.Fatalf("no key; want %q", c.want)
			case c.want != "" && string(got) != c.want:
				t.Fatalf("Key = %q, want %q", got, c.want)
			}
		})
	}
}

func TestKeyHeader(t *testing.T) {
	long := strings.Repeat("k", MaxKeyBytes)
	runKeyCases(t, "hmac", []keyCase{
		{"present", "header:X-Request-Id", []string{"X-Request-Id", "req_1"}, `{"id":"ignored"}`, "req_1"},
		{"name case differs", "header:x-request-ID", []string{"X-REQUEST-ID", "req_2"}, "", "req_2"},
		{"absent", "header:X-Request-Id", []string{"X-Other", "v"}, "", ""},
		{"empty", "header:X-Request-Id", []string{"X-Request-Id", ""}, "", ""},
		{"value kept as received", "header:X-Request-Id", []string{"X-Request-Id", `a "b" \u00e9`}, "", `a "b" \u00e9`},
		{"MaxKeyBytes is a key", "header:X-Request-Id", []string{"X-Request-Id", long}, "", long},
		{"longer is not", "header:X-Request-Id", []string{"X-Request-Id", long + "k"}, "", ""},
		{"body not read", "header:X-Request-Id", nil, `{"X-Request-Id":"x"}`, ""},
	})
}

func TestKeyAuto(t *testing.T) {
	for _, c := range []struct {
		verifier string
		resolved string
		header   []string
		body     string
		want     string
	}{
		{"standardwebhooks", "header:webhook-id", []string{"webhook-id", "msg_2Lh9"}, `{"id":"no"}`, "msg_2Lh9"},
		{"github", "header:X-GitHub-Delivery", []string{"X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958"}, `{"id":1}`, "72d3162e-cc78-11e3-81ab-4c9367dc0958"},
		{"shopify", "header:X-Shopify-Webhook-Id", []string{"X-Shopify-Webhook-Id", "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043"}, `{"id":1}`, "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043"},
		{"stripe", "json:id", []string{"Stripe-Signature", "t=1,v1=ab"}, `{"id":"evt_1NG8Du2eZvKYlo2CUI79vXWy","object":"event"}`, "evt_1NG8Du2eZvKYlo2CUI79vXWy"},
	} {
		t.Run(c.verifier, func(t *testing.T) {
			x := mustExtractor(t, "auto", c.verifier)
			if x.String() != c.resolved {
				t.Fatalf("auto for %s resolves to %q, want %q", c.verifier, x.String(), c.resolved)
			}
			got, ok := x.Key(nil, xHeader(c.header...), []byte(c.body))
			if !ok || string(got) != c.want {
				t.Fatalf("Key = %q, %v; want %q", got, ok, c.want)
			}
			// The id's absence is no key, not a key from elsewhere.
			if got, ok := x.Key(nil, xHeader(), []byte(`{"other":1}`)); ok {
				t.Fatalf("without the id: Key = %q", got)
			}
		})
	}
}

func TestKeyJSON(t *testing.T) {
	long := strings.Repeat("x", MaxKeyBytes)
	deep := strings.Repeat("[", 400) + strings.Repeat("]", 400)
	runKeyCases(t, "hmac", []keyCase{
		{"top-level string", "json:id", nil, `{"id":"evt_1","object":"event"}`, "evt_1"},
		{"whitespace around", "json:id", nil, " \n\t{ \"id\" : \"evt_1\" }\r\n", "evt_1"},
		{"nested", "json:data.object.id", nil, `{"data":{"object":{"id":"ch_3","amount":5}},"id":"evt_9"}`, "ch_3"},
		{"nested absent", "json:data.object.id", nil, `{"data":{"object":{}}}`, ""},
		{"through a string", "json:data.id", nil, `{"data":"text"}`, ""},
		{"through a number", "json:data.id", nil, `{"data":7}`, ""},
		{"array index", "json:items.0.id", nil, `{"items":[{"id":"a"},{"id":"b"}]}`, "a"},
		{"array index 1", "json:items.1.id", nil, `{"items":[{"id":"a"},{"id":"b"}]}`, "b"},
		{"array index out of range", "json:items.2.id", nil, `{"items":[{"id":"a"},{"id":"b"}]}`, ""},
		{"array index negative", "json:items.-1.id", nil, `{"items":[{"id":"a"}]}`, ""},
		{"array index not a number", "json:items.first.id", nil, `{"items":[{"id":"a"}]}`, ""},
		{"top-level array", "json:0.id", nil, `[{"id":"first"}]`, "first"},
		{"numeric object key", "json:items.0", nil, `{"items":{"0":"zero"}}`, "zero"},
		{"integer", "json:id", nil, `{"id":12345678901234567890123}`, "12345678901234567890123"},
		{"number literal text", "json:id", nil, `{"id":-1.50e+3}`, "-1.50e+3"},
		{"zero", "json:id", nil, `{"id":0}`, "0"},
		{"true", "json:id", nil, `{"id":true}`, "true"},
		{"false", "json:id", nil, `{"id":false}`, "false"},
		{"null", "json:id", nil, `{"id":null}`, ""},
		{"empty string", "json:id", nil, `{"id":""}`, ""},
		{"object", "json:id", nil, `{"id":{"a":1}}`, ""},
		{"array", "json:id", nil, `{"id":["a"]}`, ""},
		{"empty object", "json:id", nil, `{}`, ""},
		{"unicode escape", "json:id", nil, `{"id":"caf\u00e9"}`, "café"},
		{"surrogate pair", "json:id", nil, `{"id":"\ud83d\ude00!"}`, "😀!"},
		{"escapes", "json:id", nil, `{"id":"a\"b\\c\/d\n"}`, "a\"b\\c/d\n"},
		{"raw utf-8", "json:id", nil, `{"id":"日本"}`, "日本"},
		{"escaped object key", "json:id", nil, `{"i\u0064":"matched"}`, "matched"},
		{"first of duplicate keys", "json:id", nil, `{"id":"one","id":"two"}`, "one"},
		{"path segment with a dash", "json:meta.event-id", nil, `{"meta":{"event-id":"e1"}}`, "e1"},
		{"MaxKeyBytes string", "json:id", nil, `{"id":"` + long + `"}`, long},
		{"longer string", "json:id", nil, `{"id":"` + long + `x"}`, ""},
		{"escaped string within the bound once unescaped", "json:id", nil, `{"id":"` + strings.Repeat(`\u0041`, 200) + `"}`, strings.Repeat("A", 200)},
		{"unescaped string over the bound", "json:id", nil, `{"id":"` + strings.Repeat(`\u00e9`, 257) + `"}`, ""},
		{"long number", "json:id", nil, `{"id":` + strings.Repeat("9", MaxKeyBytes+1) + `}`, ""},
		{"header not read", "json:id", []string{"Id", "h"}, `{}`, ""},

		// Not JSON: no key, even where a lenient parser finds one.
		{"empty body", "json:id", nil, ``, ""},
		{"not json", "json:id", nil, `id=evt_1`, ""},
		{"truncated", "json:id", nil, `{"id":"evt_1"`, ""},
		{"trailing garbage", "json:id", nil, `{"id":"evt_1"} x`, ""},
		{"two documents", "json:id", nil, `{"id":"a"}{"id":"b"}`, ""},
		{"single quotes", "json:id", nil, `{'id':'a'}`, ""},
		{"NaN", "json:id", nil, `{"id":NaN}`, ""},
		{"inf", "json:id", nil, `{"id":-Inf}`, ""},
		{"bad number", "json:id", nil, `{"id":1.2.3}`, ""},
		{"leading plus", "json:id", nil, `{"id":+1}`, ""},
		{"bad escape", "json:id", nil, `{"id":"a\qb"}`, ""},
		{"short unicode escape", "json:id", nil, `{"id":"a\u12"}`, ""},
		{"control character", "json:id", nil, "{\"id\":\"a\x01b\"}", ""},
		{"nested too deep", "json:0", nil, deep, ""},
	})
}

// TestKeyDeepNesting: a body of nothing but "[" would overflow the stack
// of fastjson.Validate (it has no depth bound): Key must refuse it first.
func TestKeyDeepNesting(t *testing.T) {
	x := mustExtractor(t, "json:id", "none")
	for _, body := range [][]byte{
		bytes.Repeat([]byte("["), 4<<20),
		bytes.Repeat([]byte(`{"a":`), 1<<20),
	} {
		if got, ok := x.Key(nil, xHeader(), body); ok {
			t.Fatalf("Key = %q", got)
		}
	}
}

func TestKeyAppends(t *testing.T) {
	x := mustExtractor(t, "json:id", "none")
	dst := make([]byte, 3, 64)
	copy(dst, "abc")
	got, ok := x.Key(dst, xHeader(), []byte(`{"id":7}`))
	if !ok || string(got) != "abc7" {
		t.Fatalf("Key = %q, %v", got, ok)
	}
	got, ok = x.Key(dst, xHeader(), []byte(`{"id":`+strings.Repeat("1", 600)+`}`))
	if ok || string(got) != "abc" {
		t.Fatalf("over-long number: Key = %q, %v; want dst unchanged", got, ok)
	}
}

func TestNewExtractorErrors(t *testing.T) {
	for _, c := range []struct{ spec, verifier, want string }{
		{"", "hmac", `dedupe.key: "" must be header:NAME, json:PATH or auto`},
		{"cookie:x", "hmac", `dedupe.key: "cookie:x" must be header:NAME, json:PATH or auto`},
		{"AUTO", "stripe", `dedupe.key: "AUTO" must be header:NAME, json:PATH or auto`},
		{" json:id", "stripe", `dedupe.key: " json:id" must be header:NAME, json:PATH or auto`},
		{"id", "stripe", `dedupe.key: "id" must be header:NAME, json:PATH or auto`},
		{"json:", "hmac", `dedupe.key: "json:" has an empty path`},
		{"json:a..b", "hmac", `dedupe.key: "json:a..b" has an empty segment in its path (segments are separated by single dots)`},
		{"json:.a", "hmac", `dedupe.key: "json:.a" has an empty segment in its path (segments are separated by single dots)`},
		{"json:a.", "hmac", `dedupe.key: "json:a." has an empty segment in its path (segments are separated by single dots)`},
		{"header:", "hmac", `dedupe.key: "header:" has an empty header name`},
		{"header:X Id", "hmac", `dedupe.key: "header:X Id": "X Id" is not a valid header name`},
		{"header:X-Id:", "hmac", `dedupe.key: "header:X-Id:": "X-Id:" is not a valid header name`},
		{"header:X-Ïd", "hmac", `dedupe.key: "header:X-Ïd": "X-Ïd" is not a valid header name`},
		{"auto", "hmac", `dedupe.key: auto needs a verifier that carries its own id (stripe, github, shopify, standardwebhooks); this source's is "hmac"`},
		{"auto", "slack", `dedupe.key: auto needs a verifier that carries its own id (stripe, github, shopify, standardwebhooks); this source's is "slack"`},
		{"auto", "none", `dedupe.key: auto needs a verifier that carries its own id (stripe, github, shopify, standardwebhooks); this source's is "none"`},
		{"auto", "", `dedupe.key: auto needs a verifier that carries its own id (stripe, github, shopify, standardwebhooks); this source's is ""`},
	} {
		x, err := NewExtractor(c.spec, c.verifier)
		if err == nil {
			t.Errorf("NewExtractor(%q, %q) = %v, want error %s", c.spec, c.verifier, x, c.want)
			continue
		}
		if err.Error() != c.want {
			t.Errorf("NewExtractor(%q, %q):\n got %s\nwant %s", c.spec, c.verifier, err, c.want)
		}
	}
}

func TestNewExtractorAccepts(t *testing.T) {
	for _, c := range []struct{ spec, verifier, str string }{
		{"header:X-Request-Id", "none", "header:X-Request-Id"},
		{"header:x_id.v2!", "hmac", "header:x_id.v2!"},
		{"json:id", "hmac", "json:id"},
		{"json:data.object.id", "slack", "json:data.object.id"},
		{"json:items.0.id", "none", "json:items.0.id"},
		{"auto", "stripe", "json:id"},
		// An explicit spec needs no verifier of any kind.
		{"json:id", "", "json:id"},
	} {
		if x := mustExtractor(t, c.spec, c.verifier); x.String() != c.str {
			t.Errorf("NewExtractor(%q).String() = %q, want %q", c.spec, x.String(), c.str)
		}
	}
}

// TestKeyHeaderAllocs: the header path allocates nothing when dst has
// room.
func TestKeyHeaderAllocs(t *testing.T) {
	x := mustExtractor(t, "auto", "github")
	h := xHeader("X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")
	dst := make([]byte, 0, MaxKeyBytes)
	if n := testing.AllocsPerRun(200, func() {
		if _, ok := x.Key(dst[:0], h, nil); !ok {
			t.Fatal("no key")
		}
	}); n != 0 {
		t.Fatalf("header path: %v allocations per Key", n)
	}
}

// TestKeyConcurrent: one Extractor, many goroutines, pooled parsers: every
// hook gets its own key (run with -race).
func TestKeyConcurrent(t *testing.T) {
	x := mustExtractor(t, "json:data.items.1.id", "none")
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var dst []byte
			for i := range 300 {
				want := fmt.Sprintf("g%d-%d", g, i)
				pad := strings.Repeat(" ", i%7*100) // bodies of different sizes share parsers
				body := fmt.Sprintf(`{"pad":"%s","data":{"items":[{"id":"no"},{"id":%q}]}}`, pad, want)
				var ok bool
				dst, ok = x.Key(dst[:0], nil, []byte(body))
				if !ok || string(dst) != want {
					t.Errorf("Key = %q, %v; want %q", dst, ok, want)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestMakeKey(t *testing.T) {
	a := MakeKey("acme", "stripe", []byte("evt_1"))
	if a != MakeKey("acme", "stripe", []byte("evt_1")) {
		t.Fatal("MakeKey is not deterministic")
	}
	// The hash is of the raw key only; tenant and source stay beside it.
	if sum := sha256.Sum256([]byte("evt_1")); !bytes.Equal(a.Hash[:], sum[:16]) || a.Tenant != "acme" || a.Source != "stripe" {
		t.Fatalf("MakeKey = %+v", a)
	}
	for _, b := range []Key{
		MakeKey("acme", "stripe", []byte("evt_2")),
		MakeKey("other", "stripe", []byte("evt_1")),
		MakeKey("acme", "github", []byte("evt_1")),
	} {
		if a == b {
			t.Fatalf("%+v == %+v", a, b)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = MakeKey("acme", "stripe", []byte("evt_1")) }); n != 0 {
		t.Fatalf("MakeKey: %v allocations", n)
	}
}

func BenchmarkKeyHeader(b *testing.B) {
	x := mustExtractor(b, "auto", "standardwebhooks")
	h := xHeader("webhook-id", "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W")
	dst := make([]byte, 0, MaxKeyBytes)
	b.ReportAllocs()
	for b.Loop() {
		dst, _ = x.Key(dst[:0], h, nil)
	}
}

func BenchmarkKeyJSON(b *testing.B) {
	x := mustExtractor(b, "auto", "stripe")
	body := []byte(`{"id":"evt_1NG8Du2eZvKYlo2CUI79vXWy","object":"event","api_version":"2023-10-16","created":1686089970,` +
		`"data":{"object":{"id":"ch_3NG8Dt2eZvKYlo2C0Gv5VxJd","object":"charge","amount":1000,"currency":"usd",` +
		`"metadata":{"order_id":"6735"},"description":"` + strings.Repeat("lorem ipsum ", 100) + `"}},"livemode":false,"type":"charge.succeeded"}`)
	dst := make([]byte, 0, MaxKeyBytes)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		dst, _ = x.Key(dst[:0], nil, body)
	}
}
