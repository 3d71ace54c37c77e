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
