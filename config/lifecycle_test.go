package config

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// check-config refuses a lifecycle sink that would fail at runtime, or
// that sets a key the publisher would leave without effect, naming the
// key under lifecycle.sink (issue 17, acceptance 5); every problem at
// once.
func TestLifecycleRefused(t *testing.T) {
	const good = "type: http, url: 'https://x.example/e'"
	for _, c := range []struct {
		name, yaml string
		want       []string
	}{
		{"url not http", "lifecycle: {sink: {type: http, url: 'ftp://x.example/e'}}",
			[]string{`lifecycle.sink.url: "ftp://x.example/e" must be http:// or https://`}},
		{"url without a scheme", "lifecycle: {sink: {type: http, url: u}}",
			[]string{`lifecycle.sink.url: "u" must be http:// or https://`}},
		{"url that does not parse", "lifecycle: {sink: {type: http, url: 'http://[::1'}}",
			[]string{`lifecycle.sink.url: "http://[::1" is not a URL: parse "http://[::1": missing ']' in host`}},
		{"url missing", "lifecycle: {sink: {type: http}}",
			[]string{"lifecycle.sink.url: required for an http sink"}},
		{"unknown type", "lifecycle: {sink: {type: kinesis, url: 'https://x.example/e'}}",
			[]string{`lifecycle.sink.type: "kinesis" must be one of [http rabbitmq kafka nats file]`}},
		{"no type", "lifecycle: {sink: {url: 'https://x.example/e'}}",
			[]string{`lifecycle.sink.type: "" must be one of [http rabbitmq kafka nats file]`}},
		{"rabbitmq with an http url", "lifecycle: {sink: {type: rabbitmq, url: 'http://x.example/', exchange: events}}",
			[]string{`lifecycle.sink.url: "http://x.example/" must be amqp://user:pass@host:port/vhost or amqps://...`}},
		{"rabbitmq without a url", "lifecycle: {sink: {type: rabbitmq, exchange: events}}",
			[]string{"lifecycle.sink.url: required for a rabbitmq sink"}},
		{"rabbitmq with an exchange AMQP cannot carry", "lifecycle: {sink: {type: rabbitmq, url: 'amqp://guest:guest@h/', exchange: " + strings.Repeat("x", 256) + "}}",
			[]string{"lifecycle.sink.exchange: 256 bytes, AMQP allows 255"}},
		{"rabbitmq with http keys", "lifecycle: {sink: {type: rabbitmq, url: 'amqp://guest:guest@h/', secret: s, headers: {X-A: b}}}",
			[]string{"lifecycle.sink.headers: is a key of http sinks; this sink is rabbitmq", "lifecycle.sink.secret: is a key of http sinks; this sink is rabbitmq"}},
		{"http with rabbitmq keys", "lifecycle: {sink: {" + good + ", exchange: x}}",
			[]string{"lifecycle.sink.exchange: is a key of rabbitmq sinks; this sink is http"}},
		{"format envelope", "lifecycle: {sink: {" + good + ", format: envelope}}",
			[]string{`lifecycle.sink.format: "envelope"; the publisher sends each event as a CloudEvents JSON document (raw), leave format out`}},
		{"format unknown", "lifecycle: {sink: {" + good + ", format: bogus}}",
			[]string{`lifecycle.sink.format: "bogus" must be raw or envelope`}},
		{"max_attempts", "lifecycle: {sink: {" + good + ", max_attempts: 3}}",
			[]string{"lifecycle.sink.max_attempts: not a key of the lifecycle sink: the publisher never gives up an event (it retries until the sink takes it)"}},
		{"max_age", "lifecycle: {sink: {" + good + ", max_age: 1h}}",
			[]string{"lifecycle.sink.max_age: not a key of the lifecycle sink: the publisher never gives up an event (it retries until the sink takes it)"}},
		{"concurrency", "lifecycle: {sink: {" + good + ", concurrency: 2}}",
			[]string{"lifecycle.sink.concurrency: not a key of the lifecycle sink: the publisher sends one event at a time, in order"}},
		{"tenant_concurrency", "lifecycle: {sink: {" + good + ", tenant_concurrency: 1}}",
			[]string{"lifecycle.sink.tenant_concurrency: not a key of the lifecycle sink: the publisher sends one event at a time, in order"}},
		{"id", "lifecycle: {sink: {" + good + ", id: a}}",
			[]string{"lifecycle.sink.id: not a key of the lifecycle sink: the lifecycle sink is one sink, it needs no id"}},
		{"claim", "lifecycle: {sink: {" + good + ", claim: {store: a}}}",
			[]string{"lifecycle.sink.claim: not a key of the lifecycle sink: an event is small and sent whole"}},
		{"channels of a rabbitmq sink", "lifecycle: {sink: {type: rabbitmq, url: 'amqp://guest:guest@127.0.0.1:5672/', channels: 2}}",
			[]string{"lifecycle.sink.channels: not a key of the lifecycle sink: the publisher sends one event at a time, in order, on one channel"}},
		{"retain below a minute", "lifecycle: {sink: {" + good + "}, retain: 59s}",
			[]string{"lifecycle.retain: 59s must be at least 1m (how long the outbox keeps an event; default 720h0m0s)"}},
		{"retain below a minute without a sink", "lifecycle: {retain: 1s}",
			[]string{"lifecycle.retain: 1s must be at least 1m (how long the outbox keeps an event; default 720h0m0s)"}},
		{"retain that does not parse", "lifecycle: {retain: soon}",
			[]string{`lifecycle.retain: invalid duration "soon": want a Go duration such as 250ms or 72h`}},
		{"unknown key under lifecycle", "lifecycle: {sink: {" + good + "}, retian: 1h}",
			[]string{"lifecycle.retian: unknown key"}},
		{"unknown key under lifecycle.sink", "lifecycle: {sink: {type: http, ur: 'https://x.example/e'}}",
			[]string{"lifecycle.sink.ur: unknown key", "lifecycle.sink.url: required for an http sink"}},
		{"every problem at once", "lifecycle: {sink: {type: http, url: u, format: envelope, max_attempts: 3, timeout: 0s}, retain: 1s}",
			[]string{
				"lifecycle.retain: 1s must be at least 1m (how long the outbox keeps an event; default 720h0m0s)",
				`lifecycle.sink.url: "u" must be http:// or https://`,
				"lifecycle.sink.max_attempts: not a key of the lifecycle sink: the publisher never gives up an event (it retries until the sink takes it)",
				`lifecycle.sink.format: "envelope"; the publisher sends each event as a CloudEvents JSON document (raw), leave format out`,
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := problemsOf(t, c.yaml, ValidateOptions{})
			if !slices.Equal(got, c.want) {
				t.Errorf("%s:\n got  %q\n want %q", c.yaml, got, c.want)
			}
		})
	}
}

// A good lifecycle sink of either type loads, with the defaults filled in
// as for a source's sink, format raw and retain 30 days; without a sink
// the outbox is still bounded by retain.
func TestLifecycleAccepted(t *testing.T) {
	cfg := mustLoad(t, "lifecycle: {sink: {type: http, url: 'https://x.example/e', secret: whsec, headers: {X-Env: prod}}}", ValidateOptions{})
	l := cfg.Lifecycle
	if l.Sink == nil || l.Sink.Type != "http" || l.Sink.URL != "https://x.example/e" || l.Sink.Secret.Value != "whsec" || l.Sink.Headers["X-Env"] != "prod" {
		t.Fatalf("http lifecycle sink %+v", l.Sink)
	}
	if time.Duration(l.Retain) != 720*time.Hour || l.Sink.Format != "raw" {
		t.Errorf("retain %v, format %q; want 720h and raw", time.Duration(l.Retain), l.Sink.Format)
	}
	if time.Duration(l.Sink.Timeout) != DefaultSinkTimeout || time.Duration(l.Sink.ConnectTimeout) != DefaultSinkConnectTimeout ||
		time.Duration(l.Sink.RetryBase) != DefaultSinkRetryBase || time.Duration(l.Sink.RetryMax) != DefaultSinkRetryMax {
		t.Errorf("http lifecycle sink's delivery defaults %+v, want a source sink's", l.Sink)
	}

	cfg = mustLoad(t, "lifecycle: {sink: {type: rabbitmq, url: 'amqp://guest:guest@127.0.0.1:5672/', exchange: ankusa.lifecycle}, retain: 1m}", ValidateOptions{})
	l = cfg.Lifecycle
	if l.Sink == nil || l.Sink.Type != "rabbitmq" || l.Sink.Exchange != "ankusa.lifecycle" || l.Sink.Format != "raw" || time.Duration(l.Retain) != time.Minute {
		t.Fatalf("rabbitmq lifecycle sink %+v, retain %v", l.Sink, time.Duration(l.Retain))
	}
	if l.Sink.RoutingKey != DefaultRoutingKey || l.Sink.Channels < 1 {
		t.Errorf("rabbitmq lifecycle sink's defaults: routing key %q, channels %d", l.Sink.RoutingKey, l.Sink.Channels)
	}
	// The default exchange is a rabbitmq sink's as for a source's: an
	// unroutable publish comes back and is retried, it is not lost.
	cfg = mustLoad(t, "lifecycle: {sink: {type: rabbitmq, url: 'amqp://guest:guest@127.0.0.1:5672/', format: raw}}", ValidateOptions{})
	if cfg.Lifecycle.Sink.Exchange != "" {
		t.Errorf("exchange %q", cfg.Lifecycle.Sink.Exchange)
	}

	for _, yaml := range []string{"", "lifecycle: {}", "lifecycle: {retain: 24h}"} {
		cfg := mustLoad(t, yaml, ValidateOptions{})
		want := 720 * time.Hour
		if yaml == "lifecycle: {retain: 24h}" {
			want = 24 * time.Hour
		}
		if cfg.Lifecycle.Sink != nil || time.Duration(cfg.Lifecycle.Retain) != want {
			t.Errorf("%q: sink %+v, retain %v; want none and %v", yaml, cfg.Lifecycle.Sink, time.Duration(cfg.Lifecycle.Retain), want)
		}
	}
}

// The lifecycle sink goes through the sink's own parser (CheckSink) as a
// source's does, its problems under lifecycle.sink; not when the spec has
// problems of its own already, nor with a secret that did not resolve.
func TestLifecycleCheckSink(t *testing.T) {
	var checked []Sink
	opts := ValidateOptions{CheckSink: func(s Sink) error {
		checked = append(checked, s)
		if s.Type == "rabbitmq" {
			return Problems{"url: the client refuses it"}
		}
		return nil
	}}
	if probs := problemsOf(t, "lifecycle: {sink: {type: http, url: 'https://x.example/e'}}", opts); len(probs) != 0 || len(checked) != 1 || checked[0].Format != "raw" {
		t.Fatalf("a good http sink: %q, checked %+v", probs, checked)
	}
	probs := problemsOf(t, "lifecycle: {sink: {type: rabbitmq, url: 'amqp://guest:guest@h/'}}", opts)
	if want := []string{"lifecycle.sink.url: the client refuses it"}; !slices.Equal(probs, want) {
		t.Errorf("the parser's problem: %q, want %q", probs, want)
	}
	checked = nil
	problemsOf(t, "lifecycle: {sink: {type: http, url: u}}", opts)
	problemsOf(t, "lifecycle: {sink: {type: http, url: 'https://x.example/e', max_attempts: 2}}", opts)
	if len(checked) != 0 {
		t.Errorf("the parser saw specs with problems of their own: %+v", checked)
	}
}
