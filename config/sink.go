package config

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Sink types, and which of them are durable: a durable sink's ok means the
// hook is safe at the target (the RabbitMQ sink waits for the publisher
// confirm), which is what wal.type: none needs. The file sink fsyncs each
// line before its ok, but on the node's own disk: wal.type: none is there
// so that a node holds no state of its own, and a file of hooks beside it,
// without the WAL's checksums, recovery or erase, would be that state. So
// file is not durable.
var (
	SinkTypes        = []string{"http", "rabbitmq", "kafka", "nats", "file"}
	DurableSinkTypes = []string{"rabbitmq", "kafka", "nats"}
	SinkFormats      = []string{"raw", "envelope"}
	// KafkaCompressions are the Kafka sink's compression codecs.
	KafkaCompressions = []string{"none", "gzip", "snappy", "lz4", "zstd"}
	// SASLMechanisms are the Kafka sink's SASL mechanisms.
	SASLMechanisms = []string{"plain", "scram-sha-256", "scram-sha-512"}
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
	// DefaultKafkaKey keeps a tenant's hooks in one partition, in order.
	DefaultKafkaKey         = "{tenant_id}"
	DefaultKafkaCompression = "zstd"
	DefaultNATSSubject      = "ankusa.{tenant_id}.{source_id}"
	// DefaultClaimOverBytes is claim.over_bytes when unset.
	DefaultClaimOverBytes = 256 << 10
	// DefaultDuplicateWindow is a created stream's duplicate window.
	DefaultDuplicateWindow = 2 * time.Minute
	// MaxExchangeBytes is the longest exchange name AMQP carries.
	MaxExchangeBytes = 255
)

// Durable reports whether the sink's ok means durable.
func (s *Sink) Durable() bool { return slices.Contains(DurableSinkTypes, s.Type) }

// SinkID derives a sink's default id from what names its target, so the id
// stays when other sinks of the source are added, removed or reordered.
func SinkID(s *Sink) string {
	var target string
	switch s.Type {
	case "kafka":
		// The seed brokers in any order: reordering them keeps the id.
		target = strings.Join(slices.Sorted(slices.Values(s.Brokers)), ",") + "\x00" + s.Topic
	case "nats":
		target = RedactURL(s.URL) + "\x00" + s.Stream + "\x00" + s.Subject
	case "file":
		target = s.Path
	default:
		target = s.URL + "\x00" + s.Exchange + "\x00" + s.RoutingKey
	}
	h := sha256.Sum256([]byte(s.Type + "\x00" + target))
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
		if sk.Durable() || sk.Type == "file" {
			sk.Format = "envelope"
		}
	}
	// A file sink connects to nothing: connect_timeout stays unset, so
	// that one set is refused (fileSinkKeys).
	if sk.Type != "file" {
		setDur(&sk.ConnectTimeout, DefaultSinkConnectTimeout)
	}
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
	if sk.Claim != nil && sk.Claim.OverBytes == 0 {
		sk.Claim.OverBytes = DefaultClaimOverBytes
	}
	if sk.Type == "kafka" {
		setString(&sk.Key, DefaultKafkaKey)
		setString(&sk.Compression, DefaultKafkaCompression)
	}
	if sk.Type == "nats" {
		setString(&sk.Subject, DefaultNATSSubject)
		if cs := sk.CreateStream; cs != nil {
			setString(&cs.Storage, "file")
			setInt(&cs.Replicas, 1)
			setDur(&cs.DuplicateWindow, DefaultDuplicateWindow)
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
		if ctx.Runtime {
			p.under(sp, runtimeSinkProblems(sk))
		}
		if c := sk.Claim; c != nil && c.Store != "" && !slices.Contains(ctx.ClaimStores, c.Store) {
			p.add("%s.claim.store: %q is not a claim store (claims.stores has %v)", sp, c.Store, ctx.ClaimStores)
		}
		if ctx.CheckSink != nil && !(sk.Secret.IsSet() && sk.Secret.Value == "") {
			p.stage(sp, ctx.CheckSink(*sk))
		}
		if ctx.CheckFilter != nil && sk.Filter != "" {
			p.stage(sp, ctx.CheckFilter(sk.Filter))
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
	case "kafka":
		checkKafkaSink(&p, sk)
	case "nats":
		checkNATSSink(&p, sk, urlShape)
	case "file":
		checkFileSink(&p, sk)
	default:
		p.add("type: %q must be one of %v", sk.Type, SinkTypes)
		return p
	}
	checkForeignKeys(&p, sk)
	checkSinkDelivery(&p, sk)
	return p
}

// sinkKeys are the keys that belong to some sink types only, with the
// types that take them: a key set on a sink of another type is refused,
// never ignored.
var sinkKeys = []struct {
	key   string
	types []string
	set   func(*Sink) bool
}{
	{"url", []string{"http", "rabbitmq", "nats"}, func(s *Sink) bool { return s.URL != "" }},
	{"headers", []string{"http"}, func(s *Sink) bool { return len(s.Headers) > 0 }},
	{"secret", []string{"http"}, func(s *Sink) bool { return s.Secret.IsSet() }},
	{"allow_private", []string{"http"}, func(s *Sink) bool { return s.AllowPrivate }},
	{"exchange", []string{"rabbitmq"}, func(s *Sink) bool { return s.Exchange != "" }},
	{"routing_key", []string{"rabbitmq"}, func(s *Sink) bool { return s.RoutingKey != "" }},
	{"channels", []string{"rabbitmq"}, func(s *Sink) bool { return s.Channels != 0 }},
	{"brokers", []string{"kafka"}, func(s *Sink) bool { return len(s.Brokers) > 0 }},
	{"topic", []string{"kafka"}, func(s *Sink) bool { return s.Topic != "" }},
	{"key", []string{"kafka"}, func(s *Sink) bool { return s.Key != "" }},
	{"compression", []string{"kafka"}, func(s *Sink) bool { return s.Compression != "" }},
	{"sasl", []string{"kafka"}, func(s *Sink) bool { return s.SASL != nil }},
	{"subject", []string{"nats"}, func(s *Sink) bool { return s.Subject != "" }},
	{"stream", []string{"nats"}, func(s *Sink) bool { return s.Stream != "" }},
	{"create_stream", []string{"nats"}, func(s *Sink) bool { return s.CreateStream != nil }},
	{"auth", []string{"nats"}, func(s *Sink) bool { return s.Auth != nil }},
	{"tls", []string{"kafka", "nats"}, func(s *Sink) bool { return s.TLS != nil }},
	{"path", []string{"file"}, func(s *Sink) bool { return s.Path != "" }},
}

func checkForeignKeys(p *Problems, sk *Sink) {
	for _, k := range sinkKeys {
		if !slices.Contains(k.types, sk.Type) && k.set(sk) {
			p.add("%s: is a key of %s sinks; this sink is %s", k.key, joinAnd(k.types), sk.Type)
		}
	}
}

func checkKafkaSink(p *Problems, sk *Sink) {
	if len(sk.Brokers) == 0 {
		p.add("brokers: required for a kafka sink (a list of host:port)")
	}
	for i, b := range sk.Brokers {
		if host, port, err := net.SplitHostPort(b); err != nil || host == "" || port == "" {
			p.add("brokers[%d]: %q must be host:port", i, b)
		}
	}
	if sk.Topic == "" {
		p.add("topic: required for a kafka sink")
	} else if _, err := ParseTemplate(sk.Topic); err != nil {
		p.add("topic: %v", err)
	}
	if _, err := ParseTemplate(sk.Key); err != nil {
		p.add("key: %v", err)
	}
	if !slices.Contains(KafkaCompressions, sk.Compression) {
		p.add("compression: %q must be one of %v", sk.Compression, KafkaCompressions)
	}
	if a := sk.SASL; a != nil {
		if !slices.Contains(SASLMechanisms, a.Mechanism) {
			p.add("sasl.mechanism: %q must be one of %v", a.Mechanism, SASLMechanisms)
		}
		if a.Username == "" {
			p.add("sasl.username: required with sasl")
		}
		if !a.Password.IsSet() {
			p.add("sasl.password: required with sasl")
		}
	}
	checkTLS(p, sk.TLS)
}

func checkNATSSink(p *Problems, sk *Sink, urlShape bool) {
	if sk.URL == "" {
		p.add("url: required for a nats sink")
	} else if natsURLHasCredentials(sk.URL) {
		// A list of URLs, or a token as the user, is more than a stored
		// source's sealing and an answer's redaction read: credentials
		// have one place, auth, sealed at rest and never shown.
		p.add("url: give the credentials under auth (username and password, token or creds_file), not in the url: auth is sealed at rest and never shown")
	} else if urlShape {
		for _, one := range strings.Split(sk.URL, ",") {
			if u, err := url.Parse(strings.TrimSpace(one)); err != nil || !slices.Contains([]string{"nats", "tls", "ws", "wss"}, u.Scheme) || u.Host == "" {
				p.add("url: %q must be nats://host:port (or tls://, a comma-separated list for a cluster)", redactURL(sk.URL))
				break
			}
		}
	}
	if _, err := ParseTemplate(sk.Subject); err != nil {
		p.add("subject: %v", err)
	}
	if sk.Stream == "" {
		p.add("stream: required for a nats sink (the JetStream stream that must hold the hooks; create_stream creates it)")
	} else if strings.ContainsAny(sk.Stream, " \t.*>/\\") {
		p.add("stream: %q is not a JetStream stream name (no spaces, '.', '*', '>', '/' or '\\')", sk.Stream)
	}
	if cs := sk.CreateStream; cs != nil {
		if !slices.Contains([]string{"file", "memory"}, cs.Storage) {
			p.add("create_stream.storage: %q must be file or memory", cs.Storage)
		}
		if cs.Replicas < 1 || cs.Replicas > 5 {
			p.add("create_stream.replicas: %d must be between 1 and 5", cs.Replicas)
		}
		if cs.MaxBytes < 0 {
			p.add("create_stream.max_bytes: %d must not be negative", cs.MaxBytes)
		}
		if cs.MaxAge < 0 {
			p.add("create_stream.max_age: %v must not be negative", time.Duration(cs.MaxAge))
		}
		if cs.DuplicateWindow < Duration(time.Second) {
			p.add("create_stream.duplicate_window: %v must be at least 1s (a retried publish within it is dropped)", time.Duration(cs.DuplicateWindow))
		}
		for i, subj := range cs.Subjects {
			if subj == "" || strings.ContainsAny(subj, " \t") {
				p.add("create_stream.subjects[%d]: %q is not a NATS subject", i, subj)
			}
		}
	}
	if a := sk.Auth; a != nil {
		n := 0
		for _, set := range []bool{a.Username != "" || a.Password.IsSet(), a.Token.IsSet(), a.CredsFile != ""} {
			if set {
				n++
			}
		}
		switch {
		case n == 0:
			p.add("auth: give username and password, token, or creds_file")
		case n > 1:
			p.add("auth: give one of username and password, token, or creds_file")
		case (a.Username != "") != a.Password.IsSet():
			p.add("auth: username and password go together")
		}
	}
	checkTLS(p, sk.TLS)
}

func checkTLS(p *Problems, t *TLS) {
	if t == nil {
		return
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		p.add("tls: cert_file and key_file go together (a client certificate and its key)")
	}
}

// checkSinkDelivery holds the rules every sink type shares: the body
// format and how the dispatcher delivers (attempts, timeouts, backoff,
// concurrency).
func checkSinkDelivery(p *Problems, sk *Sink) {
	if !slices.Contains(SinkFormats, sk.Format) {
		p.add("format: %q must be raw or envelope", sk.Format)
	}
	if sk.Type == "file" && sk.Format != "envelope" && slices.Contains(SinkFormats, sk.Format) {
		p.add("format: %q; a file sink writes one JSON envelope a line (envelope), leave format out", sk.Format)
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
		if d.key == "connect_timeout" && sk.Type == "file" {
			continue // checkFileSink refuses it
		}
		if time.Duration(d.v) < d.min {
			p.add("%s: %v must be at least %v", d.key, time.Duration(d.v), d.min)
		}
	}
	if sk.RetryMax < sk.RetryBase {
		p.add("retry_max: %v must not be below retry_base (%v)", time.Duration(sk.RetryMax), time.Duration(sk.RetryBase))
	}
	if c := sk.Claim; c != nil {
		if c.Store == "" {
			p.add("claim.store: required with claim (a name under claims.stores)")
		}
		if c.OverBytes < 1024 {
			p.add("claim.over_bytes: %d must be at least 1KiB (bodies larger than it are delivered by reference)", c.OverBytes)
		}
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

// joinAnd joins words as a list is written: "a", "a and b", "a, b and c".
func joinAnd(w []string) string {
	if len(w) < 2 {
		return strings.Join(w, "")
	}
	return strings.Join(w[:len(w)-1], ", ") + " and " + w[len(w)-1]
}

// natsURLHasCredentials reports whether any URL of a NATS url list carries
// user info (nats://user:pass@host, nats://token@host).
func natsURLHasCredentials(list string) bool {
	for _, one := range strings.Split(list, ",") {
		one = strings.TrimSpace(one)
		i := strings.Index(one, "://")
		if i < 0 {
			continue
		}
		auth := one[i+3:]
		if j := strings.IndexAny(auth, "/?#"); j >= 0 {
			auth = auth[:j]
		}
		if strings.Contains(auth, "@") {
			return true
		}
	}
	return false
}
