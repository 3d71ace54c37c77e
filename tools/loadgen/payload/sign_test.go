package payload

import (
	"errors"
	"testing"
	"time"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/verify"
	"github.com/valyala/fasthttp"
)

// TestSignaturesVerify signs generated bodies and checks them with the
// appliance's own verifiers: valid as sent, refused when the body changes.
func TestSignaturesVerify(t *testing.T) {
	pool, err := NewPool("mixed", SizeMix{{Size: 2048, Percent: 100}}, 8, 1, time.Now())
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
		s := NewSigner(tc.mode, tc.secret)
		now := time.Now()
		for i := range pool.classes[0] {
			b := &pool.classes[0][i]
			var req fasthttp.Request
			token := []byte("tok0000000000000")
			token[15] = byte('a' + i)
			s.Sign(&req.Header, b.Data, now, token, b)
			if err := v.Verify(&req.Header, b.Data, now); err != nil {
				t.Fatalf("%s body %d: signature refused: %v\nheaders:\n%s", tc.mode, i, err, req.Header.String())
			}
			tampered := append([]byte(nil), b.Data...)
			tampered[len(tampered)-2] ^= 1
			if err := v.Verify(&req.Header, tampered, now); !errors.Is(err, verify.ErrMismatch) {
				t.Fatalf("%s body %d: tampered body gave %v, want ErrMismatch", tc.mode, i, err)
			}
			if tc.mode != "github" {
				if err := v.Verify(&req.Header, b.Data, now.Add(time.Hour)); !errors.Is(err, verify.ErrExpired) {
					t.Fatalf("%s: an hour later gave %v, want ErrExpired (the signature must carry the send time)", tc.mode, err)
				}
			}
		}
	}
}

func TestSignNoneSetsNothing(t *testing.T) {
	var req fasthttp.Request
	b := &Body{Data: []byte(`{}`), Kind: "stripe"}
	NewSigner("none", "").Sign(&req.Header, b.Data, time.Now(), []byte("tok"), b)
	for _, h := range []string{"Stripe-Signature", "X-Hub-Signature-256", "Webhook-Signature"} {
		if len(req.Header.Peek(h)) != 0 {
			t.Fatalf("-sign none set %s", h)
		}
	}
}
