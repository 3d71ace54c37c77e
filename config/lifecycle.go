package config

import (
	"net/url"
	"slices"
	"time"
)

// DefaultLifecycleRetain is how long the outbox keeps a lifecycle event
// (lifecycle.retain) when the config does not say.
const DefaultLifecycleRetain = 30 * 24 * time.Hour

// Lifecycle is where lifecycle events go (lifecycle.sink: a sink spec of
// a type sources use; none: the events stay in the outbox for replay)
// and how long the outbox keeps them (lifecycle.retain).
type Lifecycle struct {
	Sink   *Sink    `yaml:"sink"`
	Retain Duration `yaml:"retain"`
	// unused are the sink keys the config set that the publisher has no
	// use for (lifecycleSinkKeys), found before defaults fill them.
	unused []int
}

// applyDefaults fills retain and the sink's unset keys. The publisher
// sends each CloudEvent as it is, so the format is raw for every type.
func (l *Lifecycle) applyDefaults() {
	setDur(&l.Retain, DefaultLifecycleRetain)
	if l.Sink != nil {
		l.unused = l.unused[:0]
		for i, k := range lifecycleSinkKeys {
			if k.set(l.Sink) {
				l.unused = append(l.unused, i)
			}
		}
		if l.Sink.Format == "" {
			l.Sink.Format = "raw"
		}
		ApplySinkDefaults(l.Sink)
	}
}

// lifecycleSinkKeys are the sink keys the publisher has no use for: it
// sends one event at a time, in order, and never gives one up.
var lifecycleSinkKeys = []struct {
	key, why string
	set      func(*Sink) bool
}{
	{"id", "the lifecycle sink is one sink, it needs no id", func(s *Sink) bool { return s.ID != "" }},
	{"max_attempts", "the publisher never gives up an event (it retries until the sink takes it)", func(s *Sink) bool { return s.MaxAttempts != 0 }},
	{"max_age", "the publisher never gives up an event (it retries until the sink takes it)", func(s *Sink) bool { return s.MaxAge != 0 }},
	{"concurrency", "the publisher sends one event at a time, in order", func(s *Sink) bool { return s.Concurrency != 0 }},
	{"tenant_concurrency", "the publisher sends one event at a time, in order", func(s *Sink) bool { return s.TenantConcurrency != 0 }},
	{"claim", "an event is small and sent whole", func(s *Sink) bool { return s.Claim != nil }},
	{"filter", "the publisher sends every lifecycle event; a filter chooses a source's hooks", func(s *Sink) bool { return s.Filter != "" }},
	{"channels", "the publisher sends one event at a time, in order, on one channel", func(s *Sink) bool { return s.Channels != 0 && s.Type == "rabbitmq" }},
}

// validateLifecycle checks lifecycle.retain and the lifecycle sink by the
// rules of a source's sink (the same messages, under lifecycle.sink),
// refusing the keys the publisher would leave without effect; check is
// ValidateOptions.CheckSink (the sink's own parser), nil to skip it.
func validateLifecycle(p *Problems, l *Lifecycle, opts ValidateOptions) {
	if l.Retain < Duration(time.Minute) {
		p.add("lifecycle.retain: %s must be at least 1m (how long the outbox keeps an event; default %s)", time.Duration(l.Retain), DefaultLifecycleRetain)
	}
	sk := l.Sink
	if sk == nil {
		return
	}
	if sk.Type == "file" {
		p.add("lifecycle.sink.type: file; the file sink writes hooks' envelopes, the publisher sends CloudEvents: use %s", joinAnd(slices.DeleteFunc(slices.Clone(SinkTypes), func(t string) bool { return t == "file" })))
		return
	}
	known := len(*p)
	p.under("lifecycle.sink", sinkProblems(sk, true))
	for _, i := range l.unused {
		k := lifecycleSinkKeys[i]
		p.add("lifecycle.sink.%s: not a key of the lifecycle sink: %s", k.key, k.why)
	}
	// A format sinks know that is not raw; one they do not know is named
	// by the sink's rules above. Either way beside every other problem.
	if sk.Format != "raw" && slices.Contains(SinkFormats, sk.Format) {
		p.add("lifecycle.sink.format: %q; the publisher sends each event as a CloudEvents JSON document (raw), leave format out", sk.Format)
	}
	if u, err := url.Parse(sk.URL); err == nil && sk.Type == "http" && !sk.AllowPrivate && opts.RefusedTarget != nil {
		if reason := opts.RefusedTarget(u.Hostname()); reason != "" {
			p.add("lifecycle.sink.url: %q: its host is %s, which the http sink refuses (its SSRF guard); set lifecycle.sink.allow_private: true to send events there", sk.URL, reason)
		}
	}
	if opts.CheckSink != nil && len(*p) == known && !(sk.Secret.IsSet() && sk.Secret.Value == "") {
		p.stage("lifecycle.sink", opts.CheckSink(*sk))
	}
}
