package edge_test

import (
	"net/http"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/ankusa/ankusa/verify"
)

// TestCredentialNotStored: a source whose verifier is a shared credential
// (the token and basic presets) has that header stored as
// verify.Redacted: kept with the hook, the secret would reach everyone
// who may read hooks. The other headers are kept as they came.
func TestCredentialNotStored(t *testing.T) {
	yaml := `node: {name: test}
` + limitsYAML + `route_resolver: {type: path, prefix: [webhooks]}
sources:
  gitlab: {verify: {type: gitlab, secret: glpat-secret-token}}
  postmark: {verify: {type: postmark, secret: "hooks:pm-password"}}
  github: {verify: {type: github, secret: gh}}
`
	addr, dir := presetNode(t, yaml, zap.NewNop())
	base := "http://" + addr + "/webhooks/"

	post := func(src string, hdr ...string) int {
		req, _ := http.NewRequest(http.MethodPost, base+src, strings.NewReader(`{"object_kind":"push"}`))
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := post("gitlab", "X-Gitlab-Token", "glpat-secret-token", "X-Gitlab-Event", "Push Hook"); got != http.StatusCreated {
		t.Fatalf("gitlab: %d, want 201", got)
	}
	if got := post("postmark", "Authorization", "Basic aG9va3M6cG0tcGFzc3dvcmQ="); got != http.StatusCreated {
		t.Fatalf("postmark: %d, want 201", got)
	}
	hooks := committed(t, dir)
	if len(hooks) != 2 {
		t.Fatalf("%d hooks committed, want 2", len(hooks))
	}
	for _, e := range hooks {
		for _, h := range e.Headers {
			if strings.Contains(h.Value, "secret-token") || strings.Contains(h.Value, "aG9va3M6") {
				t.Errorf("%s: header %s stored with the credential: %q", e.SourceID, h.Name, h.Value)
			}
		}
		want := map[string]string{"gitlab": "X-Gitlab-Token", "postmark": "Authorization"}[e.SourceID]
		found := false
		for _, h := range e.Headers {
			if strings.EqualFold(h.Name, want) {
				found = h.Value == verify.Redacted
			}
			if e.SourceID == "gitlab" && strings.EqualFold(h.Name, "X-Gitlab-Event") && h.Value != "Push Hook" {
				t.Errorf("gitlab: X-Gitlab-Event stored as %q", h.Value)
			}
		}
		if !found {
			t.Errorf("%s: %s not stored as %q: %+v", e.SourceID, want, verify.Redacted, e.Headers)
		}
		if !e.Verification.Verified {
			t.Errorf("%s: not verified", e.SourceID)
		}
	}
}
