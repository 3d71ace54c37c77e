package main

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/verify"
	"github.com/valyala/fasthttp"
)

// TestSignaturesVerify signs generated bodies and checks them with the
// appliance's own verifiers: valid as sent, refused when the body changes.
func TestSignaturesVerify(t *testing.T) {
	pool, err := newPayloadPool("mixed", sizeMix{{size: 2048, percent: 100}}, 8, 1, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ mode, secret string }{
		{"stripe", "whsec_test_secret_for_loadgen"},
		{"github", "It's a Secret to Everybody"},
		{"standardwebhooks", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
	} {
		v, err := verify.New(config.Verify{Type: tc.mode, Secret: config.Secret{Ref: "x", Value: tc.secret}})
		if err != nil {
			t.Fatalf("%s: verify.New: %v", tc.mode, err)
		}
		s := newSigner(tc.mode, tc.secret)
		now := time.Now()
		for i := range pool.classes[0] {
			b := &pool.classes[0][i]
			var req fasthttp.Request
			token := []byte("tok0000000000000")
			token[15] = byte('a' + i)
			s.sign(&req.Header, b.data, now, token, b)
			if err := v.Verify(&req.Header, b.data, now); err != nil {
				t.Fatalf("%s body %d: signature refused: %v\nheaders:\n%s", tc.mode, i, err, req.Header.String())
			}
			tampered := append([]byte(nil), b.data...)
			tampered[len(tampered)-2] ^= 1
			if err := v.Verify(&req.Header, tampered, now); !errors.Is(err, verify.ErrMismatch) {
				t.Fatalf("%s body %d: tampered body gave %v, want ErrMismatch", tc.mode, i, err)
			}
			if tc.mode != "github" {
				if err := v.Verify(&req.Header, b.data, now.Add(time.Hour)); !errors.Is(err, verify.ErrExpired) {
					t.Fatalf("%s: an hour later gave %v, want ErrExpired (the signature must carry the send time)", tc.mode, err)
				}
			}
		}
	}
}

func TestSignNoneSetsNothing(t *testing.T) {
	var req fasthttp.Request
	b := &poolBody{data: []byte(`{}`), kind: "stripe"}
	newSigner("none", "").sign(&req.Header, b.data, time.Now(), []byte("tok"), b)
	for _, h := range []string{"Stripe-Signature", "X-Hub-Signature-256", "Webhook-Signature"} {
		if len(req.Header.Peek(h)) != 0 {
			t.Fatalf("-sign none set %s", h)
		}
	}
}

// TestSignedRequestsReachServer checks the headers go out on the wire.
func TestSignedRequestsReachServer(t *testing.T) {
	const secret = "whsec_wire"
	v, err := verify.New(config.Verify{Type: "stripe", Secret: config.Secret{Ref: "x", Value: secret}})
	if err != nil {
		t.Fatal(err)
	}
	var bad atomic.Int64
	ts := startServer(t, &testServer{status: func(ctx *fasthttp.RequestCtx) int {
		if v.Verify(&ctx.Request.Header, ctx.PostBody(), time.Now()) != nil {
			bad.Add(1)
			return fasthttp.StatusUnauthorized
		}
		return fasthttp.StatusCreated
	}})
	sum := mustRun(t, "-url", ts.url+"/x", "-c", "1", "-n", "50", "-warmup", "0", "-sign", "stripe", "-secret", secret)
	if sum.Status["201"] != 50 || bad.Load() != 0 {
		t.Fatalf("statuses %v, %d refused signatures; want 50 verified", sum.Status, bad.Load())
	}
}
