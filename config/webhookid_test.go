package config

import (
	"errors"
	"strings"
	"testing"
)

// TestWebhookIDKey: verify.webhook_id is read from the file (yaml key
// webhook_id), and a verifier's refusal of it reaches the operator under
// the source's key.
func TestWebhookIDKey(t *testing.T) {
	cfg, probs := Parse([]byte("sources: {pp: {verify: {type: paypal, secret: literal-cert, webhook_id: 1JE4291016473214C}}}"))
	if len(probs) > 0 {
		t.Fatalf("parse: %q", probs)
	}
	if got := cfg.Sources["pp"].Verify.WebhookID; got != "1JE4291016473214C" {
		t.Fatalf("verify.webhook_id read as %q", got)
	}
	s := cfg.Sources["pp"]
	s.TenantID = "t1"
	s.Verify.Secret.Value = "-----BEGIN CERTIFICATE-----" // resolved, as Load resolves it
	var seen Verify
	p := ValidateSource("pp", &s, SourceContext{ValidateOptions: ValidateOptions{
		VerifierKnown: func(string) bool { return true },
		CheckVerify: func(v Verify) error {
			seen = v
			return errors.New("verify.webhook_id: preset \"paypal\" refused it")
		},
	}})
	if seen.WebhookID != "1JE4291016473214C" {
		t.Fatalf("the verifier check saw webhook_id %q", seen.WebhookID)
	}
	if !strings.Contains(strings.Join(p, "\n"), "sources.pp.verify.webhook_id") {
		t.Fatalf("problems %q do not name sources.pp.verify.webhook_id", p)
	}
}
