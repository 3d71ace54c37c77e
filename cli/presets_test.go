package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/ankusa/ankusa/verify"
)

// TestPresetsTable: one line per preset with its family and headers.
func TestPresetsTable(t *testing.T) {
	var b bytes.Buffer
	if err := writePresets(&b, "table"); err != nil {
		t.Fatal(err)
	}
	ps, err := verify.Presets()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) != len(ps)+1 || !strings.HasPrefix(lines[0], "NAME") {
		t.Fatalf("%d lines for %d presets:\n%s", len(lines), len(ps), b.String())
	}
	var github string
	for _, l := range lines {
		if strings.HasPrefix(l, "github ") {
			github = l
		}
	}
	for _, want := range []string{"hmac", "X-Hub-Signature-256", "X-GitHub-Delivery"} {
		if !strings.Contains(github, want) {
			t.Errorf("github's line %q lacks %q", github, want)
		}
	}
}

// TestPresetsJSON: -format json is the catalogue, every field.
func TestPresetsJSON(t *testing.T) {
	var b bytes.Buffer
	if err := writePresets(&b, "json"); err != nil {
		t.Fatal(err)
	}
	var got []verify.Preset
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want, _ := verify.Presets()
	if len(got) != len(want) {
		t.Fatalf("%d presets, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i].Name != want[i].Name || got[i].Docs != want[i].Docs || got[i].Signed != want[i].Signed {
			t.Errorf("preset %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	var stripe verify.Preset
	for _, p := range got {
		if p.Name == "stripe" {
			stripe = p
		}
	}
	if stripe.List == nil || stripe.List.SigKey != "v1" || stripe.Timestamp == nil {
		t.Errorf("stripe's list and timestamp are not in the JSON: %+v", stripe)
	}
	if err := writePresets(&b, "yaml"); err == nil || !strings.Contains(err.Error(), "-format") {
		t.Errorf("an unknown format: %v", err)
	}
}

// TestREADMEPresets: README.md's table is the one the catalogue gives.
func TestREADMEPresets(t *testing.T) {
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	const open, end = "<!-- presets -->\n", "<!-- /presets -->"
	i, j := strings.Index(s, open), strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatalf("README.md lacks the %q ... %q markers", strings.TrimSpace(open), end)
	}
	ps, err := verify.Presets()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s[i+len(open):j], presetsMarkdown(ps); got != want {
		t.Fatalf("README.md's presets table is stale; run `make presets-readme` (go run ./cmd/ankusa presets -format markdown)\n got:\n%s\nwant:\n%s", got, want)
	}
}

// TestPresetsCommand: the subcommand's exit codes.
func TestPresetsCommand(t *testing.T) {
	if c := Main([]string{"presets", "-format", "nope"}); c != 2 {
		t.Errorf("bad format: exit %d, want 2", c)
	}
	if c := Main([]string{"presets", "extra"}); c != 2 {
		t.Errorf("an argument: exit %d, want 2", c)
	}
}
