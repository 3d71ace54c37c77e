package edge_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/wal"
)

// TestVerifyAtIngest: a signed source commits verified hooks (flag set in
// the stored envelope) and answers 401 signature_invalid, storing nothing,
// for a bad signature.
func TestVerifyAtIngest(t *testing.T) {
	t.Setenv("GH_SECRET", "s3cret")
	addr, dir := rgServe(t, `
route_resolver: {type: tenantpath, prefix: [webhooks]}
rate_limits: {default: {rate: 10, burst: 10}}
sources:
  gh: {verify: {type: github, secret: env:GH_SECRET}}
`)
	body := `{"action":"opened"}`
	mac := hmac.New(sha256.New, []byte("s3cret"))
	mac.Write([]byte(body))
	good := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	post := func(sig string) (int, map[string]string) {
		req, _ := http.NewRequest("POST", "http://"+addr+"/webhooks/acme/gh", strings.NewReader(body))
		if sig != "" {
			req.Header.Set("X-Hub-Signature-256", sig)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out := map[string]string{}
		json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	for _, sig := range []string{"", "sha256=00", "sha256=" + strings.Repeat("ab", 32), "md5=xyz"} {
		if code, out := post(sig); code != 401 || out["error"] != "signature_invalid" {
			t.Fatalf("signature %q: %d %v, want 401 signature_invalid", sig, code, out)
		}
	}
	code, out := post(good)
	if code != 201 {
		t.Fatalf("good signature: %d %v", code, out)
	}
	var hooks []envelope.Envelope
	err := wal.ReadDir(vfs.Default, dir, func(r *wal.Record) error {
		if r.Kind == envelope.KindEnvelope {
			var e envelope.Envelope
			if _, err := envelope.Decode(r.Payload, &e); err != nil {
				return err
			}
			hooks = append(hooks, e)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(hooks) != 1 {
		t.Fatalf("%d hooks stored, want only the verified one", len(hooks))
	}
	h := hooks[0]
	if h.ID.String() != out["id"] || !h.Verification.Verified || h.Verification.Flagged || h.Verification.Verifier != "github" || string(h.Body) != body || h.TenantID != "acme" {
		t.Fatalf("stored %+v", h)
	}
}
