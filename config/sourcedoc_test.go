package config

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseSourceDoc(t *testing.T) {
	doc, probs := ParseSourceDoc([]byte(`{"name": "acme-stripe", "tenant_id": "acme",
		"verify": {"type": "stripe", "secret": "whsec_x", "tolerance": "5m"},
		"dedupe": {"key": "json:id"},
		"sinks": [{"type": "http", "url": "https://example.com/in", "secret": "out", "headers": {"X-A": "b"}}]}`))
	if len(probs) > 0 {
		t.Fatal(probs)
	}
	if !doc.HasName || doc.Name != "acme-stripe" || doc.Spec.TenantID != "acme" || doc.Spec.Verify.Secret.Ref != "whsec_x" || doc.Spec.Sinks[0].Headers["X-A"] != "b" {
		t.Fatalf("%+v", doc)
	}
	if p := ResolveLiteralSecrets(&doc.Spec); len(p) > 0 || doc.Spec.Verify.Secret.Value != "whsec_x" || doc.Spec.Sinks[0].Secret.Value != "out" {
		t.Fatalf("%v %+v", p, doc.Spec)
	}
	DefaultSource(&doc.Spec, Duration(0))
	stored := EncodeSource(&doc.Spec, true)
	shown := EncodeSource(&doc.Spec, false)
	if strings.Contains(string(shown), "whsec_x") || strings.Contains(string(shown), `"out"`) || !strings.Contains(string(stored), "whsec_x") {
		t.Fatalf("shown %s\nstored %s", shown, stored)
	}
	// The stored form reads back to the same spec.
	back, probs := ParseSourceDoc(stored)
	if len(probs) > 0 {
		t.Fatalf("%v in %s", probs, stored)
	}
	if again := EncodeSource(&back.Spec, true); string(again) != string(stored) {
		t.Fatalf("round trip:\n%s\n%s", stored, again)
	}
	// DecodeSource, what a store reads at boot, reads it back the same.
	fast, err := DecodeSource(stored)
	if err != nil {
		t.Fatal(err)
	}
	if again := EncodeSource(&fast, true); string(again) != string(stored) {
		t.Fatalf("DecodeSource round trip:\n%s\n%s", stored, again)
	}
	for body, want := range map[string]string{
		`{"verify": {"type": "none", "secrett": "x"}}`: "verify.secrett: unknown key",
		`{"sinks": [{"timeout": "5x"}]}`:               "sinks[0].timeout:",
		`{"max_body_bytes": "big"}`:                    "max_body_bytes:",
		`{"verify": []}`:                               "verify:",
		`[`:                                            "unexpected end",
	} {
		if _, err := DecodeSource([]byte(body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("DecodeSource(%s): %v, want %q", body, err, want)
		}
	}
}

func TestParseSourceDocProblems(t *testing.T) {
	for body, want := range map[string]string{
		`{"verify": {"type": "none", "secrett": "x"}}`: "verify.secrett: unknown key",
		`{"nmae": "x"}`:                   "nmae: unknown key",
		`{"name": 7}`:                     "name: must be a string",
		`{"trust_url_tenant": "yes"}`:     "trust_url_tenant:",
		`{"sinks": {"type": "http"}}`:     "sinks: cannot unmarshal mapping",
		`{"max_body_bytes": "lots"}`:      "max_body_bytes:",
		`[1, 2]`:                          "must be a JSON object",
		`{"verify": {"tolerance": "5x"}}`: "verify.tolerance:",
		`{`:                               "cannot parse the source",
		``:                                "must be one JSON object",
	} {
		_, probs := ParseSourceDoc([]byte(body))
		if len(probs) == 0 || !strings.Contains(probs.Error(), want) {
			t.Errorf("%s: problems %q, want one containing %q", body, probs, want)
		}
	}
	s := Source{Verify: Verify{Type: "hmac", Secret: Secret{Ref: "env:HOME"}}, Sinks: []Sink{{Type: "http", Secret: Secret{Ref: "file:/etc/passwd"}}}}
	if p := ResolveLiteralSecrets(&s); len(p) != 2 || !strings.Contains(p[0], "verify.secret: env: and file:") || !strings.Contains(p[1], "sinks[0].secret") {
		t.Fatalf("%q", p)
	}
}

// FuzzSourceDoc: whatever a client sends or a store holds, reading it
// never panics, and a document that reads cleanly is stored and read back
// as the same spec.
func FuzzSourceDoc(f *testing.F) {
	f.Add([]byte(`{"name": "a", "verify": {"type": "stripe", "secret": "whsec_x", "tolerance": "5m"}, "sinks": [{"type": "http", "url": "https://x/in", "headers": {"A": "b"}}]}`))
	f.Add([]byte(`{"dedupe": {"key": "json:id", "ttl": "1h"}, "max_body_bytes": 1024, "quarantine": {"rate": 1.5, "burst": 2}}`))
	f.Add([]byte(`{"verify": {"secrets": ["a", "b"]}, "sinks": [{"claim": {"store": "s", "over_bytes": 10}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = DecodeSource(data)
		doc, probs := ParseSourceDoc(data)
		if len(probs) > 0 || !json.Valid(data) {
			return
		}
		stored := EncodeSource(&doc.Spec, true)
		back, err := DecodeSource(stored)
		if err != nil {
			t.Fatalf("%s read cleanly, but its stored form %s does not: %v", data, stored, err)
		}
		if again := EncodeSource(&back, true); string(again) != string(stored) {
			t.Fatalf("stored %s, read back as %s", stored, again)
		}
	})
}

// redactFixture is a source with a secret in every place one can be: the
// verifier's secret and secrets, a sink's secret and header values, and
// the password of a sink's url (an amqp url, a url template).
const redactFixture = `{"tenant_id": "acme",
	"verify": {"type": "hmac", "header": "X-Sig", "secret": "hook-secret", "secrets": ["old-secret", "older-secret"], "tolerance": "5m"},
	"dedupe": {"key": "json:id", "ttl": "1h"},
	"max_body_bytes": 4096,
	"sinks": [
		{"id": "web", "type": "http", "url": "https://user:url-pass@example.com/in?x=1", "secret": "sink-secret", "headers": {"Authorization": "Bearer header-token", "X-Env": "prod"}, "timeout": "5s", "format": "envelope"},
		{"id": "mq", "type": "rabbitmq", "url": "amqp://guest:amqp-pass@mq.example:5672/vh", "exchange": "hooks", "routing_key": "ankusa.{tenant_id}", "channels": 2},
		{"id": "tpl", "type": "http", "url": "https://u:tpl-pass@{tenant_id}.example.com/{source_id}"},
		{"id": "plain", "type": "http", "url": "https://example.com/{source_id}"}
	]}`

// RedactSource, a lifecycle event's form of a source: every secret reads
// "redacted" where it is set (so which are set shows), every sink header
// value and a url's password too, and everything else is as
// EncodeSource writes it. EncodeSource's two forms are as they were
// before RedactSource (pinned: the bytes the older encoder wrote).
func TestRedactSource(t *testing.T) {
	doc, probs := ParseSourceDoc([]byte(redactFixture))
	if len(probs) > 0 {
		t.Fatal(probs)
	}
	if p := ResolveLiteralSecrets(&doc.Spec); len(p) > 0 {
		t.Fatal(p)
	}
	const (
		sinksTail = `{"id":"mq","type":"rabbitmq","url":"amqp://guest:amqp-pass@mq.example:5672/vh","exchange":"hooks","routing_key":"ankusa.{tenant_id}","channels":2},` +
			`{"id":"tpl","type":"http","url":"https://u:tpl-pass@{tenant_id}.example.com/{source_id}"},` +
			`{"id":"plain","type":"http","url":"https://example.com/{source_id}"}],"dedupe":{"key":"json:id","ttl":"1h0m0s"},"max_body_bytes":4096}`
		stored = `{"tenant_id":"acme","verify":{"type":"hmac","secret":"hook-secret","secrets":["old-secret","older-secret"],"header":"X-Sig","tolerance":"5m0s"},` +
			`"sinks":[{"id":"web","type":"http","url":"https://user:url-pass@example.com/in?x=1","headers":{"Authorization":"Bearer header-token","X-Env":"prod"},"secret":"sink-secret","format":"envelope","timeout":"5s"},` +
			sinksTail
		// An answer shows no URL password either (issue 18).
		shown = `{"tenant_id":"acme","verify":{"type":"hmac","header":"X-Sig","tolerance":"5m0s"},` +
			`"sinks":[{"id":"web","type":"http","url":"https://user:redacted@example.com/in?x=1","headers":{"Authorization":"Bearer header-token","X-Env":"prod"},"format":"envelope","timeout":"5s"},` +
			`{"id":"mq","type":"rabbitmq","url":"amqp://guest:redacted@mq.example:5672/vh","exchange":"hooks","routing_key":"ankusa.{tenant_id}","channels":2},` +
			`{"id":"tpl","type":"http","url":"https://u:redacted@{tenant_id}.example.com/{source_id}"},` +
			`{"id":"plain","type":"http","url":"https://example.com/{source_id}"}],"dedupe":{"key":"json:id","ttl":"1h0m0s"},"max_body_bytes":4096}`
		redacted = `{"tenant_id":"acme","verify":{"type":"hmac","secret":"redacted","secrets":["redacted","redacted"],"header":"X-Sig","tolerance":"5m0s"},` +
			`"sinks":[{"id":"web","type":"http","url":"https://user:redacted@example.com/in?x=1","headers":{"Authorization":"redacted","X-Env":"redacted"},"secret":"redacted","format":"envelope","timeout":"5s"},` +
			`{"id":"mq","type":"rabbitmq","url":"amqp://guest:redacted@mq.example:5672/vh","exchange":"hooks","routing_key":"ankusa.{tenant_id}","channels":2},` +
			`{"id":"tpl","type":"http","url":"https://u:redacted@{tenant_id}.example.com/{source_id}"},` +
			`{"id":"plain","type":"http","url":"https://example.com/{source_id}"}],"dedupe":{"key":"json:id","ttl":"1h0m0s"},"max_body_bytes":4096}`
	)
	for _, c := range []struct{ name, got, want string }{
		{"EncodeSource(secrets)", string(EncodeSource(&doc.Spec, true)), stored},
		{"EncodeSource(no secrets)", string(EncodeSource(&doc.Spec, false)), shown},
		{"RedactSource", string(RedactSource(&doc.Spec)), redacted},
	} {
		if c.got != c.want {
			t.Errorf("%s:\n got  %s\n want %s", c.name, c.got, c.want)
		}
	}
	red := string(RedactSource(&doc.Spec))
	for _, secret := range []string{"hook-secret", "old-secret", "sink-secret", "header-token", "prod", "url-pass", "amqp-pass", "tpl-pass"} {
		if strings.Contains(red, secret) {
			t.Errorf("RedactSource shows %q: %s", secret, red)
		}
	}
	if !json.Valid([]byte(red)) {
		t.Errorf("RedactSource is not JSON: %s", red)
	}
	// Unset secrets stay out: no "redacted" stands for what is not there.
	none := Source{Verify: Verify{Type: "none"}, Sinks: []Sink{{Type: "http", URL: "https://example.com/in"}}}
	if got, want := string(RedactSource(&none)), `{"verify":{"type":"none"},"sinks":[{"type":"http","url":"https://example.com/in"}]}`; got != want {
		t.Errorf("RedactSource of a source without secrets:\n got  %s\n want %s", got, want)
	}
}

// RedactURL redacts a url's password and nothing else, byte for byte;
// a url without one is as it was.
func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"amqp://guest:guest@127.0.0.1:5672/":              "amqp://guest:redacted@127.0.0.1:5672/",
		"amqps://u:p%40ss@mq.example/vh?heartbeat=10":     "amqps://u:redacted@mq.example/vh?heartbeat=10",
		"https://u:p@ss@x.example/in":                     "https://u:redacted@x.example/in", // the last @ ends the user info
		"https://u:p@{tenant_id}.example.com/{source_id}": "https://u:redacted@{tenant_id}.example.com/{source_id}",
		"https://x.example/in?next=http://a:b@c.example/": "https://x.example/in?next=http://a:b@c.example/", // a query is not user info
		"https://x.example/a@b":                           "https://x.example/a@b",
		"https://user@x.example/in":                       "https://user@x.example/in",
		"https://x.example/{source_id}":                   "https://x.example/{source_id}",
		"amqp://:secret@h/":                               "amqp://:redacted@h/",
		"u":                                               "u",
		"":                                                "",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// CutURLPassword and WithURLPassword split a url's password out and put it
// back, byte for byte, reading the user info as RedactURL does: templates,
// no user, a user without a password, '@' in the password, a query or a
// fragment that looks like user info.
func TestCutAndWithURLPassword(t *testing.T) {
	for _, c := range []struct {
		in, bare, pw string
		ok           bool
	}{
		{"amqp://guest:guest@127.0.0.1:5672/", "amqp://guest@127.0.0.1:5672/", "guest", true},
		{"amqps://u:p%40ss@mq.example/vh?heartbeat=10", "amqps://u@mq.example/vh?heartbeat=10", "p%40ss", true},
		{"https://u:p@ss@x.example/in", "https://u@x.example/in", "p@ss", true}, // the last @ ends the user info
		{"https://u:p@{tenant_id}.example.com/{source_id}", "https://u@{tenant_id}.example.com/{source_id}", "p", true},
		{"amqp://:secret@h/", "amqp://@h/", "secret", true},
		{"amqp://u:@h/", "amqp://u@h/", "", true},
		{"amqp://u:a:b@h", "amqp://u@h", "a:b", true}, // no path: the user info ends the authority
		{"https://x.example/in?next=http://a:b@c.example/", "https://x.example/in?next=http://a:b@c.example/", "", false},
		{"https://x.example#frag:x@y", "https://x.example#frag:x@y", "", false},
		{"https://x.example/a@b", "https://x.example/a@b", "", false},
		{"https://user@x.example/in", "https://user@x.example/in", "", false},
		{"https://x.example/{source_id}", "https://x.example/{source_id}", "", false},
		{"user:pw@host", "user:pw@host", "", false}, // no scheme: no user info to read
		{"", "", "", false},
	} {
		bare, pw, ok := CutURLPassword(c.in)
		if bare != c.bare || pw != c.pw || ok != c.ok {
			t.Errorf("CutURLPassword(%q) = %q, %q, %v; want %q, %q, %v", c.in, bare, pw, ok, c.bare, c.pw, c.ok)
			continue
		}
		if !ok {
			continue
		}
		if back, ok := WithURLPassword(bare, pw); !ok || back != c.in {
			t.Errorf("WithURLPassword(%q, %q) = %q, %v; want %q back", bare, pw, back, ok, c.in)
		}
		if red := RedactURL(c.in); red != strings.Replace(c.in, ":"+pw+"@", ":"+Redacted+"@", 1) {
			t.Errorf("RedactURL(%q) = %q", c.in, red)
		}
	}
	for _, c := range []struct {
		in, pw, want string
		ok           bool
	}{
		{"amqp://guest@h:5672/", "p@ss", "amqp://guest:p@ss@h:5672/", true},
		{"https://u@{tenant_id}.example.com/", "x", "https://u:x@{tenant_id}.example.com/", true},
		{"amqp://guest:already@h/", "x", "amqp://guest:already@h/", false}, // a password is there
		{"https://x.example/in", "x", "https://x.example/in", false},       // no user
		{"https://x.example/a@b", "x", "https://x.example/a@b", false},     // '@' in the path is not user info
		{"https://x.example?q=u@h", "x", "https://x.example?q=u@h", false}, // nor in the query
		{"no-scheme@h", "x", "no-scheme@h", false},
	} {
		if got, ok := WithURLPassword(c.in, c.pw); got != c.want || ok != c.ok {
			t.Errorf("WithURLPassword(%q, %q) = %q, %v; want %q, %v", c.in, c.pw, got, ok, c.want, c.ok)
		}
	}
}

// TestHandshakeTokenIsASecret: verify.handshake_token is walked, found by
// its path and resolved like the signing secrets (a literal through the
// admin API, never an env: or file: reference there).
func TestHandshakeTokenIsASecret(t *testing.T) {
	s := Source{Verify: Verify{Type: "hmac", Secret: Secret{Ref: "k"}, HandshakeToken: Secret{Ref: "meatyhamhock"}}}
	var paths []string
	WalkSecrets(&s, func(path string, _ *Secret) { paths = append(paths, path) })
	if len(paths) != 2 || paths[1] != "verify.handshake_token" {
		t.Fatalf("WalkSecrets paths %q", paths)
	}
	if SecretAt(&s, "verify.handshake_token") != &s.Verify.HandshakeToken {
		t.Fatal("SecretAt does not find verify.handshake_token")
	}
	if p := ResolveLiteralSecrets(&s); len(p) != 0 || s.Verify.HandshakeToken.Value != "meatyhamhock" {
		t.Fatalf("ResolveLiteralSecrets: %q, value %q", p, s.Verify.HandshakeToken.Value)
	}
	s.Verify.HandshakeToken = Secret{Ref: "env:HOME"}
	if p := ResolveLiteralSecrets(&s); len(p) != 1 || !strings.Contains(p[0], "verify.handshake_token: env: and file:") {
		t.Fatalf("ResolveLiteralSecrets with an env: token: %q", p)
	}
}
