package verify_test

import (
	"crypto/sha1"
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/verify"
)

// The test values GitHub publishes in "Validating webhook deliveries",
// https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries#testing-the-webhook-payload-validation
const (
	githubDocSecret = "It's a Secret to Everybody"
	githubDocBody   = "Hello, World!"
	githubDocSig    = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
	githubNew       = "rotated-github-secret"
)

// GitHub publishes one vector; these were computed once with OpenSSL 3.0
// (which also gives the published value above) and checked in:
//
//	$ printf '%s' 'Hello, World!' | openssl dgst -sha256 -hmac 'rotated-github-secret'
//	SHA2-256(stdin)= 2376b98b1e3deb43c46cfd6a02113185c60b6dc55add2d5ae76b7cd6f84dc477
//	$ printf '' | openssl dgst -sha256 -hmac "It's a Secret to Everybody"
//	SHA2-256(stdin)= 66a0c074deaa0f489ead6537e0d32f9a344b90bbeda705b6ed45ecd3b413fb40
//	$ printf '%s' 'Hello, World!' | openssl dgst -sha1 -hmac "It's a Secret to Everybody"
//	SHA1(stdin)= 01dc10d0c83e72ed246219cdd91669667fe2ca59
const (
	githubNewSig   = "sha256=2376b98b1e3deb43c46cfd6a02113185c60b6dc55add2d5ae76b7cd6f84dc477"
	githubEmptySig = "sha256=66a0c074deaa0f489ead6537e0d32f9a344b90bbeda705b6ed45ecd3b413fb40"
	githubDocSHA1  = "sha1=01dc10d0c83e72ed246219cdd91669667fe2ca59"
)

func gh256(secret, body string) string { return "sha256=" + hmacHex(sha256.New, secret, body) }
func gh1(secret, body string) string   { return "sha1=" + hmacHex(sha1.New, secret, body) }

func TestGitHub(t *testing.T) {
	v := mustNew(t, config.Verify{Type: "github", Secret: secret(githubDocSecret), Secrets: secrets(githubNew)})
	if v.Name() != "github" {
		t.Fatalf("Name() = %q", v.Name())
	}
	if got := gh256(githubDocSecret, githubDocBody); got != githubDocSig {
		t.Fatalf("BUG: the reference signer disagrees with GitHub's published value: %s", got)
	}
	body := githubDocBody
	h256 := func(v string) verify.Headers { return header("X-Hub-Signature-256", v) }
	hex := strings.TrimPrefix(githubDocSig, "sha256=")
	run(t, v, []vcase{
		{name: "GitHub's published example", h: h256(githubDocSig), body: body},
		{name: "rotation/second secret", h: h256(gh256(githubNew, body)), body: body},
		{name: "uppercase hex", h: h256("sha256=" + strings.ToUpper(hex)), body: body},
		{name: "sha1 header beside a valid sha256 is not read", h: header("X-Hub-Signature-256", githubDocSig, "X-Hub-Signature", "garbage"), body: body},

		{name: "wrong secret", h: h256(gh256("wrong", body)), body: body, want: verify.ErrMismatch},
		{name: "tampered body", h: h256(githubDocSig), body: "Hello, World?", want: verify.ErrMismatch},
		{name: "tampered signature", h: h256(flipHex(githubDocSig)), body: body, want: verify.ErrMismatch},
		{name: "truncated signature", h: h256(githubDocSig[:len(githubDocSig)-2]), body: body, want: verify.ErrMismatch},
		{name: "sha1 value in the sha256 header", h: h256("sha256=" + strings.TrimPrefix(gh1(githubDocSecret, body), "sha1=")), body: body, want: verify.ErrMismatch},

		{name: "missing header", h: header(), body: body, want: verify.ErrMissing},
		{name: "empty header", h: h256(""), body: body, want: verify.ErrMissing},
		{name: "sha1 only, sha1 not allowed", h: header("X-Hub-Signature", gh1(githubDocSecret, body)), body: body, want: verify.ErrMissing},

		{name: "missing prefix", h: h256(hex), body: body, want: verify.ErrMalformed},
		{name: "sha1 prefix", h: h256("sha1=" + hex), body: body, want: verify.ErrMalformed},
		{name: "prefix case", h: h256("SHA256=" + hex), body: body, want: verify.ErrMalformed},
		{name: "bad hex", h: h256("sha256=" + strings.Repeat("zz", 32)), body: body, want: verify.ErrMalformed},
		{name: "odd hex", h: h256("sha256=" + hex[1:]), body: body, want: verify.ErrMalformed},
		{name: "hex too long", h: h256("sha256=" + strings.Repeat(hex, 3)), body: body, want: verify.ErrMalformed},
		{name: "base64", h: h256("sha256=" + hmacB64(sha256.New, githubDocSecret, body)), body: body, want: verify.ErrMalformed},
		{name: "garbage", h: h256("garbage"), body: body, want: verify.ErrMalformed},
	})
}

func TestGitHubSHA1(t *testing.T) {
	v := mustNew(t, config.Verify{Type: "github", Secret: secret(githubDocSecret), Secrets: secrets(githubNew), AllowSHA1: true})
	body := githubDocBody
	h1 := func(v string) verify.Headers { return header("X-Hub-Signature", v) }
	run(t, v, []vcase{
		{name: "sha1", h: h1(gh1(githubDocSecret, body)), body: body},
		{name: "sha1 OpenSSL vector", h: h1(githubDocSHA1), body: body},
		{name: "sha1 rotation", h: h1(gh1(githubNew, body)), body: body},
		{name: "sha256 still", h: header("X-Hub-Signature-256", githubDocSig), body: body},

		{name: "sha1 wrong secret", h: h1(gh1("wrong", body)), body: body, want: verify.ErrMismatch},
		{name: "sha1 tampered body", h: h1(gh1(githubDocSecret, body)), body: body + "!", want: verify.ErrMismatch},
		// A bad sha256 header must not fall back to a valid sha1 one: that
		// would let a downgrade through.
		{name: "bad sha256 beside valid sha1", h: header("X-Hub-Signature-256", gh256("wrong", body), "X-Hub-Signature", gh1(githubDocSecret, body)), body: body, want: verify.ErrMismatch},
		{name: "sha1 missing prefix", h: h1(strings.TrimPrefix(gh1(githubDocSecret, body), "sha1=")), body: body, want: verify.ErrMalformed},
		{name: "sha1 bad hex", h: h1("sha1=" + strings.Repeat("g", 40)), body: body, want: verify.ErrMalformed},
		{name: "neither header", h: header(), body: body, want: verify.ErrMissing},
	})
}
