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
}

// validateSinks checks a source's sinks; at is "sources.<name>".
func validateSinks(p *Problems, at string, sinks []Sink) {
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
		switch sk.Type {
		case "http":
			validateHTTPSink(p, sp, sk)
		case "rabbitmq":
			validateAMQPSink(p, sp, sk)
		default:
			p.add("%s.type: %q must be one of %v", sp, sk.Type, SinkTypes)
			continue
		}
		if !slices.Contains(SinkFormats, sk.Format) {
			p.add("%s.format: %q must be raw or envelope", sp, sk.Format)
		}
		if sk.MaxAttempts < 1 {
			p.add("%s.max_attempts: %d must be at least 1", sp, sk.MaxAttempts)
		}
		if sk.Concurrency < 1 || sk.Concurrency > 4096 {
			p.add("%s.concurrency: %d must be between 1 and 4096", sp, sk.Concurrency)
		}
		if sk.TenantConcurrency < 1 || sk.TenantConcurrency > sk.Concurrency {
			p.add("%s.tenant_concurrency: %d must be between 1 and concurrency (%d)", sp, sk.TenantConcurrency, sk.Concurrency)
		}
		for _, d := range []struct {
			key string
			v   Duration
			min time.Duration
		}{{"connect_timeout", sk.ConnectTimeout, time.Millisecond}, {"timeout", sk.Timeout, time.Millisecond},
			{"max_age", sk.MaxAge, time.Second}, {"retry_base", sk.RetryBase, time.Millisecond}, {"retry_max", sk.RetryMax, time.Millisecond}} {
			if time.Duration(d.v) < d.min {
				p.add("%s.%s: %v must be at least %v", sp, d.key, time.Duration(d.v), d.min)
			}
		}
		if sk.RetryMax < sk.RetryBase {
			p.add("%s.retry_max: %v must not be below retry_base (%v)", sp, time.Duration(sk.RetryMax), time.Duration(sk.RetryBase))
		}
		if sk.Claim != nil {
			p.add("%s.claim: claim stores are not available in this build yet", sp)
		}
	}
}

func validateHTTPSink(p *Problems, sp string, sk *Sink) {
	if sk.URL == "" {
		p.add("%s.url: required for an http sink", sp)
	} else if t, err := ParseTemplate(sk.URL); err != nil {
		p.add("%s.url: %v", sp, err)
	} else {
		// Check the shape with the fields filled in.
		u, err := url.Parse(strings.NewReplacer("{", "", "}", "").Replace(t.String()))
		switch {
		case err != nil:
			p.add("%s.url: %q is not a URL: %v", sp, sk.URL, err)
		case u.Scheme != "http" && u.Scheme != "https":
			p.add("%s.url: %q must be http:// or https://", sp, sk.URL)
		case u.Host == "":
			p.add("%s.url: %q has no host", sp, sk.URL)
		}
	}
	for name, v := range sk.Headers {
		if !validHeaderName(name) {
			p.add("%s.headers: %q is not a valid header name", sp, name)
		}
		if _, err := ParseTemplate(v); err != nil {
			p.add("%s.headers.%s: %v", sp, name, err)
		}
	}
	if sk.Secret.Value != "" {
		if _, err := ParseTemplate(sk.Secret.Value); err != nil {
			p.add("%s.secret: %v", sp, err)
		}
	}
	for _, k := range []struct {
		key string
		set bool
	}{{"exchange", sk.Exchange != ""}, {"routing_key", sk.RoutingKey != ""}, {"channels", sk.Channels != 0}} {
		if k.set {
			p.add("%s.%s: is a rabbitmq sink key; this sink is http", sp, k.key)
		}
	}
}

func validateAMQPSink(p *Problems, sp string, sk *Sink) {
	if sk.URL == "" {
		p.add("%s.url: required for a rabbitmq sink", sp)
	} else if u, err := url.Parse(sk.URL); err != nil || (u.Scheme != "amqp" && u.Scheme != "amqps") || u.Host == "" {
		p.add("%s.url: %q must be amqp://user:pass@host:port/vhost or amqps://...", sp, redactURL(sk.URL))
	}
	if _, err := ParseTemplate(sk.RoutingKey); err != nil {
		p.add("%s.routing_key: %v", sp, err)
	}
	if sk.Channels < 1 || sk.Channels > 256 {
		p.add("%s.channels: %d must be between 1 and 256", sp, sk.Channels)
	}
	for _, k := range []struct {
		key string
		set bool
	}{{"headers", len(sk.Headers) > 0}, {"secret", sk.Secret.IsSet()}, {"allow_private", sk.AllowPrivate}} {
		if k.set {
			p.add("%s.%s: is an http sink key; this sink is rabbitmq", sp, k.key)
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
