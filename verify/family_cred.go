package verify

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/valyala/fastjson"

	"github.com/ankusa/ankusa/config"
)

// credFamily is a shared credential in a header: token (the value after
// an optional prefix equals a secret: GitLab's X-Gitlab-Token, Okta's
// Authorization) or basic (Authorization: Basic, user:pass equals a
// secret: Postmark, Chargebee). A token may instead be in the JSON body
// (signature: json:PATH; Figma's passcode, Microsoft Graph's clientState
// in every notification of a batch). Secrets are compared by their
// SHA-256, in constant time, so neither their content nor their length
// shows in the timing.
type credFamily struct {
	name   string
	header string
	prefix []byte
	basic  bool
	sums   [][32]byte
	// body is the credential's JSON path when it is in the body, or nil;
	// a "*" segment stands for every element of the array there.
	body []string
}

func newTokenFamily(p *Preset, _ config.Verify, secrets []string, _ time.Duration) (Verifier, error) {
	if p.Signature != "" {
		path, err := parseCredPath(p.Signature)
		if err != nil {
			return nil, err
		}
		if p.Header != "" || p.Prefix != "" {
			return nil, fmt.Errorf("signature: a token in the body (json:PATH) takes no header or prefix")
		}
		if err := credOnly(p); err != nil {
			return nil, err
		}
		f := newCred(p.Name, "", "", false, secrets)
		f.body = path
		return f, nil
	}
	if p.Header == "" {
		return nil, fmt.Errorf("header: required (the header that carries the token), or signature: json:PATH (where the body carries it)")
	}
	if err := credOnly(p); err != nil {
		return nil, err
	}
	return newCred(p.Name, p.Header, p.Prefix, false, secrets), nil
}

// maxCredItems bounds the elements a "*" segment walks: a provider's batch
// holds a few dozen (Graph's value array), and each costs a SHA-256.
const maxCredItems = 1000

// parseCredPath parses a token family's signature: json:PATH, dotted, with
// at most one "*" segment and not as the first one (it stands for an
// array's elements, so something must name the array).
func parseCredPath(s string) ([]string, error) {
	p, ok := strings.CutPrefix(s, "json:")
	if !ok || p == "" {
		return nil, fmt.Errorf("signature: %q must be json:PATH (where the body carries the token)", s)
	}
	path := strings.Split(p, ".")
	if len(path) > maxEventTypeDepth {
		return nil, fmt.Errorf("signature: %q is deeper than %d segments", s, maxEventTypeDepth)
	}
	stars := 0
	for i, seg := range path {
		switch {
		case seg == "":
			return nil, fmt.Errorf("signature: %q has an empty path segment", s)
		case seg == "*" && i == 0:
			return nil, fmt.Errorf("signature: %q: a * segment must follow the array's name", s)
		case seg == "*":
			stars++
		}
	}
	if stars > 1 {
		return nil, fmt.Errorf("signature: %q has more than one * segment", s)
	}
	if path[len(path)-1] == "*" {
		return nil, fmt.Errorf("signature: %q: a * segment must be followed by the field each element carries", s)
	}
	return path, nil
}

func newBasicFamily(p *Preset, _ config.Verify, secrets []string, _ time.Duration) (Verifier, error) {
	if err := credOnly(p); err != nil {
		return nil, err
	}
	if p.Prefix != "" {
		return nil, fmt.Errorf("prefix: the basic family's is always \"Basic \"")
	}
	for i, s := range secrets {
		if !strings.Contains(s, ":") {
			return nil, fmt.Errorf("verify.secret: a basic verifier's secret is user:password (secret %d has no colon)", i+1)
		}
	}
	return newCred(p.Name, orDefault(p.Header, "Authorization"), "Basic ", true, secrets), nil
}

func credOnly(p *Preset) error {
	if p.List != nil || p.Algorithm != "" || p.Encoding != "" || p.Key != "" || p.Signed != "" || p.Timestamp != nil {
		return fmt.Errorf("family %s takes header and prefix, or signature, only (a credential, not a signature)", p.Family)
	}
	if p.Family != "token" && p.Signature != "" {
		return fmt.Errorf("signature: family %s reads its credential from a header only", p.Family)
	}
	return nil
}

func newCred(name, header, prefix string, basic bool, secrets []string) *credFamily {
	f := &credFamily{name: name, header: canonical(header), prefix: []byte(prefix), basic: basic}
	for _, s := range secrets {
		f.sums = append(f.sums, sha256.Sum256([]byte(s)))
	}
	return f
}

func (f *credFamily) Name() string { return f.name }

// maxCred bounds a credential header's length.
const maxCred = 1024

func (f *credFamily) Verify(h Headers, body []byte, _ time.Time) error {
	if f.body != nil {
		return f.verifyBody(body)
	}
	hdr := h.Peek(f.header)
	if len(hdr) == 0 {
		return ErrMissing
	}
	if len(hdr) > maxCred {
		return ErrMalformed
	}
	var val []byte
	if f.basic {
		// The scheme name is case-insensitive (RFC 7617).
		if len(hdr) < len(f.prefix) || !bytes.EqualFold(hdr[:len(f.prefix)], f.prefix) {
			return ErrMalformed
		}
		var buf [maxCred]byte
		n, err := base64.StdEncoding.Strict().Decode(buf[:], bytes.TrimSpace(hdr[len(f.prefix):]))
		if err != nil || bytes.IndexByte(buf[:n], ':') < 0 {
			return ErrMalformed
		}
		val = buf[:n]
	} else {
		var ok bool
		if val, ok = bytes.CutPrefix(hdr, f.prefix); !ok || len(val) == 0 {
			return ErrMalformed
		}
	}
	if f.known(val) {
		return nil
	}
	return ErrMismatch
}

// known reports whether val is one of the secrets, comparing SHA-256 sums
// in constant time against every one.
func (f *credFamily) known(val []byte) bool {
	sum := sha256.Sum256(val)
	match := 0
	for i := range f.sums {
		match |= subtle.ConstantTimeCompare(sum[:], f.sums[i][:])
	}
	return match == 1
}

// verifyBody checks a token in the JSON body. Through a "*" segment every
// element of the array must carry a known token, and there must be one
// to 1000 of them: one forged item in a batch of genuine ones is a forged
// batch (the batch is one hook). A duplicate key on the path is refused
// as the body-hmac family refuses it: parsers disagree on which value
// counts.
func (f *credFamily) verifyBody(body []byte) error {
	st := getState()
	defer putState(st)
	root := st.json(body)
	if root == nil {
		return ErrMalformed
	}
	star := slices.Index(f.body, "*")
	if star < 0 {
		return f.credAt(st, root, f.body)
	}
	arr := st.walk(root, f.body[:star])
	if st.dup {
		return ErrMalformed
	}
	if arr == nil {
		return ErrMissing
	}
	items, err := arr.Array()
	if err != nil {
		return ErrMalformed
	}
	if len(items) == 0 {
		return ErrMissing
	}
	if len(items) > maxCredItems {
		return ErrMalformed
	}
	// Every item is checked whatever the verdict so far, so the time
	// taken does not tell which one failed.
	var res error
	for _, it := range items {
		if e := f.credAt(st, it, f.body[star+1:]); e != nil && (res == nil || res == ErrMismatch) {
			res = e
		}
	}
	return res
}

// credAt checks the string at path under v.
func (f *credFamily) credAt(st *reqState, v *fastjson.Value, path []string) error {
	c := st.walk(v, path)
	if st.dup {
		return ErrMalformed
	}
	if c == nil {
		return ErrMissing
	}
	val, err := c.StringBytes()
	if err != nil || len(val) > maxCred {
		return ErrMalformed
	}
	if len(val) == 0 {
		return ErrMissing
	}
	if f.known(val) {
		return nil
	}
	return ErrMismatch
}

// Redacted is what the node stores in place of a credential header's
// value (CredentialHeader).
const Redacted = "[redacted]"

// CredentialHeader names the header whose value is the source's shared
// credential itself (the token and basic families), or "". The edge stores
// that header's value as Redacted: kept with the hook, it would hand the
// secret to everyone who may read hooks (the admin API, sinks in envelope
// format, the archive). A hook of such a source held in quarantine can
// therefore not be verified again on release, only released by force.
func CredentialHeader(c config.Verify) string {
	p, ok := LookupPreset(c.Type)
	if !ok {
		return ""
	}
	switch p.Family {
	case "token":
		if p.Header == "" {
			return "" // the token is in the body (signature: json:PATH)
		}
		return canonical(p.Header)
	case "basic":
		return canonical(orDefault(p.Header, "Authorization"))
	}
	return ""
}
