package verify

import (
	"bytes"
	"crypto/sha1"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"
	"strings"
	"time"

	"github.com/ankusa/ankusa/config"
)

// hmacFamily is every scheme that is an HMAC over a template of the
// request, its signature in a header: raw-body HMAC (GitHub, Shopify),
// template HMAC with a timestamp (Stripe, Slack, Paddle, Zoom, HubSpot v3)
// and URL + body (Square).
type hmacFamily struct {
	name   string
	keys   []*macKey
	header string
	prefix []byte
	list   *listSpec
	enc    string
	tmpl   []part
	ts     *tsSpec
	id     source
	url    []byte
}

// listSpec is a List with its separators as bytes.
type listSpec struct {
	sep           byte
	kv            []byte
	sigKey, tsKey []byte
	tsFirst       bool
}

func newListSpec(l *List) (*listSpec, error) {
	if l == nil {
		return nil, nil
	}
	if len(l.Sep) != 1 {
		return nil, fmt.Errorf("list.sep: %q must be one character", l.Sep)
	}
	s := &listSpec{sep: l.Sep[0], kv: []byte(l.KV), sigKey: []byte(l.SigKey), tsKey: []byte(l.TSKey), tsFirst: l.TSFirst}
	if l.KV == "" && (l.SigKey != "" || l.TSKey != "") {
		return nil, fmt.Errorf("list.kv: sig_key and ts_key need kv (items of the form key%svalue)", "=")
	}
	if l.KV != "" && l.SigKey == "" {
		return nil, fmt.Errorf("list.sig_key: required with list.kv (the key of the signature items)")
	}
	if l.TSFirst && l.TSKey != "" {
		return nil, fmt.Errorf("list.ts_first: either ts_first or ts_key, not both")
	}
	return s, nil
}

// item splits one list item: its key (nil without kv) and value.
func (l *listSpec) item(it []byte) (key, val []byte) {
	it = bytes.TrimSpace(it)
	if len(l.kv) == 0 {
		return nil, it
	}
	k, v, ok := bytes.Cut(it, l.kv)
	if !ok {
		return nil, nil
	}
	return k, v
}

// encodings an hmac family's signature may have.
func validEncoding(enc string) bool {
	return enc == "hex" || enc == "base64" || enc == "base64url"
}

// deriveKey turns a configured secret into a MAC key as the preset's key
// says; i numbers the secret for errors.
func deriveKey(mode, s string, i int) ([]byte, error) {
	switch mode {
	case "", "raw":
		return []byte(s), nil
	case "whsec":
		raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, "whsec_"))
		if err != nil || len(raw) == 0 {
			return nil, fmt.Errorf("verify.secret: this verifier's secret is whsec_ followed by base64 (secret %d does not decode)", i+1)
		}
		return raw, nil
	case "base64":
		raw, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(raw) == 0 {
			return nil, fmt.Errorf("verify.secret: this verifier's secret is base64 (secret %d does not decode)", i+1)
		}
		return raw, nil
	case "hex":
		raw, err := hex.DecodeString(s)
		if err != nil || len(raw) == 0 {
			return nil, fmt.Errorf("verify.secret: this verifier's secret is hex (secret %d does not decode)", i+1)
		}
		return raw, nil
	case "sha1":
		sum := sha1.Sum([]byte(s))
		return sum[:], nil
	}
	return nil, fmt.Errorf("key: %q must be raw, whsec, base64, hex or sha1", mode)
}

func macKeysFor(newHash func() hash.Hash, mode string, secrets []string) ([]*macKey, error) {
	keys := make([]*macKey, len(secrets))
	for i, s := range secrets {
		k, err := deriveKey(mode, s, i)
		if err != nil {
			return nil, err
		}
		keys[i] = newMacKey(newHash, k)
	}
	return keys, nil
}

// newHMACFamily builds an hmac-family verifier. Its errors name the
// preset's field (the caller prefixes the preset).
func newHMACFamily(p *Preset, c config.Verify, secrets []string, tol time.Duration) (*hmacFamily, error) {
	newHash, ok := hashFor(p.Algorithm)
	if !ok {
		return nil, fmt.Errorf("algorithm: %q must be sha1, sha256 or sha512", p.Algorithm)
	}
	enc := p.Encoding
	if enc == "" {
		enc = "hex"
	}
	if !validEncoding(enc) {
		return nil, fmt.Errorf("encoding: %q must be hex, base64 or base64url", p.Encoding)
	}
	if p.Header == "" {
		return nil, fmt.Errorf("header: required (the header that carries the signature)")
	}
	keys, err := macKeysFor(newHash, p.Key, secrets)
	if err != nil {
		return nil, err
	}
	f := &hmacFamily{name: p.Name, keys: keys, header: canonical(p.Header), prefix: []byte(p.Prefix), enc: enc}
	if f.list, err = newListSpec(p.List); err != nil {
		return nil, err
	}
	if f.tmpl, err = parseTemplate("signed", p.Signed); err != nil {
		return nil, err
	}
	if f.ts, err = newTSSpec(p.Timestamp, tol); err != nil {
		return nil, err
	}
	if f.ts != nil && f.ts.list && (f.list == nil || (len(f.list.tsKey) == 0 && !f.list.tsFirst)) {
		return nil, fmt.Errorf("timestamp.from: list needs list.ts_key or list.ts_first")
	}
	if f.ts != nil && !hasKind(f.tmpl, 't') && !(f.ts.src.isJSON() && hasKind(f.tmpl, 'b')) {
		// A timestamp that is checked but not signed can be replaced by
		// anyone: it would only look like replay protection. One read
		// from a JSON body that is signed whole is signed (Linear's).
		return nil, fmt.Errorf("signed: %q must include {timestamp} when the scheme has a timestamp", p.Signed)
	}
	if f.ts == nil && hasKind(f.tmpl, 't') {
		return nil, fmt.Errorf("signed: {timestamp} needs timestamp.from")
	}
	if hasKind(f.tmpl, 'i') {
		if p.ID == "" {
			return nil, fmt.Errorf("signed: {id} needs id")
		}
		if f.id, err = parseSource("id", p.ID); err != nil {
			return nil, err
		}
	}
	if c.URL != "" {
		f.url = []byte(c.URL)
	}
	return f, nil
}

func (f *hmacFamily) Name() string { return f.name }

// Verify checks the header's signature(s) against the MAC of the signed
// template under every key. One MAC per key, whatever the number of
// listed signatures, and every key and signature is tried, so that
// timing says neither which matched nor how many there were.
func (f *hmacFamily) Verify(h Headers, body []byte, now time.Time) error {
	hdr := h.Peek(f.header)
	if len(hdr) == 0 {
		return ErrMissing
	}
	st := getState()
	defer putState(st)
	var rf reqFields
	rf.url = f.url
	var sig1 [64]byte
	var single []byte
	if f.list != nil {
		rf.ts = f.listTimestamp(hdr)
	}
	if f.ts != nil {
		if !f.ts.list {
			var ok bool
			rf.ts, ok = st.lookup(f.ts.src, h, body)
			if !ok {
				return ErrMissing
			}
		}
		tm, ok := f.ts.parse(rf.ts)
		if !ok {
			return ErrMalformed
		}
		if !f.ts.within(tm, now) {
			return ErrExpired
		}
	}
	if f.list == nil {
		val, ok := bytes.CutPrefix(hdr, f.prefix)
		if !ok {
			return ErrMalformed
		}
		if single, ok = decodeSigEnc(&sig1, f.enc, val); !ok {
			return ErrMalformed
		}
	}
	if f.id.isSet() {
		var ok bool
		if rf.id, ok = st.lookup(f.id, h, body); !ok {
			return ErrMissing
		}
	}
	var pbuf [maxTmplParts][]byte
	parts, ok := f.fill(&pbuf, st, &rf, h, body)
	if !ok {
		return ErrMissing
	}
	if st.dup {
		return ErrMalformed
	}
	match := 0
	for _, key := range f.keys {
		ms, mac := key.mac(parts...)
		if f.list == nil {
			match |= subtle.ConstantTimeCompare(mac, single)
		} else {
			match |= f.listMatch(hdr, mac)
		}
		key.release(ms)
	}
	if match == 1 {
		return nil
	}
	return ErrMismatch
}

// next cuts the list's first item off rest.
func (l *listSpec) next(rest []byte) (item, tail []byte) {
	if i := bytes.IndexByte(rest, l.sep); i >= 0 {
		return rest[:i], rest[i+1:]
	}
	return rest, nil
}

// listTimestamp finds the timestamp item of a list header (nil: none);
// with ts_key the last such item counts, as Stripe's own library reads it.
func (f *hmacFamily) listTimestamp(hdr []byte) (ts []byte) {
	first := true
	for rest := hdr; len(rest) > 0; {
		var it []byte
		it, rest = f.list.next(rest)
		if len(bytes.TrimSpace(it)) == 0 {
			continue
		}
		k, val := f.list.item(it)
		if f.list.tsFirst && first {
			return val
		}
		first = false
		if len(f.list.tsKey) > 0 && len(f.list.kv) > 0 && bytes.Equal(k, f.list.tsKey) {
			ts = val
		}
	}
	return ts
}

// listMatch compares mac with every signature item of a list header (1:
// one matched). The sender chooses how many items there are: each costs
// a decode and a compare, never a MAC, and each is compared, so that
// timing does not say which matched.
func (f *hmacFamily) listMatch(hdr, mac []byte) int {
	var sigBuf [64]byte
	match := 0
	first := true
	for rest := hdr; len(rest) > 0; {
		var it []byte
		it, rest = f.list.next(rest)
		if len(bytes.TrimSpace(it)) == 0 {
			continue
		}
		k, val := f.list.item(it)
		if f.list.tsFirst && first {
			first = false
			continue
		}
		first = false
		if len(f.list.kv) > 0 && !bytes.Equal(k, f.list.sigKey) {
			continue
		}
		v, ok := bytes.CutPrefix(val, f.prefix)
		if !ok {
			continue
		}
		if sig, ok := decodeSigEnc(&sigBuf, f.enc, v); ok {
			match |= subtle.ConstantTimeCompare(mac, sig)
		}
	}
	return match
}

func (f *hmacFamily) fill(dst *[maxTmplParts][]byte, st *reqState, rf *reqFields, h Headers, body []byte) ([][]byte, bool) {
	return fill(dst, f.tmpl, st, rf, h, body)
}

// decodeSigEnc decodes a hex, base64 or base64url signature into dst (at
// most 64 bytes).
func decodeSigEnc(dst *[64]byte, enc string, s []byte) ([]byte, bool) {
	if enc != "base64url" {
		return decodeSig(dst, enc, s)
	}
	e := base64.RawURLEncoding
	s = bytes.TrimRight(s, "=")
	if e.DecodedLen(len(s)) > 64 || hasLineBreak(s) {
		return nil, false
	}
	n, err := e.Decode(dst[:], s)
	return dst[:n], err == nil
}

// canonical is a header name as fasthttp and textproto normalise it.
func canonical(name string) string {
	b := []byte(name)
	upper := true
	for i, c := range b {
		switch {
		case upper && 'a' <= c && c <= 'z':
			b[i] = c - 32
		case !upper && 'A' <= c && c <= 'Z':
			b[i] = c + 32
		}
		upper = c == '-'
	}
	return string(b)
}
