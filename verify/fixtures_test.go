package verify_test

import (
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/verify"
)

// fixture is a verifier and a request it accepts, built before anything is
// measured.
type fixture struct {
	name string
	v    verify.Verifier
	fh   *fasthttp.RequestHeader // the request's headers, as the edge has them
	mh   mapHeaders              // the same headers in a plain map
	body []byte
}

// fixtures returns one accepted request per verifier, over a body of n
// bytes. Each verifier has two secrets and the request is signed by the
// second, so rotation is on the measured path.
func fixtures(tb testing.TB, n int) []fixture {
	tb.Helper()
	body := bytes.Repeat([]byte("{\"k\":\"0123456789abcdef\"},"), n/25+1)[:n]
	sb := string(body)
	tn := ts(now)
	swSig := swSign(tb, swNew, swID, now, sb)
	type row struct {
		name string
		c    config.Verify
		kv   []string
	}
	rows := []row{
		{"none", config.Verify{Type: "none"}, nil},
		{"stripe", config.Verify{Type: "stripe", Secret: secret(stripeOld), Secrets: secrets(stripeNew)},
			[]string{"Stripe-Signature", stripeSigned(stripeNew, now, sb).Header}},
		{"github", config.Verify{Type: "github", Secret: secret(githubDocSecret), Secrets: secrets(githubNew)},
			[]string{"X-Hub-Signature-256", gh256(githubNew, sb)}},
		{"github_sha1", config.Verify{Type: "github", Secret: secret(githubDocSecret), Secrets: secrets(githubNew), AllowSHA1: true},
			[]string{"X-Hub-Signature", gh1(githubNew, sb)}},
		{"shopify", config.Verify{Type: "shopify", Secret: secret(shopifyOld), Secrets: secrets(shopifyNew)},
			[]string{"X-Shopify-Hmac-Sha256", shopifySig(shopifyNew, sb)}},
		{"slack", config.Verify{Type: "slack", Secret: secret(slackDocSecret), Secrets: secrets(slackNew)},
			[]string{"X-Slack-Signature", slackSig(slackNew, tn, sb), "X-Slack-Request-Timestamp", tn}},
		{"standardwebhooks", config.Verify{Type: "standardwebhooks", Secret: secret(swOld), Secrets: secrets(swNew)},
			[]string{"Webhook-Id", swID, "Webhook-Timestamp", tn, "Webhook-Signature", "v1,AAAA " + swSig}},
		{"hmac", config.Verify{Type: "hmac", Header: "X-Signature", Prefix: "sha256=", Secret: secret(hmacOld), Secrets: secrets(hmacNew)},
			[]string{"X-Signature", "sha256=" + hmacHex(sha256.New, hmacNew, sb)}},
		{"hmac_sha512_base64_timestamp", config.Verify{
			Type: "hmac", Header: "X-Signature", Algorithm: "sha512", Encoding: "base64",
			TimestampHeader: "X-Timestamp", SignedContent: "{timestamp}.{body}",
			Secret: secret(hmacOld), Secrets: secrets(hmacNew),
		}, []string{"X-Signature", hmacB64(sha512.New, hmacNew, tn, ".", sb), "X-Timestamp", tn}},
	}
	out := make([]fixture, len(rows))
	for i, r := range rows {
		mh := mapHeaders{}
		for j := 0; j < len(r.kv); j += 2 {
			mh[r.kv[j]] = []byte(r.kv[j+1])
		}
		out[i] = fixture{name: r.name, v: mustNew(tb, r.c), fh: header(r.kv...), mh: mh, body: body}
		for _, h := range []verify.Headers{out[i].fh, out[i].mh} {
			if err := out[i].v.Verify(h, body, now); err != nil {
				tb.Fatalf("BUG: fixture %s (%T) is not accepted: %v", r.name, h, err)
			}
		}
	}
	return out
}
