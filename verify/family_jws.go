package verify

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fastjson"

	"github.com/ankusa/ankusa/config"
)

// Bounds on a compact JWS, so that the work per request is bounded by
// them and never by the sender.
const (
	// maxJWS caps the token (the header's value).
	maxJWS = 4096
	// maxJWSKeys caps the members of the token's header and claims
	// objects: duplicates are looked for pairwise, and Plaid's and
	// Netlify's tokens have a handful.
	maxJWSKeys = 32
)

// jwsFamily: a compact JWS (JWT) in a header whose claims carry the hex
// SHA-256 of the body (Plaid's Plaid-Verification, ES256 under the key
// Plaid serves by key id; Netlify's X-Webhook-Signature, HS256 under the
// hook's secret). The token's alg must be the preset's: the token does not
// choose how it is checked (no "none", no HS256 under an ES256 public
// key).
type jwsFamily struct {
	name   string
	header string
	alg    string // HS256 or ES256
	keys   []*macKey
	pubs   []*ecdsa.PublicKey
	claim  string
	issuer []byte
	iat    string // the timestamp claim, or "" (not checked)
	ts     *tsSpec
}

// jwsState is one request's room: the decoded header and claims, and a
// parser for each. Pooled, so that a verification allocates nothing for
// them once warm.
type jwsState struct {
	hp, cp fastjson.Parser
	buf    [maxJWS * 3 / 4]byte
	keys   [maxJWSKeys][]byte
}

var jwsStates = sync.Pool{New: func() any { return new(jwsState) }}

func newJWSFamily(p *Preset, c config.Verify, secrets []string, tol time.Duration) (Verifier, error) {
	if p.Header == "" {
		return nil, fmt.Errorf("header: required (the header that carries the token)")
	}
	if p.Claim == "" {
		return nil, fmt.Errorf("claim: required (the claim that carries the hex SHA-256 of the body)")
	}
	f := &jwsFamily{name: p.Name, header: canonical(p.Header), alg: p.Algorithm, claim: p.Claim}
	if p.Issuer != "" {
		f.issuer = []byte(p.Issuer)
	}
	if p.Timestamp != nil {
		src, err := parseSource("timestamp.from", p.Timestamp.From)
		if err != nil || len(src.path) != 1 {
			return nil, fmt.Errorf("timestamp.from: %q must be json:CLAIM, a claim of the token", p.Timestamp.From)
		}
		if p.Timestamp.Unit != "" && p.Timestamp.Unit != "s" {
			return nil, fmt.Errorf("timestamp.unit: a JWT's times are seconds (NumericDate), not %q", p.Timestamp.Unit)
		}
		if f.ts, err = newTSSpec(p.Timestamp, tol); err != nil {
			return nil, err
		}
		f.iat = src.path[0]
	}
	switch p.Algorithm {
	case "HS256":
		keys, err := macKeysFor(sha256.New, p.Key, secrets)
		if err != nil {
			return nil, err
		}
		f.keys = keys
	case "ES256":
		if p.Key != "" {
			return nil, fmt.Errorf("key: an ES256 preset's secrets are public keys, read as they are")
		}
		for i, sec := range secrets {
			pk, err := parseJWSPublicKey(sec)
			if err != nil {
				return nil, fmt.Errorf("verify.secret: an ES256 verifier's secret is the provider's P-256 public key, PEM, base64 DER or a JWK JSON object (secret %d: %v)", i+1, err)
			}
			f.pubs = append(f.pubs, pk)
		}
	default:
		return nil, fmt.Errorf("algorithm: %q must be HS256 or ES256 (the alg the tokens must name)", p.Algorithm)
	}
	return f, nil
}

// jwk is the part of a JSON Web Key an ES256 verifier reads; Key is
// Plaid's /webhook_verification_key/get answer, the JWK under "key".
type jwk struct {
	Kty       string           `json:"kty"`
	Crv       string           `json:"crv"`
	X         string           `json:"x"`
	Y         string           `json:"y"`
	D         string           `json:"d"`
	Alg       string           `json:"alg"`
	Use       string           `json:"use"`
	ExpiredAt *json.RawMessage `json:"expired_at"`
	Key       *jwk             `json:"key"`
}

// parseJWSPublicKey reads a P-256 public key: a JWK (or Plaid's answer
// that holds one), PEM or base64 DER SubjectPublicKeyInfo.
func parseJWSPublicKey(s string) (*ecdsa.PublicKey, error) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "{") {
		return parseECKey(s)
	}
	var k jwk
	if err := json.Unmarshal([]byte(s), &k); err != nil {
		return nil, fmt.Errorf("not a JSON object: %v", err)
	}
	if k.Key != nil {
		k = *k.Key
	}
	switch {
	case k.Kty != "EC" || k.Crv != "P-256":
		return nil, fmt.Errorf("a JWK of kty EC and crv P-256 is needed, not kty %q crv %q", k.Kty, k.Crv)
	case k.Alg != "" && k.Alg != "ES256":
		return nil, fmt.Errorf("the JWK's alg is %q, not ES256", k.Alg)
	case k.Use != "" && k.Use != "sig":
		return nil, fmt.Errorf("the JWK's use is %q, not sig", k.Use)
	case k.D != "":
		return nil, fmt.Errorf("the JWK is a private key; configure the provider's public key")
	case k.ExpiredAt != nil && string(*k.ExpiredAt) != "null":
		// Plaid sets expired_at once it no longer signs with the key.
		return nil, fmt.Errorf("the JWK has expired_at set: the provider has retired it")
	}
	x, errX := base64.RawURLEncoding.DecodeString(strings.TrimRight(k.X, "="))
	y, errY := base64.RawURLEncoding.DecodeString(strings.TrimRight(k.Y, "="))
	if errX != nil || errY != nil || len(x) != 32 || len(y) != 32 {
		return nil, fmt.Errorf("the JWK's x and y must be 32 bytes of base64url each")
	}
	pt := append(append([]byte{4}, x...), y...)
	pk, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), pt)
	if err != nil {
		return nil, fmt.Errorf("the JWK's point is not on P-256")
	}
	return pk, nil
}

func (f *jwsFamily) Name() string { return f.name }

// Verify checks the token: its form and header (alg the preset's, no
// crit), its signature under every key, then its claims (time, issuer,
// the body's hash).
func (f *jwsFamily) Verify(h Headers, body []byte, now time.Time) error {
	tok := bytes.TrimSpace(h.Peek(f.header))
	if len(tok) == 0 {
		return ErrMissing
	}
	if len(tok) > maxJWS {
		return ErrMalformed
	}
	i := bytes.IndexByte(tok, '.')
	if i < 0 {
		return ErrMalformed
	}
	j := bytes.IndexByte(tok[i+1:], '.')
	if j < 0 {
		return ErrMalformed
	}
	j += i + 1
	if bytes.IndexByte(tok[j+1:], '.') >= 0 {
		return ErrMalformed
	}
	st := jwsStates.Get().(*jwsState)
	defer jwsStates.Put(st)
	e := base64.RawURLEncoding
	hdr, ok := b64urlInto(e, st.buf[:], tok[:i])
	if !ok {
		return ErrMalformed
	}
	claims, ok := b64urlInto(e, st.buf[len(hdr):], tok[i+1:j])
	if !ok {
		return ErrMalformed
	}
	var sbuf [64]byte
	sig, ok := b64urlInto(e, sbuf[:], tok[j+1:])
	if !ok {
		return ErrMalformed
	}
	if !f.headerOK(st, hdr) {
		return ErrMalformed
	}
	if !f.signatureOK(tok[:j], sig) {
		return ErrMismatch
	}
	return f.checkClaims(st, claims, body, now)
}

// b64urlInto decodes unpadded base64url into dst; ok false when it does
// not fit or is not base64url.
func b64urlInto(e *base64.Encoding, dst, s []byte) ([]byte, bool) {
	if len(s) == 0 || e.DecodedLen(len(s)) > len(dst) || hasLineBreak(s) {
		return nil, false
	}
	n, err := e.Decode(dst, s)
	return dst[:n], err == nil
}

// object parses a JSON object with p and refuses one with a member twice
// (parsers disagree on which counts) or more than maxJWSKeys members.
func object(p *fastjson.Parser, keys *[maxJWSKeys][]byte, b []byte) (*fastjson.Object, bool) {
	v, err := p.ParseBytes(b)
	if err != nil {
		return nil, false
	}
	o, err := v.Object()
	if err != nil {
		return nil, false
	}
	n, ok := 0, true
	o.Visit(func(k []byte, _ *fastjson.Value) {
		if n == maxJWSKeys {
			ok = false
			return
		}
		for _, prev := range keys[:n] {
			if bytes.Equal(prev, k) {
				ok = false
			}
		}
		keys[n] = k
		n++
	})
	clear(keys[:n])
	return o, ok
}

// headerOK: the JOSE header is an object whose alg is the preset's and
// that asks for no extension (crit): the token never chooses the check.
func (f *jwsFamily) headerOK(st *jwsState, hdr []byte) bool {
	o, ok := object(&st.hp, &st.keys, hdr)
	if !ok || o.Get("crit") != nil {
		return false
	}
	alg := o.Get("alg")
	if alg == nil || alg.Type() != fastjson.TypeString {
		return false
	}
	b, _ := alg.StringBytes()
	return string(b) == f.alg
}

// signatureOK checks the signature over the signing input under every
// key, each tried so that timing says not which one matched.
func (f *jwsFamily) signatureOK(input, sig []byte) bool {
	match := 0
	if f.alg == "HS256" {
		if len(sig) != sha256.Size {
			return false
		}
		for _, k := range f.keys {
			match |= k.equal(sig, input)
		}
		return match == 1
	}
	if len(sig) != 64 {
		return false
	}
	var der [72]byte
	d := rsToDER(&der, sig[:32], sig[32:])
	sum := sha256.Sum256(input)
	for _, pk := range f.pubs {
		if ecdsa.VerifyASN1(pk, sum[:], d) {
			match = 1
		}
	}
	return match == 1
}

// rsToDER writes a JWS ECDSA signature (r||s, 32 bytes each) as the ASN.1
// SEQUENCE of two INTEGERs the standard library verifies.
func rsToDER(dst *[72]byte, r, s []byte) []byte {
	out := dst[:2]
	for _, v := range [][]byte{r, s} {
		for len(v) > 1 && v[0] == 0 {
			v = v[1:]
		}
		if v[0]&0x80 != 0 {
			out = append(out, 0x02, byte(len(v)+1), 0)
		} else {
			out = append(out, 0x02, byte(len(v)))
		}
		out = append(out, v...)
	}
	dst[0], dst[1] = 0x30, byte(len(out)-2)
	return out
}

// checkClaims reads the signed claims: the timestamp within its
// tolerance, the issuer, and the body's SHA-256, compared in constant
// time.
func (f *jwsFamily) checkClaims(st *jwsState, claims, body []byte, now time.Time) error {
	o, ok := object(&st.cp, &st.keys, claims)
	if !ok {
		return ErrMalformed
	}
	if f.ts != nil {
		v := o.Get(f.iat)
		if v == nil {
			return ErrMissing
		}
		if v.Type() != fastjson.TypeNumber {
			return ErrMalformed
		}
		n, err := v.Int64()
		if err != nil {
			return ErrMalformed
		}
		if !f.ts.within(time.Unix(n, 0), now) {
			return ErrExpired
		}
	}
	if f.issuer != nil {
		v := o.Get("iss")
		if v == nil || v.Type() != fastjson.TypeString {
			return ErrMismatch
		}
		if b, _ := v.StringBytes(); !bytes.Equal(b, f.issuer) {
			return ErrMismatch
		}
	}
	v := o.Get(f.claim)
	if v == nil {
		return ErrMissing
	}
	if v.Type() != fastjson.TypeString {
		return ErrMalformed
	}
	claimed, _ := v.StringBytes()
	if len(claimed) != 2*sha256.Size {
		return ErrMalformed
	}
	var lower, want [2 * sha256.Size]byte
	for i, c := range claimed {
		if 'A' <= c && c <= 'F' {
			c += 'a' - 'A'
		}
		lower[i] = c
	}
	sum := sha256.Sum256(body)
	hex.Encode(want[:], sum[:])
	if subtle.ConstantTimeCompare(lower[:], want[:]) != 1 {
		return ErrMismatch
	}
	return nil
}
