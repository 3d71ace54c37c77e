package config

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Sink types, and which of them are durable: a durable sink's ok means the
// hook is safe at the target (the RabbitMQ sink waits for the publisher
// confirm), which is what wal.type: none needs.
var (
	SinkTypes        = []string{"http", "rabbitmq"}
	DurableSinkTypes = []string{"rabbitmq"}
	SinkFormats      = []string{"raw", "envelope"}
)

// Sink defaults.
const (
	DefaultSinkConnectTimeout = 5 * time.Second
	DefaultSinkTimeout        = 10 * time.Second
	DefaultSinkMaxAttempts    = 12
	DefaultSinkMaxAge         = 72 * time.Hour
	DefaultSinkRetryBase      = time.Second
	DefaultSinkRetryMax       = 10 * time.Minute
	DefaultSinkConcurrency    = 32
	DefaultSinkChannels       = 4
	DefaultRoutingKey         = "ankusa.{source_id}"
	// MaxExchangeBytes is the longest exchange name AMQP carries.
	MaxExchangeBytes = 255
)

// Durable reports whether the sink's ok means durable.
func (s *Sink) Durable() bool { return slices.Contains(DurableSinkTypes, s.Type) }

// SinkID derives a sink's default id from what names its target, so the id
// stays when other sinks of the source are added, removed or reordered.
func SinkID(s *Sink) string {
	h := sha256.Sum256([]byte(s.Type + "\x00" + s.URL + "\x00" + s.Exchange + "\x00" + s.RoutingKey))
	return s.Type + "-" + hex.EncodeToString(h[:4])
}

// applySinkDefaults fills a source's sinks' unset fields, ids included.
// Two sinks with the same derived id (the same target twice) get -2, -3...
func applySinkDefaults(sinks []Sink) {
	seen := map[string]int{}
	for i := range sinks {
		sk := &sinks[i]
		if sk.ID == "" {
			id := SinkID(sk)
			seen[id]++
			if n := seen[id]; n > 1 {
				id = fmt.Sprintf("%s-%d", id, n)
			}
			sk.ID = id
		}
		ApplySinkDefaults(sk)
	}
}

// ApplySinkDefaults fills one sink spec's unset keys, all but its id (which
// applySinkDefaults derives across a source's sinks). Loading applies it;
// the sinks' constructors apply it too, for a spec built in Go.
func ApplySinkDefaults(sk *Sink) {
	if sk.Format == "" {
		sk.Format = "raw"
		if sk.Type == "rabbitmq" {
			sk.Format = "envelope"
		}
	}
	setDur(&sk.ConnectTimeout, DefaultSinkConnectTimeout)
	setDur(&sk.Timeout, DefaultSinkTimeout)
	setDur(&sk.MaxAge, DefaultSinkMaxAge)
	setDur(&sk.RetryBase, DefaultSinkRetryBase)
	setDur(&sk.RetryMax, DefaultSinkRetryMax)
	if sk.MaxAttempts == 0 {
		sk.MaxAttempts = DefaultSinkMaxAttempts
	}
	if sk.Concurrency == 0 {
		sk.Concurrency = DefaultSinkConcurrency
	}
	if sk.TenantConcurrency == 0 {
		sk.TenantConcurrency = max(1, sk.Concurrency/4)
	}
	if sk.Type == "rabbitmq" {
		if sk.RoutingKey == "" {
			sk.RoutingKey = DefaultRoutingKey
		}
		if sk.Channels == 0 {
			sk.Channels = DefaultSinkChannels
		}
	}
}

// validateSinks checks a source's sinks; at is "sources.<name>".
func validateSinks(p *Problems, at string, sinks []Sink, ctx SourceContext) {
	ids := map[string]bool{}
	for i := range sinks {
		sk := &sinks[i]
		sp := fmt.Sprintf("%s.sinks[%d]", at, i)
		if !NameRE.MatchString(sk.ID) {
			p.add("%s.id: %q must match %s", sp, sk.ID, NameRE)
		} else if ids[sk.ID] {
			p.add("%s.id: %q is used by another sink of the source; sink ids must be unique within a source", sp, sk.ID)
		}
		ids[sk.ID] = true
		p.under(sp, sinkProblems(sk, true))
		if ctx.CheckSink != nil && !(sk.Secret.IsSet() && sk.Secret.Value == "") {
			p.stage(sp, ctx.CheckSink(*sk))
		}
	}
}

// CheckSink returns the problems of one sink spec, its defaults applied
// (ApplySinkDefaults), each naming its key relative to the sink
// ("format: ..."). It holds every rule of a spec but the shape of the url,
// which each sink's own parser checks when the sink is built (the file and
// the admin API check it too, through ValidateSource): the sinks'
// constructors call it, so that a spec is refused by the same rules
// whether it comes from the file, the admin API or Go.
func CheckSink(sk *Sink) Problems { return sinkProblems(sk, false) }

// sinkProblems is CheckSink, with the url's shape when urlShape is set.
func sinkProblems(sk *Sink, urlShape bool) Problems {
	var p Problems
	switch sk.Type {
	case "http":
		checkHTTPSink(&p, sk, urlShape)
	case "rabbitmq":
		checkAMQPSink(&p, sk, urlShape)
	default:
		p.add("type: %q must be one of %v", sk.Type, SinkTypes)
		return p
	}
	checkSinkDelivery(&p, sk)
	return p
}

// checkSinkDelivery holds the rules every sink type shares: the body
// format and how the dispatcher delivers (attempts, timeouts, backoff,
// concurrency).
func checkSinkDelivery(p *Problems, sk *Sink) {
	if !slices.Contains(SinkFormats, sk.Format) {
		p.add("format: %q must be raw or envelope", sk.Format)
	}
	if sk.MaxAttempts < 1 {
		p.add("max_attempts: %d must be at least 1", sk.MaxAttempts)
	}
	if sk.Concurrency < 1 || sk.Concurrency > 4096 {
		p.add("concurrency: %d must be between 1 and 4096", sk.Concurrency)
	}
	if sk.TenantConcurrency < 1 || sk.TenantConcurrency > sk.Concurrency {
		p.add("tenant_concurrency: %d must be between 1 and concurrency (%d)", sk.TenantConcurrency, sk.Concurrency)
	}
	for _, d := range []struct {
		key string
		v   Duration
		min time.Duration
	}{{"connect_timeout", sk.ConnectTimeout, time.Millisecond}, {"timeout", sk.Timeout, time.Millisecond},
		{"max_age", sk.MaxAge, time.Second}, {"retry_base", sk.RetryBase, time.Millisecond}, {"retry_max", sk.RetryMax, time.Millisecond}} {
		if time.Duration(d.v) < d.min {
			p.add("%s: %v must be at least %v", d.key, time.Duration(d.v), d.min)
		}
	}
	if sk.RetryMax < sk.RetryBase {
		p.add("retry_max: %v must not be below retry_base (%v)", time.Duration(sk.RetryMax), time.Duration(sk.RetryBase))
	}
	if sk.Claim != nil {
		p.add("claim: claim stores are not available in this build yet")
	}
}

func checkHTTPSink(p *Problems, sk *Sink, urlShape bool) {
	if sk.URL == "" {
		p.add("url: required for an http sink")
	} else if urlShape {
		checkHTTPURL(p, sk.URL)
	}
	for name, v := range sk.Headers {
		if !validHeaderName(name) {
			p.add("headers: %q is not a valid header name", name)
		}
		if _, err := ParseTemplate(v); err != nil {
			p.add("headers.%s: %v", name, err)
		}
	}
	if sk.Secret.Value != "" {
		if _, err := ParseTemplate(sk.Secret.Value); err != nil {
			p.add("secret: %v", err)
		}
	}
	for _, k := range []struct {
		key string
		set bool
	}{{"exchange", sk.Exchange != ""}, {"routing_key", sk.RoutingKey != ""}, {"channels", sk.Channels != 0}} {
		if k.set {
			p.add("%s: is a rabbitmq sink key; this sink is http", k.key)
		}
	}
}

// checkHTTPURL checks an http sink's url template, with its fields filled
// in.
func checkHTTPURL(p *Problems, raw string) {
	t, err := ParseTemplate(raw)
	if err != nil {
		p.add("url: %v", err)
		return
	}
	u, err := url.Parse(strings.NewReplacer("{", "", "}", "").Replace(t.String()))
	switch {
	case err != nil:
		p.add("url: %q is not a URL: %v", raw, err)
	case u.Scheme != "http" && u.Scheme != "https":
		p.add("url: %q must be http:// or https://", raw)
	case u.Host == "":
		p.add("url: %q has no host", raw)
	}
}

func checkAMQPSink(p *Problems, sk *Sink, urlShape bool) {
	if sk.URL == "" {
		p.add("url: required for a rabbitmq sink")
	} else if urlShape {
		if u, err := url.Parse(sk.URL); err != nil || (u.Scheme != "amqp" && u.Scheme != "amqps") || u.Host == "" {
			p.add("url: %q must be amqp://user:pass@host:port/vhost or amqps://...", redactURL(sk.URL))
		}
	}
	if _, err := ParseTemplate(sk.RoutingKey); err != nil {
		p.add("routing_key: %v", err)
	}
	if sk.Channels < 1 || sk.Channels > 256 {
		p.add("channels: %d must be between 1 and 256", sk.Channels)
	}
	if len(sk.Exchange) > MaxExchangeBytes {
		p.add("exchange: %d bytes, AMQP allows %d", len(sk.Exchange), MaxExchangeBytes)
	}
	for _, k := range []struct {
		key string
		set bool
	}{{"headers", len(sk.Headers) > 0}, {"secret", sk.Secret.IsSet()}, {"allow_private", sk.AllowPrivate}} {
		if k.set {
			p.add("%s: is an http sink key; this sink is rabbitmq", k.key)
		}
	}
}

// redactURL hides a URL's password in messages.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("()<>@,;:\\\"/[]?={}", c) >= 0 {
			return false
		}
	}
	return true
}
