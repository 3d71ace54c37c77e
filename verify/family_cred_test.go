package verify_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/verify"
)

// graphBatch is a Microsoft Graph notification body with one item per
// clientState.
func graphBatch(states ...string) []byte {
	items := make([]string, len(states))
	for i, s := range states {
		items[i] = `{"subscriptionId":"b62c4ad0","clientState":"` + s + `","changeType":"updated","resource":"me/messages/1"}`
	}
	return []byte(`{"value":[` + strings.Join(items, ",") + `]}`)
}

// TestBodyTokenEveryItem: through a "*" segment every item must carry one
// of the source's secrets (any of them: a rotation), the batch is bounded,
// and the token is never looked for in a header.
func TestBodyTokenEveryItem(t *testing.T) {
	v := mustNew(t, config.Verify{Type: "microsoft-graph", Secret: secret("old-state"), Secrets: secrets("new-state")})
	h := header("Authorization", "old-state", "X-Client-State", "old-state")
	many := make([]string, 1000)
	for i := range many {
		many[i] = "new-state"
	}
	for _, c := range []struct {
		name string
		body []byte
		want error
	}{
		{"one item", graphBatch("old-state"), nil},
		{"a batch across a rotation", graphBatch("old-state", "new-state", "old-state"), nil},
		{"1000 items", graphBatch(many...), nil},
		{"1001 items", graphBatch(append(many, "new-state")...), verify.ErrMalformed},
		{"the last item forged", graphBatch("old-state", "new-state", "forged"), verify.ErrMismatch},
		{"the first item forged", graphBatch("forged", "new-state"), verify.ErrMismatch},
		{"an item without one", []byte(`{"value":[{"clientState":"old-state"},{"changeType":"created"}]}`), verify.ErrMissing},
		{"an item not an object", []byte(`{"value":[{"clientState":"old-state"},"old-state"]}`), verify.ErrMissing},
		{"no value", []byte(`{"values":[{"clientState":"old-state"}]}`), verify.ErrMissing},
		{"value empty", []byte(`{"value":[]}`), verify.ErrMissing},
		{"value an object", []byte(`{"value":{"clientState":"old-state"}}`), verify.ErrMalformed},
		{"value twice", []byte(`{"value":[{"clientState":"old-state"}],"value":[{"clientState":"forged"}]}`), verify.ErrMalformed},
		{"clientState twice in an item", []byte(`{"value":[{"clientState":"old-state","clientState":"forged"}]}`), verify.ErrMalformed},
		{"clientState not a string", []byte(`{"value":[{"clientState":["old-state"]}]}`), verify.ErrMalformed},
		{"clientState empty", []byte(`{"value":[{"clientState":""}]}`), verify.ErrMissing},
		{"clientState too long", graphBatch(strings.Repeat("x", 1025)), verify.ErrMalformed},
		{"a prefix of a secret", graphBatch("old-stat"), verify.ErrMismatch},
		{"not JSON", []byte(`clientState=old-state`), verify.ErrMalformed},
		{"empty body", nil, verify.ErrMalformed},
	} {
		if err := v.Verify(h, c.body, time.Now()); !errors.Is(err, c.want) || (c.want == nil && err != nil) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

// TestBodyTokenIsNotAHeaderCredential: a token in the body has no header
// for the edge to redact.
func TestBodyTokenIsNotAHeaderCredential(t *testing.T) {
	for _, typ := range []string{"microsoft-graph", "figma"} {
		if got := verify.CredentialHeader(config.Verify{Type: typ}); got != "" {
			t.Errorf("%s: CredentialHeader = %q, want none", typ, got)
		}
	}
	if got := verify.CredentialHeader(config.Verify{Type: "okta"}); got != "Authorization" {
		t.Errorf("okta: CredentialHeader = %q, want Authorization", got)
	}
}
