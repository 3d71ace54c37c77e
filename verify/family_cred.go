package verify

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"github.com/ankusa/ankusa/config"
)

// credFamily is a shared credential in a header: token (the value after
// an optional prefix equals a secret: GitLab's X-Gitlab-Token, Okta's
// Authorization) or basic (Authorization: Basic, user:pass equals a
// secret: Postmark, Chargebee). Secrets are compared by their SHA-256, in
// constant time, so neither their content nor their length shows in the
// timing.
type credFamily struct {
	name   string
	header string
	prefix []byte
	basic  bool
	sums   [][32]byte
}

func newTokenFamily(p *Preset, _ config.Verify, secrets []string, _ time.Duration) (Verifier, error) {
	if p.Header == "" {
		return nil, fmt.Errorf("header: required (the header that carries the token)")
	}
	if err := credOnly(p); err != nil {
		return nil, err
	}
	return newCred(p.Name, p.Header, p.Prefix, false, secrets), nil
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
	if p.List != nil || p.Algorithm != "" || p.Encoding != "" || p.Key != "" || p.Signed != "" || p.Timestamp != nil || p.Signature != "" {
		return fmt.Errorf("family %s takes header and prefix only (a credential, not a signature)", p.Family)
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

func (f *credFamily) Verify(h Headers, _ []byte, _ time.Time) error {
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
	sum := sha256.Sum256(val)
	match := 0
	for i := range f.sums {
		match |= subtle.ConstantTimeCompare(sum[:], f.sums[i][:])
	}
	if match == 1 {
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
		return canonical(p.Header)
	case "basic":
		return canonical(orDefault(p.Header, "Authorization"))
	}
	return ""
}
