package verify

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ankusa/ankusa/config"
)

// newGeneric builds `type: hmac`, the generic verifier of the verify
// section's own keys (header, prefix, algorithm, encoding,
// timestamp_header, signed_content): an hmac-family preset written in the
// source's config rather than in the catalogue.
func newGeneric(c config.Verify, secrets []string, tol time.Duration) (Verifier, error) {
	if _, ok := hashFor(c.Algorithm); !ok {
		return nil, fmt.Errorf("verify.algorithm: %q must be sha1, sha256 or sha512", c.Algorithm)
	}
	if c.Encoding != "" && !validEncoding(c.Encoding) {
		return nil, fmt.Errorf("verify.encoding: %q must be hex, base64 or base64url", c.Encoding)
	}
	if c.Header == "" {
		return nil, fmt.Errorf("verify.header: required by the hmac verifier (the header that carries the signature)")
	}
	if c.URL != "" {
		return nil, fmt.Errorf("verify.url: the hmac verifier signs {timestamp} and {body} only; a scheme that signs the URL is a preset")
	}
	if c.AllowSHA1 {
		return nil, fmt.Errorf("verify.allow_sha1: only the github verifier has a SHA-1 signature to allow (hmac takes verify.algorithm: sha1)")
	}
	tmpl := c.SignedContent
	if tmpl == "" {
		tmpl = "{body}"
	}
	// The generic verifier keeps its narrower template ({timestamp},
	// {body}, six parts): a section written for it stays valid as it was.
	parts, err := parseTemplate("verify.signed_content", tmpl)
	if err != nil {
		return nil, err
	}
	for _, p := range parts {
		if p.kind != 'l' && p.kind != 'b' && p.kind != 't' {
			return nil, fmt.Errorf("verify.signed_content: %q: only {timestamp} and {body} may be used", c.SignedContent)
		}
	}
	if len(parts) > 6 {
		return nil, fmt.Errorf("verify.signed_content: %q has too many parts", c.SignedContent)
	}
	hasTS := hasKind(parts, 't')
	if hasTS && c.TimestampHeader == "" {
		return nil, fmt.Errorf("verify.signed_content: {timestamp} needs verify.timestamp_header")
	}
	if c.TimestampHeader != "" && !hasTS {
		// A timestamp that is checked but not signed can be replaced by
		// anyone: it would only look like replay protection.
		return nil, fmt.Errorf("verify.signed_content: %q must include {timestamp} when verify.timestamp_header is set", c.SignedContent)
	}
	p := &Preset{Name: "hmac", Family: "hmac", Header: c.Header, Prefix: c.Prefix, Algorithm: c.Algorithm, Encoding: c.Encoding, Signed: tmpl}
	if c.TimestampHeader != "" {
		p.Timestamp = &Timestamp{From: "header:" + c.TimestampHeader}
	}
	f, err := newHMACFamily(p, c, secrets, tol)
	if err != nil {
		if strings.HasPrefix(err.Error(), "verify.") {
			return nil, err
		}
		return nil, fmt.Errorf("verify.%w", err)
	}
	return f, nil
}

// gitHubSHA1 is github with allow_sha1: a hook that has no
// X-Hub-Signature-256 may prove itself with X-Hub-Signature (sha1=<hex>),
// which GitHub still sends for old integrations.
type gitHubSHA1 struct {
	Verifier
	sha1 *hmacFamily
}

func withGitHubSHA1(v Verifier, secrets []string) (Verifier, error) {
	f, err := newHMACFamily(&Preset{Name: "github", Family: "hmac", Header: "X-Hub-Signature", Prefix: "sha1=", Algorithm: "sha1"}, config.Verify{}, secrets, 0)
	if err != nil {
		return nil, err
	}
	return &gitHubSHA1{Verifier: v, sha1: f}, nil
}

func (g *gitHubSHA1) Verify(h Headers, body []byte, now time.Time) error {
	err := g.Verifier.Verify(h, body, now)
	if errors.Is(err, ErrMissing) {
		return g.sha1.Verify(h, body, now)
	}
	return err
}
