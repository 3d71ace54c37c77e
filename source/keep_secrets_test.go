package source

import (
	"strings"
	"testing"
)

// An update that leaves out a broker sink's password or token keeps the
// stored one while it keeps the section that holds it; an update that
// drops the section drops the secret with it (and is refused where the
// sink needs it).
func TestKeepBrokerSecrets(t *testing.T) {
	m := openMeta(t, t.TempDir())
	defer m.Close()
	p, _ := openStore(t, m, testConfig(t))
	create := `{"name": "brokers", "verify": {"type": "none"}, "trust_url_tenant": true, "sinks": [
		{"id": "k", "type": "kafka", "brokers": ["127.0.0.1:9092"], "topic": "hooks", "sasl": {"mechanism": "plain", "username": "u", "password": "kpw"}},
		{"id": "n", "type": "nats", "url": "nats://127.0.0.1:4222", "stream": "HOOKS", "auth": {"token": "ntok"}}]}`
	if _, err := p.PutSource(SourceWrite{Tenant: "acme", Create: true, Doc: doc(t, create)}); err != nil {
		t.Fatal(err)
	}
	// Another topic, the secrets left out: kept.
	upd, err := p.PutSource(SourceWrite{Tenant: "acme", Doc: doc(t, `{"name": "brokers", "verify": {"type": "none"}, "trust_url_tenant": true, "sinks": [
		{"id": "k", "type": "kafka", "brokers": ["127.0.0.1:9092"], "topic": "hooks2", "sasl": {"mechanism": "plain", "username": "u"}},
		{"id": "n", "type": "nats", "url": "nats://127.0.0.1:4222", "stream": "HOOKS", "auth": {}}]}`)})
	if err != nil {
		t.Fatal(err)
	}
	if k, n := upd.Spec.Sinks[0], upd.Spec.Sinks[1]; k.Topic != "hooks2" || k.SASL.Password.Value != "kpw" || n.Auth.Token.Value != "ntok" {
		t.Fatalf("update kept %+v %+v / %+v", k, k.SASL, n.Auth)
	}
	// A new password replaces the stored one.
	upd, err = p.PutSource(SourceWrite{Tenant: "acme", Doc: doc(t, `{"name": "brokers", "verify": {"type": "none"}, "trust_url_tenant": true, "sinks": [
		{"id": "k", "type": "kafka", "brokers": ["127.0.0.1:9092"], "topic": "hooks2", "sasl": {"mechanism": "plain", "username": "u", "password": "kpw2"}},
		{"id": "n", "type": "nats", "url": "nats://127.0.0.1:4222", "stream": "HOOKS"}]}`)})
	if err != nil {
		t.Fatal(err)
	}
	if k, n := upd.Spec.Sinks[0], upd.Spec.Sinks[1]; k.SASL.Password.Value != "kpw2" || n.Auth != nil {
		t.Fatalf("second update: %+v / %+v", k.SASL, n.Auth)
	}
	// The served spec of the stored source still holds its password
	// after the store sealed its record (no shared section cleared).
	if got := p.Snapshot().Lookup([]byte("brokers")).Spec.Sinks[0].SASL.Password.Value; got != "kpw2" {
		t.Fatalf("served spec's sasl.password %q after the write", got)
	}
}

// A broker's stored password or token is not sent to another host: an
// update that names other brokers (or another NATS server) and leaves the
// secret out is refused naming it; a NATS sink may switch from a token to
// a user and password in one write.
func TestKeepBrokerSecretsOnlyForTheSameBrokers(t *testing.T) {
	m := openMeta(t, t.TempDir())
	defer m.Close()
	p, _ := openStore(t, m, testConfig(t))
	put := func(create bool, sinks string) (*Source, error) {
		return p.PutSource(SourceWrite{Tenant: "acme", Create: create, Doc: doc(t, `{"name": "b2", "verify": {"type": "none"}, "trust_url_tenant": true, "sinks": [`+sinks+`]}`)})
	}
	if _, err := put(true, `{"id": "k", "type": "kafka", "brokers": ["k1:9092", "k2:9092"], "topic": "hooks", "sasl": {"mechanism": "plain", "username": "u", "password": "kpw"}},
		{"id": "n", "type": "nats", "url": "nats://n1:4222", "stream": "HOOKS", "auth": {"token": "ntok"}}`); err != nil {
		t.Fatal(err)
	}
	// The same brokers in another order: kept.
	src, err := put(false, `{"id": "k", "type": "kafka", "brokers": ["k2:9092", "k1:9092"], "topic": "hooks", "sasl": {"mechanism": "plain", "username": "u"}},
		{"id": "n", "type": "nats", "url": "nats://n1:4222", "stream": "HOOKS", "auth": {}}`)
	if err != nil || src.Spec.Sinks[0].SASL.Password.Value != "kpw" || src.Spec.Sinks[1].Auth.Token.Value != "ntok" {
		t.Fatalf("same brokers: %v", err)
	}
	for _, c := range []struct{ sinks, want string }{
		{`{"id": "k", "type": "kafka", "brokers": ["evil:9092"], "topic": "hooks", "sasl": {"mechanism": "plain", "username": "u"}},
		{"id": "n", "type": "nats", "url": "nats://n1:4222", "stream": "HOOKS", "auth": {}}`, "sinks[0].sasl.password: the stored one is kept only while the sink names the same brokers"},
		{`{"id": "k", "type": "kafka", "brokers": ["k1:9092", "k2:9092"], "topic": "hooks", "sasl": {"mechanism": "plain", "username": "u"}},
		{"id": "n", "type": "nats", "url": "nats://evil:4222", "stream": "HOOKS", "auth": {}}`, "sinks[1].auth.token: the stored one is kept only while the sink names the same brokers"},
	} {
		if _, err := put(false, c.sinks); code(err) != CodeInvalid || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v, want %s naming %q", err, CodeInvalid, c.want)
		}
	}
	// Token to user and password in one write: the stored token is not
	// put back beside them.
	src, err = put(false, `{"id": "k", "type": "kafka", "brokers": ["k1:9092", "k2:9092"], "topic": "hooks", "sasl": {"mechanism": "plain", "username": "u"}},
		{"id": "n", "type": "nats", "url": "nats://n1:4222", "stream": "HOOKS", "auth": {"username": "nu", "password": "npw"}}`)
	if err != nil || src.Spec.Sinks[1].Auth.Token.IsSet() || src.Spec.Sinks[1].Auth.Password.Value != "npw" {
		t.Fatalf("token to password: %v %+v", err, src.Spec.Sinks[1].Auth)
	}
}

// A source written through the admin API cannot name the node's files
// (TLS files, a NATS credentials file): refused, each key named.
func TestAPISourceNamesNoNodeFile(t *testing.T) {
	m := openMeta(t, t.TempDir())
	defer m.Close()
	p, _ := openStore(t, m, testConfig(t))
	_, err := p.PutSource(SourceWrite{Tenant: "acme", Create: true, Doc: doc(t, `{"name": "files", "verify": {"type": "none"}, "trust_url_tenant": true, "sinks": [
		{"type": "kafka", "brokers": ["k1:9092"], "topic": "t", "tls": {"ca_file": "/etc/ankusa/ca.pem", "cert_file": "/etc/ankusa/c.pem", "key_file": "/etc/ankusa/c.key"}},
		{"type": "nats", "url": "nats://n1:4222", "stream": "S", "auth": {"creds_file": "/etc/ankusa/ops.creds"}, "tls": {"server_name": "n1"}}]}`)})
	for _, want := range []string{"sinks[0].tls.ca_file: names a file of the node", "sinks[0].tls.cert_file", "sinks[0].tls.key_file", "sinks[1].auth.creds_file"} {
		if code(err) != CodeInvalid || !strings.Contains(err.Error(), want) {
			t.Fatalf("%v, want %s naming %q", err, CodeInvalid, want)
		}
	}
	if _, err := p.PutSource(SourceWrite{Tenant: "acme", Create: true, Doc: doc(t, `{"name": "files", "verify": {"type": "none"}, "trust_url_tenant": true, "sinks": [
		{"type": "nats", "url": "tls://n1:4222", "stream": "S", "tls": {"server_name": "n1"}}]}`)}); err != nil {
		t.Fatalf("tls without files: %v", err)
	}
}
