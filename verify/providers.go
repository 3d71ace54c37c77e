package verify

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ankusa/ankusa/config"
)

var (
	dot   = []byte(".")
	colon = []byte(":")
	v0    = []byte("v0:")
)

// stripe: Stripe-Signature: t=<unix>,v1=<hex>[,v1=<hex>...]; HMAC-SHA256
// over "<t>.<body>" keyed by the whole whsec_ string.
type stripe struct {
	keys []*macKey
	tol  time.Duration
}

func newStripe(secrets []string, tol time.Duration) *stripe {
	return &stripe{keys: newMacKeys(sha256.New, secrets), tol: tol}
}

func (*stripe) Name() string { return "stripe" }

func (v *stripe) Verify(h Headers, body []byte, now time.Time) error {
	hdr := h.Peek("Stripe-Signature")
	if len(hdr) == 0 {
		return ErrMissing
	}
	var t []byte
	for rest := hdr; len(rest) > 0; {
		var item []byte
		item, rest, _ = bytes.Cut(rest, []byte(","))
		if k, val, ok := bytes.Cut(bytes.TrimSpace(item), []byte("=")); ok && string(k) == "t" {
			t = val
		}
	}
	ts, ok := parseUnix(t)
	if !ok {
		return ErrMalformed
	}
	if !withinTolerance(ts, now, v.tol) {
		return ErrExpired
	}
	if anyEntryMatches(v.keys, hdr, ',', "hex", stripeEntry, t, dot, body) {
		return nil
	}
	return ErrMismatch
}

// stripeEntry takes the hex signature of a "v1=<hex>" entry.
func stripeEntry(item []byte) ([]byte, bool) {
	k, val, ok := bytes.Cut(bytes.TrimSpace(item), []byte("="))
	return val, ok && string(k) == "v1"
}

// github: X-Hub-Signature-256: sha256=<hex> over the body; X-Hub-Signature
// (sha1) only with allow_sha1.
type github struct {
	keys256, keys1 []*macKey
}

func newGitHub(secrets []string, allowSHA1 bool) *github {
	g := &github{keys256: newMacKeys(sha256.New, secrets)}
	if allowSHA1 {
		g.keys1 = newMacKeys(sha1.New, secrets)
	}
	return g
}

func (*github) Name() string { return "github" }

func (v *github) Verify(h Headers, body []byte, _ time.Time) error {
	if hdr := h.Peek("X-Hub-Signature-256"); len(hdr) > 0 {
		return prefixedHexMatch(v.keys256, hdr, "sha256=", body)
	}
	if v.keys1 != nil {
		if hdr := h.Peek("X-Hub-Signature"); len(hdr) > 0 {
			return prefixedHexMatch(v.keys1, hdr, "sha1=", body)
		}
	}
	return ErrMissing
}

// prefixedHexMatch checks a "<prefix><hex>" signature of body.
func prefixedHexMatch(keys []*macKey, hdr []byte, prefix string, body []byte) error {
	val, ok := bytes.CutPrefix(hdr, []byte(prefix))
	if !ok {
		return ErrMalformed
	}
	var sigBuf [64]byte
	sig, ok := decodeSig(&sigBuf, "hex", val)
	if !ok {
		return ErrMalformed
	}
	if anyMatch(keys, sig, body) {
		return nil
	}
	return ErrMismatch
}

// shopify: X-Shopify-Hmac-Sha256: base64 HMAC-SHA256 over the body.
type shopify struct{ keys []*macKey }

func newShopify(secrets []string) *shopify { return &shopify{keys: newMacKeys(sha256.New, secrets)} }

func (*shopify) Name() string { return "shopify" }

func (v *shopify) Verify(h Headers, body []byte, _ time.Time) error {
	hdr := h.Peek("X-Shopify-Hmac-Sha256")
	if len(hdr) == 0 {
		return ErrMissing
	}
	var sigBuf [64]byte
	sig, ok := decodeSig(&sigBuf, "base64", hdr)
	if !ok {
		return ErrMalformed
	}
	if anyMatch(v.keys, sig, body) {
		return nil
	}
	return ErrMismatch
}

// slack: X-Slack-Signature: v0=<hex> over "v0:<X-Slack-Request-Timestamp>:<body>".
type slack struct {
	keys []*macKey
	tol  time.Duration
}

func newSlack(secrets []string, tol time.Duration) *slack {
	return &slack{keys: newMacKeys(sha256.New, secrets), tol: tol}
}

func (*slack) Name() string { return "slack" }

func (v *slack) Verify(h Headers, body []byte, now time.Time) error {
	hdr, tsb := h.Peek("X-Slack-Signature"), h.Peek("X-Slack-Request-Timestamp")
	if len(hdr) == 0 || len(tsb) == 0 {
		return ErrMissing
	}
	ts, ok := parseUnix(tsb)
	if !ok {
		return ErrMalformed
	}
	if !withinTolerance(ts, now, v.tol) {
		return ErrExpired
	}
	val, ok := bytes.CutPrefix(hdr, []byte("v0="))
	if !ok {
		return ErrMalformed
	}
	var sigBuf [64]byte
	sig, ok := decodeSig(&sigBuf, "hex", val)
	if !ok {
		return ErrMalformed
	}
	if anyMatch(v.keys, sig, v0, tsb, colon, body) {
		return nil
	}
	return ErrMismatch
}

// standardWebhooks: webhook-id, webhook-timestamp, webhook-signature
// ("v1,<base64>" entries, space-separated); HMAC-SHA256 over
// "<id>.<timestamp>.<body>" keyed by the base64-decoded whsec_ secret.
type standardWebhooks struct {
	keys []*macKey
	tol  time.Duration
}

func newStandardWebhooks(secrets []string, tol time.Duration) (*standardWebhooks, error) {
	keys := make([]*macKey, len(secrets))
	for i, s := range secrets {
		raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, "whsec_"))
		if err != nil || len(raw) == 0 {
			return nil, fmt.Errorf("verify.secret: a standardwebhooks secret is whsec_ followed by base64 (secret %d does not decode)", i+1)
		}
		keys[i] = newMacKey(sha256.New, raw)
	}
	return &standardWebhooks{keys: keys, tol: tol}, nil
}

func (*standardWebhooks) Name() string { return "standardwebhooks" }

func (v *standardWebhooks) Verify(h Headers, body []byte, now time.Time) error {
	id, tsb, hdr := h.Peek("Webhook-Id"), h.Peek("Webhook-Timestamp"), h.Peek("Webhook-Signature")
	if len(id) == 0 || len(tsb) == 0 || len(hdr) == 0 {
		return ErrMissing
	}
	ts, ok := parseUnix(tsb)
	if !ok {
		return ErrMalformed
	}
	if !withinTolerance(ts, now, v.tol) {
		return ErrExpired
	}
	if anyEntryMatches(v.keys, hdr, ' ', "base64", standardEntry, id, dot, tsb, dot, body) {
		return nil
	}
	return ErrMismatch
}

// standardEntry takes the base64 signature of a "v1,<base64>" entry.
func standardEntry(item []byte) ([]byte, bool) { return bytes.CutPrefix(item, []byte("v1,")) }

// generic hmac: a header (optional prefix), sha1/sha256/sha512, hex or
// base64; optionally a timestamp header and a signed-content template over
// {timestamp} and {body} with literal text around them, so most providers
// are a config block, not code.
type generic struct {
	keys     []*macKey
	header   string
	prefix   []byte
	encoding string
	tsHeader string
	tol      time.Duration
	tmpl     []tmplPart
}

// tmplPart is literal text or a placeholder of the signed content.
type tmplPart struct {
	lit  []byte
	kind byte // 0 literal, 't' timestamp, 'b' body
}

func newGeneric(c config.Verify, secrets []string, tol time.Duration) (*generic, error) {
	newHash, ok := hashFor(c.Algorithm)
	if !ok {
		return nil, fmt.Errorf("verify.algorithm: %q must be sha1, sha256 or sha512", c.Algorithm)
	}
	enc := c.Encoding
	if enc == "" {
		enc = "hex"
	}
	if enc != "hex" && enc != "base64" {
		return nil, fmt.Errorf("verify.encoding: %q must be hex or base64", c.Encoding)
	}
	if c.Header == "" {
		return nil, fmt.Errorf("verify.header: required by the hmac verifier (the header that carries the signature)")
	}
	g := &generic{keys: newMacKeys(newHash, secrets), header: c.Header, prefix: []byte(c.Prefix), encoding: enc, tsHeader: c.TimestampHeader, tol: tol}
	tmpl := c.SignedContent
	if tmpl == "" {
		tmpl = "{body}"
	}
	for len(tmpl) > 0 {
		i := strings.IndexByte(tmpl, '{')
		if i < 0 {
			g.tmpl = append(g.tmpl, tmplPart{lit: []byte(tmpl)})
			break
		}
		if i > 0 {
			g.tmpl = append(g.tmpl, tmplPart{lit: []byte(tmpl[:i])})
		}
		switch {
		case strings.HasPrefix(tmpl[i:], "{body}"):
			g.tmpl = append(g.tmpl, tmplPart{kind: 'b'})
			tmpl = tmpl[i+len("{body}"):]
		case strings.HasPrefix(tmpl[i:], "{timestamp}"):
			if c.TimestampHeader == "" {
				return nil, fmt.Errorf("verify.signed_content: {timestamp} needs verify.timestamp_header")
			}
			g.tmpl = append(g.tmpl, tmplPart{kind: 't'})
			tmpl = tmpl[i+len("{timestamp}"):]
		default:
			return nil, fmt.Errorf("verify.signed_content: %q: only {timestamp} and {body} may be used", c.SignedContent)
		}
	}
	if c.TimestampHeader != "" && !slices.ContainsFunc(g.tmpl, func(p tmplPart) bool { return p.kind == 't' }) {
		// A timestamp that is checked but not signed can be replaced by
		// anyone: it would only look like replay protection.
		return nil, fmt.Errorf("verify.signed_content: %q must include {timestamp} when verify.timestamp_header is set", c.SignedContent)
	}
	if len(g.tmpl) > 6 {
		return nil, fmt.Errorf("verify.signed_content: %q has too many parts", c.SignedContent)
	}
	return g, nil
}

func (*generic) Name() string { return "hmac" }

func (v *generic) Verify(h Headers, body []byte, now time.Time) error {
	hdr := h.Peek(v.header)
	if len(hdr) == 0 {
		return ErrMissing
	}
	var tsb []byte
	if v.tsHeader != "" {
		tsb = h.Peek(v.tsHeader)
		if len(tsb) == 0 {
			return ErrMissing
		}
		ts, ok := parseUnix(tsb)
		if !ok {
			return ErrMalformed
		}
		if !withinTolerance(ts, now, v.tol) {
			return ErrExpired
		}
	}
	val, ok := bytes.CutPrefix(hdr, v.prefix)
	if !ok {
		return ErrMalformed
	}
	var sigBuf [64]byte
	sig, ok := decodeSig(&sigBuf, v.encoding, val)
	if !ok {
		return ErrMalformed
	}
	var parts [6][]byte
	for i, p := range v.tmpl {
		switch p.kind {
		case 'b':
			parts[i] = body
		case 't':
			parts[i] = tsb
		default:
			parts[i] = p.lit
		}
	}
	if anyMatch(v.keys, sig, parts[:len(v.tmpl)]...) {
		return nil
	}
	return ErrMismatch
}
