package config

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// finiteDefault is the rate limit tenantpath needs.
const finiteDefault = "rate_limits: {default: {rate: 50, burst: 100}}\n"

func TestValidate(t *testing.T) {
	customResolver := ValidateOptions{
		ResolverKnown: func(name string) bool { return name == "opaque" },
	}
	type tc struct {
		name string
		yaml string
		opts ValidateOptions
		// want: each string is a prefix of one problem, in order, and there
		// are no other problems. Empty: the config is valid.
		want []string
	}
	cases := []tc{
		{name: "empty config", yaml: ""},

		// tenantpath needs a finite rate_limits.default.
		{name: "tenantpath without rate_limits.default",
			yaml: "route_resolver: {type: tenantpath}",
			want: []string{`rate_limits.default: resolver "tenantpath" takes the tenant from the request`}},
		{name: "tenantpath with rate 0",
			yaml: "route_resolver: {type: tenantpath}\nrate_limits: {default: {rate: 0, burst: 100}}",
			want: []string{"rate_limits.default: "}},
		{name: "tenantpath with burst 0",
			yaml: "route_resolver: {type: tenantpath}\nrate_limits: {default: {rate: 50}}",
			want: []string{"rate_limits.default: "}},
		{name: "tenantpath with an infinite rate",
			yaml: "route_resolver: {type: tenantpath}\nrate_limits: {default: {rate: .inf, burst: 100}}",
			want: []string{"rate_limits.default: ", "rate_limits.default.rate: "}},
		{name: "tenantpath with only tenant overrides",
			yaml: "route_resolver: {type: tenantpath}\nrate_limits: {tenants: {acme: {rate: 5, burst: 5}}}",
			want: []string{"rate_limits.default: "}},
		{name: "tenantpath with a finite default",
			yaml: "route_resolver: {type: tenantpath, prefix: [webhooks]}\n" + finiteDefault},
		{name: "a registered resolver takes the tenant from the request too",
			yaml: "route_resolver: {type: opaque}", opts: customResolver,
			want: []string{`rate_limits.default: resolver "opaque"`}},
		{name: "path resolver needs no rate limit", yaml: "route_resolver: {type: path}"},

		// A shared source without a verifier under tenant routing.
		{name: "shared none source under tenantpath without trust_url_tenant",
			yaml: finiteDefault + "route_resolver: {type: tenantpath}\nsources:\n  open-demo: {verify: {type: none}}",
			want: []string{`sources.open-demo: shared source (tenant "default") has no verifier but resolver "tenantpath" takes the tenant from the request`}},
		{name: "shared none source with trust_url_tenant: false",
			yaml: finiteDefault + "route_resolver: {type: tenantpath}\nsources:\n  open-demo: {verify: {type: none}, trust_url_tenant: false}",
			want: []string{"sources.open-demo: shared source"}},
		{name: "tenant_id: default is shared too",
			yaml: finiteDefault + "route_resolver: {type: tenantpath}\nsources:\n  open-demo: {tenant_id: default, verify: {type: none}}",
			want: []string{"sources.open-demo: shared source"}},
		{name: "only the unflagged source is named",
			yaml: finiteDefault + "route_resolver: {type: tenantpath}\nsources:\n  a-ok: {verify: {type: none}, trust_url_tenant: true}\n  b-open: {verify: {type: none}}\n  c-acme: {tenant_id: acme, verify: {type: none}}",
			want: []string{"sources.b-open: shared source"}},
		{name: "shared none source with trust_url_tenant: true",
			yaml: finiteDefault + "route_resolver: {type: tenantpath}\nsources:\n  open-demo: {verify: {type: none}, trust_url_tenant: true}"},
		{name: "tenant-owned none source under tenantpath",
			yaml: finiteDefault + "route_resolver: {type: tenantpath}\nsources:\n  acme-billing: {tenant_id: acme, verify: {type: none}}"},
		{name: "shared source with a verifier under tenantpath",
			yaml: finiteDefault + "route_resolver: {type: tenantpath}\nsources:\n  stripe: {verify: {type: stripe, secret: whsec_x}}"},
		{name: "shared none source under a registered resolver",
			yaml: finiteDefault + "route_resolver: {type: opaque}\nsources:\n  open-demo: {verify: {type: none}}", opts: customResolver,
			want: []string{`sources.open-demo: shared source (tenant "default") has no verifier but resolver "opaque"`}},
		{name: "under the path resolver the rule does not apply",
			yaml: "route_resolver: {type: path}\nsources:\n  open-demo: {verify: {type: none}}"},
		{name: "both tenantpath rules at once",
			yaml: "route_resolver: {type: tenantpath}\nsources:\n  open-demo: {verify: {type: none}}",
			want: []string{"rate_limits.default: ", "sources.open-demo: shared source"}},

		// Resolver.
		{name: "unknown resolver",
			yaml: "route_resolver: {type: nope}\n" + finiteDefault,
			want: []string{`route_resolver.type: unknown resolver "nope"`}},
		{name: "prefix with a slash",
			yaml: "route_resolver: {type: path, prefix: [hooks, a/b]}",
			want: []string{`route_resolver.prefix[1]: "a/b" is not a plain path segment`}},
		{name: "prefix with dot segment, percent and empty",
			yaml: "route_resolver: {type: path, prefix: ['..', 'a%2f', '']}",
			want: []string{"route_resolver.prefix[0]: ", "route_resolver.prefix[1]: ", "route_resolver.prefix[2]: "}},

		// Names.
		{name: "source name with capitals", yaml: "sources: {Stripe: {verify: {type: none}}}",
			want: []string{"sources.Stripe: source name must match"}},
		{name: "source name starting with a dash", yaml: "sources: {-stripe: {verify: {type: none}}}",
			want: []string{"sources.-stripe: source name must match"}},
		{name: "source name of 64 characters", yaml: "sources: {" + strings.Repeat("s", 64) + ": {verify: {type: none}}}",
			want: []string{"sources." + strings.Repeat("s", 64) + ": source name must match"}},
		{name: "source name of 63 characters", yaml: "sources: {" + strings.Repeat("s", 63) + ": {verify: {type: none}}}"},
		{name: "source tenant_id with a slash", yaml: "sources: {s: {tenant_id: acme/x, verify: {type: none}}}",
			want: []string{`sources.s.tenant_id: "acme/x" must match`}},
		{name: "rate limit for an invalid tenant name", yaml: "rate_limits: {tenants: {Acme: {rate: 1, burst: 1}}}",
			want: []string{"rate_limits.tenants.Acme: tenant name must match"}},
		{name: "bad node name", yaml: "node: {name: Edge_1}", want: []string{`node.name: "Edge_1" must match`}},
		{name: "node ordinal out of range", yaml: "node: {ordinal: 65536}", want: []string{"node.ordinal: 65536 must be between 0 and 65535"}},
		{name: "node ordinal 65535", yaml: "node: {ordinal: 65535}"},
		{name: "unknown role", yaml: "node: {roles: [edge, web]}", want: []string{`node.roles: unknown role "web"`}},

		// Listen addresses and admin tokens.
		{name: "listen without a port", yaml: "listen: 127.0.0.1", want: []string{`listen: "127.0.0.1" is not host:port`}},
		{name: "listen as a bare port", yaml: "listen: 8080", want: []string{`listen: "8080" is not host:port`}},
		{name: "admin.listen bad", yaml: "admin: {listen: 'localhost:90:90'}", want: []string{`admin.listen: "localhost:90:90" is not host:port`}},
		{name: "listen on every interface", yaml: "listen: ':8080'"},
		{name: "admin token hash too short", yaml: "admin: {tokens: [{name: ops, sha256: abc}]}",
			want: []string{"admin.tokens[0] (ops): sha256 must be 64 hex characters"}},
		{name: "admin token hash not hex", yaml: "admin: {tokens: [{name: ops, sha256: " + strings.Repeat("g", 64) + "}]}",
			want: []string{"admin.tokens[0] (ops): "}},
		{name: "admin token hash ok", yaml: "admin: {tokens: [{name: ops, sha256: " + strings.Repeat("aB", 32) + "}]}"},

		// The admin listener's bounds.
		{name: "admin bounds set", yaml: "admin: {read_timeout: 2s, read_header_timeout: 1s, write_timeout: 5s, idle_timeout: 1s, max_connections: 8, max_body_bytes: 4KiB}"},
		{name: "admin read_timeout too short", yaml: "admin: {read_timeout: 10ms, read_header_timeout: 1s}",
			want: []string{"admin.read_timeout: 10ms must be between 100ms and 24h", "admin.read_header_timeout: 1s must not exceed admin.read_timeout (10ms)"}},
		{name: "admin read_header_timeout above read_timeout", yaml: "admin: {read_timeout: 1s, read_header_timeout: 2s}",
			want: []string{"admin.read_header_timeout: 2s must not exceed admin.read_timeout (1s)"}},
		{name: "admin write_timeout too short", yaml: "admin: {write_timeout: 10ms}",
			want: []string{"admin.write_timeout: 10ms must be between 1s and 24h"}},
		{name: "admin idle_timeout too long", yaml: "admin: {idle_timeout: 25h}",
			want: []string{"admin.idle_timeout: 25h0m0s must be between 100ms and 24h"}},
		{name: "admin max_connections negative", yaml: "admin: {max_connections: -1}",
			want: []string{"admin.max_connections: -1 must be between 1 and 65536"}},
		{name: "admin max_body_bytes too small", yaml: "admin: {max_body_bytes: 100}",
			want: []string{"admin.max_body_bytes: 100 must be between 1KiB and 64MiB"}},
		{name: "admin max_body_bytes too large", yaml: "admin: {max_body_bytes: 65MiB}",
			want: []string{"admin.max_body_bytes: 68157440 must be between 1KiB and 64MiB"}},
		{name: "admin unknown key", yaml: "admin: {read_timout: 1s}", want: []string{"admin.read_timout"}},

		// Limits and the WAL.
		{name: "max_header_bytes below 1KiB", yaml: "limits: {max_header_bytes: 512}",
			want: []string{"limits.max_header_bytes: 512 must be between 1KiB and 1MiB"}},
		{name: "max_body_bytes above 512MiB", yaml: "limits: {max_body_bytes: 513MiB, max_pipeline_bytes: 1GiB}\nwal: {max_batch_bytes: 1GiB}",
			want: []string{"limits.max_body_bytes: 537919488 must be between 1 and 512MiB"}},
		{name: "pipeline smaller than a request", yaml: "limits: {max_pipeline_bytes: 1040383}",
			want: []string{"limits.max_pipeline_bytes: 1040383 must hold one whole request, at least limits.max_body_bytes + limits.max_header_bytes (1064960)"}},
		{name: "pipeline one request", yaml: "limits: {max_pipeline_bytes: 1064960}"},
		{name: "max_header_count above the envelope's bound", yaml: "limits: {max_header_count: 1025}",
			want: []string{"limits.max_header_count: 1025 must be between 1 and 1024"}},
		{name: "listen equals admin.listen", yaml: "listen: 127.0.0.1:7000\nadmin: {listen: 127.0.0.1:7000}",
			want: []string{"admin.listen: \"127.0.0.1:7000\" is also listen"}},
		{name: "options for a built-in resolver", yaml: "route_resolver: {type: path, options: {x: y}}",
			want: []string{"route_resolver.options: resolver \"path\" takes no options"}},
		{name: "route with nine params", yaml: "routes: {enabled: true, table: [{id: r1, path: \"/:a/:b/:c/:d/:e/:f/:g/:h/:i\"}]}\nsources: {s: {verify: {type: none}}}",
			want: []string{"routes.table[0].path: path \"/:a/:b/:c/:d/:e/:f/:g/:h/:i\" has more than 8 parameters"}},
		{name: "max_header_count negative", yaml: "limits: {max_header_count: -1}", want: []string{"limits.max_header_count: "}},
		{name: "max_connections negative", yaml: "limits: {max_connections: -5}", want: []string{"limits.max_connections: "}},
		{name: "max_connections_per_client set", yaml: "limits: {max_connections: 100, max_connections_per_client: 100}"},
		{name: "max_connections_per_client negative", yaml: "limits: {max_connections_per_client: -1}",
			want: []string{"limits.max_connections_per_client: -1 must be between 1 and limits.max_connections (10000)"}},
		{name: "max_connections_per_client past max_connections", yaml: "limits: {max_connections: 10, max_connections_per_client: 11}",
			want: []string{"limits.max_connections_per_client: 11 must be between 1"}},
		{name: "proxy protocol trusted", yaml: "listen_proxy_protocol: {trusted: [10.0.0.0/8, \"2001:db8::/32\", 127.0.0.1/32]}"},
		{name: "proxy protocol bad CIDR", yaml: "listen_proxy_protocol: {trusted: [10.0.0.0/8, 10.0.0.1, nonsense/8]}",
			want: []string{`listen_proxy_protocol.trusted[1]: "10.0.0.1" is not a CIDR`, `listen_proxy_protocol.trusted[2]: "nonsense/8" is not a CIDR`}},
		{name: "proxy protocol empty", yaml: "listen_proxy_protocol: {trusted: []}",
			want: []string{"listen_proxy_protocol.trusted: empty"}},
		{name: "proxy protocol unknown key", yaml: "listen_proxy_protocol: {trust: [10.0.0.0/8]}",
			want: []string{"listen_proxy_protocol.trust: unknown key"}},
		{name: "wal.max_batch_bytes too small", yaml: "wal: {max_batch_bytes: 1MiB}",
			want: []string{"wal.max_batch_bytes: 1048576 must hold one whole hook (limits.max_body_bytes + limits.max_header_bytes + 64KiB = 1130496)"}},
		{name: "wal.max_batch_bytes one byte short", yaml: "wal: {max_batch_bytes: 1130495}", want: []string{"wal.max_batch_bytes: "}},
		{name: "wal.max_batch_bytes exactly one hook", yaml: "wal: {max_batch_bytes: 1130496}"},
		{name: "wal.max_batch_bytes follows the body limit", yaml: "limits: {max_body_bytes: 64KiB}\nwal: {max_batch_bytes: 144KiB}"},
		{name: "segment.max_bytes too small", yaml: "segment: {max_bytes: 1KiB}", want: []string{"segment.max_bytes: 1024 must be between 64KiB and 4GiB"}},
		{name: "storage.reserve_bytes too small", yaml: "storage: {reserve_bytes: 1KiB}", want: []string{"storage.reserve_bytes: 1024 must be between 1MiB and 64GiB"}},
		{name: "storage.reserve_bytes too large", yaml: "storage: {reserve_bytes: 65GiB}", want: []string{"storage.reserve_bytes: "}},
		{name: "segment.max_bytes too large", yaml: "segment: {max_bytes: 8GiB}", want: []string{"segment.max_bytes: "}},
		{name: "segment.max_age too short", yaml: "segment: {max_age: 1ms}", want: []string{"segment.max_age: 1ms must be at least 10ms"}},
		{name: "segment.retain_local negative", yaml: "segment: {retain_local: -1h}", want: []string{"segment.retain_local: invalid duration \"-1h\""}},
		{name: "segment.dictionary not a bool", yaml: "segment: {dictionary: sometimes}", want: []string{"segment.dictionary: "}},
		{name: "segment.dictionary off", yaml: "segment: {dictionary: false}"},
		{name: "segment.scrub_rate too low", yaml: "segment: {scrub_rate: 1KiB}", want: []string{"segment.scrub_rate: 1024 bytes/s must be 0 (scrubber off) or between 64KiB and 4GiB"}},
		{name: "segment.scrub_rate too high", yaml: "segment: {scrub_rate: 8GiB}", want: []string{"segment.scrub_rate: "}},
		{name: "segment.scrub_rate not a size", yaml: "segment: {scrub_rate: fast}", want: []string{"segment.scrub_rate: "}},
		{name: "segment.scrub_rate negative", yaml: "segment: {scrub_rate: -1}", want: []string{"segment.scrub_rate: "}},
		{name: "segment.scrub_rate off", yaml: "segment: {scrub_rate: 0}"},
		{name: "segment.scrub_rate at the minimum", yaml: "segment: {scrub_rate: 64KiB}"},
		{name: "wal.max_file_bytes too small", yaml: "wal: {max_file_bytes: 512KiB}", want: []string{"wal.max_file_bytes: 524288 is below the minimum of 1MiB"}},
		{name: "wal.type unknown", yaml: "wal: {type: tape}", want: []string{`wal.type: "tape" must be disk or none`}},

		// Rate limits.
		{name: "negative rate", yaml: "rate_limits: {default: {rate: -1, burst: 1}}", want: []string{"rate_limits.default: rate, burst"}},
		{name: "negative tenant burst", yaml: "rate_limits: {tenants: {acme: {rate: 1, burst: -1}}}", want: []string{"rate_limits.tenants.acme: rate, burst"}},
		{name: "NaN rate", yaml: "rate_limits: {default: {rate: .nan, burst: 1}}", want: []string{"rate_limits.default.rate: NaN must be a finite number"}},
		{name: "unknown rate limit scope", yaml: "rate_limits: {scope: cluster}", want: []string{`rate_limits.scope: "cluster" must be node or fleet`}},
		{name: "tenants.max negative", yaml: "tenants: {max: -1}", want: []string{"tenants.max: -1 must be at least 1"}},

		// Archive, stores, dedupe, log.
		{name: "archive dir without path", yaml: "archive: {type: dir}", want: []string{"archive.path: required with archive.type: dir"}},
		{name: "archive dir", yaml: "archive: {type: dir, path: ./data/archive}"},
		{name: "archive s3 without bucket", yaml: "archive: {type: s3, endpoint: 127.0.0.1:7070}", want: []string{"archive: endpoint and bucket are required"}},
		{name: "archive ftp", yaml: "archive: {type: ftp}", want: []string{`archive.type: "ftp" must be s3, dir or none`}},
		{name: "unknown source store", yaml: "source_store: {type: etcd}", want: []string{`source_store.type: "etcd" must be static, persistent or redis`}},
		{name: "dedupe scope", yaml: "dedupe: {scope: global}", want: []string{`dedupe.scope: "global" must be node or fleet`}},
		{name: "log format", yaml: "log: {format: xml}", want: []string{`log.format: "xml" must be json or console`}},
		{name: "log level", yaml: "log: {level: trace}", want: []string{`log.level: "trace" must be debug, info, warn or error`}},

		// Sources.
		{name: "verify type missing", yaml: "sources: {s: {tenant_id: acme}}", want: []string{"sources.s.verify.type: required"}},
		{name: "verify type unknown", yaml: "sources: {s: {verify: {type: md5}}}", want: []string{`sources.s.verify.type: unknown verifier "md5"`}},
		{name: "verifier without a secret", yaml: "sources: {s: {verify: {type: hmac, header: X-Sig}}}", want: []string{`sources.s.verify.secret: required by verifier "hmac"`}},
		{name: "verifier with secrets list", yaml: "sources: {s: {verify: {type: hmac, header: X-Sig, secrets: [a, b]}}}"},
		{name: "verifier not in this build", yaml: "sources: {s: {verify: {type: hmac, secret: x}}}", opts: buildOptions,
			want: []string{`sources.s.verify.type: verifier "hmac" is not available in this build yet`}},
		{name: "on_verify_failure unknown", yaml: "sources: {s: {verify: {type: none}, on_verify_failure: drop}}",
			want: []string{`sources.s.on_verify_failure: "drop" must be reject, quarantine or accept_flag`}},
		{name: "on_verify_failure accept_flag", yaml: "sources: {s: {verify: {type: none}, on_verify_failure: accept_flag}}"},
		{name: "sink type unknown", yaml: "sources: {s: {verify: {type: none}, sinks: [{type: http, url: http://r.example/in}, {type: kinesis}]}}",
			want: []string{`sources.s.sinks[1].type: "kinesis" must be one of [http rabbitmq kafka nats file]`}},
		{name: "http sink without url", yaml: "sources: {s: {verify: {type: none}, sinks: [{type: http}]}}",
			want: []string{"sources.s.sinks[0].url: required for an http sink"}},
		{name: "rabbitmq sink without url", yaml: "sources: {s: {verify: {type: none}, sinks: [{type: rabbitmq, exchange: x}]}}",
			want: []string{"sources.s.sinks[0].url: required for a rabbitmq sink"}},
		{name: "kafka sink", yaml: "sources: {s: {verify: {type: none}, sinks: [{type: kafka, brokers: ['k1:9092', 'k2:9092'], topic: 'hooks.{tenant_id}', sasl: {mechanism: scram-sha-512, username: u, password: p}, tls: {ca_file: /ca.pem}}]}}"},
		{name: "kafka sink without brokers or topic", yaml: "sources: {s: {verify: {type: none}, sinks: [{type: kafka}]}}",
			want: []string{"sources.s.sinks[0].brokers: required for a kafka sink", "sources.s.sinks[0].topic: required for a kafka sink"}},
		{name: "kafka sink with bad keys", yaml: "sources: {s: {verify: {type: none}, sinks: [{type: kafka, brokers: [k1], topic: '{nope}', key: '{tenant', compression: brotli, url: 'http://x', exchange: x, subject: s, sasl: {mechanism: gssapi}, tls: {cert_file: c.pem}}]}}",
			want: []string{`sources.s.sinks[0].brokers[0]: "k1" must be host:port`, "sources.s.sinks[0].topic: ", "sources.s.sinks[0].key: ", `sources.s.sinks[0].compression: "brotli" must be one of`,
				`sources.s.sinks[0].sasl.mechanism: "gssapi" must be one of`, "sources.s.sinks[0].sasl.username: required with sasl", "sources.s.sinks[0].sasl.password: required with sasl",
				"sources.s.sinks[0].tls: cert_file and key_file go together", "sources.s.sinks[0].url: is a key of http, rabbitmq and nats sinks; this sink is kafka",
				"sources.s.sinks[0].exchange: is a key of rabbitmq sinks; this sink is kafka", "sources.s.sinks[0].subject: is a key of nats sinks; this sink is kafka"}},
		{name: "nats sink", yaml: "sources: {s: {verify: {type: none}, sinks: [{type: nats, url: 'nats://127.0.0.1:4222', stream: HOOKS, create_stream: {storage: memory}, auth: {creds_file: /u.creds}}]}}"},
		{name: "nats sink with bad keys", yaml: "sources: {s: {verify: {type: none}, sinks: [{type: nats, url: 'http://x', stream: 'a.b', subject: '{x}', topic: t, create_stream: {storage: disk, replicas: 9, duplicate_window: 10ms}, auth: {token: t, creds_file: f}}]}}",
			want: []string{`sources.s.sinks[0].url: "http://x" must be nats://host:port`, "sources.s.sinks[0].subject: ", `sources.s.sinks[0].stream: "a.b" is not a JetStream stream name`,
				`sources.s.sinks[0].create_stream.storage: "disk" must be file or memory`, "sources.s.sinks[0].create_stream.replicas: 9 must be between 1 and 5",
				"sources.s.sinks[0].create_stream.duplicate_window: 10ms must be at least 1s", "sources.s.sinks[0].auth: give one of",
				"sources.s.sinks[0].topic: is a key of kafka sinks; this sink is nats"}},
		{name: "nats sink without stream", yaml: "sources: {s: {verify: {type: none}, sinks: [{type: nats, url: 'nats://n:4222', auth: {username: u}}]}}",
			want: []string{"sources.s.sinks[0].stream: required for a nats sink", "sources.s.sinks[0].auth: username and password go together"}},
		{name: "claim store", yaml: "claims: {stores: {packs: {type: dir, path: /var/claims}}}\nsources: {s: {verify: {type: none}, sinks: [{type: http, url: http://r.example/in, claim: {store: packs}}]}}"},
		{name: "claim store missing", yaml: "sources: {s: {verify: {type: none}, sinks: [{type: http, url: http://r.example/in, claim: {over_bytes: 10}}]}}",
			want: []string{"sources.s.sinks[0].claim.store: required with claim", "sources.s.sinks[0].claim.over_bytes: 10 must be at least 1KiB"}},
		{name: "claim stores with bad keys", yaml: "claims: {stores: {a: {type: ftp}, b: {type: dir, retain: 1s, pack_bytes: 1KiB, pack_delay: 2m}, c: {type: s3}}}",
			want: []string{`claims.stores.a.type: "ftp" must be s3 or dir`, "claims.stores.b.path: required with type: dir", "claims.stores.b.retain: 1s must be at least 1m",
				"claims.stores.b.pack_bytes: 1024 must be between 1MiB and 256MiB", "claims.stores.b.pack_delay: 2m0s must be between 1ms and 1m", "claims.stores.c: endpoint and bucket are required"}},
		{name: "claim stores with keys of the other type", yaml: "claims: {stores: {a: {type: dir, path: /c, bucket: b, tls: true}, b: {type: s3, endpoint: 'h:9000', bucket: b, path: /c}}}",
			want: []string{"claims.stores.a.bucket: a key of s3 claim stores; this one is dir", "claims.stores.a.tls: a key of s3 claim stores", "claims.stores.b.path: a key of dir claim stores; this one is s3"}},
		{name: "memory stream without a wal", yaml: "wal: {type: none}\nsources: {s: {verify: {type: none}, sinks: [{type: nats, url: 'nats://n:4222', stream: S, create_stream: {storage: memory}}]}}",
			want: []string{"sources.s.sinks[0].create_stream.storage: memory; wal.type is none"}},
		{name: "kafka brokers unquoted in a flow list", yaml: "sources: {s: {verify: {type: none}, sinks: [{type: kafka, brokers: [k1:9092], topic: t}]}}",
			want: []string{`sources.s.sinks[0].brokers[0]: cannot unmarshal mapping into Go value of type string; a string with a colon, such as host:port in a flow list [...], must be quoted: "k1:9092"`}},
		// The file sink: path required, its own and nobody else's.
		{name: "file sink without path", yaml: "sources: {s: {verify: {type: none}, sinks: [{type: file}]}}",
			want: []string{"sources.s.sinks[0].path: required for a file sink"}},
		{name: "path on an http sink", yaml: "sources: {s: {verify: {type: none}, sinks: [{type: http, url: http://r.example/in, path: ./x.ndjson}]}}",
			want: []string{"sources.s.sinks[0].path: is a key of file sinks; this sink is http"}},
		{name: "url on a file sink", yaml: "sources: {s: {verify: {type: none}, sinks: [{type: file, path: ./x.ndjson, url: http://r.example/in}]}}",
			want: []string{"sources.s.sinks[0].url: is a key of http, rabbitmq and nats sinks; this sink is file"}},
		{name: "keys a file sink does not read", yaml: "sources: {s: {verify: {type: none}, sinks: [{type: file, path: ./x.ndjson, format: raw, connect_timeout: 1s, headers: {a: b}}]}}",
			want: []string{"sources.s.sinks[0].connect_timeout: a file sink connects to nothing", "sources.s.sinks[0].headers: is a key of http sinks; this sink is file",
				`sources.s.sinks[0].format: "raw"; a file sink writes one JSON envelope a line`}},
		{name: "file sink path a directory", yaml: "sources: {s: {verify: {type: none}, sinks: [{type: file, path: ./data/}]}}",
			want: []string{`sources.s.sinks[0].path: "./data/" names a directory`}},
		{name: "file sink without a wal", yaml: "wal: {type: none}\nsources: {s: {verify: {type: none}, sinks: [{type: file, path: ./x.ndjson}]}}",
			want: []string{"sources.s.sinks: wal.type is none, so a hook is safe only once a durable sink"}},
		{name: "two file sinks on one file", yaml: "sources: {a: {verify: {type: none}, sinks: [{type: file, path: ./x.ndjson}]}, b: {verify: {type: none}, sinks: [{type: file, path: x.ndjson}, {type: file, path: ./y.ndjson}]}}",
			want: []string{`sources.b.sinks[0].path: "x.ndjson" is the file of sources.a.sinks[0] too; give each file sink a file of its own`}},
		{name: "file sink inside what the node keeps", yaml: "node: {data_dir: /var/lib/ankusa}\narchive: {type: dir, path: /srv/archive}\nsources: {a: {verify: {type: none}, sinks: [{type: file, path: /var/lib/ankusa/meta/CURRENT}, {type: file, path: /var/lib/ankusa/admin-token}, {type: file, path: /srv/archive/x.ndjson}, {type: file, path: /var/lib/ankusa/wal}, {type: file, path: /var/lib/ankusa/hooks.ndjson}]}}",
			want: []string{`sources.a.sinks[0].path: "/var/lib/ankusa/meta/CURRENT" is inside /var/lib/ankusa/meta, which the node keeps for itself`,
				`sources.a.sinks[1].path: "/var/lib/ankusa/admin-token" is inside /var/lib/ankusa/admin-token`,
				`sources.a.sinks[2].path: "/srv/archive/x.ndjson" is inside /srv/archive`,
				`sources.a.sinks[3].path: "/var/lib/ankusa/wal" is inside /var/lib/ankusa/wal`}},
		{name: "file sink path a template", yaml: "sources: {a: {verify: {type: none}, sinks: [{type: file, path: '/tmp/{tenant_id}.ndjson'}]}}",
			want: []string{`sources.a.sinks[0].path: "/tmp/{tenant_id}.ndjson": a file sink's path is not a template`}},
		{name: "file sink for lifecycle events", yaml: "lifecycle: {sink: {type: file, path: ./events.ndjson}}",
			want: []string{"lifecycle.sink.type: file; the file sink writes hooks' envelopes"}},
		{name: "dedupe without key", yaml: "sources: {s: {verify: {type: none}, dedupe: {ttl: 1h}}}", want: []string{"sources.s.dedupe.key: required when dedupe is set"}},
		{name: "source max_body_bytes negative", yaml: "sources: {s: {verify: {type: none}, max_body_bytes: -1}}", want: []string{"sources.s.max_body_bytes: "}},
		{name: "null source", yaml: "sources: {s: }", want: []string{"sources.s.verify.type: required"}},

		// Several problems: every one is reported.
		{name: "several problems",
			yaml: "listen: nowhere\nroute_resolver: {type: tenantpath}\nwal: {max_file_bytes: 1KiB}\nsources:\n  Bad: {verify: {type: none}}\n  open: {verify: {type: none}}",
			want: []string{`listen: "nowhere"`, "rate_limits.default: ", "wal.max_file_bytes: ", "sources.Bad: source name must match", "sources.Bad: shared source", "sources.open: shared source"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			probs := problemsOf(t, c.yaml, c.opts)
			ok := len(probs) == len(c.want)
			for i := 0; ok && i < len(probs); i++ {
				ok = strings.HasPrefix(probs[i], c.want[i])
			}
			if !ok {
				t.Fatalf("%s\n got  %q\n want prefixes %q", c.yaml, probs, c.want)
			}
		})
	}
}

// The shared-source rule names the fix in its message.
func TestTrustURLTenantMessageSaysTheFix(t *testing.T) {
	probs := problemsOf(t, finiteDefault+"route_resolver: {type: tenantpath}\nsources: {open-demo: {verify: {type: none}}}", buildOptions)
	if len(probs) != 1 || !strings.Contains(probs[0], "trust_url_tenant: true") || !strings.Contains(probs[0], "verifier") {
		t.Fatalf("problems %q: want one saying to set trust_url_tenant: true or add a verifier", probs)
	}
}

// ValidateSource is what the admin API will call: the same rule, the same
// message, without a file around it.
func TestValidateSource(t *testing.T) {
	f := func(s Source, ctx SourceContext, want ...string) {
		t.Helper()
		probs := ValidateSource("open-demo", &s, ctx)
		ok := len(probs) == len(want)
		for i := 0; ok && i < len(probs); i++ {
			ok = strings.HasPrefix(probs[i], want[i])
		}
		if !ok {
			t.Fatalf("ValidateSource(%+v, %+v)\n got  %q\n want %q", s, ctx, probs, want)
		}
	}
	none := Verify{Type: "none"}
	tp := SourceContext{Resolver: "tenantpath", WALType: "disk"}
	f(Source{TenantID: DefaultTenant, Verify: none, OnVerifyFailure: "reject"}, tp, "sources.open-demo: shared source")
	f(Source{TenantID: DefaultTenant, Verify: none, OnVerifyFailure: "reject", TrustURLTenant: true}, tp)
	f(Source{TenantID: "acme", Verify: none, OnVerifyFailure: "reject"}, tp)
	f(Source{TenantID: DefaultTenant, Verify: none, OnVerifyFailure: "reject"}, SourceContext{Resolver: "path"})
	// No resolver in the context (a store that does not know it): no rule.
	f(Source{TenantID: DefaultTenant, Verify: none, OnVerifyFailure: "reject"}, SourceContext{})
	// Undefaulted spec: an empty tenant is not a valid name.
	f(Source{Verify: none, OnVerifyFailure: "reject"}, SourceContext{Resolver: "path"}, `sources.open-demo.tenant_id: "" must match`)
	// A file sink: from the config file, yes; written at runtime (the
	// admin API), no: the caller would choose a file on the node.
	file := []Sink{{ID: "f", Type: "file", Path: "./x.ndjson"}}
	ApplySinkDefaults(&file[0])
	f(Source{TenantID: "acme", Verify: none, OnVerifyFailure: "reject", Sinks: file}, SourceContext{Resolver: "path"})
	f(Source{TenantID: "acme", Verify: none, OnVerifyFailure: "reject", Sinks: file}, SourceContext{Resolver: "path", Runtime: true},
		"sources.open-demo.sinks[0].type: file sinks are set in the config file only")
}

// The problems of a config come in a stable order, so check-config output
// can be diffed.
func TestProblemsAreStable(t *testing.T) {
	yaml := finiteDefault + "route_resolver: {type: tenantpath}\nsources:\n  e: {verify: {type: none}}\n  d: {verify: {type: none}}\n  c: {verify: {type: none}}\n  b: {verify: {type: none}}\n  a: {verify: {type: none}}"
	first := problemsOf(t, yaml, buildOptions)
	if len(first) != 5 || !slices.IsSorted(first) {
		t.Fatalf("problems %q: want five, sorted by source", first)
	}
	for i := 0; i < 20; i++ {
		if got := problemsOf(t, yaml, buildOptions); !slices.Equal(got, first) {
			t.Fatalf("run %d: problems %q differ from %q", i, got, first)
		}
	}
}

// With wal.type: none a 201 rests on a sink's ok: a source without a
// durable sink cannot be served, whatever this build's sinks are.
func TestWALNoneNeedsADurableSink(t *testing.T) {
	probs := problemsOf(t, "wal: {type: none}\nsources: {s: {tenant_id: acme, verify: {type: none}}}", ValidateOptions{})
	if !slices.ContainsFunc(probs, func(p string) bool { return strings.Contains(p, "durable") }) {
		t.Fatalf("problems %q: want one saying a durable sink is needed", probs)
	}
}

// rabbitSink is a durable sink, what a source needs under wal.type: none.
const rabbitSink = "sinks: [{type: rabbitmq, url: 'amqp://mq.example/', exchange: hooks}]"

// The dedupe, Redis and quarantine keys: each bound is a problem naming
// the key, and the value just inside it is valid.
func TestValidateDedupeAndQuarantine(t *testing.T) {
	cases := []struct {
		name, yaml string
		want       []string // prefixes, in order; empty: valid
	}{
		{name: "dedupe.ttl under 1s", yaml: "dedupe: {ttl: 999ms}", want: []string{"dedupe.ttl: 999ms must be at least 1s"}},
		{name: "dedupe.ttl 1s", yaml: "dedupe: {ttl: 1s}"},
		{name: "fleet dedupe without redis", yaml: "dedupe: {scope: fleet}",
			want: []string{"redis.url: required with dedupe.scope: fleet (keys are shared through Redis)"}},
		{name: "fleet dedupe with redis", yaml: "dedupe: {scope: fleet}\nredis: {url: 'redis://127.0.0.1:6379/0'}"},
		{name: "node dedupe needs no redis", yaml: "dedupe: {scope: node}"},
		{name: "max_quarantine_bytes under 1MiB", yaml: "limits: {max_quarantine_bytes: 1048575}",
			want: []string{"limits.max_quarantine_bytes: 1048575 is below the minimum of 1MiB"}},
		{name: "max_quarantine_bytes 1MiB", yaml: "limits: {max_quarantine_bytes: 1MiB}"},

		{name: "source dedupe without key", yaml: "sources: {s: {verify: {type: none}, dedupe: {}}}",
			want: []string{"sources.s.dedupe.key: required when dedupe is set (header:NAME, json:PATH or auto)"}},
		{name: "source dedupe ttl under 1s", yaml: "sources: {s: {verify: {type: none}, dedupe: {key: 'header:X-Id', ttl: 10ms}}}",
			want: []string{"sources.s.dedupe.ttl: 10ms must be at least 1s"}},
		{name: "source dedupe ttl 1s", yaml: "sources: {s: {verify: {type: none}, dedupe: {key: 'header:X-Id', ttl: 1s}}}"},
		{name: "source dedupe without key nor ttl bound",
			yaml: "sources: {s: {verify: {type: none}, dedupe: {ttl: 500ms}}}",
			want: []string{"sources.s.dedupe.key: required", "sources.s.dedupe.ttl: 500ms must be at least 1s"}},
		{name: "node dedupe with wal none",
			yaml: "wal: {type: none}\nsources: {s: {verify: {type: none}, dedupe: {key: 'header:X-Id'}, " + rabbitSink + "}}",
			want: []string{"sources.s.dedupe: node-scope keys are kept with the log and wal.type none keeps none; use dedupe.scope: fleet (Redis)"}},
		{name: "fleet dedupe with wal none",
			yaml: "wal: {type: none}\ndedupe: {scope: fleet}\nredis: {url: 'redis://r:6379'}\nsources: {s: {verify: {type: none}, dedupe: {key: 'header:X-Id'}, " + rabbitSink + "}}"},
		{name: "wal none without dedupe", yaml: "wal: {type: none}\nsources: {s: {verify: {type: none}, " + rabbitSink + "}}"},
		{name: "quarantine with wal none",
			yaml: "wal: {type: none}\nsources: {s: {verify: {type: none}, on_verify_failure: quarantine, " + rabbitSink + "}}",
			want: []string{"sources.s.on_verify_failure: quarantine holds hooks in the node's log and wal.type none keeps none; use reject or accept_flag"}},
		{name: "accept_flag with wal none",
			yaml: "wal: {type: none}\nsources: {s: {verify: {type: none}, on_verify_failure: accept_flag, " + rabbitSink + "}}"},
		{name: "quarantine rate negative", yaml: "sources: {s: {verify: {type: none}, quarantine: {rate: -1, burst: 5}}}",
			want: []string{"sources.s.quarantine.rate: -1 must be a finite number of hooks per second, 0 or more"}},
		{name: "quarantine rate NaN", yaml: "sources: {s: {verify: {type: none}, quarantine: {rate: .nan, burst: 5}}}",
			want: []string{"sources.s.quarantine.rate: NaN must be"}},
		{name: "quarantine rate infinite", yaml: "sources: {s: {verify: {type: none}, quarantine: {rate: .inf, burst: 5}}}",
			want: []string{"sources.s.quarantine.rate: +Inf must be"}},
		{name: "quarantine rate minus infinity", yaml: "sources: {s: {verify: {type: none}, quarantine: {rate: -.inf, burst: 5}}}",
			want: []string{"sources.s.quarantine.rate: -Inf must be"}},
		{name: "quarantine burst 0", yaml: "sources: {s: {verify: {type: none}, quarantine: {rate: 1, burst: 0}}}",
			want: []string{"sources.s.quarantine.burst: 0 must be at least 1"}},
		{name: "quarantine burst negative and rate NaN", yaml: "sources: {s: {verify: {type: none}, quarantine: {rate: .nan, burst: -3}}}",
			want: []string{"sources.s.quarantine.rate: NaN", "sources.s.quarantine.burst: -3 must be at least 1"}},
		{name: "quarantine rate 0 burst 1", yaml: "sources: {s: {verify: {type: none}, quarantine: {rate: 0, burst: 1}}}"},
		{name: "every new problem at once",
			yaml: "wal: {type: none}\ndedupe: {ttl: 100ms}\nlimits: {max_quarantine_bytes: 1KiB}\n" +
				"sources: {s: {verify: {type: none}, on_verify_failure: quarantine, dedupe: {ttl: 1ms}, quarantine: {rate: -2, burst: 0}, " + rabbitSink + "}}",
			want: []string{"dedupe.ttl: ", "limits.max_quarantine_bytes: 1024 ", "sources.s.dedupe.key: ", "sources.s.dedupe.ttl: 1ms ",
				"sources.s.dedupe: node-scope", "sources.s.on_verify_failure: quarantine holds", "sources.s.quarantine.rate: -2 ", "sources.s.quarantine.burst: 0 "}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			probs := problemsOf(t, c.yaml, buildOptions)
			ok := len(probs) == len(c.want)
			for i := 0; ok && i < len(probs); i++ {
				ok = strings.HasPrefix(probs[i], c.want[i])
			}
			if !ok {
				t.Fatalf("%s\n got  %q\n want prefixes %q", c.yaml, probs, c.want)
			}
		})
	}
}

// CheckDedupe sees the key and the verifier type; its error is prefixed
// with the source. It is not asked about a missing key.
func TestValidateCheckDedupe(t *testing.T) {
	var asked []string
	opts := buildOptions
	opts.VerifierKnown = nil
	opts.CheckDedupe = func(key, vt string) error {
		asked = append(asked, key+" "+vt)
		if key == "auto" && vt == "none" {
			return errors.New(`dedupe.key: auto needs a verifier that names the event id; verifier "none" does not`)
		}
		return nil
	}
	yaml := "sources:\n" +
		"  a: {verify: {type: none}, dedupe: {key: auto}}\n" +
		"  b: {verify: {type: stripe, secret: whsec_x}, dedupe: {key: auto}}\n" +
		"  c: {verify: {type: none}, dedupe: {key: 'json:id'}}\n" +
		"  d: {verify: {type: none}, dedupe: {ttl: 1h}}\n" +
		"  e: {verify: {type: none}}\n"
	probs := problemsOf(t, yaml, opts)
	want := []string{
		`sources.a.dedupe.key: auto needs a verifier that names the event id; verifier "none" does not`,
		"sources.d.dedupe.key: required when dedupe is set (header:NAME, json:PATH or auto)",
	}
	if !slices.Equal(probs, want) {
		t.Fatalf("problems\n%q\nwant\n%q", probs, want)
	}
	if wantAsked := []string{"auto none", "auto stripe", "json:id none"}; !slices.Equal(asked, wantAsked) {
		t.Fatalf("CheckDedupe asked %q, want %q", asked, wantAsked)
	}
	// Without a CheckDedupe any non-empty key passes.
	opts.CheckDedupe = nil
	if probs := problemsOf(t, yaml, opts); !slices.Equal(probs, want[1:]) {
		t.Fatalf("without CheckDedupe: %q", probs)
	}
}

// ValidateSource, as the admin API calls it: the same rules on a spec
// built in Go.
func TestValidateSourceDedupeAndQuarantine(t *testing.T) {
	base := func() Source {
		s := Source{TenantID: "acme", Verify: Verify{Type: "none"}, OnVerifyFailure: "reject",
			Sinks: []Sink{{Type: "rabbitmq", URL: "amqp://mq.example/", Exchange: "hooks"}}}
		applySinkDefaults(s.Sinks)
		return s
	}
	f := func(mod func(*Source), ctx SourceContext, want ...string) {
		t.Helper()
		s := base()
		mod(&s)
		probs := ValidateSource("s", &s, ctx)
		if !slices.Equal([]string(probs), want) {
			t.Fatalf("ValidateSource(%+v, %+v)\n got  %q\n want %q", s, ctx, probs, want)
		}
	}
	disk := SourceContext{WALType: "disk", DedupeScope: "node"}
	none := SourceContext{WALType: "none", DedupeScope: "node"}
	fleetNone := SourceContext{WALType: "none", DedupeScope: "fleet"}
	key := func(k string, ttl Duration) func(*Source) {
		return func(s *Source) { s.Dedupe = &SourceDedupe{Key: k, TTL: ttl} }
	}
	f(key("header:X-Id", 0), disk)
	f(key("header:X-Id", Duration(time.Second)), disk)
	f(key("header:X-Id", Duration(time.Second-1)), disk, "sources.s.dedupe.ttl: 999.999999ms must be at least 1s")
	f(key("header:X-Id", Duration(-time.Second)), disk, "sources.s.dedupe.ttl: -1s must be at least 1s")
	f(key("", 0), disk, "sources.s.dedupe.key: required when dedupe is set (header:NAME, json:PATH or auto)")
	f(key("header:X-Id", 0), none, "sources.s.dedupe: node-scope keys are kept with the log and wal.type none keeps none; use dedupe.scope: fleet (Redis)")
	f(key("header:X-Id", 0), fleetNone)
	f(func(s *Source) {}, none)

	bad := SourceContext{WALType: "disk", ValidateOptions: ValidateOptions{CheckDedupe: func(key, vt string) error {
		return fmt.Errorf("dedupe.key: %q: unknown form for verifier %s", key, vt)
	}}}
	f(key("xml:id", 0), bad, `sources.s.dedupe.key: "xml:id": unknown form for verifier none`)

	mode := func(m string) func(*Source) { return func(s *Source) { s.OnVerifyFailure = m } }
	f(mode("quarantine"), disk)
	f(mode("accept_flag"), disk)
	f(mode("quarantine"), none, "sources.s.on_verify_failure: quarantine holds hooks in the node's log and wal.type none keeps none; use reject or accept_flag")
	f(mode("accept_flag"), none)
	f(mode("reject"), none)

	bucket := func(rate float64, burst int) func(*Source) {
		return func(s *Source) { s.Quarantine = &Quarantine{Rate: rate, Burst: burst} }
	}
	f(bucket(0, 1), disk)
	f(bucket(DefaultQuarantineRate, DefaultQuarantineBurst), disk)
	f(bucket(-0.5, 1), disk, "sources.s.quarantine.rate: -0.5 must be a finite number of hooks per second, 0 or more")
	f(bucket(math.NaN(), 1), disk, "sources.s.quarantine.rate: NaN must be a finite number of hooks per second, 0 or more")
	f(bucket(math.Inf(1), 1), disk, "sources.s.quarantine.rate: +Inf must be a finite number of hooks per second, 0 or more")
	f(bucket(1, 0), disk, "sources.s.quarantine.burst: 0 must be at least 1")
	f(bucket(1, -1), disk, "sources.s.quarantine.burst: -1 must be at least 1")
}

// quarantine and accept_flag are served (an older build refused them):
// neither the default build options nor a list naming every mode refuse
// them.
func TestVerifyFailureModesAccepted(t *testing.T) {
	all := buildOptions
	all.OnVerifyFailure = []string{"reject", "quarantine", "accept_flag"}
	for _, mode := range []string{"reject", "quarantine", "accept_flag"} {
		yaml := "sources: {s: {tenant_id: acme, verify: {type: none}, on_verify_failure: " + mode + "}}"
		for _, opts := range []ValidateOptions{buildOptions, all} {
			cfg := mustLoad(t, yaml, opts)
			if got := cfg.Sources["s"].OnVerifyFailure; got != mode {
				t.Fatalf("%s: on_verify_failure %q", mode, got)
			}
		}
	}
	// A build that lists the modes it serves still refuses the others.
	old := buildOptions
	old.OnVerifyFailure = []string{"reject"}
	probs := problemsOf(t, "sources: {s: {tenant_id: acme, verify: {type: none}, on_verify_failure: quarantine}}", old)
	if len(probs) != 1 || !strings.HasPrefix(probs[0], `sources.s.on_verify_failure: "quarantine" is not available in this build yet`) {
		t.Fatalf("problems %q", probs)
	}
}

// The defaults of the new keys: node-wide and per source.
func TestDefaultsDedupeQuarantineRedis(t *testing.T) {
	cfg := mustLoad(t, "sources:\n"+
		"  a: {verify: {type: none}, dedupe: {key: 'header:X-Id'}}\n"+
		"  b: {verify: {type: none}, dedupe: {key: 'header:X-Id', ttl: 10m}, quarantine: {rate: 0.5, burst: 2}}\n"+
		"  c: {verify: {type: none}}\n", buildOptions)
	if cfg.Limits.MaxQuarantineBytes != DefaultMaxQuarantine || DefaultMaxQuarantine != 256<<20 {
		t.Errorf("limits.max_quarantine_bytes = %d, want %d", cfg.Limits.MaxQuarantineBytes, 256<<20)
	}
	if cfg.Redis.Namespace != "ankusa:" || cfg.Redis.URL != "" {
		t.Errorf("redis = %+v, want namespace ankusa: and no url", cfg.Redis)
	}
	if cfg.Dedupe.Scope != "node" || cfg.Dedupe.TTL.D() != 72*time.Hour {
		t.Errorf("dedupe = %+v", cfg.Dedupe)
	}
	a, b, c := cfg.Sources["a"], cfg.Sources["b"], cfg.Sources["c"]
	if a.Dedupe == nil || a.Dedupe.Key != "header:X-Id" || a.Dedupe.TTL.D() != 72*time.Hour {
		t.Errorf("sources.a.dedupe = %+v, want dedupe.ttl (72h)", a.Dedupe)
	}
	if b.Dedupe == nil || b.Dedupe.TTL.D() != 10*time.Minute {
		t.Errorf("sources.b.dedupe = %+v, want its own 10m", b.Dedupe)
	}
	if c.Dedupe != nil {
		t.Errorf("sources.c.dedupe = %+v, want none", c.Dedupe)
	}
	if a.Quarantine == nil || *a.Quarantine != (Quarantine{Rate: DefaultQuarantineRate, Burst: DefaultQuarantineBurst}) ||
		DefaultQuarantineRate != 5 || DefaultQuarantineBurst != 50 {
		t.Errorf("sources.a.quarantine = %+v, want 5/s burst 50", a.Quarantine)
	}
	if b.Quarantine == nil || *b.Quarantine != (Quarantine{Rate: 0.5, Burst: 2}) {
		t.Errorf("sources.b.quarantine = %+v, want its own", b.Quarantine)
	}

	// Given keys are kept; a source's ttl follows dedupe.ttl.
	cfg = mustLoad(t, "dedupe: {ttl: 2h, scope: fleet}\nredis: {url: 'redis://r:6379', namespace: 'ci-7:'}\nlimits: {max_quarantine_bytes: 8MiB}\n"+
		"sources: {a: {verify: {type: none}, dedupe: {key: 'header:X-Id'}}}", buildOptions)
	if cfg.Redis.Namespace != "ci-7:" || cfg.Limits.MaxQuarantineBytes != 8<<20 || cfg.Sources["a"].Dedupe.TTL.D() != 2*time.Hour {
		t.Errorf("redis %+v, max_quarantine_bytes %d, sources.a.dedupe %+v", cfg.Redis, cfg.Limits.MaxQuarantineBytes, cfg.Sources["a"].Dedupe)
	}
}

// ApplySourceDefaults fills a spec's dedupe ttl and quarantine bucket
// without writing through the pointers it was given (a spec may share
// them with the one it was copied from).
func TestApplySourceDefaults(t *testing.T) {
	shared := &SourceDedupe{Key: "json:id"}
	s := Source{Dedupe: shared}
	ApplySourceDefaults(&s, Duration(time.Hour))
	if s.Dedupe.TTL.D() != time.Hour || s.Dedupe.Key != "json:id" {
		t.Fatalf("dedupe %+v, want json:id for 1h", s.Dedupe)
	}
	if shared.TTL != 0 || s.Dedupe == shared {
		t.Fatalf("the shared dedupe spec was written: %+v", shared)
	}
	if s.Quarantine == nil || *s.Quarantine != (Quarantine{Rate: DefaultQuarantineRate, Burst: DefaultQuarantineBurst}) {
		t.Fatalf("quarantine %+v", s.Quarantine)
	}

	own := &Quarantine{Rate: 1, Burst: 1}
	s = Source{Dedupe: &SourceDedupe{Key: "auto", TTL: Duration(time.Minute)}, Quarantine: own}
	ApplySourceDefaults(&s, Duration(time.Hour))
	if s.Dedupe.TTL.D() != time.Minute || s.Quarantine != own || *own != (Quarantine{Rate: 1, Burst: 1}) {
		t.Fatalf("given keys changed: dedupe %+v, quarantine %+v", s.Dedupe, s.Quarantine)
	}

	s = Source{}
	ApplySourceDefaults(&s, Duration(time.Hour))
	if s.Dedupe != nil {
		t.Fatalf("a source without dedupe got %+v", s.Dedupe)
	}
	// Twice is once.
	before := s
	ApplySourceDefaults(&s, Duration(2*time.Hour))
	if *s.Quarantine != *before.Quarantine || s.Dedupe != nil {
		t.Fatalf("second ApplySourceDefaults changed %+v", s)
	}
}

func TestWarnings(t *testing.T) {
	f := func(listen string, warn bool) {
		t.Helper()
		c, err := Load([]byte("admin: {listen: '"+listen+"'}"), ValidateOptions{})
		if err != nil {
			t.Fatalf("%s: %v", listen, err)
		}
		w := Warnings(c)
		if got := len(w) == 1 && strings.HasPrefix(w[0], "admin.listen: \""+listen+"\" is not a loopback address"); got != warn || (!warn && len(w) != 0) {
			t.Errorf("Warnings(admin.listen %s) = %q, want a warning: %v", listen, w, warn)
		}
	}
	f("127.0.0.1:9090", false)
	f("127.3.4.5:9090", false)
	f("[::1]:9090", false)
	f("localhost:9090", false)
	f(":9090", true)
	f("0.0.0.0:9090", true)
	f("[::]:9090", true)
	f("10.0.0.7:9090", true)
	f("admin.example.com:9090", true)
	// The default has none.
	c, err := Load(nil, ValidateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if w := Warnings(c); len(w) != 0 {
		t.Errorf("Warnings(default) = %q", w)
	}
}

// The parts of the design this build does not run yet are refused by
// their keys, never accepted and ignored.
func TestNotYetBuiltRefused(t *testing.T) {
	for yaml, want := range map[string]string{
		"node: {roles: [edge, archive]}":   `node.roles: [edge archive] leaves out "dispatch"`,
		"node: {roles: [dispatch, admin]}": `node.roles: [dispatch admin] leaves out "edge"`,
	} {
		probs := problemsOf(t, yaml, ValidateOptions{})
		if !slices.ContainsFunc(probs, func(p string) bool { return strings.HasPrefix(p, want) }) {
			t.Errorf("%s: problems %q, want one starting %q", yaml, probs, want)
		}
	}
	if probs := problemsOf(t, "node: {roles: [edge, dispatch, admin]}", ValidateOptions{}); len(probs) != 0 {
		t.Errorf("a node without the archive role: %q", probs)
	}
}

// TestMaxConnectionsPerClientDefault: half of max_connections, not below
// 64, nor above max_connections.
func TestMaxConnectionsPerClientDefault(t *testing.T) {
	for _, c := range []struct{ max, want int }{{2, 2}, {64, 64}, {100, 64}, {128, 64}, {2000, 1000}, {10000, 5000}} {
		cfg := mustLoad(t, fmt.Sprintf("limits: {max_connections: %d}", c.max), ValidateOptions{})
		if got := cfg.Limits.MaxConnectionsPerClient; got != c.want {
			t.Errorf("max_connections %d: max_connections_per_client defaults to %d, want %d", c.max, got, c.want)
		}
	}
	cfg := mustLoad(t, "listen_proxy_protocol: {trusted: [10.1.2.3/8]}", ValidateOptions{})
	if p := cfg.ListenProxyProtocol.Prefixes(); len(p) != 1 || p[0].String() != "10.0.0.0/8" {
		t.Errorf("Prefixes() = %v, want [10.0.0.0/8]", p)
	}
}

// A broker sink's derived id is its target's: the Kafka seed brokers in
// any order and the topic, the NATS hosts (never the credentials), stream
// and subject; the keys that only tune delivery leave it alone.
func TestBrokerSinkID(t *testing.T) {
	k := Sink{Type: "kafka", Brokers: []string{"k1:9092", "k2:9092"}, Topic: "hooks"}
	reordered := k
	reordered.Brokers = []string{"k2:9092", "k1:9092"}
	tuned := k
	tuned.Compression, tuned.Key, tuned.Timeout = "lz4", "{source_id}", Duration(time.Second)
	other := k
	other.Topic = "other"
	if SinkID(&k) != SinkID(&reordered) || SinkID(&k) != SinkID(&tuned) || SinkID(&k) == SinkID(&other) || !strings.HasPrefix(SinkID(&k), "kafka-") {
		t.Fatalf("kafka ids: %s %s %s %s", SinkID(&k), SinkID(&reordered), SinkID(&tuned), SinkID(&other))
	}
	n := Sink{Type: "nats", URL: "nats://n1:4222", Stream: "S", Subject: "a.{tenant_id}"}
	n2 := n
	n2.CreateStream = &CreateStream{Storage: "file"}
	n3 := n
	n3.Stream = "T"
	if SinkID(&n) != SinkID(&n2) || SinkID(&n) == SinkID(&n3) || !strings.HasPrefix(SinkID(&n), "nats-") {
		t.Fatalf("nats ids: %s %s %s", SinkID(&n), SinkID(&n2), SinkID(&n3))
	}
}

// CheckFilter sees each sink's filter that is set, and its problems are
// under the sink; the file's and the admin API's sources alike.
func TestValidateCheckFilter(t *testing.T) {
	var asked []string
	opts := buildOptions
	opts.VerifierKnown = nil
	opts.CheckFilter = func(expr string) error {
		asked = append(asked, expr)
		if expr == "evnt_type == 'push'" {
			return errors.New("filter: ERROR: <input>:1:1: undeclared reference to 'evnt_type' (did you mean 'event_type'?)")
		}
		return nil
	}
	yaml := "sources:\n" +
		"  stripe:\n" +
		"    verify: {type: none}\n" +
		"    sinks:\n" +
		"      - {type: http, url: 'https://a.example/h', filter: \"evnt_type == 'push'\"}\n" +
		"      - {type: http, url: 'https://b.example/h', filter: \"event_type == 'push'\"}\n" +
		"      - {type: http, url: 'https://c.example/h'}\n"
	probs := problemsOf(t, yaml, opts)
	want := []string{"sources.stripe.sinks[0].filter: ERROR: <input>:1:1: undeclared reference to 'evnt_type' (did you mean 'event_type'?)"}
	if !slices.Equal(probs, want) {
		t.Fatalf("problems\n%q\nwant\n%q", probs, want)
	}
	if wantAsked := []string{"evnt_type == 'push'", "event_type == 'push'"}; !slices.Equal(asked, wantAsked) {
		t.Fatalf("CheckFilter asked %q, want %q", asked, wantAsked)
	}
	// ValidateSource, as the admin API calls it.
	src := Source{TenantID: "acme", Verify: Verify{Type: "none"}, Sinks: []Sink{{Type: "http", URL: "https://a.example/h", Filter: "evnt_type == 'push'"}}}
	ApplySourceDefaults(&src, 0)
	probs = ValidateSource("stripe", &src, SourceContext{ValidateOptions: opts})
	if !slices.Contains(probs, want[0]) {
		t.Fatalf("ValidateSource: %q, want %q among them", probs, want[0])
	}
}

// The lifecycle publisher sends every event: a filter there is refused.
func TestLifecycleSinkFilterRefused(t *testing.T) {
	probs := problemsOf(t, "lifecycle: {sink: {type: http, url: 'https://x.example/e', filter: 'true'}}", ValidateOptions{})
	want := []string{"lifecycle.sink.filter: not a key of the lifecycle sink: the publisher sends every lifecycle event; a filter chooses a source's hooks"}
	if !slices.Equal(probs, want) {
		t.Fatalf("problems %q, want %q", probs, want)
	}
}
