package envelope

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// stdJSONString is what encoding/json writes for s with HTML escaping off.
func stdJSONString(t testing.TB, s string) string {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// jsonView is what a string becomes through the JSON form: every byte that
// is not part of valid UTF-8 turns into U+FFFD.
func jsonView(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		b.WriteRune(r) // RuneError for an invalid byte
		i += size
	}
	return b.String()
}

func TestJSONStringEscaping(t *testing.T) {
	var all strings.Builder
	for c := 0; c < 0x80; c++ {
		all.WriteByte(byte(c))
	}
	f := func(s, want string) {
		t.Helper()
		got := string(appendJSONString(nil, s))
		if std := stdJSONString(t, s); got != std {
			t.Errorf("appendJSONString(%q) = %s, encoding/json writes %s", s, got, std)
		}
		if want != "" && got != want {
			t.Errorf("appendJSONString(%q) = %s, want %s", s, got, want)
		}
	}
	f("", `""`)
	f("plain", `"plain"`)
	f(`"quoted" \ back`, `"\"quoted\" \\ back"`)
	f("\b\f\n\r\t", `"\b\f\n\r\t"`)
	f("\x00\x01\x1f\x7f", `"\u0000\u0001\u001f`+"\x7f"+`"`)
	f("<a href='x'>&amp;</a>", `"<a href='x'>&amp;</a>"`) // no HTML escaping
	f("\u2028\u2029", `"\u2028\u2029"`)
	f("ü€🙂\uFFFD", `"ü€🙂`+"\uFFFD"+`"`)
	f("\xff", `"\ufffd"`)
	f("a\xc3", `"a\ufffd"`)                             // truncated sequence
	f("\xed\xa0\x80", `"\ufffd\ufffd\ufffd"`)           // an encoded surrogate
	f("\xf4\x90\x80\x80", `"\ufffd\ufffd\ufffd\ufffd"`) // above U+10FFFF
	f("\xc0\xaf", `"\ufffd\ufffd"`)                     // overlong
	f(all.String(), "")
	f(strings.Repeat("\x00é\xff\u2028x", 100), "")
}

// FuzzJSONString holds the escaping to encoding/json's for any input.
func FuzzJSONString(f *testing.F) {
	for _, s := range []string{"", "a\"b\\c", "\x00\x1f\x7f", "\u2028", "\xff\xfe", "🙂\xf0\x9f", "<>&"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := appendJSONString(nil, s)
		if std := stdJSONString(t, s); string(got) != std {
			t.Fatalf("appendJSONString(%q) = %s, encoding/json writes %s", s, got, std)
		}
		var back string
		if err := json.Unmarshal(got, &back); err != nil || back != jsonView(s) {
			t.Fatalf("decoding %s = %q, %v; want %q", got, back, err, jsonView(s))
		}
	})
}

// afterJSON is what UnmarshalJSON gives back for e: headers grouped by name,
// strings through jsonView, the node-internal fields zero.
func afterJSON(e Envelope) Envelope {
	e.TenantOrdinal = 0
	e.Verification.Quarantined = false
	e.Verification.Failure = FailNone
	e.TenantID, e.SourceID, e.DedupeKey = jsonView(e.TenantID), jsonView(e.SourceID), jsonView(e.DedupeKey)
	e.EventType = jsonView(e.EventType)
	e.Verification.Verifier = jsonView(e.Verification.Verifier)
	var params []Param
	for _, p := range e.RouteParams {
		params = append(params, Param{Key: jsonView(p.Key), Value: jsonView(p.Value)})
	}
	e.RouteParams = params
	var hs []Header
	done := map[string]bool{}
	for _, h := range e.Headers {
		if done[h.Name] {
			continue
		}
		done[h.Name] = true
		for _, h2 := range e.Headers {
			if h2.Name == h.Name {
				hs = append(hs, Header{Name: jsonView(h2.Name), Value: jsonView(h2.Value)})
			}
		}
	}
	e.Headers = hs
	if len(e.Body) == 0 {
		e.Body = nil
	}
	return e
}

func TestJSONRoundTrip(t *testing.T) {
	binBody := make([]byte, 256)
	for i := range binBody {
		binBody[i] = byte(i)
	}
	manyParams := make([]Param, 200)
	for i := range manyParams {
		manyParams[i] = Param{Key: fmt.Sprintf("p%03d", 199-i), Value: strings.Repeat("v", i)}
	}
	manyHeaders := make([]Header, MaxHeaders)
	for i := range manyHeaders {
		manyHeaders[i] = Header{Name: fmt.Sprintf("X-H%d", i%37), Value: fmt.Sprint(i)}
	}
	f := func(name string, mod func(e *Envelope)) {
		t.Run(name, func(t *testing.T) {
			e := sample()
			mod(&e)
			enc := e.AppendJSON(nil)
			if !json.Valid(enc) {
				t.Fatalf("AppendJSON wrote invalid JSON: %s", enc)
			}
			var got Envelope
			got.TenantOrdinal = 99 // UnmarshalJSON replaces all of got
			if err := json.Unmarshal(enc, &got); err != nil {
				t.Fatalf("Unmarshal(%s): %v", enc, err)
			}
			if got, want := normalize(got), normalize(afterJSON(e)); !reflect.DeepEqual(got, want) {
				t.Fatalf("round trip changed the envelope\ngot  %+v\nwant %+v\njson %s", got, want, enc)
			}
			if !bytes.Equal(got.Body, e.Body) {
				t.Fatalf("body changed: got %q, want %q", got.Body, e.Body)
			}
			// The text is a function of the envelope: what was read back
			// writes the same text, except that an invalid byte, written
			// as \ufffd, reads back as U+FFFD and is written raw.
			again := got.AppendJSON(nil)
			if want := bytes.ReplaceAll(enc, []byte(`\ufffd`), []byte("\uFFFD")); !bytes.Equal(again, want) {
				t.Fatalf("re-encoding differs\nfirst  %s\nsecond %s", enc, again)
			}
			prefix := []byte("prefix")
			if withPrefix := e.AppendJSON(bytes.Clone(prefix)); !bytes.Equal(withPrefix[len(prefix):], e.AppendJSON(nil)) || string(withPrefix[:len(prefix)]) != "prefix" {
				t.Fatalf("AppendJSON did not append")
			}
		})
	}
	f("full", func(e *Envelope) {})
	f("zero", func(e *Envelope) { *e = Envelope{} })
	f("no params or headers", func(e *Envelope) { e.RouteParams, e.Headers = nil, []Header{} })
	f("empty body", func(e *Envelope) { e.Body = []byte{} })
	f("binary body", func(e *Envelope) { e.Body = binBody })
	f("one invalid byte at the end", func(e *Envelope) { e.Body = []byte("{\"a\":\"é\"}\xc3") })
	f("body with nul and controls", func(e *Envelope) { e.Body = []byte("a\x00b\x01\n\t\"\\\u2028") })
	f("large body", func(e *Envelope) { e.Body = bytes.Repeat([]byte("0123456789"), 100_000) })
	f("unicode", func(e *Envelope) {
		e.TenantID, e.SourceID = "テナント", "sörce-ü"
		e.RouteParams = []Param{{Key: "ключ", Value: "值🙂"}}
		e.Headers = []Header{{Name: "X-Emoji", Value: "🙂🙃"}, {Name: "X-Emoji", Value: "\u0000\uffff"}}
		e.Body = []byte("ünïcödé 🙂")
		e.DedupeKey = "κλειδί"
	})
	f("header control characters", func(e *Envelope) {
		e.Headers = []Header{{Name: "X-C", Value: "a\tb\x00c\x1f\x7f"}, {Name: "X-Q", Value: `"\`}}
	})
	f("invalid utf8 strings", func(e *Envelope) {
		e.Headers = []Header{{Name: "X-Latin1", Value: "caf\xe9"}, {Name: "X-\xff", Value: "\xc3"}}
		e.TenantID, e.DedupeKey = "\xff\xfe", "k\xc3"
		e.RouteParams = []Param{{Key: "\x80", Value: "\xed\xa0\x80"}}
	})
	f("interleaved and case-distinct headers", func(e *Envelope) {
		e.Headers = []Header{
			{Name: "A", Value: "1"}, {Name: "B", Value: "2"}, {Name: "A", Value: "3"},
			{Name: "a", Value: "4"}, {Name: "B", Value: ""}, {Name: "A", Value: "5"},
		}
	})
	f("many params", func(e *Envelope) { e.RouteParams = manyParams })
	f("duplicate param keys", func(e *Envelope) { e.RouteParams = []Param{{"k", "1"}, {"k", "2"}, {"", ""}} })
	f("max headers", func(e *Envelope) { e.Headers = manyHeaders })
	f("just past linear grouping", func(e *Envelope) { e.Headers = manyHeaders[:groupLinear+1] })
	f("max identity", func(e *Envelope) {
		e.Seq = math.MaxUint64
		e.ID = maxID
	})
	f("min received_at", func(e *Envelope) { e.ReceivedAt = math.MinInt64 })
	f("max received_at", func(e *Envelope) { e.ReceivedAt = math.MaxInt64 })
	f("negative received_at", func(e *Envelope) { e.ReceivedAt = -1 })
	f("node-internal fields", func(e *Envelope) {
		e.TenantOrdinal = 7
		e.Verification = Verification{Verifier: "none", Verified: false, Flagged: true, Quarantined: true, Failure: FailMismatch}
	})
}

func TestJSONBody(t *testing.T) {
	f := func(body, wantBody, wantEncoding string) {
		t.Helper()
		e := Envelope{Body: []byte(body)}
		var got struct {
			Body         json.RawMessage `json:"body"`
			BodyEncoding string          `json:"body_encoding"`
		}
		if err := json.Unmarshal(e.AppendJSON(nil), &got); err != nil {
			t.Fatal(err)
		}
		if string(got.Body) != wantBody || got.BodyEncoding != wantEncoding {
			t.Errorf("body %q: got %s, %s; want %s, %s", body, got.Body, got.BodyEncoding, wantBody, wantEncoding)
		}
	}
	f("", `""`, "utf8")
	f(`{"id":"evt_1"}`, `"{\"id\":\"evt_1\"}"`, "utf8")
	f("<b>&</b>\n", `"<b>&</b>\n"`, "utf8")
	f("\x00", `"\u0000"`, "utf8")
	f("\xff", `"/w=="`, "base64")
	f("ab\xff", `"YWL/"`, "base64")
	f("é\xc3", `"w6nD"`, "base64")
	f("\xfb\xef", `"++8="`, "base64") // standard alphabet, padded
}

func TestJSONReceivedAt(t *testing.T) {
	f := func(ns int64, want string) {
		t.Helper()
		e := Envelope{ReceivedAt: ns}
		enc := e.AppendJSON(nil)
		if !bytes.Contains(enc, []byte(`"received_at":"`+want+`"`)) {
			t.Errorf("received_at %d: got %s, want %s", ns, enc, want)
		}
		var back Envelope
		if err := back.UnmarshalJSON(enc); err != nil || back.ReceivedAt != ns {
			t.Errorf("received_at %s read back as %d, %v; want %d", want, back.ReceivedAt, err, ns)
		}
	}
	f(0, "1970-01-01T00:00:00.000000000Z")
	f(1, "1970-01-01T00:00:00.000000001Z")
	f(-1, "1969-12-31T23:59:59.999999999Z")
	f(1_764_445_200_000_000_000, "2025-11-29T19:40:00.000000000Z")
	f(1_764_445_200_100_000_000, "2025-11-29T19:40:00.100000000Z")
	f(math.MaxInt64, "2262-04-11T23:47:16.854775807Z")
	f(math.MinInt64, "1677-09-21T00:12:43.145224192Z")

	// Any RFC 3339 time reads back; the form written is UTC, nine digits.
	in := []byte(`{"id":"evt_00000000000000000000000000","received_at":"2025-11-29T20:40:00.5+01:00","body_encoding":"utf8"}`)
	var e Envelope
	if err := json.Unmarshal(in, &e); err != nil || e.ReceivedAt != 1_764_445_200_500_000_000 {
		t.Fatalf("Unmarshal(%s) = %d, %v", in, e.ReceivedAt, err)
	}
}

func TestJSONFieldOrder(t *testing.T) {
	e := sample()
	e.Headers = append(e.Headers, Header{Name: "Content-Type", Value: "again"})
	d := json.NewDecoder(bytes.NewReader(e.AppendJSON(nil)))
	var keys []string
	var walk func(depth int)
	walk = func(depth int) {
		tok, err := d.Token()
		if err != nil {
			t.Fatal(err)
		}
		if tok != json.Delim('{') && tok != json.Delim('[') {
			return
		}
		obj := tok == json.Delim('{')
		for d.More() {
			if obj {
				k, err := d.Token()
				if err != nil {
					t.Fatal(err)
				}
				keys = append(keys, strings.Repeat(".", depth)+k.(string))
			}
			walk(depth + 1)
		}
		if _, err := d.Token(); err != nil {
			t.Fatal(err)
		}
	}
	walk(0)
	want := []string{
		"id", "seq", "tenant_id", "source_id", "received_at",
		"route_params", ".app_id",
		"headers", ".Content-Type", ".Stripe-Signature",
		"body", "body_encoding",
		"verification", ".verifier", ".verified", ".flagged",
		"dedupe_key",
	}
	if !reflect.DeepEqual(keys, want) {
		t.Fatalf("keys in order:\ngot  %q\nwant %q", keys, want)
	}
}

func TestJSONHeaders(t *testing.T) {
	f := func(hs []Header, want string) {
		t.Helper()
		var got struct {
			Headers json.RawMessage `json:"headers"`
		}
		e := Envelope{Headers: hs}
		if err := json.Unmarshal(e.AppendJSON(nil), &got); err != nil {
			t.Fatal(err)
		}
		if string(got.Headers) != want {
			t.Errorf("headers %q: got %s, want %s", hs, got.Headers, want)
		}
	}
	f(nil, `{}`)
	f([]Header{{"A", "1"}}, `{"A":["1"]}`)
	f([]Header{{"A", "1"}, {"B", "2"}, {"A", "3"}}, `{"A":["1","3"],"B":["2"]}`)
	f([]Header{{"content-type", "x"}, {"Content-Type", "y"}}, `{"content-type":["x"],"Content-Type":["y"]}`)
	f([]Header{{"", ""}, {"", ""}}, `{"":["",""]}`)
	// Header values are bytes as received: invalid UTF-8 becomes U+FFFD,
	// one per invalid byte, as encoding/json writes it.
	f([]Header{{"X-Latin1", "caf\xe9 \xff\xfe"}}, `{"X-Latin1":["caf\ufffd \ufffd\ufffd"]}`)

	// The chained grouping past groupLinear writes what the scan writes.
	for _, n := range []int{groupLinear + 1, 100, MaxHeaders} {
		hs := make([]Header, n)
		for i := range hs {
			hs[i] = Header{Name: fmt.Sprintf("H%d", (i*7)%(n/3+1)), Value: fmt.Sprint(i)}
		}
		var want []byte
		want = append(want, '{')
		for i, h := range hs {
			if seenBefore(hs, i) {
				continue
			}
			if len(want) > 1 {
				want = append(want, ',')
			}
			want = fmt.Appendf(want, "%q:[", h.Name)
			sep := ""
			for _, h2 := range hs[i:] {
				if h2.Name == h.Name {
					want = fmt.Appendf(want, "%s%q", sep, h2.Value)
					sep = ","
				}
			}
			want = append(want, ']')
		}
		want = append(want, '}')
		if got := appendHeaders(nil, hs); !bytes.Equal(got, want) {
			t.Errorf("%d headers:\ngot  %s\nwant %s", n, got, want)
		}
	}
}

// goldenJSONEnvelope is the envelope testdata/envelope_v1.json shows.
func goldenJSONEnvelope() Envelope {
	return Envelope{
		Seq:           42,
		ID:            MakeID(1_764_445_200_123, 7, 42),
		TenantOrdinal: 3,
		TenantID:      "acme",
		SourceID:      "stripe",
		ReceivedAt:    1_764_445_200_123_456_789,
		RouteParams:   []Param{{Key: "app_id", Value: "a1"}, {Key: "env", Value: "prod"}},
		Headers: []Header{
			{Name: "Content-Type", Value: "application/json; charset=utf-8"},
			{Name: "Stripe-Signature", Value: "t=1764445200,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd"},
			{Name: "X-Forwarded-For", Value: "203.0.113.7"},
			{Name: "X-Note", Value: "tab\there \"q\" caf\xe9"},
			{Name: "X-Forwarded-For", Value: "198.51.100.2"},
		},
		Body:         []byte(`{"id":"evt_1","type":"invoice.paid","note":"<ünïcode & 🙂>\n"}`),
		Verification: Verification{Verifier: "stripe", Verified: true},
		DedupeKey:    "evt_1",
	}
}

// TestGoldenJSONV1 freezes the JSON form of an envelope.
func TestGoldenJSONV1(t *testing.T) {
	want, err := os.ReadFile("testdata/envelope_v1.json")
	if err != nil {
		t.Fatal(err)
	}
	want = bytes.TrimSuffix(want, []byte("\n"))
	e := goldenJSONEnvelope()
	if got := e.AppendJSON(nil); !bytes.Equal(got, want) {
		t.Fatalf("JSON form of the golden envelope changed (format v1 is frozen)\ngot  %s\nwant %s", got, want)
	}
	var dec Envelope
	if err := json.Unmarshal(want, &dec); err != nil {
		t.Fatal(err)
	}
	if got, want := dec, afterJSON(e); !reflect.DeepEqual(got, want) {
		t.Fatalf("Unmarshal(golden)\ngot  %+v\nwant %+v", got, want)
	}
}

func TestJSONMarshaler(t *testing.T) {
	e := sample()
	want := e.AppendJSON(nil)
	// A value that is not addressable still uses the JSON form.
	got, err := json.Marshal(struct{ E Envelope }{e})
	if err != nil || string(got) != `{"E":`+string(want)+`}` {
		t.Fatalf("json.Marshal = %s, %v", got, err)
	}
	var back struct{ E Envelope }
	if err := json.Unmarshal(got, &back); err != nil || !reflect.DeepEqual(back.E, afterJSON(e)) {
		t.Fatalf("json.Unmarshal = %+v, %v", back.E, err)
	}
	// null leaves the envelope as it is.
	keep := e
	if err := keep.UnmarshalJSON([]byte("null")); err != nil || !reflect.DeepEqual(keep, e) {
		t.Fatalf("UnmarshalJSON(null) = %+v, %v", keep, err)
	}
}

func TestUnmarshalJSONErrors(t *testing.T) {
	const id = `"id":"evt_00000000000000000000000000"`
	const at = `"received_at":"2025-11-29T19:40:00.123456789Z"`
	const enc = `"body_encoding":"utf8"`
	f := func(in, wantErr string) {
		t.Helper()
		var e Envelope
		err := e.UnmarshalJSON([]byte(in))
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("UnmarshalJSON(%s) = %v, want an error containing %q", in, err, wantErr)
		}
	}
	f(`[]`, "cannot decode")
	f(`{"id":`, "cannot decode")
	f(`{`+at+`,`+enc+`}`, "field id")
	f(`{"id":"evt_1",`+at+`,`+enc+`}`, "field id")
	f(`{"id":42,`+at+`,`+enc+`}`, "cannot decode")
	f(`{`+id+`,`+enc+`}`, "received_at")
	f(`{`+id+`,"received_at":"2025-11-29 19:40:00",`+enc+`}`, "received_at")
	f(`{`+id+`,"received_at":"2300-01-01T00:00:00Z",`+enc+`}`, "outside the years")
	f(`{`+id+`,`+at+`}`, "body_encoding")
	f(`{`+id+`,`+at+`,"body_encoding":"hex"}`, "body_encoding")
	f(`{`+id+`,`+at+`,"body":"!!","body_encoding":"base64"}`, "base64")
	f(`{`+id+`,`+at+`,"body":"YQ","body_encoding":"base64"}`, "base64") // unpadded
	f(`{`+id+`,`+at+`,`+enc+`,"seq":-1}`, "cannot decode")
	f(`{`+id+`,`+at+`,`+enc+`,"route_params":{"a":1}}`, "route_params")
	f(`{`+id+`,`+at+`,`+enc+`,"route_params":["a"]}`, "route_params")
	f(`{`+id+`,`+at+`,`+enc+`,"headers":{"A":"1"}}`, "headers")
	f(`{`+id+`,`+at+`,`+enc+`,"headers":{"A":[1]}}`, "headers")
	f(`{`+id+`,`+at+`,`+enc+`,"headers":{"A":null}}`, "headers")

	// Absent optional fields, null objects and unknown fields are fine.
	var e Envelope
	in := `{` + id + `,` + at + `,` + enc + `,"route_params":null,"headers":null,"future":{"x":[1]}}`
	if err := e.UnmarshalJSON([]byte(in)); err != nil || e.RouteParams != nil || e.Headers != nil {
		t.Fatalf("UnmarshalJSON(%s) = %+v, %v", in, e, err)
	}
}

func TestAppendJSONAllocs(t *testing.T) {
	e := sample()
	e.Headers = make([]Header, groupLinear)
	for i := range e.Headers {
		e.Headers[i] = Header{Name: fmt.Sprintf("X-H%d", i%5), Value: "v\x00\xff"}
	}
	e.Body = []byte("binary\xff")
	buf := e.AppendJSON(nil)
	if n := testing.AllocsPerRun(100, func() { buf = e.AppendJSON(buf[:0]) }); n != 0 {
		t.Fatalf("AppendJSON into a large enough buffer: %v allocations, want 0", n)
	}
	e.Body = []byte(`{"id":"evt_1"}`)
	if n := testing.AllocsPerRun(100, func() { buf = e.AppendJSON(buf[:0]) }); n != 0 {
		t.Fatalf("AppendJSON (utf8 body): %v allocations, want 0", n)
	}
}

// FuzzJSONRoundTrip checks that any strings and body make valid JSON that
// reads back as the JSON view of the envelope.
func FuzzJSONRoundTrip(f *testing.F) {
	f.Add("acme", "X-A", "v", []byte(`{"id":1}`))
	f.Add("\xff", "\x00", "caf\xe9", []byte{0xff, 0})
	f.Add("", "", "", []byte{})
	f.Add("\u2028", "A\"", "\\", []byte("\xed\xa0\x80"))
	f.Fuzz(func(t *testing.T, s, name, value string, body []byte) {
		e := Envelope{
			Seq: uint64(len(s)), TenantID: s, SourceID: name, DedupeKey: value,
			ReceivedAt:   int64(len(body)) << 40,
			RouteParams:  []Param{{Key: s, Value: value}},
			Headers:      []Header{{Name: name, Value: value}, {Name: s, Value: s}, {Name: name, Value: s}},
			Body:         body,
			Verification: Verification{Verifier: value, Flagged: true},
		}
		enc := e.AppendJSON(nil)
		if !json.Valid(enc) {
			t.Fatalf("invalid JSON: %s", enc)
		}
		var got Envelope
		if err := got.UnmarshalJSON(enc); err != nil {
			t.Fatalf("UnmarshalJSON(%s): %v", enc, err)
		}
		if got, want := normalize(got), normalize(afterJSON(e)); !reflect.DeepEqual(got, want) {
			t.Fatalf("round trip\ngot  %+v\nwant %+v", got, want)
		}
	})
}

func TestClaimRef(t *testing.T) {
	c := Claim{Store: "packs", Key: "claims/tenant=a/source=s/2026/12/05/n-1.pack", Offset: 3, Length: 9, SHA256: strings.Repeat("a1", 32)}
	ref := string(c.AppendRef(nil))
	if strings.ContainsAny(ref, "+/=") {
		t.Fatalf("ref %q is not base64url without padding", ref)
	}
	got, err := ParseClaimRef(ref)
	if err != nil || got != c {
		t.Fatalf("ParseClaimRef: %+v, %v", got, err)
	}
	for _, bad := range []string{"", "!!", ref + "=", "e30"} { // e30 is {}: no store
		if _, err := ParseClaimRef(bad); err == nil {
			t.Errorf("ParseClaimRef(%q) accepted", bad)
		}
	}
}
