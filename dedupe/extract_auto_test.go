package dedupe

import (
	"strings"
	"testing"
)

// NewExtractorAuto resolves auto with the resolver it is given (the
// binary's verifier catalogue), and names the types that have an id when
// it cannot.
func TestNewExtractorAuto(t *testing.T) {
	auto := func(vt string) (string, bool) {
		if vt == "svix" {
			return "header:svix-id", true
		}
		return "", false
	}
	x, err := NewExtractorAuto("auto", "svix", auto, []string{"svix"})
	if err != nil || x.String() != "header:svix-id" {
		t.Fatalf("auto for svix: %v, %v", x, err)
	}
	_, err = NewExtractorAuto("auto", "postmark", auto, []string{"svix"})
	if err == nil || !strings.Contains(err.Error(), "(svix)") || !strings.Contains(err.Error(), `"postmark"`) {
		t.Fatalf("auto for postmark: %v", err)
	}
	x, err = NewExtractorAuto("json:id", "postmark", auto, nil)
	if err != nil || x.String() != "json:id" {
		t.Fatalf("an explicit key does not ask the resolver: %v, %v", x, err)
	}
}
