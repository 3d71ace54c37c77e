package source

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/secrets"
)

// The secrets of sealedSpecJSON, each its own text so that a leak of any
// one of them is seen.
var sealedPlaintexts = map[string]string{
	"verify.secret":          "vsec0-plain-000",
	"verify.secrets[0]":      "vsecA-plain-111",
	"verify.secrets[1]":      "vsecB-plain-222",
	"sinks[0].secret":        "sink0-plain-333",
	"sinks[1].url":           "mqpw-plain-444",
	"sinks[2].sasl.password": "kafkapw-plain-555",
	"sinks[3].auth.token":    "natstok-plain-666",
}

const sealedSpecJSON = `{"name": "%s",
	"verify": {"type": "hmac", "header": "X-Sig", "secret": "vsec0-plain-000", "secrets": ["vsecA-plain-111", "vsecB-plain-222"]},
	"sinks": [
		{"id": "h", "type": "http", "url": "https://example.com/in", "secret": "sink0-plain-333"},
		{"id": "mq", "type": "rabbitmq", "url": "amqp://guest:mqpw-plain-444@127.0.0.1:5672/", "exchange": "hooks", "routing_key": "k"},
		{"id": "k", "type": "kafka", "brokers": ["127.0.0.1:9092"], "topic": "hooks", "sasl": {"mechanism": "scram-sha-512", "username": "u", "password": "kafkapw-plain-555"}},
		{"id": "n", "type": "nats", "url": "nats://127.0.0.1:4222", "stream": "HOOKS", "auth": {"token": "natstok-plain-666"}}]}`

// testKey is a 32-byte key whose bytes are all b.
func testKey(b byte) []byte { return bytes.Repeat([]byte{b}, secrets.KeySize) }

func testKeyring(t *testing.T, kek, previous []byte) *secrets.Keyring {
	t.Helper()
	kr, err := secrets.NewKeyring(kek, previous)
	if err != nil {
		t.Fatal(err)
	}
	return kr
}

// sealedSource is the source name of tenant acme built from sealedSpecJSON,
// as a store holds it (secrets resolved, defaults applied).
func sealedSource(t *testing.T, name string) *Source {
	t.Helper()
	d := doc(t, strings.Replace(sealedSpecJSON, "%s", name, 1))
	spec := d.Spec
	spec.TenantID = "acme"
	if probs := config.ResolveLiteralSecrets(&spec); len(probs) > 0 {
		t.Fatal(probs)
	}
	config.DefaultSource(&spec, 0)
	src := Build(name, spec, 1<<20, false)
	src.Created = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	src.Updated = src.Created.Add(time.Hour)
	return src
}

// editSealed decodes a record, lets edit change its sealed map and
// encodes it again.
func editSealed(t *testing.T, record []byte, edit func(sealed map[string]string)) []byte {
	t.Helper()
	var rec sourceRecord
	if err := json.Unmarshal(record, &rec); err != nil {
		t.Fatal(err)
	}
	edit(rec.Sealed)
	out, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A record sealed under a KEK holds none of the secrets in any common
// encoding, its spec's URL has no password, and it decodes to the exact
// spec it was made of.
func TestSourceRecordSealed(t *testing.T) {
	kr := testKeyring(t, testKey(1), nil)
	src := sealedSource(t, "gh1")
	rec := encodeSourceRecord(src, kr)
	for path, plain := range sealedPlaintexts {
		for enc, form := range map[string]string{
			"raw":       plain,
			"base64":    base64.StdEncoding.EncodeToString([]byte(plain)),
			"base64raw": base64.RawStdEncoding.EncodeToString([]byte(plain)),
			"base64url": base64.RawURLEncoding.EncodeToString([]byte(plain)),
			"hex":       hex.EncodeToString([]byte(plain)),
		} {
			if bytes.Contains(rec, []byte(form)) {
				t.Errorf("the sealed record holds %s's secret (%s form %q): %s", path, enc, form, rec)
			}
		}
	}
	var sr sourceRecord
	if err := json.Unmarshal(rec, &sr); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(sr.Spec, []byte(`"amqp://guest@127.0.0.1:5672/"`)) {
		t.Errorf("the spec's sink URL still has a password, or lost its user: %s", sr.Spec)
	}
	if len(sr.Sealed) != len(sealedPlaintexts) {
		t.Errorf("sealed %v, want the paths of %v", sortedKeys(sr.Sealed), sealedPlaintexts)
	}
	for path := range sealedPlaintexts {
		blob, err := base64.StdEncoding.DecodeString(sr.Sealed[path])
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if id, ok := secrets.KeyIDOf(blob); !ok || id != secrets.KeyID(testKey(1)) {
			t.Errorf("%s: sealed under key id %08x (%v), want secrets.kek's %08x", path, id, ok, secrets.KeyID(testKey(1)))
		}
	}
	// The record must not alter the source it was made of.
	if src.Spec.Verify.Secret.Value != sealedPlaintexts["verify.secret"] || src.Spec.Sinks[1].URL != "amqp://guest:mqpw-plain-444@127.0.0.1:5672/" {
		t.Fatalf("encoding cleared the source's own secrets: %+v", src.Spec)
	}

	back, spec, st, err := decodeSourceRecord("acme", "gh1", rec, 0, kr)
	if err != nil {
		t.Fatal(err)
	}
	if st != (SecretsState{Current: 7}) || st.NeedsRewrap() {
		t.Errorf("state %+v, want 5 current, no rewrap", st)
	}
	if got, want := config.EncodeSource(&spec, true), config.EncodeSource(&src.Spec, true); !bytes.Equal(got, want) {
		t.Errorf("round trip:\n got %s\nwant %s", got, want)
	}
	for path, want := range map[string]string{
		"verify.secret": spec.Verify.Secret.Value, "verify.secrets[0]": spec.Verify.Secrets[0].Value,
		"verify.secrets[1]": spec.Verify.Secrets[1].Value, "sinks[0].secret": spec.Sinks[0].Secret.Value,
	} {
		if want != sealedPlaintexts[path] {
			t.Errorf("%s: opened %q, want %q", path, want, sealedPlaintexts[path])
		}
	}
	if !back.Created.Equal(src.Created) || !back.Updated.Equal(src.Updated) {
		t.Errorf("times %v %v, want %v %v", back.Created, back.Updated, src.Created, src.Updated)
	}
}

// A sealed value that is not where it was sealed (another field, another
// source), that no key opens, or that is damaged, is an error naming the
// source and the field.
func TestSourceRecordSealRefusals(t *testing.T) {
	kr := testKeyring(t, testKey(1), nil)
	rec := encodeSourceRecord(sealedSource(t, "gh1"), kr)
	other := encodeSourceRecord(sealedSource(t, "gh2"), kr)
	var otherRec sourceRecord
	if err := json.Unmarshal(other, &otherRec); err != nil {
		t.Fatal(err)
	}
	elsewhere := base64.StdEncoding.EncodeToString(kr.Seal([]byte("x"), secrets.AD{Tenant: "acme", Source: "gh1", Field: "sinks[5].secret"}))
	for _, c := range []struct {
		name   string
		record []byte
		kr     *secrets.Keyring
		want   []string
	}{
		{"swapped fields", editSealed(t, rec, func(s map[string]string) {
			s["verify.secret"], s["sinks[0].secret"] = s["sinks[0].secret"], s["verify.secret"]
		}), kr, []string{`stored source "gh1" of tenant "acme": field `, "secrets:"}},
		{"from another source", editSealed(t, rec, func(s map[string]string) {
			s["verify.secrets[1]"] = otherRec.Sealed["verify.secrets[1]"]
		}), kr, []string{`stored source "gh1" of tenant "acme": field verify.secrets[1]: secrets:`}},
		{"other key", rec, testKeyring(t, testKey(2), nil), []string{`stored source "gh1" of tenant "acme": field `, "secrets:"}},
		{"no kek", rec, nil, []string{`stored source "gh1" of tenant "acme": field `, "secrets.kek is not set"}},
		{"no kek, empty keyring", rec, testKeyring(t, nil, nil), []string{"secrets.kek is not set"}},
		{"damaged base64", editSealed(t, rec, func(s map[string]string) { s["sinks[0].secret"] = "!!not*base64" }), kr,
			[]string{`stored source "gh1" of tenant "acme": field sinks[0].secret: `, "base64"}},
		{"no such element", editSealed(t, rec, func(s map[string]string) { s["sinks[5].secret"] = elsewhere }), kr,
			[]string{`stored source "gh1" of tenant "acme": field sinks[5].secret: `}},
		{"no such field", editSealed(t, rec, func(s map[string]string) {
			s["verify.bogus"] = base64.StdEncoding.EncodeToString(kr.Seal([]byte("x"), secrets.AD{Tenant: "acme", Source: "gh1", Field: "verify.bogus"}))
		}), kr, []string{`field verify.bogus: no such secret field`}},
		{"another tenant's name", rec, kr, nil}, // checked below: the tenant is bound
	} {
		tenant := "acme"
		if c.want == nil {
			tenant, c.want = "globex", []string{`stored source "gh1" of tenant "globex"`}
		}
		_, _, _, err := decodeSourceRecord(tenant, "gh1", c.record, 0, c.kr)
		if err == nil {
			t.Errorf("%s: decoded, want an error", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v, want it to say %q", c.name, err, w)
			}
		}
	}
}

// Records under kek_previous, or in clear, decode and are counted as
// needing a rewrap.
func TestSourceRecordSecretsState(t *testing.T) {
	oldKR := testKeyring(t, testKey(1), nil)
	rotated := testKeyring(t, testKey(2), testKey(1))
	src := sealedSource(t, "gh1")
	want := config.EncodeSource(&src.Spec, true)
	for _, c := range []struct {
		name   string
		record []byte
		kr     *secrets.Keyring
		st     SecretsState
		rewrap bool
	}{
		{"previous key", encodeSourceRecord(src, oldKR), rotated, SecretsState{Previous: 7}, true},
		{"current key", encodeSourceRecord(src, rotated), rotated, SecretsState{Current: 7}, false},
		{"clear, kek set", encodeSourceRecord(src, nil), rotated, SecretsState{Clear: 7}, true},
		{"clear, no kek", encodeSourceRecord(src, nil), nil, SecretsState{Clear: 7}, true},
	} {
		_, spec, st, err := decodeSourceRecord("acme", "gh1", c.record, 0, c.kr)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if st != c.st || st.NeedsRewrap() != c.rewrap {
			t.Errorf("%s: %+v (rewrap %v), want %+v (rewrap %v)", c.name, st, st.NeedsRewrap(), c.st, c.rewrap)
		}
		if got := config.EncodeSource(&spec, true); !bytes.Equal(got, want) {
			t.Errorf("%s: spec\n got %s\nwant %s", c.name, got, want)
		}
	}
	// Without a KEK, the record keeps its secrets in clear (as before).
	if clear := encodeSourceRecord(src, nil); !bytes.Contains(clear, []byte("mqpw-plain-444")) || bytes.Contains(clear, []byte(`"sealed"`)) {
		t.Errorf("a record without a KEK: %s", clear)
	}
}

// An update that gives a sink URL back with its password redacted (as an
// answer shows it) keeps the stored password; a new password replaces it;
// a redacted password in a URL that is not the stored one (another path,
// host or user, or none stored) is refused naming the field: the stored
// password never goes to another place.
func TestKeepSecretsRedactedURLPassword(t *testing.T) {
	m := openMeta(t, t.TempDir())
	defer m.Close()
	cfg := testConfig(t)
	kr := testKeyring(t, testKey(1), nil)
	p, _, err := OpenPersistent(PersistentOptions{
		Config: cfg, Backend: MetaBackend{m}, Keyring: kr,
		Context: config.SourceContext{Resolver: cfg.RouteResolver.Type, WALType: cfg.WAL.Type, DedupeScope: cfg.Dedupe.Scope},
	})
	if err != nil {
		t.Fatal(err)
	}
	body := func(url string) string {
		return `{"name": "mq1", "verify": {"type": "github", "secret": "gh"}, "sinks": [{"id": "mq", "type": "rabbitmq", "url": "` + url + `", "exchange": "hooks", "routing_key": "k"}]}`
	}
	if _, err := p.PutSource(SourceWrite{Tenant: "acme", Create: true, Doc: doc(t, body("amqp://guest:first-pw@127.0.0.1:5672/"))}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"amqp://guest:redacted@127.0.0.1:5672/other", "amqp://guest:redacted@evil.example:5672/", "amqp://admin:redacted@127.0.0.1:5672/"} {
		_, err := p.PutSource(SourceWrite{Tenant: "acme", Doc: doc(t, body(bad))})
		var se *Error
		if !errors.As(err, &se) || se.Code != CodeInvalid || !strings.Contains(se.Message, "sinks[0].url") {
			t.Errorf("PUT %s: %v, want invalid_source naming sinks[0].url", bad, err)
		}
	}
	for _, c := range []struct{ put, want string }{
		{"amqp://guest:redacted@127.0.0.1:5672/", "amqp://guest:first-pw@127.0.0.1:5672/"},
		{"amqp://guest:second-pw@127.0.0.1:5672/other", "amqp://guest:second-pw@127.0.0.1:5672/other"},
		{"amqp://guest:redacted@127.0.0.1:5672/other", "amqp://guest:second-pw@127.0.0.1:5672/other"},
	} {
		src, err := p.PutSource(SourceWrite{Tenant: "acme", Doc: doc(t, body(c.put))})
		if err != nil {
			t.Fatalf("PUT %s: %v", c.put, err)
		}
		if got := src.Spec.Sinks[0].URL; got != c.want {
			t.Errorf("PUT %s: stored %s, want %s", c.put, got, c.want)
		}
		// What the meta store holds opens to the same URL, sealed.
		var stored []byte
		if err := m.Sources(func(tenant, name string, r []byte) error {
			if name == "mq1" {
				stored = append([]byte(nil), r...)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(stored, []byte("-pw")) {
			t.Errorf("PUT %s: the record holds the password in clear: %s", c.put, stored)
		}
		_, spec, _, err := decodeSourceRecord("acme", "mq1", stored, cfg.Dedupe.TTL, kr)
		if err != nil || spec.Sinks[0].URL != c.want {
			t.Errorf("PUT %s: the record opens to %q (%v), want %s", c.put, spec.Sinks[0].URL, err, c.want)
		}
	}
}
