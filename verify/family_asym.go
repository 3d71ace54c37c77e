package verify

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"strings"
	"time"

	"github.com/ankusa/ankusa/config"
)

// sigTemplate is what the asymmetric families share: a signature header,
// its encoding, a signed template and an optional timestamp.
type sigTemplate struct {
	name   string
	header string
	enc    string
	tmpl   []part
	ts     *tsSpec
	url    []byte
}

func newSigTemplate(p *Preset, c config.Verify, tol time.Duration, defEnc string) (*sigTemplate, error) {
	if p.Header == "" {
		return nil, fmt.Errorf("header: required (the header that carries the signature)")
	}
	s := &sigTemplate{name: p.Name, header: canonical(p.Header), enc: orDefault(p.Encoding, defEnc)}
	if !validEncoding(s.enc) {
		return nil, fmt.Errorf("encoding: %q must be hex, base64 or base64url", p.Encoding)
	}
	if p.List != nil || p.Prefix != "" || p.Algorithm != "" || p.Key != "" {
		return nil, fmt.Errorf("family %s takes no list, prefix, algorithm or key", p.Family)
	}
	var err error
	if s.tmpl, err = parseTemplate("signed", p.Signed); err != nil {
		return nil, err
	}
	if hasKind(s.tmpl, 'i') {
		return nil, fmt.Errorf("signed: {id} is not available to family %s", p.Family)
	}
	if s.ts, err = newTSSpec(p.Timestamp, tol); err != nil {
		return nil, err
	}
	if s.ts != nil && s.ts.list {
		return nil, fmt.Errorf("timestamp.from: family %s has no list", p.Family)
	}
	if (s.ts != nil) != hasKind(s.tmpl, 't') {
		return nil, fmt.Errorf("signed: {timestamp} and timestamp.from go together (a timestamp checked but not signed is no replay protection)")
	}
	if c.URL != "" {
		s.url = []byte(c.URL)
	}
	return s, nil
}

// read checks the timestamp and decodes the signature into dst; it
// returns the template's parts. The caller releases st.
func (s *sigTemplate) read(dst *[maxTmplParts][]byte, sig *[80]byte, st *reqState, h Headers, body []byte, now time.Time) ([][]byte, []byte, error) {
	hdr := h.Peek(s.header)
	if len(hdr) == 0 {
		return nil, nil, ErrMissing
	}
	var rf reqFields
	rf.url = s.url
	if s.ts != nil {
		var ok bool
		if rf.ts, ok = st.lookup(s.ts.src, h, body); !ok {
			return nil, nil, ErrMissing
		}
		tm, ok := s.ts.parse(rf.ts)
		if !ok {
			return nil, nil, ErrMalformed
		}
		if !s.ts.within(tm, now) {
			return nil, nil, ErrExpired
		}
	}
	raw, ok := decodeAsymSig(sig, s.enc, hdr)
	if !ok {
		return nil, nil, ErrMalformed
	}
	parts, ok := fill(dst, s.tmpl, st, &rf, h, body)
	if !ok {
		return nil, nil, ErrMissing
	}
	return parts, raw, nil
}

// decodeAsymSig decodes an Ed25519 (64 bytes) or DER ECDSA P-256 (at most
// 72 bytes) signature.
func decodeAsymSig(dst *[80]byte, enc string, s []byte) ([]byte, bool) {
	switch enc {
	case "hex":
		if len(s) > 2*len(dst) || len(s)%2 != 0 {
			return nil, false
		}
		n, err := hex.Decode(dst[:], s)
		return dst[:n], err == nil
	case "base64url":
		e := base64.RawURLEncoding
		for len(s) > 0 && s[len(s)-1] == '=' {
			s = s[:len(s)-1]
		}
		if e.DecodedLen(len(s)) > len(dst) || hasLineBreak(s) {
			return nil, false
		}
		n, err := e.Decode(dst[:], s)
		return dst[:n], err == nil
	default:
		if base64.StdEncoding.DecodedLen(len(s)) > len(dst) || hasLineBreak(s) {
			return nil, false
		}
		n, err := base64.StdEncoding.Decode(dst[:], s)
		return dst[:n], err == nil
	}
}

// ed25519Family: an Ed25519 signature over a template (Discord:
// hex over {timestamp}{body}; Telnyx: base64 over {timestamp}|{body}); the
// configured secrets are the provider's public keys, hex or base64.
type ed25519Family struct {
	*sigTemplate
	pubs []ed25519.PublicKey
}

func newEd25519Family(p *Preset, c config.Verify, secrets []string, tol time.Duration) (Verifier, error) {
	s, err := newSigTemplate(p, c, tol, "hex")
	if err != nil {
		return nil, err
	}
	f := &ed25519Family{sigTemplate: s}
	for i, sec := range secrets {
		sec = strings.TrimSpace(sec)
		raw, err := hex.DecodeString(sec)
		if err != nil {
			raw, err = base64.StdEncoding.DecodeString(sec)
		}
		if err != nil || len(raw) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("verify.secret: an ed25519 verifier's secret is the provider's public key, 32 bytes in hex or base64 (secret %d is not)", i+1)
		}
		f.pubs = append(f.pubs, ed25519.PublicKey(raw))
	}
	return f, nil
}

func (f *ed25519Family) Verify(h Headers, body []byte, now time.Time) error {
	st := getState()
	defer putState(st)
	var pbuf [maxTmplParts][]byte
	var sbuf [80]byte
	parts, sig, err := f.read(&pbuf, &sbuf, st, h, body, now)
	if err != nil {
		return err
	}
	if len(sig) != ed25519.SignatureSize {
		return ErrMalformed
	}
	bp := msgBufs.Get().(*[]byte)
	msg := (*bp)[:0]
	for _, p := range parts {
		msg = append(msg, p...)
	}
	ok := false
	for _, pk := range f.pubs {
		if ed25519.Verify(pk, msg, sig) {
			ok = true
		}
	}
	*bp = msg[:0]
	msgBufs.Put(bp)
	if ok {
		return nil
	}
	return ErrMismatch
}

// ecdsaFamily: an ECDSA P-256 signature (DER) over the SHA-256 of a
// template (SendGrid: base64 over {timestamp}{body}); the secrets are
// public keys, base64 DER SubjectPublicKeyInfo or PEM.
type ecdsaFamily struct {
	*sigTemplate
	pubs []*ecdsa.PublicKey
}

func newECDSAFamily(p *Preset, c config.Verify, secrets []string, tol time.Duration) (Verifier, error) {
	s, err := newSigTemplate(p, c, tol, "base64")
	if err != nil {
		return nil, err
	}
	f := &ecdsaFamily{sigTemplate: s}
	for i, sec := range secrets {
		pk, err := parseECKey(sec)
		if err != nil {
			return nil, fmt.Errorf("verify.secret: an ecdsa verifier's secret is the provider's P-256 public key, base64 DER or PEM (secret %d: %v)", i+1, err)
		}
		f.pubs = append(f.pubs, pk)
	}
	return f, nil
}

func parseECKey(s string) (*ecdsa.PublicKey, error) {
	s = strings.TrimSpace(s)
	var der []byte
	if blk, _ := pem.Decode([]byte(s)); blk != nil {
		der = blk.Bytes
	} else {
		var err error
		if der, err = base64.StdEncoding.DecodeString(s); err != nil {
			return nil, fmt.Errorf("not base64")
		}
	}
	k, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		return nil, fmt.Errorf("not a public key")
	}
	pk, ok := k.(*ecdsa.PublicKey)
	if !ok || pk.Curve != elliptic.P256() {
		return nil, fmt.Errorf("not a P-256 key")
	}
	return pk, nil
}

func (f *ecdsaFamily) Verify(h Headers, body []byte, now time.Time) error {
	st := getState()
	defer putState(st)
	var pbuf [maxTmplParts][]byte
	var sbuf [80]byte
	parts, sig, err := f.read(&pbuf, &sbuf, st, h, body, now)
	if err != nil {
		return err
	}
	d := sha256.New()
	for _, p := range parts {
		d.Write(p)
	}
	var sum [32]byte
	d.Sum(sum[:0])
	ok := false
	for _, pk := range f.pubs {
		if ecdsa.VerifyASN1(pk, sum[:], sig) {
			ok = true
		}
	}
	if ok {
		return nil
	}
	return ErrMismatch
}

func (s *sigTemplate) Name() string { return s.name }
