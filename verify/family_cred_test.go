package verify_test

import (
	"encoding/json"
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

// FuzzBodyToken fuzzes Microsoft Graph's batch: an accepted body is JSON
// whose value array, as encoding/json reads it, holds 1 to 1000 objects
// that each carry one of the secrets as clientState.
func FuzzBodyToken(f *testing.F) {
	f.Add(`{"value":[{"clientState":"{s}"},{"clientState":"{s}"}]}`)
	f.Add(`{"value":[{"clientState":"{s}","clientState":"x"}]}`)
	f.Add(`{"value":[{"clientState":"{s}"}],"value":[{"clientState":"x"}]}`)
	f.Add(`{"value":[{"clientState":"st\u0061te-1"},{"clientState":"x"}]}`)
	f.Add(`{"value":[]}`)
	f.Add(`[1,2`)
	v := mustNew(f, config.Verify{Type: "microsoft-graph", Secret: secret("state-1"), Secrets: secrets("state-2")})
	f.Fuzz(func(t *testing.T, tmpl string) {
		body := strings.ReplaceAll(tmpl, "{s}", "state-1")
		err := v.Verify(mapHeaders{}, []byte(body), now)
		checkSentinel(t, err)
		if err != nil {
			return
		}
		var doc map[string]json.RawMessage
		if json.Unmarshal([]byte(body), &doc) != nil {
			return // fastjson is more lenient than encoding/json
		}
		var items []map[string]json.RawMessage
		if json.Unmarshal(doc["value"], &items) != nil {
			t.Fatalf("accepted %q: value is not an array of objects", body)
		}
		if len(items) == 0 || len(items) > 1000 {
			t.Fatalf("accepted %q: %d items", body, len(items))
		}
		for i, it := range items {
			var s string
			if json.Unmarshal(it["clientState"], &s) != nil || (s != "state-1" && s != "state-2") {
				t.Fatalf("accepted %q: item %d's clientState is %s", body, i, it["clientState"])
			}
		}
	})
}
