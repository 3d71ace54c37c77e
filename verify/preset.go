package verify

import "time"

// Preset is one provider of the catalogue (presets.yaml, embedded): the
// family of its scheme and that family's parameters, so that a provider
// is a block of data, not code. A source selects it with
// `verify: {type: <name>, secret: ...}`.
//
// Templates (Signed) are literal text around placeholders: {body} (the raw
// body), {timestamp} (as received), {id}, {url} (verify.url, or https://
// + Host + the request URI), {method}, {header:NAME}, {json:PATH} (a
// dotted path into the JSON body), and for family rsa {webhook_id}
// (verify.webhook_id) and {crc32} (the decimal CRC32, IEEE, of the body).
type Preset struct {
	// Name selects the preset (verify.type); lower case, [a-z0-9_-].
	Name string `yaml:"name" json:"name"`
	// Title is the provider's name as it writes it.
	Title string `yaml:"title" json:"title"`
	// Family is the scheme: hmac, standardwebhooks, twilio, ed25519,
	// ecdsa, token, basic, body-hmac, jws or rsa.
	Family string `yaml:"family" json:"family"`
	// Docs is the documentation address the preset follows.
	Docs string `yaml:"docs" json:"docs"`
	// Notes says what an operator must know (where the key comes from, a
	// variant the preset does not cover).
	Notes string `yaml:"notes,omitempty" json:"notes,omitempty"`

	// Header carries the signature (or the token).
	Header string `yaml:"header,omitempty" json:"header,omitempty"`
	// Prefix is literal text before each encoded signature ("sha256=").
	Prefix string `yaml:"prefix,omitempty" json:"prefix,omitempty"`
	// List says the header is a list of items, several signatures at
	// once (rotation) and sometimes the timestamp.
	List *List `yaml:"list,omitempty" json:"list,omitempty"`
	// Signature is where a body-hmac scheme carries its signature
	// (json:PATH), or where a token is in the body (family token, then
	// without header or prefix): json:PATH, where a "*" segment means
	// every element of the array there (1 to 1000, each must carry a
	// secret), e.g. json:value.*.clientState.
	Signature string `yaml:"signature,omitempty" json:"signature,omitempty"`
	// Single is json:PATH of an array that must hold exactly one element
	// (body-hmac): when the signature covers one element of a batch, a
	// second, unsigned element must not ride along with it.
	Single string `yaml:"single,omitempty" json:"single,omitempty"`
	// Algorithm: sha1, sha256 (default) or sha512 for the hmac families;
	// HS256 or ES256 for jws (the only alg its tokens may name); sha256
	// (default) for rsa.
	Algorithm string `yaml:"algorithm,omitempty" json:"algorithm,omitempty"`
	// Encoding of the signature: hex (default), base64 or base64url.
	Encoding string `yaml:"encoding,omitempty" json:"encoding,omitempty"`
	// Key is how a configured secret becomes the MAC key: raw (default),
	// whsec (base64 after an optional whsec_ prefix), base64, hex, or
	// sha1 (the SHA-1 of the secret, Braintree's).
	Key string `yaml:"key,omitempty" json:"key,omitempty"`
	// Signed is the signed-content template; default {body}.
	Signed string `yaml:"signed,omitempty" json:"signed,omitempty"`
	// Timestamp is the signed timestamp, when the scheme has one (jws:
	// json:CLAIM is a claim of the token, Plaid's iat).
	Timestamp *Timestamp `yaml:"timestamp,omitempty" json:"timestamp,omitempty"`

	// Claim (jws) is the claim that carries the hex SHA-256 of the body
	// (Plaid's request_body_sha256, Netlify's sha256).
	Claim string `yaml:"claim,omitempty" json:"claim,omitempty"`
	// Issuer (jws) is the value the token's iss claim must have; empty:
	// not checked.
	Issuer string `yaml:"issuer,omitempty" json:"issuer,omitempty"`
	// AlgHeader (rsa) is a header in which the provider names its
	// algorithm (PayPal's PAYPAL-AUTH-ALGO); it must name the preset's.
	AlgHeader string `yaml:"alg_header,omitempty" json:"alg_header,omitempty"`

	// ID is the provider's delivery id, the same on every retry (the
	// natural dedupe key): header:NAME or json:PATH.
	ID string `yaml:"id,omitempty" json:"id,omitempty"`
	// EventType is where the event type is: header:NAME or json:PATH.
	EventType string `yaml:"event_type,omitempty" json:"event_type,omitempty"`
	// Handshake names the provider's subscription handshake, answered
	// at the edge: slack, zoom, twitch, discord, okta, dropbox, meta,
	// graph, xero or asana.
	Handshake string `yaml:"handshake,omitempty" json:"handshake,omitempty"`
}

// List is how a signature header lists its items.
type List struct {
	// Sep separates items (",", " ", ";").
	Sep string `yaml:"sep" json:"sep"`
	// KV separates an item's key from its value ("="); empty: items are
	// bare values.
	KV string `yaml:"kv,omitempty" json:"kv,omitempty"`
	// SigKey is the key of the signature items ("v1"); several may match.
	SigKey string `yaml:"sig_key,omitempty" json:"sig_key,omitempty"`
	// TSKey is the key of the timestamp item ("t").
	TSKey string `yaml:"ts_key,omitempty" json:"ts_key,omitempty"`
	// TSFirst: the first item is the timestamp, the rest signatures.
	TSFirst bool `yaml:"ts_first,omitempty" json:"ts_first,omitempty"`
}

// Timestamp is where a scheme's signed timestamp is and how old it may be.
type Timestamp struct {
	// From is header:NAME, json:PATH, or list (the signature header's
	// ts_key or first item).
	From string `yaml:"from" json:"from"`
	// Unit: s (default), ms, or rfc3339.
	Unit string `yaml:"unit,omitempty" json:"unit,omitempty"`
	// Tolerance is how far it may be from now, both ways; "none": not
	// checked (a scheme that keeps a delivery's first timestamp on its
	// retries); omitted: the provider documents none, and the default
	// applies.
	Tolerance string `yaml:"tolerance,omitempty" json:"tolerance,omitempty"`
}

// Request is a request as the schemes that sign more than headers and body
// read it; *fasthttp.RequestHeader satisfies it. A verifier that needs it
// type-asserts its Headers, and answers ErrMissing when they are not one.
type Request interface {
	Headers
	Method() []byte
	RequestURI() []byte
	Host() []byte
}

// Answer is the edge's reply to a provider's subscription handshake. A
// handshake is not a hook: it is not committed and not delivered.
type Answer struct {
	// Kind is the handshake's name (the preset's handshake), for metrics.
	Kind        string
	Status      int
	ContentType string
	Body        []byte
	// Header is one more response header, name and value (Asana's
	// X-Hook-Secret), or empty.
	Header [2]string
	// Verified: the request proved itself with a signature or token. A
	// verified handshake spends the tenant's token bucket, any other the
	// source's quarantine bucket.
	Verified bool
}

// Handshaker answers a preset's subscription handshakes. A Verifier built
// from a preset with a handshake implements it.
type Handshaker interface {
	// AcceptsGET reports whether the preset's handshake is a GET: only
	// then may a GET reach the source (any other keeps step 0's 405).
	AcceptsGET() bool
	// HandshakeGET answers a GET; ok false: it is not the handshake (405).
	HandshakeGET(r Request, now time.Time) (a Answer, ok bool)
	// Handshake is called for a POST once Verify has run, with its
	// result: ok true when the request is the handshake and is answered
	// with a (a signed handshake whose verification failed is not
	// answered: it takes the source's on_verify_failure path; except
	// Xero's intent to receive and Discord's PING, whose providers
	// check that a forged one is answered 401).
	Handshake(r Request, body []byte, verr error) (a Answer, ok bool)
}

// EventTyper reads a hook's event type where its preset says. A Verifier
// built from a preset with an event type implements it.
type EventTyper interface {
	// AppendEventType appends the event type (nothing when the hook has
	// none) to dst; it allocates nothing once warm.
	AppendEventType(dst []byte, h Headers, body []byte) []byte
}
