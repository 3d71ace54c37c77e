package config

import (
	"slices"
	"strings"
	"testing"
)

func TestParseTemplate(t *testing.T) {
	f := func(src string, static bool, want ...TemplatePart) {
		t.Helper()
		tp, err := ParseTemplate(src)
		if err != nil {
			t.Fatalf("ParseTemplate(%q): %v", src, err)
		}
		if !slices.Equal(tp.Parts(), want) || tp.String() != src || tp.Static() != static {
			t.Fatalf("ParseTemplate(%q) = %+v (static %v), want %+v (static %v)", src, tp.Parts(), tp.Static(), want, static)
		}
	}
	lit := func(s string) TemplatePart { return TemplatePart{Field: TemplateLiteral, Text: s} }
	f("", true)
	f("https://x.example/in", true, lit("https://x.example/in"))
	f("{{literal}}", true, lit("{literal}"))
	f("https://{tenant_id}.x/{source_id}/{event_id}?a={params.app_id}", false,
		lit("https://"), TemplatePart{Field: TemplateTenantID}, lit(".x/"), TemplatePart{Field: TemplateSourceID}, lit("/"),
		TemplatePart{Field: TemplateEventID}, lit("?a="), TemplatePart{Field: TemplateParam, Text: "app_id"})
	f("{{{tenant_id}}}", false, lit("{"), TemplatePart{Field: TemplateTenantID}, lit("}"))
}

func TestParseTemplateErrors(t *testing.T) {
	for src, want := range map[string]string{
		"{tenant}":       "field {tenant} at offset 0: unknown field (have tenant_id, source_id, event_id, params.NAME)",
		"ankusa.{nope}":  "field {nope} at offset 7: unknown field",
		"{params.}":      "field {params.} at offset 0: unknown field",
		"{oops":          "unclosed '{' at offset 0",
		"a}b":            "unmatched '}' at offset 1 (write '}}' for a literal brace)",
		"x{source_id}}y": "unmatched '}' at offset 12",
	} {
		_, err := ParseTemplate(src)
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("ParseTemplate(%q) = %v, want %q", src, err, want)
		}
	}
}

func TestMustParseTemplatePanics(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.HasPrefix(r.(string), "BUG: ") {
			t.Fatalf("recover() = %v, want a BUG: panic", r)
		}
	}()
	MustParseTemplate("{nope}")
}
