package config

import (
	"math"
	"net/netip"
)

// Config is the whole configuration file.
type Config struct {
	Node   Node   `yaml:"node"`
	Listen string `yaml:"listen"`
	// ListenProxyProtocol: the PROXY protocol on listen.
	ListenProxyProtocol ProxyProtocol     `yaml:"listen_proxy_protocol"`
	Admin               Admin             `yaml:"admin"`
	Limits              Limits            `yaml:"limits"`
	RouteResolver       RouteResolver     `yaml:"route_resolver"`
	Routes              Routes            `yaml:"routes"`
	RateLimits          RateLimits        `yaml:"rate_limits"`
	Tenants             Tenants           `yaml:"tenants"`
	WAL                 WAL               `yaml:"wal"`
	Segment             Segment           `yaml:"segment"`
	Storage             Storage           `yaml:"storage"`
	Archive             Archive           `yaml:"archive"`
	Claims              Claims            `yaml:"claims"`
	Dispatch            Dispatch          `yaml:"dispatch"`
	SourceStore         SourceStore       `yaml:"source_store"`
	Redis               Redis             `yaml:"redis"`
	Dedupe              Dedupe            `yaml:"dedupe"`
	Secrets             Secrets           `yaml:"secrets"`
	Lifecycle           Lifecycle         `yaml:"lifecycle"`
	Log                 Log               `yaml:"log"`
	Sources             map[string]Source `yaml:"sources"`
}

// Node is this node's identity and storage.
type Node struct {
	Name    string   `yaml:"name"`
	DataDir string   `yaml:"data_dir"`
	Roles   []string `yaml:"roles"`
	// Ordinal is the 16-bit node number inside event ids. It must be unique
	// in a fleet; by default it is derived from Name.
	Ordinal *int `yaml:"ordinal"`
}

// Admin is the admin listener and its bounds: a client of the admin API
// holds no more of the node than these allow.
type Admin struct {
	Listen string       `yaml:"listen"`
	Tokens []AdminToken `yaml:"tokens"`
	// BootstrapToken makes the node mint an admin token of its own on its
	// first start (scopes tenant:*, tenants:read, tenants:write, debug): its
	// digest is kept in the meta store, the token in the file
	// <data_dir>/admin-token (mode 0600). The embedded default sets it, so
	// make run has a token to show.
	BootstrapToken bool `yaml:"bootstrap_token"`
	// ReadTimeout bounds reading a whole request, body included;
	// ReadHeaderTimeout its header (and how long a new connection may
	// stay silent).
	ReadTimeout       Duration `yaml:"read_timeout"`
	ReadHeaderTimeout Duration `yaml:"read_header_timeout"`
	// WriteTimeout bounds writing an answer, counted from the end of the
	// request's header; a CPU profile (/debug/pprof/profile?seconds=N)
	// must finish inside it.
	WriteTimeout Duration `yaml:"write_timeout"`
	// IdleTimeout closes a keep-alive connection idle that long.
	IdleTimeout Duration `yaml:"idle_timeout"`
	// MaxConnections caps open connections; one past it is answered 503
	// overloaded and closed.
	MaxConnections int `yaml:"max_connections"`
	// MaxBodyBytes bounds a request body (413 past it, chunked too).
	MaxBodyBytes Size `yaml:"max_body_bytes"`
}

// ProxyProtocol is the PROXY protocol (v1 text, v2 binary) on the public
// listener. A connection from a Trusted peer must open with a PROXY
// header, whose sender then counts as the client; a PROXY header from
// any other peer is refused. Empty: off.
type ProxyProtocol struct {
	// Trusted are CIDRs ("10.0.0.0/8", "127.0.0.1/32") of the balancers.
	Trusted []string `yaml:"trusted"`
}

// Prefixes are the trusted CIDRs parsed (validation refused any that
// does not parse); nil when the protocol is off.
func (p ProxyProtocol) Prefixes() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range p.Trusted {
		if pfx, err := netip.ParsePrefix(s); err == nil {
			out = append(out, pfx.Masked())
		}
	}
	return out
}

// AdminToken is one bearer token, stored as the hex SHA-256 of the token.
type AdminToken struct {
	Name   string   `yaml:"name"`
	SHA256 string   `yaml:"sha256"`
	Scopes []string `yaml:"scopes"`
}

// Limits bound what one request and the whole node may hold.
type Limits struct {
	MaxBodyBytes   Size `yaml:"max_body_bytes"`
	MaxHeaderBytes Size `yaml:"max_header_bytes"`
	// MaxHeaderCount bounds the number of header fields of one request.
	MaxHeaderCount int `yaml:"max_header_count"`
	// MaxPipelineBytes bounds the bytes of all hooks admitted but not yet
	// committed, node-wide (router step 9).
	MaxPipelineBytes Size `yaml:"max_pipeline_bytes"`
	// MaxQuarantineBytes caps the quarantine pen: the bytes of every hook
	// held there, node-wide. Past it a failed hook is 429 quarantine_full.
	MaxQuarantineBytes Size `yaml:"max_quarantine_bytes"`
	MaxConnections     int  `yaml:"max_connections"`
	// MaxConnectionsPerClient bounds the connections of one client
	// address (the PROXY header's sender behind a trusted balancer), so one
	// sender cannot hold every slot. Default: half of max_connections, but
	// not below 64 (or max_connections when that is smaller).
	MaxConnectionsPerClient int      `yaml:"max_connections_per_client"`
	ReadTimeout             Duration `yaml:"read_timeout"`
	WriteTimeout            Duration `yaml:"write_timeout"`
	IdleTimeout             Duration `yaml:"idle_timeout"`
}

// RouteResolver selects the catch-URL scheme. Which keys a resolver takes
// (ResolverTakes): prefix for path, tenantpath, host and registered
// resolvers; path for token only; suffix for host only; options for
// registered resolvers only. Any other key given is refused, naming it.
type RouteResolver struct {
	Type   string   `yaml:"type"`
	Prefix []string `yaml:"prefix"`
	// Path is the token resolver's URL pattern: literal segments and
	// :params, exactly one of them :token ("/webhooks/catch/:token",
	// "/webhooks/catch/:app_id/:token").
	Path string `yaml:"path"`
	// Suffix is the host resolver's domain: a request's Host must be
	// <tenant>.<suffix> ("hooks.example.com").
	Suffix string `yaml:"suffix"`
	// Options are passed to a registered resolver's constructor.
	Options map[string]string `yaml:"options"`
}

// Routes is route management (the route guard, router step 1). With it on,
// a request must match a route by host and path, and the route's tenant and
// source are held against what the resolver and the source say.
type Routes struct {
	Enabled bool    `yaml:"enabled"`
	Table   []Route `yaml:"table"`
}

// Route is one route: owned by a tenant (default "default", the shared
// tenant) and optionally bound to a source. Path is a pattern of literal
// segments and :params ("/webhooks/catch/:app_id/:source_id"); Host, when
// set, must equal the request's host (port ignored).
type Route struct {
	ID       string `yaml:"id" json:"id"`
	TenantID string `yaml:"tenant_id" json:"tenant_id"`
	SourceID string `yaml:"source_id" json:"source_id,omitempty"`
	Host     string `yaml:"host" json:"host,omitempty"`
	Path     string `yaml:"path" json:"path"`
}

// RateLimits are the per-tenant limits.
type RateLimits struct {
	Scope   string               `yaml:"scope"`
	Default *RateLimit           `yaml:"default"`
	Tenants map[string]RateLimit `yaml:"tenants"`
}

// RateLimit is one tenant's limits.
type RateLimit struct {
	Rate          float64 `yaml:"rate"`
	Burst         int     `yaml:"burst"`
	MaxQueue      int     `yaml:"max_queue"`
	MaxQueueBytes Size    `yaml:"max_queue_bytes"`
}

// Finite reports whether the limit bounds a tenant's rate (.inf does not).
func (r *RateLimit) Finite() bool {
	return r != nil && r.Rate > 0 && !math.IsInf(r.Rate, 0) && r.Burst > 0
}

// Tenants bounds the number of tenants.
type Tenants struct {
	Max int `yaml:"max"`
	// CreateRate and CreateBurst bound how fast the node creates tenants
	// (new ordinals), so a flood of invented names cannot burn through
	// Max.
	CreateRate  float64 `yaml:"create_rate"`
	CreateBurst int     `yaml:"create_burst"`
}

// WAL is the write-ahead log.
type WAL struct {
	Type         string `yaml:"type"`
	MaxFileBytes Size   `yaml:"max_file_bytes"`
	// MaxBatchBytes caps one group commit's write.
	MaxBatchBytes Size `yaml:"max_batch_bytes"`
}

// Storage is how the node treats the file system of node.data_dir.
type Storage struct {
	// ReserveBytes is held back so that, on a full disk, the node can
	// still checkpoint, seal what it holds and delete what it may: a
	// ballast file of this size (<data_dir>/storage.reserve) is released
	// when free space falls below half of it or when the meta store or
	// the sealer meets a full disk, and ingest answers 503 until the file
	// system has twice this free again and the ballast is back.
	ReserveBytes Size `yaml:"reserve_bytes"`
}

// Segment is the sealing of the WAL into segments.
type Segment struct {
	MaxBytes    Size     `yaml:"max_bytes"`
	MaxAge      Duration `yaml:"max_age"`
	RetainLocal Duration `yaml:"retain_local"`
	// ScrubRate is how many bytes a second the background scrubber reads
	// of the local segments to check every block's checksum (default
	// 8MiB; absent takes the default, 0 turns the scrubber off: damage is
	// then found only at boot, for footers and indexes, or when a hook is
	// read).
	ScrubRate *Size `yaml:"scrub_rate"`
	// Dictionary compresses each segment's blocks with a dictionary made
	// of the last records of the segment sealed before it and stored in
	// the segment (format version 2; default true). false writes version 1
	// segments, without one.
	Dictionary *bool `yaml:"dictionary"`
}

// Archive is where sealed segments go.
type Archive struct {
	Type      string `yaml:"type"`
	Path      string `yaml:"path"`
	Endpoint  string `yaml:"endpoint"`
	Bucket    string `yaml:"bucket"`
	Prefix    string `yaml:"prefix"`
	Region    string `yaml:"region"`
	AccessKey Secret `yaml:"access_key"`
	SecretKey Secret `yaml:"secret_key"`
	TLS       bool   `yaml:"tls"`
	// Concurrency bounds the uploads in flight (default 4).
	Concurrency int `yaml:"concurrency"`
}

// Claims are the stores of claim packs (DESIGN.md §2.6): a sink with
// claim: {store, over_bytes} delivers a body larger than over_bytes as a
// reference into a pack of bodies in the named store.
type Claims struct {
	Stores map[string]ClaimStore `yaml:"stores"`
}

// ClaimStore is one claim store: the archive's keys (type s3 or dir) and
// how packs are made and kept.
type ClaimStore struct {
	Type      string `yaml:"type"`
	Path      string `yaml:"path"`
	Endpoint  string `yaml:"endpoint"`
	Bucket    string `yaml:"bucket"`
	Prefix    string `yaml:"prefix"`
	Region    string `yaml:"region"`
	AccessKey Secret `yaml:"access_key"`
	SecretKey Secret `yaml:"secret_key"`
	TLS       bool   `yaml:"tls"`
	// Retain is how long a pack is kept after it was written (default
	// 7 days); a pack that a pending delivery still references is kept
	// past it.
	Retain Duration `yaml:"retain"`
	// PackBytes closes a pack at this size (default 16 MiB); PackDelay
	// closes one this long after its first body (default 50ms). A
	// delivery waits for its pack's upload.
	PackBytes Size     `yaml:"pack_bytes"`
	PackDelay Duration `yaml:"pack_delay"`
}

// ArchiveSpec is the store's backend as an archive section.
func (c ClaimStore) ArchiveSpec() Archive {
	return Archive{Type: c.Type, Path: c.Path, Endpoint: c.Endpoint, Bucket: c.Bucket, Prefix: c.Prefix,
		Region: c.Region, AccessKey: c.AccessKey, SecretKey: c.SecretKey, TLS: c.TLS}
}

// Dispatch tunes the delivery stage (sinks carry their own retry keys).
type Dispatch struct {
	// IntakeBytes bounds the hooks held in memory for first attempts;
	// past it, hooks are read back from the WAL and segments.
	IntakeBytes Size `yaml:"intake_bytes"`
	// AttemptLogTTL is how long a hook's attempt log is kept (one entry
	// per attempt, about 80 bytes).
	AttemptLogTTL Duration `yaml:"attempt_log_ttl"`
}

// SourceStore selects where sources live.
type SourceStore struct {
	Type      string `yaml:"type"`
	URL       string `yaml:"url"`
	Namespace string `yaml:"namespace"`
	TickMs    int    `yaml:"tick_ms"`
}

// Redis is the fleet's shared Redis.
type Redis struct {
	URL string `yaml:"url"`
	// Namespace prefixes every key the node writes (default "ankusa:"),
	// so fleets (or tests) can share one Redis.
	Namespace string `yaml:"namespace"`
}

// Dedupe is the default dedupe scope and window.
type Dedupe struct {
	Scope string   `yaml:"scope"`
	TTL   Duration `yaml:"ttl"`
}

// Secrets is encryption at rest of stored secrets.
type Secrets struct {
	KEK         Secret `yaml:"kek"`
	KEKPrevious Secret `yaml:"kek_previous"`
}

// Log is logging.
type Log struct {
	Level  string `yaml:"level"`
	Format string `yaml:"format"` // json | console
}

// Source is one webhook source (DESIGN.md §2.9).
type Source struct {
	TenantID        string        `yaml:"tenant_id" json:"tenant_id,omitempty"`
	Verify          Verify        `yaml:"verify" json:"verify"`
	OnVerifyFailure string        `yaml:"on_verify_failure" json:"on_verify_failure,omitempty"`
	TrustURLTenant  bool          `yaml:"trust_url_tenant" json:"trust_url_tenant,omitempty"`
	Sinks           []Sink        `yaml:"sinks" json:"sinks,omitempty"`
	Dedupe          *SourceDedupe `yaml:"dedupe" json:"dedupe,omitempty"`
	Quarantine      *Quarantine   `yaml:"quarantine" json:"quarantine,omitempty"`
	MaxBodyBytes    Size          `yaml:"max_body_bytes" json:"max_body_bytes,omitempty"`
}

// Verify selects a source's signature verifier.
type Verify struct {
	Type      string   `yaml:"type" json:"type"`
	Secret    Secret   `yaml:"secret" json:"-"`
	Secrets   []Secret `yaml:"secrets" json:"-"`
	Header    string   `yaml:"header" json:"header,omitempty"`
	Prefix    string   `yaml:"prefix" json:"prefix,omitempty"`
	Algorithm string   `yaml:"algorithm" json:"algorithm,omitempty"`
	Encoding  string   `yaml:"encoding" json:"encoding,omitempty"`
	Tolerance Duration `yaml:"tolerance" json:"tolerance,omitempty"`
	// TimestampHeader and SignedContent describe generic hmac schemes that
	// sign more than the body.
	TimestampHeader string `yaml:"timestamp_header" json:"timestamp_header,omitempty"`
	SignedContent   string `yaml:"signed_content" json:"signed_content,omitempty"`
	AllowSHA1       bool   `yaml:"allow_sha1" json:"allow_sha1,omitempty"`
	// URL is the address the provider was given, for schemes that sign
	// it (Twilio, Square, HubSpot v3): behind a balancer the node cannot
	// know it. Default: https:// + Host + the request URI.
	URL string `yaml:"url" json:"url,omitempty"`
	// HandshakeToken is the token a provider's subscription handshake
	// carries when it is not the signing secret (Meta's hub.verify_token).
	HandshakeToken Secret `yaml:"handshake_token" json:"-"`
	// EventType says where the hook's event type is, header:NAME or
	// json:PATH; default: the preset's.
	EventType string `yaml:"event_type" json:"event_type,omitempty"`
	// WebhookID is the id the provider gave the subscription, for
	// schemes that sign it (PayPal's webhook id): presets whose signed
	// template has {webhook_id} require it, every other verifier refuses
	// it.
	WebhookID string `yaml:"webhook_id" json:"webhook_id,omitempty"`
}

// SourceDedupe is a source's dedupe key.
type SourceDedupe struct {
	Key string   `yaml:"key" json:"key"`
	TTL Duration `yaml:"ttl" json:"ttl,omitempty"`
}

// Quarantine is a source's quarantine bucket: hooks that failed
// verification (quarantined or flagged) spend it, never the tenant's rate
// limit.
type Quarantine struct {
	Rate  float64 `yaml:"rate" json:"rate"`
	Burst int     `yaml:"burst" json:"burst"`
}

// Sink is one delivery target of a source (DESIGN.md §2.7). URL, the
// header values, Secret and RoutingKey are templates over the envelope
// (ParseTemplate).
type Sink struct {
	// ID is the sink's stable id within its source: delivery rows are
	// keyed by it, so editing the source does not remap them. Default:
	// derived from type, url, exchange and routing_key (see SinkID).
	ID   string `yaml:"id" json:"id,omitempty"`
	Type string `yaml:"type" json:"type"`
	// Filter is a CEL expression over the hook (event_type, tenant_id,
	// source_id, headers, params, body): a hook it does not match gets no
	// delivery row for this sink. Empty: every hook.
	Filter       string            `yaml:"filter" json:"filter,omitempty"`
	URL          string            `yaml:"url" json:"url,omitempty"`
	Headers      map[string]string `yaml:"headers" json:"headers,omitempty"`
	Secret       Secret            `yaml:"secret" json:"-"`
	Format       string            `yaml:"format" json:"format,omitempty"`
	AllowPrivate bool              `yaml:"allow_private" json:"allow_private,omitempty"`
	// ConnectTimeout bounds connecting (and DNS); Timeout bounds one
	// whole attempt, connecting included.
	ConnectTimeout Duration `yaml:"connect_timeout" json:"connect_timeout,omitempty"`
	Timeout        Duration `yaml:"timeout" json:"timeout,omitempty"`
	// MaxAttempts and MaxAge end the retries: past either, the hook is a
	// dead letter.
	MaxAttempts int      `yaml:"max_attempts" json:"max_attempts,omitempty"`
	MaxAge      Duration `yaml:"max_age" json:"max_age,omitempty"`
	// RetryBase and RetryMax shape the backoff: attempt n waits a random
	// time in [0, min(RetryMax, RetryBase * 2^(n-1))] (full jitter).
	RetryBase Duration `yaml:"retry_base" json:"retry_base,omitempty"`
	RetryMax  Duration `yaml:"retry_max" json:"retry_max,omitempty"`
	// Concurrency bounds attempts in flight to this sink; TenantConcurrency
	// bounds one tenant's share of them, so a tenant with a slow receiver
	// cannot hold every slot.
	Concurrency       int `yaml:"concurrency" json:"concurrency,omitempty"`
	TenantConcurrency int `yaml:"tenant_concurrency" json:"tenant_concurrency,omitempty"`
	// Exchange, RoutingKey and Channels are the RabbitMQ sink's.
	Exchange   string `yaml:"exchange" json:"exchange,omitempty"`
	RoutingKey string `yaml:"routing_key" json:"routing_key,omitempty"`
	Channels   int    `yaml:"channels" json:"channels,omitempty"`
	// Brokers, Topic, Key, Compression and SASL are the Kafka sink's;
	// Topic and Key are templates over the envelope.
	Brokers     []string `yaml:"brokers" json:"brokers,omitempty"`
	Topic       string   `yaml:"topic" json:"topic,omitempty"`
	Key         string   `yaml:"key" json:"key,omitempty"`
	Compression string   `yaml:"compression" json:"compression,omitempty"`
	SASL        *SASL    `yaml:"sasl" json:"sasl,omitempty"`
	// Subject, Stream, CreateStream and Auth are the NATS JetStream
	// sink's; Subject is a template over the envelope.
	Subject      string        `yaml:"subject" json:"subject,omitempty"`
	Stream       string        `yaml:"stream" json:"stream,omitempty"`
	CreateStream *CreateStream `yaml:"create_stream" json:"create_stream,omitempty"`
	Auth         *NATSAuth     `yaml:"auth" json:"auth,omitempty"`
	// Path is the file sink's file: one JSON envelope a line is appended
	// to it. A relative path is relative to the node's working directory,
	// as archive.path is.
	Path string `yaml:"path" json:"path,omitempty"`
	// TLS is the Kafka and NATS sinks' client TLS (present: on).
	TLS   *TLS   `yaml:"tls" json:"tls,omitempty"`
	Claim *Claim `yaml:"claim" json:"claim,omitempty"`
}

// SASL is the Kafka sink's authentication.
type SASL struct {
	// Mechanism is plain, scram-sha-256 or scram-sha-512.
	Mechanism string `yaml:"mechanism" json:"mechanism"`
	Username  string `yaml:"username" json:"username"`
	Password  Secret `yaml:"password" json:"-"`
}

// TLS is a broker client's TLS: the CA that signs the brokers'
// certificates (default: the system's), a client certificate for mutual
// TLS, and the name the brokers' certificates must carry (default: the
// host dialled).
type TLS struct {
	CAFile             string `yaml:"ca_file" json:"ca_file,omitempty"`
	CertFile           string `yaml:"cert_file" json:"cert_file,omitempty"`
	KeyFile            string `yaml:"key_file" json:"key_file,omitempty"`
	ServerName         string `yaml:"server_name" json:"server_name,omitempty"`
	InsecureSkipVerify bool   `yaml:"insecure_skip_verify" json:"insecure_skip_verify,omitempty"`
}

// NATSAuth is the NATS sink's credentials: a user and password, a token,
// or a credentials file (JWT and NKey seed); at most one of them.
type NATSAuth struct {
	Username  string `yaml:"username" json:"username,omitempty"`
	Password  Secret `yaml:"password" json:"-"`
	Token     Secret `yaml:"token" json:"-"`
	CredsFile string `yaml:"creds_file" json:"creds_file,omitempty"`
}

// CreateStream has the NATS sink create its stream when it does not exist
// (a test or a first setup; production streams are the operator's).
type CreateStream struct {
	// Subjects default to the sink's subject with each template field
	// replaced by the wildcard "*".
	Subjects []string `yaml:"subjects" json:"subjects,omitempty"`
	// Storage is file (default) or memory.
	Storage  string   `yaml:"storage" json:"storage,omitempty"`
	Replicas int      `yaml:"replicas" json:"replicas,omitempty"`
	MaxBytes Size     `yaml:"max_bytes" json:"max_bytes,omitempty"`
	MaxAge   Duration `yaml:"max_age" json:"max_age,omitempty"`
	// DuplicateWindow is how long JetStream remembers a Nats-Msg-Id
	// (default 2m): a retried publish within it is dropped.
	DuplicateWindow Duration `yaml:"duplicate_window" json:"duplicate_window,omitempty"`
}

// Claim delivers large bodies by reference.
type Claim struct {
	Store     string `yaml:"store" json:"store"`
	OverBytes Size   `yaml:"over_bytes" json:"over_bytes"`
}
