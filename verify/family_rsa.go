package verify

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"strings"
	"time"

	"github.com/ankusa/ankusa/config"
)

// maxRSABytes is the largest RSA signature (and modulus) accepted: 4096
// bits. It bounds a header's decode and a verification's work.
const maxRSABytes = 512

// rsaFamily: an RSA PKCS#1 v1.5 signature over the SHA-256 of a template
// (PayPal: base64 over "<transmission id>|<transmission time>|<webhook
// id>|<crc32 of the body>"). The secrets are the provider's certificates
// or public keys, PEM: PayPal serves its certificate at PAYPAL-CERT-URL,
// which the node never fetches, so that no request makes it reach out.
type rsaFamily struct {
	name      string
	header    string
	enc       string
	tmpl      []part
	ts        *tsSpec
	algHeader string
	algName   []byte
	wid       []byte
	url       []byte
	pubs      []*rsa.PublicKey
}

func newRSAFamily(p *Preset, c config.Verify, secrets []string, tol time.Duration) (Verifier, error) {
	if p.Header == "" {
		return nil, fmt.Errorf("header: required (the header that carries the signature)")
	}
	f := &rsaFamily{name: p.Name, header: canonical(p.Header), enc: orDefault(p.Encoding, "base64")}
	if f.enc != "base64" && f.enc != "base64url" {
		return nil, fmt.Errorf("encoding: %q must be base64 or base64url", p.Encoding)
	}
	if p.Algorithm != "" && p.Algorithm != "sha256" {
		return nil, fmt.Errorf("algorithm: %q: family rsa verifies RSA-SHA256 (sha256) only", p.Algorithm)
	}
	if p.AlgHeader != "" {
		f.algHeader = canonical(p.AlgHeader)
		// The provider's name for RSA-SHA256 with PKCS#1 v1.5 (Java's,
		// which PayPal's PAYPAL-AUTH-ALGO uses).
		f.algName = []byte("SHA256withRSA")
	}
	var err error
	if f.tmpl, err = parseTemplate("signed", p.Signed); err != nil {
		return nil, err
	}
	if hasKind(f.tmpl, 'i') {
		return nil, fmt.Errorf("signed: {id} is not available to family rsa (use {header:NAME})")
	}
	if f.ts, err = newTSSpec(p.Timestamp, tol); err != nil {
		return nil, err
	}
	if f.ts != nil && f.ts.list {
		return nil, fmt.Errorf("timestamp.from: family rsa has no list")
	}
	if f.ts != nil && !hasKind(f.tmpl, 't') && !templateReads(f.tmpl, f.ts.src) {
		return nil, fmt.Errorf("signed: the timestamp must be signed ({timestamp}, or the {header:NAME} it is read from)")
	}
	if hasKind(f.tmpl, 'w') {
		f.wid = []byte(c.WebhookID)
	}
	if c.URL != "" {
		f.url = []byte(c.URL)
	}
	for i, sec := range secrets {
		pk, err := parseRSAKey(sec)
		if err != nil {
			return nil, fmt.Errorf("verify.secret: an rsa verifier's secret is the provider's certificate or RSA public key, PEM (secret %d: %v)", i+1, err)
		}
		f.pubs = append(f.pubs, pk)
	}
	return f, nil
}

// templateReads reports whether a template signs the header a source
// names (PayPal signs its transmission time as {header:...}).
func templateReads(parts []part, src source) bool {
	for _, p := range parts {
		if p.kind == 'h' && src.header != "" && p.name == src.header {
			return true
		}
	}
	return false
}

// parseRSAKey reads a PEM certificate (its key; the node trusts what its
// operator configured, so neither its chain nor its dates are checked) or
// a PEM RSA public key (PKIX or PKCS#1).
func parseRSAKey(s string) (*rsa.PublicKey, error) {
	blk, _ := pem.Decode([]byte(strings.TrimSpace(s)))
	if blk == nil {
		return nil, fmt.Errorf("not PEM")
	}
	var k any
	switch blk.Type {
	case "CERTIFICATE":
		cert, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("not a certificate: %v", err)
		}
		k = cert.PublicKey
	case "PUBLIC KEY":
		var err error
		if k, err = x509.ParsePKIXPublicKey(blk.Bytes); err != nil {
			return nil, fmt.Errorf("not a public key")
		}
	case "RSA PUBLIC KEY":
		var err error
		if k, err = x509.ParsePKCS1PublicKey(blk.Bytes); err != nil {
			return nil, fmt.Errorf("not an RSA public key")
		}
	default:
		return nil, fmt.Errorf("a PEM %s; a CERTIFICATE or PUBLIC KEY is needed", blk.Type)
	}
	pk, ok := k.(*rsa.PublicKey)
	if !ok {
		return nil, fmt.Errorf("not an RSA key")
	}
	if n := pk.Size(); n < 256 || n > maxRSABytes {
		return nil, fmt.Errorf("an RSA key of %d bits; 2048 to 4096 are accepted", pk.N.BitLen())
	}
	return pk, nil
}

func (f *rsaFamily) Name() string { return f.name }

// Verify checks the algorithm the provider names, the timestamp, then the
// signature under every key (each tried, so that timing says not which).
func (f *rsaFamily) Verify(h Headers, body []byte, now time.Time) error {
	hdr := h.Peek(f.header)
	if len(hdr) == 0 {
		return ErrMissing
	}
	if f.algHeader != "" {
		alg := h.Peek(f.algHeader)
		if len(alg) == 0 {
			return ErrMissing
		}
		if string(alg) != string(f.algName) {
			return ErrMalformed
		}
	}
	st := getState()
	defer putState(st)
	rf := reqFields{url: f.url, wid: f.wid}
	if f.ts != nil {
		var ok bool
		if rf.ts, ok = st.lookup(f.ts.src, h, body); !ok {
			return ErrMissing
		}
		tm, ok := f.ts.parse(rf.ts)
		if !ok {
			return ErrMalformed
		}
		if !f.ts.within(tm, now) {
			return ErrExpired
		}
	}
	var sbuf [maxRSABytes]byte
	sig, ok := decodeRSASig(&sbuf, f.enc, hdr)
	if !ok {
		return ErrMalformed
	}
	var pbuf [maxTmplParts][]byte
	parts, ok := fill(&pbuf, f.tmpl, st, &rf, h, body)
	if !ok {
		return ErrMissing
	}
	if st.dup {
		return ErrMalformed
	}
	d := sha256.New()
	for _, p := range parts {
		d.Write(p)
	}
	var sum [sha256.Size]byte
	d.Sum(sum[:0])
	match := false
	for _, pk := range f.pubs {
		if rsa.VerifyPKCS1v15(pk, crypto.SHA256, sum[:], sig) == nil {
			match = true
		}
	}
	if match {
		return nil
	}
	return ErrMismatch
}

// decodeRSASig decodes a base64 (or base64url) signature of at most
// maxRSABytes.
func decodeRSASig(dst *[maxRSABytes]byte, enc string, s []byte) ([]byte, bool) {
	e := base64.StdEncoding
	if enc == "base64url" {
		e = base64.RawURLEncoding
		for len(s) > 0 && s[len(s)-1] == '=' {
			s = s[:len(s)-1]
		}
	}
	if len(s) == 0 || e.DecodedLen(len(s)) > len(dst)+2 || hasLineBreak(s) {
		return nil, false
	}
	var tmp [maxRSABytes + 2]byte
	n, err := e.Decode(tmp[:], s)
	if err != nil || n > maxRSABytes {
		return nil, false
	}
	copy(dst[:], tmp[:n])
	return dst[:n], true
}
