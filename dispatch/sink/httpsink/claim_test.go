package httpsink

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/envelope"
)

// A hook delivered by reference: format raw sends the claim's JSON in
// x-ankusa-body-claim and an empty body; format envelope sends body_claim
// in the JSON and no header.
func TestBodyClaim(t *testing.T) {
	ref := &envelope.Claim{Store: "packs", Key: "claims/tenant=acme/source=stripe/2026/12/05/n-1.pack", Offset: 12, Length: 300000,
		SHA256: strings.Repeat("ab", 32)}
	rc := newReceiver(t, nil)
	claimed := func() *envelope.Envelope {
		e := testEnvelope()
		e.Body, e.BodyClaim = nil, ref
		return e
	}
	raw := newSink(t, config.Sink{URL: "http://" + rc.addr() + "/in", AllowPrivate: true})
	if _, err := deliver(raw, claimed()); err != nil {
		t.Fatal(err)
	}
	got := rc.last(t)
	if len(got.Body) != 0 {
		t.Fatalf("raw body of a claimed hook: %q, want none", got.Body)
	}
	checkHeaders(t, got.Header, map[string]string{"X-Ankusa-Body-Claim": string(ref.AppendJSON(nil)), "Content-Type": "application/json"})

	env := newSink(t, config.Sink{URL: "http://" + rc.addr() + "/in", Format: FormatEnvelope, AllowPrivate: true})
	e := claimed()
	if _, err := deliver(env, e); err != nil {
		t.Fatal(err)
	}
	got = rc.last(t)
	if want := e.AppendJSON(nil); !bytes.Equal(got.Body, want) || !bytes.Contains(got.Body, []byte(`"body_claim":`+string(ref.AppendJSON(nil)))) {
		t.Fatalf("envelope body %s, want body_claim in envelope.AppendJSON", got.Body)
	}
	checkHeaders(t, got.Header, map[string]string{"X-Ankusa-Body-Claim": ""})
}
