package envelope

import (
	"strings"
	"testing"
)

// A hook delivered by reference: its JSON form has body "" with
// body_encoding "claim" and the reference after it, and reads back to the
// same reference; a malformed one is refused naming what is wrong.
func TestBodyClaimJSON(t *testing.T) {
	c := Claim{Store: "packs", Key: "claims/tenant=acme/source=s/2026/12/05/n1-1.pack", Offset: 4096, Length: 1 << 20,
		SHA256: strings.Repeat("ab", 32)}
	e := Envelope{ID: mustID(t), TenantID: "acme", SourceID: "s", ReceivedAt: 1, Body: []byte("ignored"), BodyClaim: &c}
	js := string(e.AppendJSON(nil))
	want := `"body":"","body_encoding":"claim","body_claim":{"store":"packs","key":"claims/tenant=acme/source=s/2026/12/05/n1-1.pack","offset":4096,"length":1048576,"sha256":"` + c.SHA256 + `"},"verification"`
	if !strings.Contains(js, want) {
		t.Fatalf("JSON form:\n%s\nwant it to hold\n%s", js, want)
	}
	var back Envelope
	if err := back.UnmarshalJSON([]byte(js)); err != nil {
		t.Fatal(err)
	}
	if back.BodyClaim == nil || *back.BodyClaim != c || len(back.Body) != 0 {
		t.Fatalf("read back %+v, body %q", back.BodyClaim, back.Body)
	}
	for _, bad := range []struct{ from, to, want string }{
		{`,"body_claim":{`, `,"no_claim":{`, "body_claim is absent"},
		{`"sha256":"abab`, `"sha256":"ABAB`, "not 64 lower-case hex"},
		{`"length":1048576`, `"length":0`, "length must be positive"},
		{`"store":"packs"`, `"store":""`, "no store or key"},
	} {
		err := new(Envelope).UnmarshalJSON([]byte(strings.Replace(js, bad.from, bad.to, 1)))
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s → %s: %v, want an error saying %q", bad.from, bad.to, err, bad.want)
		}
	}
	if _, err := ParseClaim([]byte(`{"store":"packs"`)); err == nil {
		t.Error("ParseClaim took a truncated claim")
	}
}

func mustID(t *testing.T) ID {
	t.Helper()
	id, err := ParseID([]byte("evt_01KB8J27QV003G00000000001A"))
	if err != nil {
		t.Fatal(err)
	}
	return id
}
