package verify_test

import (
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v85/webhook"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/verify"
)

const (
	stripeOld  = "whsec_old0123456789abcdefABCDEF"
	stripeNew  = "whsec_new9876543210fedcbaFEDCBA"
	stripeBody = `{"id":"evt_1NG8Du2eZvKYlo2CUI79vXWy","object":"event","type":"charge.succeeded"}`
)

// stripeSigned is stripe-go's own test signer: the header Stripe would send.
func stripeSigned(secret string, at time.Time, body string) *webhook.SignedPayload {
	return webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{
		Payload: []byte(body), Secret: secret, Timestamp: at,
	})
}

// stripeV1 is the hex v1 signature stripe-go computes.
func stripeV1(secret string, at time.Time, body string) string {
	return hex.EncodeToString(stripeSigned(secret, at, body).Signature)
}

func stripeHdr(v string) verify.Headers { return header("Stripe-Signature", v) }

func TestStripe(t *testing.T) {
	v := mustNew(t, config.Verify{Type: "stripe", Secret: secret(stripeOld), Secrets: secrets(stripeNew)})
	if v.Name() != "stripe" {
		t.Fatalf("Name() = %q", v.Name())
	}
	valid := stripeSigned(stripeOld, now, stripeBody).Header
	tNow := "t=" + ts(now)
	sigOld, sigNew := stripeV1(stripeOld, now, stripeBody), stripeV1(stripeNew, now, stripeBody)
	wrong := stripeV1("whsec_wrong", now, stripeBody)
	past, future := now.Add(-tol-time.Second), now.Add(tol+time.Second)
	run(t, v, []vcase{
		{name: "valid", h: stripeHdr(valid), body: stripeBody},
		{name: "rotation/second secret", h: stripeHdr(stripeSigned(stripeNew, now, stripeBody).Header), body: stripeBody},
		{name: "several v1/valid last", h: stripeHdr(tNow + ",v1=" + wrong + ",v1=" + sigNew), body: stripeBody},
		{name: "several v1/valid first", h: stripeHdr(tNow + ",v1=" + sigOld + ",v1=" + wrong), body: stripeBody},
		{name: "several v1/bad hex skipped", h: stripeHdr(tNow + ",v1=zz,v1=" + sigOld), body: stripeBody},
		{name: "v0 and unknown keys ignored", h: stripeHdr(tNow + ",v0=" + wrong + ",x=y,v1=" + sigOld), body: stripeBody},
		{name: "t after v1", h: stripeHdr("v1=" + sigOld + "," + tNow), body: stripeBody},
		{name: "spaces after commas", h: stripeHdr(tNow + ", v1=" + wrong + ", v1=" + sigOld), body: stripeBody},
		{name: "uppercase hex", h: stripeHdr(tNow + ",v1=" + strings.ToUpper(sigOld)), body: stripeBody},
		{name: "edge of tolerance/past", h: stripeHdr(stripeSigned(stripeOld, now.Add(-tol), stripeBody).Header), body: stripeBody},
		{name: "edge of tolerance/future", h: stripeHdr(stripeSigned(stripeOld, now.Add(tol), stripeBody).Header), body: stripeBody},

		{name: "wrong secret", h: stripeHdr(tNow + ",v1=" + wrong), body: stripeBody, want: verify.ErrMismatch},
		{name: "tampered body", h: stripeHdr(valid), body: stripeBody + " ", want: verify.ErrMismatch},
		{name: "empty body", h: stripeHdr(valid), body: "", want: verify.ErrMismatch},
		{name: "tampered timestamp", h: stripeHdr("t=" + ts(now.Add(time.Second)) + ",v1=" + sigOld), body: stripeBody, want: verify.ErrMismatch},
		{name: "tampered signature", h: stripeHdr(tNow + ",v1=" + flipHex(sigOld)), body: stripeBody, want: verify.ErrMismatch},
		{name: "truncated signature", h: stripeHdr(tNow + ",v1=" + sigOld[:62]), body: stripeBody, want: verify.ErrMismatch},
		{name: "signature too long", h: stripeHdr(tNow + ",v1=" + sigOld + sigOld + sigOld), body: stripeBody, want: verify.ErrMismatch},
		{name: "only v0", h: stripeHdr(tNow + ",v0=" + sigOld), body: stripeBody, want: verify.ErrMismatch},
		{name: "no signature", h: stripeHdr(tNow), body: stripeBody, want: verify.ErrMismatch},
		// An undecodable v1 entry is skipped, as stripe-go skips it: the
		// request then has no signature that matches.
		{name: "bad hex", h: stripeHdr(tNow + ",v1=" + strings.Repeat("zz", 32)), body: stripeBody, want: verify.ErrMismatch},
		{name: "odd hex", h: stripeHdr(tNow + ",v1=" + sigOld[1:]), body: stripeBody, want: verify.ErrMismatch},
		{name: "signature for another timestamp in tolerance", h: stripeHdr(tNow + ",v1=" + stripeV1(stripeOld, now.Add(-time.Second), stripeBody)), body: stripeBody, want: verify.ErrMismatch},

		{name: "missing header", h: header(), body: stripeBody, want: verify.ErrMissing},
		{name: "empty header", h: stripeHdr(""), body: stripeBody, want: verify.ErrMissing},
		{name: "other provider's header", h: header("X-Hub-Signature-256", "sha256="+sigOld), body: stripeBody, want: verify.ErrMissing},

		{name: "no timestamp", h: stripeHdr("v1=" + sigOld), body: stripeBody, want: verify.ErrMalformed},
		{name: "timestamp not a number", h: stripeHdr("t=abc,v1=" + sigOld), body: stripeBody, want: verify.ErrMalformed},
		{name: "negative timestamp", h: stripeHdr("t=-" + ts(now) + ",v1=" + sigOld), body: stripeBody, want: verify.ErrMalformed},
		{name: "timestamp too long", h: stripeHdr("t=" + strings.Repeat("9", 30) + ",v1=" + sigOld), body: stripeBody, want: verify.ErrMalformed},
		{name: "empty timestamp", h: stripeHdr("t=,v1=" + sigOld), body: stripeBody, want: verify.ErrMalformed},
		{name: "garbage", h: stripeHdr("garbage"), body: stripeBody, want: verify.ErrMalformed},
		{name: "only commas", h: stripeHdr(",,,"), body: stripeBody, want: verify.ErrMalformed},
		{name: "signature without prefix", h: stripeHdr(sigOld), body: stripeBody, want: verify.ErrMalformed},

		{name: "expired/past", h: stripeHdr(stripeSigned(stripeOld, past, stripeBody).Header), body: stripeBody, want: verify.ErrExpired},
		{name: "expired/future", h: stripeHdr(stripeSigned(stripeOld, future, stripeBody).Header), body: stripeBody, want: verify.ErrExpired},
		{name: "expired/long ago", h: stripeHdr(stripeSigned(stripeOld, time.Unix(1, 0), stripeBody).Header), body: stripeBody, want: verify.ErrExpired},
		{name: "expired/valid signature checked late", h: stripeHdr(valid), body: stripeBody, at: now.Add(tol + time.Second), want: verify.ErrExpired},
	})
}

// TestStripeTolerance checks that a configured tolerance replaces the
// default, both ways.
func TestStripeTolerance(t *testing.T) {
	v := mustNew(t, config.Verify{Type: "stripe", Secret: secret(stripeOld), Tolerance: config.Duration(time.Minute)})
	at := func(d time.Duration) verify.Headers {
		return stripeHdr(stripeSigned(stripeOld, now.Add(d), stripeBody).Header)
	}
	run(t, v, []vcase{
		{name: "-60s", h: at(-time.Minute), body: stripeBody},
		{name: "+60s", h: at(time.Minute), body: stripeBody},
		{name: "-61s", h: at(-time.Minute - time.Second), body: stripeBody, want: verify.ErrExpired},
		{name: "+61s", h: at(time.Minute + time.Second), body: stripeBody, want: verify.ErrExpired},
	})
}

// TestStripeAgreesWithStripeGo checks our answer on headers stripe-go
// produced against stripe-go's own verifier.
func TestStripeAgreesWithStripeGo(t *testing.T) {
	v := mustNew(t, config.Verify{Type: "stripe", Secret: secret(stripeOld)})
	wall := time.Now()
	for _, body := range []string{"", "{}", stripeBody, strings.Repeat("x", 1<<16)} {
		for _, s := range []string{stripeOld, stripeNew} {
			hdr := stripeSigned(s, wall, body).Header
			ref := webhook.ValidatePayload([]byte(body), hdr, stripeOld)
			got := v.Verify(stripeHdr(hdr), []byte(body), wall)
			if (ref == nil) != (got == nil) {
				t.Fatalf("body %d bytes, secret %q: stripe-go says %v, we say %v", len(body), s, ref, got)
			}
		}
	}
}
