package verify_test

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/verify"
)

// The example of the Standard Webhooks specification, as its reference Go
// library checks it (TestWebhookSign):
// https://github.com/standard-webhooks/standard-webhooks/blob/main/libraries/go/webhook_test.go
const (
	swDocSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	swDocID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	swDocTS     = 1614265330
	swDocBody   = `{"test": 2432232314}`
	swDocSig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="

	swOld  = "whsec_" + "b2xkLXNlY3JldC1rZXktMzItYnl0ZXMtbG9uZyEhIQ=="
	swNew  = "whsec_" + "bmV3LXNlY3JldC1rZXktMzItYnl0ZXMtbG9uZyEhIQ=="
	swID   = "msg_2KWPBgLlAfxdpx2AI54pPJ85f1W"
	swBody = `{"type":"invoice.paid","data":{"id":"inv_1"}}`
)

// swSign is the Standard Webhooks library's own signer: "v1,<base64>".
func swSign(t testing.TB, secret, id string, at time.Time, body string) string {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := wh.Sign(id, at, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

func swHdr(id, ts, sig string) verify.Headers {
	return header("webhook-id", id, "webhook-timestamp", ts, "webhook-signature", sig)
}

func TestStandardWebhooks(t *testing.T) {
	v := mustNew(t, config.Verify{Type: "standardwebhooks", Secret: secret(swOld), Secrets: secrets(swNew)})
	if v.Name() != "standardwebhooks" {
		t.Fatalf("Name() = %q", v.Name())
	}
	if got := swSign(t, swDocSecret, swDocID, time.Unix(swDocTS, 0), swDocBody); got != swDocSig {
		t.Fatalf("BUG: the reference signer disagrees with the specification: %s", got)
	}
	docV := mustNew(t, config.Verify{Type: "standardwebhooks", Secret: secret(swDocSecret)})
	t.Run("specification example", func(t *testing.T) {
		err := docV.Verify(swHdr(swDocID, strconv.Itoa(swDocTS), swDocSig), []byte(swDocBody), time.Unix(swDocTS, 0))
		checkErr(t, err, nil)
	})

	body, tn := swBody, ts(now)
	valid := swSign(t, swOld, swID, now, body)
	other := swSign(t, swNew, swID, now, body)
	wrong := swSign(t, "whsec_d3Jvbmc=", swID, now, body)
	b64 := strings.TrimPrefix(valid, "v1,")
	raw, _ := base64.StdEncoding.DecodeString(b64)
	at := func(d time.Duration) verify.Headers {
		return swHdr(swID, ts(now.Add(d)), swSign(t, swOld, swID, now.Add(d), body))
	}
	run(t, v, []vcase{
		{name: "valid", h: swHdr(swID, tn, valid), body: body},
		{name: "rotation/second secret", h: swHdr(swID, tn, other), body: body},
		{name: "several/valid last", h: swHdr(swID, tn, wrong+" "+valid), body: body},
		{name: "several/valid first", h: swHdr(swID, tn, valid+" "+wrong), body: body},
		{name: "several/both rotated", h: swHdr(swID, tn, valid+" "+other), body: body},
		{name: "several/other versions skipped", h: swHdr(swID, tn, "v1a,"+b64+" v2,xyz "+other), body: body},
		{name: "several/bad base64 skipped", h: swHdr(swID, tn, "v1,!!!! "+valid), body: body},
		{name: "canonical header names", h: header("Webhook-Id", swID, "Webhook-Timestamp", tn, "Webhook-Signature", valid), body: body},
		{name: "edge of tolerance/past", h: at(-tol), body: body},
		{name: "edge of tolerance/future", h: at(tol), body: body},

		{name: "wrong secret", h: swHdr(swID, tn, wrong), body: body, want: verify.ErrMismatch},
		{name: "tampered body", h: swHdr(swID, tn, valid), body: body + "\n", want: verify.ErrMismatch},
		{name: "tampered id", h: swHdr(swID+"x", tn, valid), body: body, want: verify.ErrMismatch},
		{name: "tampered timestamp", h: swHdr(swID, ts(now.Add(time.Second)), valid), body: body, want: verify.ErrMismatch},
		{name: "tampered signature", h: swHdr(swID, tn, "v1,"+flipB64(b64)), body: body, want: verify.ErrMismatch},
		{name: "truncated signature", h: swHdr(swID, tn, "v1,"+base64.StdEncoding.EncodeToString(raw[:31])), body: body, want: verify.ErrMismatch},
		{name: "hex signature", h: swHdr(swID, tn, "v1,"+hmacHex(sha256.New, "k", body)), body: body, want: verify.ErrMismatch},
		{name: "missing version prefix", h: swHdr(swID, tn, b64), body: body, want: verify.ErrMismatch},
		{name: "v1a only", h: swHdr(swID, tn, "v1a,"+b64), body: body, want: verify.ErrMismatch},
		// An undecodable entry is skipped, as the library skips an entry it
		// does not understand: the request then has no matching signature.
		{name: "bad base64", h: swHdr(swID, tn, "v1,"+strings.Repeat("*", 44)), body: body, want: verify.ErrMismatch},
		{name: "comma-separated", h: swHdr(swID, tn, wrong+","+valid), body: body, want: verify.ErrMismatch},
		{name: "garbage", h: swHdr(swID, tn, "garbage"), body: body, want: verify.ErrMismatch},

		{name: "missing id", h: header("webhook-timestamp", tn, "webhook-signature", valid), body: body, want: verify.ErrMissing},
		{name: "missing timestamp", h: header("webhook-id", swID, "webhook-signature", valid), body: body, want: verify.ErrMissing},
		{name: "missing signature", h: header("webhook-id", swID, "webhook-timestamp", tn), body: body, want: verify.ErrMissing},
		{name: "missing all", h: header(), body: body, want: verify.ErrMissing},

		{name: "timestamp not a number", h: swHdr(swID, "now", valid), body: body, want: verify.ErrMalformed},
		{name: "timestamp RFC 3339", h: swHdr(swID, now.UTC().Format(time.RFC3339), valid), body: body, want: verify.ErrMalformed},
		{name: "timestamp negative", h: swHdr(swID, "-"+tn, valid), body: body, want: verify.ErrMalformed},

		{name: "expired/past", h: at(-tol - time.Second), body: body, want: verify.ErrExpired},
		{name: "expired/future", h: at(tol + time.Second), body: body, want: verify.ErrExpired},
	})
}

// TestStandardWebhooksSecretForms checks the secret forms the library
// accepts: with or without the whsec_ prefix.
func TestStandardWebhooksSecretForms(t *testing.T) {
	bare := strings.TrimPrefix(swOld, "whsec_")
	v := mustNew(t, config.Verify{Type: "standardwebhooks", Secret: secret(bare)})
	err := v.Verify(swHdr(swID, ts(now), swSign(t, swOld, swID, now, swBody)), []byte(swBody), now)
	checkErr(t, err, nil)
}

// TestStandardWebhooksAgreesWithLibrary checks our answer on headers the
// library produced against the library's own verifier.
func TestStandardWebhooksAgreesWithLibrary(t *testing.T) {
	v := mustNew(t, config.Verify{Type: "standardwebhooks", Secret: secret(swOld)})
	ref, err := standardwebhooks.NewWebhook(swOld)
	if err != nil {
		t.Fatal(err)
	}
	wall := time.Now()
	for _, body := range []string{"", "{}", swBody, strings.Repeat("y", 1<<16)} {
		for _, s := range []string{swOld, swNew} {
			sig := swSign(t, s, swID, wall, body)
			hh := http.Header{}
			hh.Set("webhook-id", swID)
			hh.Set("webhook-timestamp", ts(wall))
			hh.Set("webhook-signature", sig)
			want := ref.Verify([]byte(body), hh)
			got := v.Verify(swHdr(swID, ts(wall), sig), []byte(body), wall)
			if (want == nil) != (got == nil) {
				t.Fatalf("body %d bytes, secret %q: library says %v, we say %v", len(body), s, want, got)
			}
		}
	}
}
