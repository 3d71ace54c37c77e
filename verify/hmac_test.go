package verify_test

import (
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"hash"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/verify"
)

const (
	hmacOld  = "acme-secret-1"
	hmacNew  = "acme-secret-2"
	hmacBody = `{"order":42,"status":"paid"}`
)

// Vectors for two generic configurations, computed once with OpenSSL 3.0
// and checked in, so that the generic verifier is held to a signer that is
// not Go's crypto/hmac ($body is hmacBody):
//
//	$ printf '%s' "$body" | openssl dgst -sha1 -hmac 'acme-secret-1'
//	SHA1(stdin)= 0b92f1ac2f283674946daa24840c6777c2c6e3dd
//	$ printf '%s' "$body" | openssl dgst -sha1 -hmac 'acme-secret-2'
//	SHA1(stdin)= 8b75ba9c8ff92df910a0e26f338356fec13dcc77
//	$ printf '' | openssl dgst -sha1 -hmac 'acme-secret-1'
//	SHA1(stdin)= 71f582e679da8e90d98a7c8cec14d75b9530f2b4
//	$ printf '%s' "1700000000.$body" | openssl dgst -sha512 -hmac 'acme-secret-1' -binary | openssl base64 -A
//	drvdrd1QNwxVV099ktlk4+Ob3I/0oBXlubmaOkULwqQ6QIpkMf2pWtxh+Q+1W49RnKHTuqvcoj/mPKhTEg0cVA==
//	$ printf '%s' "1700000000.$body" | openssl dgst -sha512 -hmac 'acme-secret-2' -binary | openssl base64 -A
//	oW9bNmFxsDoQbGbhoqONiwnaojWiAFr8hUwZZqjpBdcFGqx40zEeb93u0mI+/HCYv9zc4WXQwNjjuX6gffEOBQ==
//	$ printf '%s' "1700000000." | openssl dgst -sha512 -hmac 'acme-secret-1' -binary | openssl base64 -A
//	LwYPZrGZeOOmVjqvhcRecr9Ut0Qzr4eQYHQUNF3i8dVLDbl2bDL8qUIkqrqvfgIdEaVbVMVjg0hKRxWGY3YZxQ==
const (
	hmacSHA1Old     = "0b92f1ac2f283674946daa24840c6777c2c6e3dd"
	hmacSHA1New     = "8b75ba9c8ff92df910a0e26f338356fec13dcc77"
	hmacSHA1Empty   = "71f582e679da8e90d98a7c8cec14d75b9530f2b4"
	hmacSHA512TS    = 1_700_000_000
	hmacSHA512Old   = "drvdrd1QNwxVV099ktlk4+Ob3I/0oBXlubmaOkULwqQ6QIpkMf2pWtxh+Q+1W49RnKHTuqvcoj/mPKhTEg0cVA=="
	hmacSHA512New   = "oW9bNmFxsDoQbGbhoqONiwnaojWiAFr8hUwZZqjpBdcFGqx40zEeb93u0mI+/HCYv9zc4WXQwNjjuX6gffEOBQ=="
	hmacSHA512Empty = "LwYPZrGZeOOmVjqvhcRecr9Ut0Qzr4eQYHQUNF3i8dVLDbl2bDL8qUIkqrqvfgIdEaVbVMVjg0hKRxWGY3YZxQ=="
)

// TestHMACAlgorithmsAndEncodings runs the same table for every algorithm,
// encoding and prefix the generic verifier supports.
func TestHMACAlgorithmsAndEncodings(t *testing.T) {
	algs := []struct {
		name    string
		newHash func() hash.Hash
	}{{"sha1", sha1.New}, {"sha256", sha256.New}, {"sha512", sha512.New}, {"", sha256.New}}
	for _, alg := range algs {
		for _, enc := range []string{"hex", "base64", ""} {
			for _, prefix := range []string{"", "sha256="} {
				name := "alg=" + alg.name + "/enc=" + enc + "/prefix=" + prefix
				t.Run(name, func(t *testing.T) {
					hmacTable(t, alg.newHash, enc, prefix, config.Verify{
						Type: "hmac", Header: "X-Signature", Algorithm: alg.name, Encoding: enc, Prefix: prefix,
						Secret: secret(hmacOld), Secrets: secrets(hmacNew),
					})
				})
			}
		}
	}
}

func hmacTable(t *testing.T, newHash func() hash.Hash, enc, prefix string, c config.Verify) {
	v := mustNew(t, c)
	if v.Name() != "hmac" {
		t.Fatalf("Name() = %q", v.Name())
	}
	sign := func(secret, body string) string {
		if enc == "base64" {
			return prefix + hmacB64(newHash, secret, body)
		}
		return prefix + hmacHex(newHash, secret, body)
	}
	h := func(v string) verify.Headers { return header("X-Signature", v) }
	body := hmacBody
	valid := sign(hmacOld, body)
	bare := strings.TrimPrefix(valid, prefix)
	var tampered, bad string
	if enc == "base64" {
		tampered, bad = prefix+flipB64(bare), prefix+"*"+bare[1:]
	} else {
		tampered, bad = prefix+flipHex(bare), prefix+"x"+bare[1:]
	}
	cases := []vcase{
		{name: "valid", h: h(valid), body: body},
		{name: "rotation/second secret", h: h(sign(hmacNew, body)), body: body},
		{name: "header name case", h: header("x-signature", valid), body: body},
		{name: "empty body", h: h(sign(hmacOld, "")), body: ""},

		{name: "wrong secret", h: h(sign("wrong", body)), body: body, want: verify.ErrMismatch},
		{name: "tampered body", h: h(valid), body: body[1:], want: verify.ErrMismatch},
		{name: "tampered signature", h: h(tampered), body: body, want: verify.ErrMismatch},

		{name: "missing header", h: header(), body: body, want: verify.ErrMissing},
		{name: "empty header", h: h(""), body: body, want: verify.ErrMissing},
		{name: "other header", h: header("X-Other-Signature", valid), body: body, want: verify.ErrMissing},

		{name: "bad encoding", h: h(bad), body: body, want: verify.ErrMalformed},
		{name: "garbage", h: h(prefix + "not a signature!"), body: body, want: verify.ErrMalformed},
		{name: "too long", h: h(prefix + strings.Repeat(bare, 4)), body: body, want: verify.ErrMalformed},
	}
	if prefix != "" {
		cases = append(cases,
			vcase{name: "missing prefix", h: h(bare), body: body, want: verify.ErrMalformed},
			vcase{name: "other prefix", h: h("sha512=" + bare), body: body, want: verify.ErrMalformed},
		)
	}
	run(t, v, cases)
}

// TestHMACWrongAlgorithm checks that a signature under another algorithm
// than the configured one does not pass.
func TestHMACWrongAlgorithm(t *testing.T) {
	v := mustNew(t, config.Verify{Type: "hmac", Header: "X-Signature", Algorithm: "sha512", Secret: secret(hmacOld)})
	run(t, v, []vcase{
		{name: "sha256 to a sha512 source", h: header("X-Signature", hmacHex(sha256.New, hmacOld, hmacBody)), body: hmacBody, want: verify.ErrMismatch},
		{name: "sha1 to a sha512 source", h: header("X-Signature", hmacHex(sha1.New, hmacOld, hmacBody)), body: hmacBody, want: verify.ErrMismatch},
		{name: "sha512", h: header("X-Signature", hmacHex(sha512.New, hmacOld, hmacBody)), body: hmacBody},
	})
}

// TestHMACTimestamp covers a timestamp header with signed_content
// "{timestamp}.{body}".
func TestHMACTimestamp(t *testing.T) {
	v := mustNew(t, config.Verify{
		Type: "hmac", Header: "X-Signature", Prefix: "sha256=", TimestampHeader: "X-Timestamp",
		SignedContent: "{timestamp}.{body}", Secret: secret(hmacOld), Secrets: secrets(hmacNew),
	})
	body, tn := hmacBody, ts(now)
	sign := func(secret, ts, body string) string { return "sha256=" + hmacHex(sha256.New, secret, ts, ".", body) }
	h := func(sig, ts string) verify.Headers { return header("X-Signature", sig, "X-Timestamp", ts) }
	valid := sign(hmacOld, tn, body)
	at := func(d time.Duration) verify.Headers {
		s := ts(now.Add(d))
		return h(sign(hmacOld, s, body), s)
	}
	run(t, v, []vcase{
		{name: "valid", h: h(valid, tn), body: body},
		{name: "rotation/second secret", h: h(sign(hmacNew, tn, body), tn), body: body},
		{name: "edge of tolerance/past", h: at(-tol), body: body},
		{name: "edge of tolerance/future", h: at(tol), body: body},

		{name: "wrong secret", h: h(sign("wrong", tn, body), tn), body: body, want: verify.ErrMismatch},
		{name: "tampered body", h: h(valid, tn), body: body + "x", want: verify.ErrMismatch},
		{name: "tampered timestamp", h: h(valid, ts(now.Add(-time.Second))), body: body, want: verify.ErrMismatch},
		{name: "body only signed", h: h("sha256="+hmacHex(sha256.New, hmacOld, body), tn), body: body, want: verify.ErrMismatch},
		{name: "separator moved", h: h(sign(hmacOld, tn[:9], tn[9:]+"."+body), tn), body: body, want: verify.ErrMismatch},

		{name: "missing signature", h: header("X-Timestamp", tn), body: body, want: verify.ErrMissing},
		{name: "missing timestamp", h: header("X-Signature", valid), body: body, want: verify.ErrMissing},

		{name: "timestamp not a number", h: h(valid, "yesterday"), body: body, want: verify.ErrMalformed},
		{name: "timestamp with sign", h: h(valid, "+"+tn), body: body, want: verify.ErrMalformed},
		{name: "missing prefix", h: h(strings.TrimPrefix(valid, "sha256="), tn), body: body, want: verify.ErrMalformed},
		{name: "bad hex", h: h("sha256=zz"+valid[9:], tn), body: body, want: verify.ErrMalformed},

		{name: "expired/past", h: at(-tol - time.Second), body: body, want: verify.ErrExpired},
		{name: "expired/future", h: at(tol + time.Second), body: body, want: verify.ErrExpired},
	})
}

// TestHMACTemplateAsSlack configures the generic verifier the way Slack
// signs and checks it against Slack's published example: literal text on
// both sides of the placeholders.
func TestHMACTemplateAsSlack(t *testing.T) {
	v := mustNew(t, config.Verify{
		Type: "hmac", Header: "X-Slack-Signature", Prefix: "v0=", TimestampHeader: "X-Slack-Request-Timestamp",
		SignedContent: "v0:{timestamp}:{body}", Secret: secret(slackDocSecret),
	})
	docTS := strconv.Itoa(slackDocTS)
	run(t, v, []vcase{
		{name: "published example", h: slackHdr(slackDocSig, docTS), body: slackDocBody, at: time.Unix(slackDocTS, 0)},
		{name: "tampered", h: slackHdr(slackDocSig, docTS), body: slackDocBody + "&", at: time.Unix(slackDocTS, 0), want: verify.ErrMismatch},
	})
}

// TestHMACTemplateLiterals checks literal text before, between and after
// the placeholders. (A timestamp header that is checked but not signed is
// refused by New: see TestNewErrorsNameTheField.)
func TestHMACTemplateLiterals(t *testing.T) {
	tn := ts(now)
	for _, tc := range []struct {
		tmpl    string
		content []string
	}{
		{"pre|{timestamp}|{body}|post", []string{"pre|", tn, "|", hmacBody, "|post"}},
		{"{body}{timestamp}", []string{hmacBody, tn}},
		{"a{timestamp}b{body}c", []string{"a", tn, "b", hmacBody, "c"}},
		{"{timestamp}.{timestamp}.{body}", []string{tn, ".", tn, ".", hmacBody}},
	} {
		t.Run(tc.tmpl, func(t *testing.T) {
			v := mustNew(t, config.Verify{
				Type: "hmac", Header: "X-Signature", TimestampHeader: "X-Timestamp",
				SignedContent: tc.tmpl, Secret: secret(hmacOld),
			})
			sig := hmacHex(sha256.New, hmacOld, tc.content...)
			run(t, v, []vcase{
				{name: "valid", h: header("X-Signature", sig, "X-Timestamp", tn), body: hmacBody},
				{name: "other body", h: header("X-Signature", sig, "X-Timestamp", tn), body: hmacBody + " ", want: verify.ErrMismatch},
				{name: "expired", h: header("X-Signature", sig, "X-Timestamp", tn), body: hmacBody, at: now.Add(time.Hour), want: verify.ErrExpired},
			})
		})
	}
}

// TestHMACSHA512Limits checks the longest signatures decodeSig takes: a
// sha512 MAC is 128 hex digits or 88 base64 characters.
func TestHMACSHA512Limits(t *testing.T) {
	for _, enc := range []string{"hex", "base64"} {
		t.Run(enc, func(t *testing.T) {
			v := mustNew(t, config.Verify{Type: "hmac", Header: "X-Signature", Algorithm: "sha512", Encoding: enc, Secret: secret(hmacOld)})
			sig := hmacHex(sha512.New, hmacOld, hmacBody)
			if enc == "base64" {
				sig = hmacB64(sha512.New, hmacOld, hmacBody)
			}
			run(t, v, []vcase{
				{name: "sha512", h: header("X-Signature", sig), body: hmacBody},
				{name: "one more unit", h: header("X-Signature", sig+"AAAA"), body: hmacBody, want: verify.ErrMalformed},
			})
		})
	}
}
