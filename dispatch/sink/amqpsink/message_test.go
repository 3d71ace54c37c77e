package amqpsink

import (
	"strings"
	"testing"
	"time"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
	"github.com/ankusa/ankusa/envelope"
)

func offlineSink(t *testing.T, spec config.Sink) *Sink {
	t.Helper()
	spec.Type, spec.ID = "rabbitmq", "s1"
	if spec.URL == "" {
		spec.URL = "amqp://guest:guest@127.0.0.1:1/"
	}
	s, err := New(Options{Spec: spec, Source: "src", Node: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// Fields AMQP holds in short strings are checked before anything is
// written: a too long one would break the frame stream of the connection.
func TestBuildRefusesLongShortStrings(t *testing.T) {
	long := strings.Repeat("k", 300)
	for _, tc := range []struct {
		name string
		spec config.Sink
		mod  func(e *envelope.Envelope)
		want string
	}{
		{"routing key", config.Sink{RoutingKey: "x.{params.p}"}, func(e *envelope.Envelope) {
			e.RouteParams = []envelope.Param{{Key: "p", Value: long}}
		}, "routing key is 302 bytes"},
		{"raw content type", config.Sink{Format: "raw"}, func(e *envelope.Envelope) {
			e.Headers = []envelope.Header{{Name: "Content-Type", Value: long}}
		}, "Content-Type is 300 bytes"},
		{"param header name", config.Sink{}, func(e *envelope.Envelope) {
			e.RouteParams = []envelope.Param{{Key: long, Value: "v"}}
		}, "header name of 315 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := offlineSink(t, tc.spec)
			e := testEnvelope()
			tc.mod(e)
			err := deliver(s, e, 1)
			if de := dispatch.AsError(err); err == nil || !de.Permanent || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want a permanent error containing %q", err, tc.want)
			}
		})
	}
}

func TestBuildMessage(t *testing.T) {
	s := offlineSink(t, config.Sink{RoutingKey: "{tenant_id}.{event_id}"})
	e := testEnvelope()
	m, err := s.build(&dispatch.Delivery{Envelope: e, Attempt: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer m.release()
	id := e.ID.String()
	if m.routingKey != "acme."+id || m.messageID != id || string(m.pub.Body) != string(e.AppendJSON(nil)) {
		t.Fatalf("key %q id %q body %s", m.routingKey, m.messageID, m.pub.Body)
	}
	if _, ok := m.pub.Headers[HeaderFlagged]; ok {
		t.Error("flagged header on a hook that is not flagged")
	}
	if err := m.pub.Headers.Validate(); err != nil {
		t.Error(err)
	}
}

func TestBackoff(t *testing.T) {
	for n := 0; n < 40; n++ {
		want := min(backoffCap, backoffBase<<min(n, 20))
		for range 100 {
			if d := backoff(n); d < 0 || d >= want {
				t.Fatalf("backoff(%d) = %v, want [0, %v)", n, d, want)
			}
		}
	}
	if backoff(30) < time.Duration(0) {
		t.Fatal("overflow")
	}
}

func TestOptions(t *testing.T) {
	const pw = "pa55word-xyz"
	for _, tc := range []struct {
		spec config.Sink
		want string
	}{
		{config.Sink{URL: "http://u:" + pw + "@h/"}, "is not an AMQP URL"},
		{config.Sink{URL: "amqp://u:" + pw + "@h/%zz"}, "is not an AMQP URL"},
		{config.Sink{URL: "amqp://u:" + pw + "@h/", Format: "xml"}, "format"},
		{config.Sink{URL: "amqp://u:" + pw + "@h/", Channels: 300}, "channels"},
		{config.Sink{URL: "amqp://h/", RoutingKey: "{nope}"}, "routing_key"},
	} {
		tc.spec.Type, tc.spec.ID = "rabbitmq", "s1"
		_, err := New(Options{Spec: tc.spec})
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), pw) {
			t.Errorf("%+v: err = %v, want %q without the password", tc.spec, err, tc.want)
		}
	}
	o := Options{Spec: config.Sink{ID: "s9", URL: "amqp://h/"}, Source: "gh", Node: "node-2"}
	o.EnsureDefaults()
	if o.ConnectionName != "ankusa/node-2/gh/s9" || o.Spec.Format != "envelope" || o.Spec.Channels != 4 || o.Spec.RoutingKey != "ankusa.{source_id}" {
		t.Errorf("defaults: %+v", o)
	}
}

// A hook delivered by reference, format raw: the claim's JSON in the
// x-ankusa-body-claim header and an empty body; format envelope: no
// header (the JSON's body_claim says it).
func TestBuildClaimedMessage(t *testing.T) {
	ref := &envelope.Claim{Store: "packs", Key: "claims/tenant=acme/source=s/2026/12/05/n-1.pack", Length: 9, SHA256: strings.Repeat("0f", 32)}
	for _, format := range []string{"raw", "envelope"} {
		s := offlineSink(t, config.Sink{Format: format})
		e := testEnvelope()
		e.Body, e.BodyClaim = nil, ref
		m, err := s.build(&dispatch.Delivery{Envelope: e, Attempt: 1})
		if err != nil {
			t.Fatal(err)
		}
		h, ok := m.pub.Headers[HeaderBodyClaim]
		if format == "raw" && (h != string(ref.AppendJSON(nil)) || len(m.pub.Body) != 0) {
			t.Errorf("raw: header %v, body %q; want the claim's JSON and no body", h, m.pub.Body)
		}
		if format == "envelope" && (ok || !strings.Contains(string(m.pub.Body), `"body_claim":`)) {
			t.Errorf("envelope: header %v, body %s; want body_claim in the body and no header", h, m.pub.Body)
		}
		if err := m.pub.Headers.Validate(); err != nil {
			t.Error(err)
		}
		m.release()
	}
}
