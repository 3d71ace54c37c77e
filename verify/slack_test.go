package verify_test

import (
	"crypto/sha256"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/verify"
)

// The example Slack publishes in "Verifying requests from Slack",
// https://api.slack.com/authentication/verifying-requests-from-slack
// (the step-by-step walk-through).
const (
	slackDocSecret = "8f742231b10e8888abcd99yyyzzz85a5"
	slackDocTS     = 1531420618
	slackDocBody   = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
	slackDocSig    = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"
	slackNew       = "rotated0slack0signing0secret0000"
)

// Slack publishes one vector; these were computed once with OpenSSL 3.0
// (which also gives the published value above), $body being slackDocBody:
//
//	$ printf '%s' "v0:1531420618:$body" | openssl dgst -sha256 -hmac 'rotated0slack0signing0secret0000'
//	SHA2-256(stdin)= 05680373e8572079eb80ded671baf421d8b23b7eeb9383c8bf26b2ab1200cfc1
//	$ printf '%s' 'v0:1531420618:' | openssl dgst -sha256 -hmac '8f742231b10e8888abcd99yyyzzz85a5'
//	SHA2-256(stdin)= 55f41ec73231010289b54e669149ea021fccab11b5524355523533ce930cb739
const (
	slackNewSig   = "v0=05680373e8572079eb80ded671baf421d8b23b7eeb9383c8bf26b2ab1200cfc1"
	slackEmptySig = "v0=55f41ec73231010289b54e669149ea021fccab11b5524355523533ce930cb739"
)

// slackSig is Slack's v0 scheme as documented.
func slackSig(secret, ts, body string) string {
	return "v0=" + hmacHex(sha256.New, secret, "v0:", ts, ":", body)
}

func slackHdr(sig, ts string) verify.Headers {
	return header("X-Slack-Signature", sig, "X-Slack-Request-Timestamp", ts)
}

func TestSlack(t *testing.T) {
	v := mustNew(t, config.Verify{Type: "slack", Secret: secret(slackDocSecret), Secrets: secrets(slackNew)})
	if v.Name() != "slack" {
		t.Fatalf("Name() = %q", v.Name())
	}
	docTS := strconv.Itoa(slackDocTS)
	if got := slackSig(slackDocSecret, docTS, slackDocBody); got != slackDocSig {
		t.Fatalf("BUG: the reference signer disagrees with Slack's published value: %s", got)
	}
	docNow := time.Unix(slackDocTS, 0).Add(10 * time.Second)
	body, tn := slackDocBody, ts(now)
	valid := slackSig(slackDocSecret, tn, body)
	hex := strings.TrimPrefix(valid, "v0=")
	at := func(d time.Duration) verify.Headers {
		s := ts(now.Add(d))
		return slackHdr(slackSig(slackDocSecret, s, body), s)
	}
	run(t, v, []vcase{
		{name: "Slack's published example", h: slackHdr(slackDocSig, docTS), body: body, at: docNow},
		{name: "valid", h: slackHdr(valid, tn), body: body},
		{name: "rotation/second secret", h: slackHdr(slackSig(slackNew, tn, body), tn), body: body},
		{name: "edge of tolerance/past", h: at(-tol), body: body},
		{name: "edge of tolerance/future", h: at(tol), body: body},

		{name: "wrong secret", h: slackHdr(slackSig("wrong", tn, body), tn), body: body, want: verify.ErrMismatch},
		{name: "tampered body", h: slackHdr(valid, tn), body: body + "&x=1", want: verify.ErrMismatch},
		{name: "tampered timestamp", h: slackHdr(valid, ts(now.Add(time.Second))), body: body, want: verify.ErrMismatch},
		{name: "tampered signature", h: slackHdr(flipHex(valid), tn), body: body, want: verify.ErrMismatch},
		{name: "truncated signature", h: slackHdr(valid[:len(valid)-2], tn), body: body, want: verify.ErrMismatch},

		{name: "missing signature", h: header("X-Slack-Request-Timestamp", tn), body: body, want: verify.ErrMissing},
		{name: "missing timestamp", h: header("X-Slack-Signature", valid), body: body, want: verify.ErrMissing},
		{name: "missing both", h: header(), body: body, want: verify.ErrMissing},

		{name: "missing prefix", h: slackHdr(hex, tn), body: body, want: verify.ErrMalformed},
		{name: "v1 prefix", h: slackHdr("v1="+hex, tn), body: body, want: verify.ErrMalformed},
		{name: "bad hex", h: slackHdr("v0="+strings.Repeat("xy", 32), tn), body: body, want: verify.ErrMalformed},
		{name: "odd hex", h: slackHdr("v0="+hex[1:], tn), body: body, want: verify.ErrMalformed},
		{name: "garbage signature", h: slackHdr("garbage", tn), body: body, want: verify.ErrMalformed},
		{name: "timestamp not a number", h: slackHdr(valid, "soon"), body: body, want: verify.ErrMalformed},
		{name: "timestamp with fraction", h: slackHdr(valid, tn+".5"), body: body, want: verify.ErrMalformed},
		{name: "timestamp far ahead", h: slackHdr(slackSig(slackDocSecret, "9999999999", body), "9999999999"), body: body, want: verify.ErrExpired},

		{name: "expired/past", h: at(-tol - time.Second), body: body, want: verify.ErrExpired},
		{name: "expired/future", h: at(tol + time.Second), body: body, want: verify.ErrExpired},
		{name: "expired/published example today", h: slackHdr(slackDocSig, docTS), body: body, want: verify.ErrExpired},
	})
}
