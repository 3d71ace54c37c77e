package verify_test

import (
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"hash"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/verify"
)

// The fuzz targets of the parsers without a reference library (GitHub,
// Shopify, Slack, generic hmac). As in fuzz_test.go, "{t}" in a template
// becomes the current timestamp and "{sig}" / "{sig2}" the encoded MAC the
// reference computes with the first / second secret. Each target checks
// that Verify never panics, answers with a sentinel, accepts nothing the
// lenient reference does not call signed, and rejects nothing the strict
// reference (the request as a provider writes it) calls signed. Seeds live
// in testdata/fuzz/<target>/.

// hmacModes are the generic configurations FuzzHMACHeader picks from:
// every algorithm, encoding and prefix, with and without a timestamp.
var hmacModes = func() (out []hmacMode) {
	for _, alg := range []string{"sha1", "sha256", "sha512"} {
		for _, enc := range []string{"hex", "base64"} {
			for _, prefix := range []string{"", "sha256="} {
				for _, withTS := range []bool{false, true} {
					out = append(out, hmacMode{alg: alg, enc: enc, prefix: prefix, withTS: withTS})
				}
			}
		}
	}
	return out
}()

type hmacMode struct {
	alg, enc, prefix string
	withTS           bool
}

func (m hmacMode) config() config.Verify {
	c := config.Verify{Type: "hmac", Header: "X-Signature", Prefix: m.prefix, Algorithm: m.alg, Encoding: m.enc,
		Secret: secret(hmacOld), Secrets: secrets(hmacNew)}
	if m.withTS {
		c.TimestampHeader, c.SignedContent = "X-Timestamp", "{timestamp}.{body}"
	}
	return c
}

func (m hmacMode) newHash() func() hash.Hash {
	return map[string]func() hash.Hash{"sha1": sha1.New, "sha256": sha256.New, "sha512": sha512.New}[m.alg]
}

// content is what the configuration signs.
func (m hmacMode) content(tsv string, body []byte) []string {
	if m.withTS {
		return []string{tsv, ".", string(body)}
	}
	return []string{string(body)}
}

// FuzzHMACHeader fuzzes the generic verifier's header (prefix, hex or
// base64) and timestamp header under each of hmacModes.
func FuzzHMACHeader(f *testing.F) {
	f.Add(uint8(2), "sha256={sig}", "{t}", []byte(hmacBody))
	f.Add(uint8(13), "{sig2}", "{t}", []byte(""))
	vs := make([]verify.Verifier, len(hmacModes))
	for i, m := range hmacModes {
		vs[i] = mustNew(f, m.config())
	}
	f.Fuzz(func(t *testing.T, mode uint8, sigTmpl, tsTmpl string, body []byte) {
		m, v := hmacModes[int(mode)%len(hmacModes)], vs[int(mode)%len(vs)]
		tsv := strings.ReplaceAll(tsTmpl, "{t}", ts(now))
		enc := func(s string) string {
			mac := hmacSum(m.newHash(), s, m.content(tsv, body)...)
			if m.enc == "base64" {
				return base64.StdEncoding.EncodeToString(mac)
			}
			return hex.EncodeToString(mac)
		}
		sig := strings.NewReplacer("{sig}", enc(hmacOld), "{sig2}", enc(hmacNew)).Replace(sigTmpl)
		h := mapHeaders{"X-Signature": []byte(sig)}
		if m.withTS {
			h["X-Timestamp"] = []byte(tsv)
		}
		ref := func(strict bool) bool {
			if m.withTS && !refTimestamp(tsv, strict) {
				return false
			}
			if strict && !onWire(sig, tsv) {
				return false
			}
			val, ok := strings.CutPrefix(sig, m.prefix)
			return ok && refMatch(m.newHash(), []string{hmacOld, hmacNew}, m.enc, val, strict, m.content(tsv, body)...)
		}
		checkRef(t, v.Verify(h, body, now), ref, "mode %+v sig %q ts %q body %q", m, sig, tsv, body)
	})
}

// FuzzGitHubHeader fuzzes X-Hub-Signature-256 and X-Hub-Signature, with
// and without allow_sha1: a sha256 header, when present, is the only one
// read.
func FuzzGitHubHeader(f *testing.F) {
	f.Add("sha256={sig}", "", false, []byte(githubDocBody))
	f.Add("", "sha1={sig2}", true, []byte(""))
	c := config.Verify{Type: "github", Secret: secret(githubDocSecret), Secrets: secrets(githubNew)}
	v256 := mustNew(f, c)
	c.AllowSHA1 = true
	vBoth := mustNew(f, c)
	f.Fuzz(func(t *testing.T, tmpl256, tmpl1 string, allowSHA1 bool, body []byte) {
		fill := func(tmpl string, newHash func() hash.Hash) string {
			return strings.NewReplacer(
				"{sig}", hmacHex(newHash, githubDocSecret, string(body)),
				"{sig2}", hmacHex(newHash, githubNew, string(body)),
			).Replace(tmpl)
		}
		s256, s1 := fill(tmpl256, sha256.New), fill(tmpl1, sha1.New)
		v := v256
		if allowSHA1 {
			v = vBoth
		}
		ref := func(strict bool) bool {
			if strict && !onWire(s256, s1) {
				return false
			}
			prefix, sig, newHash := "sha256=", s256, sha256.New
			if s256 == "" {
				if !allowSHA1 || s1 == "" {
					return false
				}
				prefix, sig, newHash = "sha1=", s1, sha1.New
			}
			val, ok := strings.CutPrefix(sig, prefix)
			return ok && refMatch(newHash, []string{githubDocSecret, githubNew}, "hex", val, strict, string(body))
		}
		h := mapHeaders{"X-Hub-Signature-256": []byte(s256), "X-Hub-Signature": []byte(s1)}
		checkRef(t, v.Verify(h, body, now), ref, "sha256 %q sha1 %q (allow_sha1 %v) body %q", s256, s1, allowSHA1, body)
	})
}

// FuzzShopifyHeader fuzzes X-Shopify-Hmac-Sha256 (base64, no prefix).
func FuzzShopifyHeader(f *testing.F) {
	f.Add("{sig}", []byte(shopifyBody))
	f.Add("{sig2}", []byte(""))
	v := mustNew(f, config.Verify{Type: "shopify", Secret: secret(shopifyOld), Secrets: secrets(shopifyNew)})
	f.Fuzz(func(t *testing.T, tmpl string, body []byte) {
		sig := strings.NewReplacer(
			"{sig}", hmacB64(sha256.New, shopifyOld, string(body)),
			"{sig2}", hmacB64(sha256.New, shopifyNew, string(body)),
		).Replace(tmpl)
		ref := func(strict bool) bool {
			if strict && !onWire(sig) {
				return false
			}
			return refMatch(sha256.New, []string{shopifyOld, shopifyNew}, "base64", sig, strict, string(body))
		}
		err := v.Verify(mapHeaders{"X-Shopify-Hmac-Sha256": []byte(sig)}, body, now)
		checkRef(t, err, ref, "sig %q body %q", sig, body)
	})
}

// FuzzSlackHeader fuzzes X-Slack-Signature and X-Slack-Request-Timestamp.
func FuzzSlackHeader(f *testing.F) {
	f.Add("v0={sig}", "{t}", []byte(slackDocBody))
	f.Add("v0={sig2}", "{t}", []byte(""))
	v := mustNew(f, config.Verify{Type: "slack", Secret: secret(slackDocSecret), Secrets: secrets(slackNew)})
	f.Fuzz(func(t *testing.T, tmpl, tsTmpl string, body []byte) {
		tsv := strings.ReplaceAll(tsTmpl, "{t}", ts(now))
		content := []string{"v0:", tsv, ":", string(body)}
		sig := strings.NewReplacer(
			"{sig}", hmacHex(sha256.New, slackDocSecret, content...),
			"{sig2}", hmacHex(sha256.New, slackNew, content...),
		).Replace(tmpl)
		ref := func(strict bool) bool {
			if !refTimestamp(tsv, strict) || (strict && !onWire(sig, tsv)) {
				return false
			}
			val, ok := strings.CutPrefix(sig, "v0=")
			return ok && refMatch(sha256.New, []string{slackDocSecret, slackNew}, "hex", val, strict, content...)
		}
		h := mapHeaders{"X-Slack-Signature": []byte(sig), "X-Slack-Request-Timestamp": []byte(tsv)}
		checkRef(t, v.Verify(h, body, now), ref, "sig %q ts %q body %q", sig, tsv, body)
	})
}

// refMatch reports whether the encoded signature val decodes to the MAC of
// content under one of keys. Strict decoding refuses base64 with nonzero padding bits, which Go's
// decoder (and so the verifier) tolerates: the decoded MAC is the same.
func refMatch(newHash func() hash.Hash, keys []string, enc, val string, strict bool, content ...string) bool {
	var got []byte
	var err error
	switch {
	case enc == "hex":
		got, err = hex.DecodeString(val)
	case strict:
		got, err = base64.StdEncoding.Strict().DecodeString(val)
	default:
		got, err = base64.StdEncoding.DecodeString(val)
	}
	if err != nil {
		return false
	}
	for _, k := range keys {
		if string(hmacSum(newHash, k, content...)) == string(got) {
			return true
		}
	}
	return false
}

// refTimestamp checks a timestamp header against the tolerance. Strict
// wants it as a signer writes it; lenient takes any decimal digits.
func refTimestamp(s string, strict bool) bool {
	if strict {
		at, ok := canonicalUnix(s)
		return ok && within(at)
	}
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return err == nil && within(time.Unix(n, 0))
}

// onWire reports whether header values look as a provider sends them:
// printable ASCII without spaces.
func onWire(vals ...string) bool {
	for _, v := range vals {
		if strings.ContainsFunc(v, func(r rune) bool { return r <= ' ' || r > '~' }) {
			return false
		}
	}
	return true
}

// checkRef fails on a non-sentinel error, on an acceptance the lenient
// reference does not call signed, and on a rejection of what the strict
// reference calls signed.
func checkRef(t *testing.T, err error, ref func(strict bool) bool, format string, args ...any) {
	t.Helper()
	checkSentinel(t, err)
	if err == nil && !ref(false) {
		t.Fatalf("accepted, but the reference says it is not signed: "+format, args...)
	}
	if err != nil && ref(true) {
		t.Fatalf("rejected (%v), but the reference says it is signed: "+format, append([]any{err}, args...)...)
	}
}
