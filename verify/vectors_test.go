package verify_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/verify"
)

// signed is one request a signer other than package verify produced: a
// provider's published example, stripe-go, the Standard Webhooks library,
// or an OpenSSL run checked in beside the scheme's tests.
type signed struct {
	h    verify.Headers
	body string
	at   time.Time // when it was signed; the tolerance cases move the clock from here
}

// scheme is one verifier configuration and requests signed for it.
type scheme struct {
	name string
	conf func(secrets ...string) config.Verify
	// old and new are the two secrets of a rotation; wrong is a well-formed
	// secret that signed nothing here.
	old, new, wrong string
	// byOld and byNew are one body signed by each secret; empty is the
	// empty body signed by old.
	byOld, byNew, empty signed
	malformed           verify.Headers // byOld's request with a header that does not parse
	timestamp           bool           // the scheme signs a timestamp and has a tolerance
}

// schemes lists every verifier with independently signed requests.
func schemes(t *testing.T) []scheme {
	t.Helper()
	stripeAt := func(secret, body string) signed {
		return signed{h: stripeHdr(stripeSigned(secret, now, body).Header), body: body, at: now}
	}
	swAt := func(secret, body string) signed {
		return signed{h: swHdr(swID, ts(now), swSign(t, secret, swID, now, body)), body: body, at: now}
	}
	slackTS := strconv.Itoa(slackDocTS)
	slackAt := time.Unix(slackDocTS, 0)
	h512 := func(sig string) verify.Headers {
		return header("X-Signature", "sha512="+sig, "X-Timestamp", strconv.Itoa(hmacSHA512TS))
	}
	at512 := time.Unix(hmacSHA512TS, 0)
	return []scheme{
		{
			name: "stripe", conf: typed("stripe", nil),
			old: stripeOld, new: stripeNew, wrong: "whsec_wrong0123456789",
			byOld: stripeAt(stripeOld, stripeBody), byNew: stripeAt(stripeNew, stripeBody), empty: stripeAt(stripeOld, ""),
			malformed: stripeHdr("v1=" + stripeV1(stripeOld, now, stripeBody)),
			timestamp: true,
		},
		{
			name: "standardwebhooks", conf: typed("standardwebhooks", nil),
			old: swOld, new: swNew, wrong: "whsec_d3Jvbmc=",
			byOld: swAt(swOld, swBody), byNew: swAt(swNew, swBody), empty: swAt(swOld, ""),
			malformed: swHdr(swID, ts(now)+"s", swSign(t, swOld, swID, now, swBody)),
			timestamp: true,
		},
		{
			name: "github", conf: typed("github", nil),
			old: githubDocSecret, new: githubNew, wrong: "wrong",
			byOld:     signed{h: header("X-Hub-Signature-256", githubDocSig), body: githubDocBody, at: now},
			byNew:     signed{h: header("X-Hub-Signature-256", githubNewSig), body: githubDocBody, at: now},
			empty:     signed{h: header("X-Hub-Signature-256", githubEmptySig), at: now},
			malformed: header("X-Hub-Signature-256", githubDocSig[len("sha256="):]),
		},
		{
			name: "shopify", conf: typed("shopify", nil),
			old: shopifyOld, new: shopifyNew, wrong: "wrong",
			byOld:     signed{h: header("X-Shopify-Hmac-Sha256", shopifyOldSig), body: shopifyBody, at: now},
			byNew:     signed{h: header("X-Shopify-Hmac-Sha256", shopifyNewSig), body: shopifyBody, at: now},
			empty:     signed{h: header("X-Shopify-Hmac-Sha256", shopifyEmptySig), at: now},
			malformed: header("X-Shopify-Hmac-Sha256", shopifyOldSig[1:]),
		},
		{
			name: "slack", conf: typed("slack", nil),
			old: slackDocSecret, new: slackNew, wrong: "wrong",
			byOld:     signed{h: slackHdr(slackDocSig, slackTS), body: slackDocBody, at: slackAt},
			byNew:     signed{h: slackHdr(slackNewSig, slackTS), body: slackDocBody, at: slackAt},
			empty:     signed{h: slackHdr(slackEmptySig, slackTS), at: slackAt},
			malformed: slackHdr(slackDocSig[len("v0="):], slackTS),
			timestamp: true,
		},
		{
			name: "hmac/sha1-hex", conf: typed("hmac", func(c *config.Verify) {
				c.Header, c.Algorithm = "X-Signature", "sha1"
			}),
			old: hmacOld, new: hmacNew, wrong: "wrong",
			byOld:     signed{h: header("X-Signature", hmacSHA1Old), body: hmacBody, at: now},
			byNew:     signed{h: header("X-Signature", hmacSHA1New), body: hmacBody, at: now},
			empty:     signed{h: header("X-Signature", hmacSHA1Empty), at: now},
			malformed: header("X-Signature", hmacSHA1Old+"0"),
		},
		{
			name: "hmac/sha512-base64-prefix-timestamp", conf: typed("hmac", func(c *config.Verify) {
				c.Header, c.Prefix, c.Algorithm, c.Encoding = "X-Signature", "sha512=", "sha512", "base64"
				c.TimestampHeader, c.SignedContent = "X-Timestamp", "{timestamp}.{body}"
			}),
			old: hmacOld, new: hmacNew, wrong: "wrong",
			byOld:     signed{h: h512(hmacSHA512Old), body: hmacBody, at: at512},
			byNew:     signed{h: h512(hmacSHA512New), body: hmacBody, at: at512},
			empty:     signed{h: h512(hmacSHA512Empty), at: at512},
			malformed: header("X-Signature", hmacSHA512Old, "X-Timestamp", strconv.Itoa(hmacSHA512TS)),
			timestamp: true,
		},
	}
}

// typed returns a conf function for verifier type typ with the given
// secrets, the first as secret and the rest as secrets.
func typed(typ string, more func(*config.Verify)) func(...string) config.Verify {
	return func(s ...string) config.Verify {
		c := config.Verify{Type: typ, Secret: secret(s[0]), Secrets: secrets(s[1:]...)}
		if more != nil {
			more(&c)
		}
		return c
	}
}

// TestSchemesIndependentSigners runs every verifier against requests an
// independent implementation signed: valid, tampered body, wrong secret,
// rotation (both secrets accepted while both are configured, the removed
// one refused), the edges of the tolerance, missing and malformed headers,
// and the empty body. Zero false accepts and zero false rejects.
func TestSchemesIndependentSigners(t *testing.T) {
	for _, s := range schemes(t) {
		t.Run(s.name, func(t *testing.T) {
			both := mustNew(t, s.conf(s.old, s.new))
			reversed := mustNew(t, s.conf(s.new, s.old))
			onlyNew := mustNew(t, s.conf(s.new))
			onlyOld := mustNew(t, s.conf(s.old))
			wrong := mustNew(t, s.conf(s.wrong))
			o, n, e := s.byOld, s.byNew, s.empty
			type row struct {
				name string
				v    verify.Verifier
				req  signed
				at   time.Time
				want error
			}
			rows := []row{
				{"valid", onlyOld, o, o.at, nil},
				{"rotation/old while both are configured", both, o, o.at, nil},
				{"rotation/new while both are configured", both, n, n.at, nil},
				{"rotation/old while both are configured, new first", reversed, o, o.at, nil},
				{"rotation/new while both are configured, new first", reversed, n, n.at, nil},
				{"rotation/old after it is removed", onlyNew, o, o.at, verify.ErrMismatch},
				{"rotation/new before it is added", onlyOld, n, n.at, verify.ErrMismatch},
				{"wrong secret", wrong, o, o.at, verify.ErrMismatch},
				{"tampered body/appended", both, signed{h: o.h, body: o.body + " "}, o.at, verify.ErrMismatch},
				{"tampered body/one byte", both, signed{h: o.h, body: flipByte(o.body)}, o.at, verify.ErrMismatch},
				{"tampered body/emptied", both, signed{h: o.h}, o.at, verify.ErrMismatch},
				{"empty body", both, e, e.at, nil},
				{"empty body/filled", both, signed{h: e.h, body: o.body}, e.at, verify.ErrMismatch},
				{"empty body/wrong secret", wrong, e, e.at, verify.ErrMismatch},
				{"missing header", both, signed{h: header(), body: o.body}, o.at, verify.ErrMissing},
				{"malformed header", both, signed{h: s.malformed, body: o.body}, o.at, verify.ErrMalformed},
			}
			if s.timestamp {
				rows = append(rows,
					row{"tolerance/just inside, checked late", both, o, o.at.Add(tol), nil},
					row{"tolerance/just outside, checked late", both, o, o.at.Add(tol + time.Second), verify.ErrExpired},
					row{"tolerance/just inside, checked early", both, o, o.at.Add(-tol), nil},
					row{"tolerance/just outside, checked early", both, o, o.at.Add(-tol - time.Second), verify.ErrExpired},
					row{"tolerance/rotated secret just inside", both, n, n.at.Add(tol), nil},
					row{"tolerance/rotated secret just outside", both, n, n.at.Add(tol + time.Second), verify.ErrExpired},
				)
			} else {
				rows = append(rows,
					row{"no tolerance/a year late", both, o, o.at.AddDate(1, 0, 0), nil},
					row{"no tolerance/at the epoch", both, o, time.Unix(0, 0), nil},
				)
			}
			for _, r := range rows {
				t.Run(r.name, func(t *testing.T) {
					checkErr(t, r.v.Verify(r.req.h, []byte(r.req.body), r.at), r.want)
				})
			}
		})
	}
}

// flipByte changes the middle byte of a non-empty body.
func flipByte(s string) string {
	b := []byte(s)
	b[len(b)/2] ^= 0x01
	return string(b)
}
