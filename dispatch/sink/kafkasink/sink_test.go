package kafkasink

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/envelope"
)

func TestEnvelopeRoundTrip(t *testing.T) {
	t.Parallel()
	c := newCluster(t, kfake.SeedTopics(4, "hooks"))
	s := newSink(t, c.ListenAddrs(), config.Sink{Topic: "hooks"})
	if !s.Durable() {
		t.Fatal("Durable() = false")
	}
	e := testEnvelope()
	e.Verification.Flagged = true
	e.RouteParams = append(e.RouteParams, envelope.Param{Key: "region", Value: "eu"})
	before := time.Now().Truncate(time.Millisecond)
	if err := deliver(s, e, 3); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	r := consume(t, c.ListenAddrs(), "hooks", 1)[0]
	if want := e.AppendJSON(nil); !bytes.Equal(r.Value, want) {
		t.Errorf("value:\n got %s\nwant %s", r.Value, want)
	}
	if string(r.Key) != "acme" { // the default key, {tenant_id}
		t.Errorf("key %q, want acme", r.Key)
	}
	if r.Timestamp.Before(before) || r.Timestamp.After(after) {
		t.Errorf("timestamp %v, want the produce time, between %v and %v", r.Timestamp, before, after)
	}
	checkHeaders(t, r, map[string]string{
		HeaderEventID: e.ID.String(), HeaderTenant: "acme", HeaderSource: "stripe", HeaderAttempt: "3",
		HeaderContentType: "application/json", HeaderFlagged: "true",
		HeaderParamPrefix + "app_id": "a1", HeaderParamPrefix + "region": "eu",
	})
	var back envelope.Envelope
	if err := back.UnmarshalJSON(r.Value); err != nil || back.ID != e.ID || !bytes.Equal(back.Body, e.Body) {
		t.Errorf("decoded envelope: %v, id %v body %q", err, back.ID, back.Body)
	}
}

func TestRawRoundTripAndClaims(t *testing.T) {
	t.Parallel()
	c := newCluster(t, kfake.SeedTopics(2, "raw.acme", "env.acme"))
	addrs := c.ListenAddrs()
	raw := newSink(t, addrs, config.Sink{Topic: "raw.{tenant_id}", Key: "{params.app_id}/{tenant_id}", Format: "raw", Compression: "lz4"})

	e := testEnvelope()
	e.Body = []byte{0, 1, 2, 0xff, 'a', '\n'} // not UTF-8: raw is bytes
	e.Headers = []envelope.Header{{Name: "X-Other", Value: "1"}, {Name: "content-type", Value: "application/octet-stream"}}
	noType := testEnvelope()
	noType.Headers, noType.RouteParams, noType.Body = nil, nil, []byte{}
	claim := &envelope.Claim{Store: "packs", Key: "claims/tenant=acme/source=stripe/2026/12/05/p1", Offset: 4096, Length: 3 << 20,
		SHA256: strings.Repeat("ab", 32)}
	byRef := testEnvelope()
	byRef.Body, byRef.BodyClaim = nil, claim
	for _, x := range []*envelope.Envelope{e, noType, byRef} {
		if err := deliver(raw, x, 1); err != nil {
			t.Fatal(err)
		}
	}
	rs := consume(t, addrs, "raw.acme", 3)
	byID := map[string]int{}
	for i, r := range rs {
		byID[headers(t, r)[HeaderEventID]] = i
	}
	r := rs[byID[e.ID.String()]]
	if !bytes.Equal(r.Value, e.Body) || string(r.Key) != "a1/acme" {
		t.Errorf("value %q key %q, want %q a1/acme", r.Value, r.Key, e.Body)
	}
	checkHeaders(t, r, map[string]string{
		HeaderEventID: e.ID.String(), HeaderTenant: "acme", HeaderSource: "stripe", HeaderAttempt: "1",
		HeaderContentType: "application/octet-stream", HeaderParamPrefix + "app_id": "a1",
	})
	r = rs[byID[noType.ID.String()]]
	if r.Value == nil || len(r.Value) != 0 || string(r.Key) != "/acme" {
		t.Errorf("empty body: value %q (nil %v) key %q; want an empty, non-null value", r.Value, r.Value == nil, r.Key)
	}
	checkHeaders(t, r, map[string]string{
		HeaderEventID: noType.ID.String(), HeaderTenant: "acme", HeaderSource: "stripe", HeaderAttempt: "1",
	})
	r = rs[byID[byRef.ID.String()]]
	if r.Value == nil || len(r.Value) != 0 {
		t.Errorf("claimed body: value %q (nil %v), want empty and not null", r.Value, r.Value == nil)
	}
	if got, want := headers(t, r)[HeaderBodyClaim], string(claim.AppendJSON(nil)); got != want {
		t.Errorf("claim header %q, want %q", got, want)
	}
	if back, err := envelope.ParseClaim([]byte(headers(t, r)[HeaderBodyClaim])); err != nil || back != *claim {
		t.Errorf("claim header parses to %+v, %v", back, err)
	}

	// Envelope format writes body_claim itself, and no claim header.
	env := newSink(t, addrs, config.Sink{Topic: "env.acme", Compression: "none"})
	if err := deliver(env, byRef, 2); err != nil {
		t.Fatal(err)
	}
	r = consume(t, addrs, "env.acme", 1)[0]
	if want := byRef.AppendJSON(nil); !bytes.Equal(r.Value, want) || !bytes.Contains(r.Value, []byte(`"body_claim":`)) {
		t.Errorf("value:\n got %s\nwant %s (with body_claim)", r.Value, want)
	}
	if _, ok := headers(t, r)[HeaderBodyClaim]; ok {
		t.Error("envelope format carries the claim header too")
	}
}

func TestCheckRefusals(t *testing.T) {
	t.Parallel()
	good := config.Sink{Type: "kafka", ID: "k1", Brokers: []string{"127.0.0.1:9092"}, Topic: "hooks"}
	if err := Check(good); err != nil {
		t.Fatalf("good spec: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(*config.Sink)
		want string
	}{
		{"no brokers", func(s *config.Sink) { s.Brokers = nil }, "brokers: required"},
		{"broker not host:port", func(s *config.Sink) { s.Brokers = []string{"kafka"} }, "brokers[0]"},
		{"no topic", func(s *config.Sink) { s.Topic = "" }, "topic: required"},
		{"topic template", func(s *config.Sink) { s.Topic = "hooks.{nope}" }, "topic:"},
		{"topic name", func(s *config.Sink) { s.Topic = "hooks/acme" }, "topic: \"hooks/acme\" holds '/'"},
		{"topic too long", func(s *config.Sink) { s.Topic = strings.Repeat("t", 250) }, "Kafka allows 249"},
		{"key template", func(s *config.Sink) { s.Key = "{tenant" }, "key:"},
		{"compression", func(s *config.Sink) { s.Compression = "brotli" }, "compression:"},
		{"format", func(s *config.Sink) { s.Format = "xml" }, "format:"},
		{"sasl mechanism", func(s *config.Sink) {
			s.SASL = &config.SASL{Mechanism: "gssapi", Username: "u", Password: config.Secret{Ref: "env:P", Value: "p"}}
		}, "sasl.mechanism"},
		{"sasl no password", func(s *config.Sink) { s.SASL = &config.SASL{Mechanism: "plain", Username: "u"} }, "sasl.password"},
		{"tls ca file", func(s *config.Sink) { s.TLS = &config.TLS{CAFile: "/nonexistent/ca.pem"} }, "tls.ca_file"},
		{"tls cert without key", func(s *config.Sink) { s.TLS = &config.TLS{CertFile: "/x.pem"} }, "tls: cert_file and key_file"},
		{"a rabbitmq key", func(s *config.Sink) { s.Exchange = "x" }, "exchange"},
		{"a nats key", func(s *config.Sink) { s.Subject = "a.b" }, "subject"},
	} {
		spec := good
		tc.edit(&spec)
		err := Check(spec)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Check = %v, want an error containing %q", tc.name, err, tc.want)
		}
		if _, nerr := New(Options{Spec: spec}); nerr == nil {
			t.Errorf("%s: New accepted what Check refuses", tc.name)
		}
	}
	// A password that resolves to nothing: Check cannot see resolved
	// values (check-config on another node), New refuses it.
	spec := good
	spec.SASL = &config.SASL{Mechanism: "plain", Username: "u", Password: config.Secret{Ref: "env:EMPTY"}}
	if err := Check(spec); err != nil {
		t.Errorf("unresolved password: Check = %v", err)
	}
	if _, err := New(Options{Spec: spec}); err == nil || !strings.Contains(err.Error(), "sasl.password") {
		t.Errorf("empty password: New = %v", err)
	}
}

func TestTopicExpansionRefused(t *testing.T) {
	t.Parallel()
	s := newSink(t, []string{"127.0.0.1:1"}, config.Sink{Topic: "hooks.{params.app_id}"})
	e := testEnvelope()
	e.RouteParams = []envelope.Param{{Key: "app_id", Value: "a/b"}}
	err := deliver(s, e, 1)
	if de := asError(t, err); !de.Permanent || !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "hooks.a/b") {
		t.Fatalf("error %v (permanent %v), want a permanent refusal naming the topic", err, de.Permanent)
	}
}

func TestClosed(t *testing.T) {
	t.Parallel()
	s := newSink(t, []string{"127.0.0.1:1"}, config.Sink{Topic: "hooks"})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	err := deliver(s, testEnvelope(), 1)
	if de := asError(t, err); de.Permanent || !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v, want a retryable ErrClosed", err)
	}
}
