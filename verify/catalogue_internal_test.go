package verify

import (
	"strings"
	"testing"
)

// TestLoadPresetsRefuses feeds the loader the mistakes a fragment merged
// into presets.yaml could bring, and checks each is refused by name.
func TestLoadPresetsRefuses(t *testing.T) {
	entry := func(name, family, docs string) string {
		return "- name: " + name + "\n  title: T\n  family: " + family + "\n  docs: " + docs + "\n  header: X-Sig\n"
	}
	ok := entry("acme", "hmac", "https://example.com/docs")
	for _, tc := range []struct {
		name, data, want string
	}{
		{"duplicate name", ok + ok, `"acme" is listed twice`},
		{"unknown family", entry("acme", "pgp", "https://x"), `family "pgp"`},
		{"docs not https", entry("acme", "hmac", "http://x"), "docs must be an https address"},
		{"bad name", entry("Acme", "hmac", "https://x"), `name "Acme"`},
		{"built-in name", entry("hmac", "hmac", "https://x"), "built-in"},
		{"unknown field", ok + "  headr: X\n", "headr"},
		{"bad id", ok + "  id: body:x\n", "id:"},
		{"no title", "- name: acme\n  family: hmac\n  docs: https://x\n", "title is required"},
		{"field the family does not read", entry("acme", "token", "https://x") + "  algorithm: sha1\n", "algorithm: family token does not read it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadPresets([]byte(tc.data))
			if err == nil {
				t.Fatal("loaded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not say %q", err, tc.want)
			}
		})
	}
	m, err := loadPresets([]byte(ok))
	if err != nil || m["acme"] == nil {
		t.Fatalf("a valid entry: %v", err)
	}
}

// TestCatalogueLoads: the embedded presets.yaml loads (a bad preset is a
// test failure, never a runtime surprise).
func TestCatalogueLoads(t *testing.T) {
	m, err := catalogue()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"stripe", "github", "shopify", "slack", "standardwebhooks"} {
		if m[name] == nil {
			t.Errorf("preset %q (a verifier type before the catalogue) is missing", name)
		}
	}
}
