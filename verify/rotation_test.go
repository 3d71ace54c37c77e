package verify_test

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/verify"
)

// rotationFamily signs a request for one preset with the i-th of three
// keys, and gives the configured form of the first two (verify.secret
// and verify.secrets: a rotation).
type rotationFamily struct {
	preset string
	// configured is key i as it is configured (a public key, or the
	// shared secret).
	configured func(i int) string
	// sign is a request signed with key i: its headers and body.
	sign func(t *testing.T, i int) (kv []string, body string)
}

// TestRotationAsymmetricAndBodyHMAC: with two keys configured (the secret
// and one in secrets), a hook signed with the second verifies, one signed
// with the first too, and one signed with a third key is refused, for
// the ed25519 (Discord, Telnyx), ecdsa (SendGrid) and body-hmac (Mailgun,
// Adyen) presets. Each request is signed here as its provider documents
// it (crypto/ed25519, crypto/ecdsa, crypto/hmac), not through verify.
func TestRotationAsymmetricAndBodyHMAC(t *testing.T) {
	tn := ts(now)
	var edPub [3]ed25519.PublicKey
	var edKey [3]ed25519.PrivateKey
	var ecKey [3]*ecdsa.PrivateKey
	for i := range 3 {
		var err error
		if edPub[i], edKey[i], err = ed25519.GenerateKey(rand.Reader); err != nil {
			t.Fatal(err)
		}
		if ecKey[i], err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			t.Fatal(err)
		}
	}
	hmacKeys := [3]string{"mailgun-signing-key-old", "mailgun-signing-key-new", "mailgun-signing-key-other"}
	adyenKeys := [3]string{
		"44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056",
		"0E9F2A6D7B1C4E8F3A5B7C9D1E3F5A7B9C1D3E5F7A9B1C3D5E7F9A1B3C5D7E9F",
		"A1B2C3D4E5F60718293A4B5C6D7E8F90A1B2C3D4E5F60718293A4B5C6D7E8F90",
	}
	body := `{"application_id":"1","type":2,"data":{"name":"ping"}}`
	for _, f := range []rotationFamily{
		{"discord", func(i int) string { return hex.EncodeToString(edPub[i]) }, func(t *testing.T, i int) ([]string, string) {
			return []string{"X-Signature-Ed25519", hex.EncodeToString(ed25519.Sign(edKey[i], []byte(tn+body))), "X-Signature-Timestamp", tn}, body
		}},
		{"telnyx", func(i int) string { return base64.StdEncoding.EncodeToString(edPub[i]) }, func(t *testing.T, i int) ([]string, string) {
			b := `{"data":{"id":"0ccc7b54","event_type":"call.initiated"}}`
			return []string{"telnyx-signature-ed25519", base64.StdEncoding.EncodeToString(ed25519.Sign(edKey[i], []byte(tn+"|"+b))), "telnyx-timestamp", tn}, b
		}},
		{"sendgrid", func(i int) string {
			der, err := x509.MarshalPKIXPublicKey(&ecKey[i].PublicKey)
			if err != nil {
				panic(err)
			}
			return base64.StdEncoding.EncodeToString(der)
		}, func(t *testing.T, i int) ([]string, string) {
			b := `[{"email":"a@example.com","event":"delivered"}]`
			sum := sha256.Sum256([]byte(tn + b))
			sig, err := ecdsa.SignASN1(rand.Reader, ecKey[i], sum[:])
			if err != nil {
				t.Fatal(err)
			}
			return []string{"X-Twilio-Email-Event-Webhook-Signature", base64.StdEncoding.EncodeToString(sig), "X-Twilio-Email-Event-Webhook-Timestamp", tn}, b
		}},
		{"mailgun", func(i int) string { return hmacKeys[i] }, func(t *testing.T, i int) ([]string, string) {
			tok := "5d5b8d07a6e64b7d9a1b2c3d4e5f60718293a4b5c6d7e8f9a0"
			m := hmac.New(sha256.New, []byte(hmacKeys[i]))
			m.Write([]byte(tn + tok))
			return []string{"Content-Type", "application/json"},
				`{"signature":{"timestamp":"` + tn + `","token":"` + tok + `","signature":"` + hex.EncodeToString(m.Sum(nil)) + `"},"event-data":{"event":"delivered"}}`
		}},
		{"adyen", func(i int) string { return adyenKeys[i] }, func(t *testing.T, i int) ([]string, string) {
			key, err := hex.DecodeString(adyenKeys[i])
			if err != nil {
				t.Fatal(err)
			}
			m := hmac.New(sha256.New, key)
			m.Write([]byte("7914073381342284::TestMerchant:TestPayment-1407325143704:1130:EUR:AUTHORISATION:true"))
			return []string{"Content-Type", "application/json"},
				`{"live":"false","notificationItems":[{"NotificationRequestItem":{"pspReference":"7914073381342284","originalReference":"","merchantAccountCode":"TestMerchant",` +
					`"merchantReference":"TestPayment-1407325143704","amount":{"value":1130,"currency":"EUR"},"eventCode":"AUTHORISATION","success":"true",` +
					`"additionalData":{"hmacSignature":"` + base64.StdEncoding.EncodeToString(m.Sum(nil)) + `"}}}]}`
		}},
	} {
		t.Run(f.preset, func(t *testing.T) {
			v := mustNew(t, config.Verify{Type: f.preset, Secret: secret(f.configured(0)), Secrets: secrets(f.configured(1))})
			for i, want := range []error{nil, nil, verify.ErrMismatch} {
				kv, b := f.sign(t, i)
				err := v.Verify(header(kv...), []byte(b), now)
				if !errors.Is(err, want) || (want == nil) != (err == nil) {
					t.Errorf("signed with key %d (%s): %v, want %v", i, []string{"verify.secret", "verify.secrets[0]", "neither"}[i], err, want)
				}
			}
			// Only the second configured: the first key's hook is
			// refused, so the test above did try both keys.
			only := mustNew(t, config.Verify{Type: f.preset, Secret: secret(f.configured(1))})
			kv, b := f.sign(t, 0)
			if err := only.Verify(header(kv...), []byte(b), now); !errors.Is(err, verify.ErrMismatch) {
				t.Errorf("the old key's hook with only the new key configured: %v, want ErrMismatch", err)
			}
		})
	}
}
