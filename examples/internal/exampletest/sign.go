package exampletest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
)

// The signatures below are made as the providers make them, from their
// documentation, not with the node's verifiers: a test that signs with
// the code it checks would pass whatever that code did.

func mac(key, msg []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(msg)
	return m.Sum(nil)
}

// GitHub is the X-Hub-Signature-256 value GitHub sends: sha256= and the
// hex HMAC-SHA256 of the body keyed by the webhook's secret.
func GitHub(secret string, body []byte) string {
	return "sha256=" + hex.EncodeToString(mac([]byte(secret), body))
}

// Stripe is the Stripe-Signature value Stripe sends at time at: t=<unix>,
// v1=<hex HMAC-SHA256 of "<unix>.<body>">, keyed by the whsec_ secret as
// written.
func Stripe(secret string, at time.Time, body []byte) string {
	ts := fmt.Sprint(at.Unix())
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac([]byte(secret), []byte(ts+"."+string(body))))
}

// Shopify is the X-Shopify-Hmac-Sha256 value: the base64 HMAC-SHA256 of
// the body keyed by the app's secret.
func Shopify(secret string, body []byte) string {
	return base64.StdEncoding.EncodeToString(mac([]byte(secret), body))
}

// StandardWebhooks reports whether sig (a webhook-signature header: one or
// more "v1,<base64>" separated by spaces) holds the Standard Webhooks
// signature of id, ts and body under secret (whsec_ and base64).
func StandardWebhooks(secret, id, ts string, body []byte, sig string) bool {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return false
	}
	want := "v1," + base64.StdEncoding.EncodeToString(mac(key, []byte(id+"."+ts+"."+string(body))))
	for _, s := range strings.Fields(sig) {
		if hmac.Equal([]byte(s), []byte(want)) {
			return true
		}
	}
	return false
}
