package tmpl

import (
	"testing"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/envelope"
)

func testEnvelope() *envelope.Envelope {
	return &envelope.Envelope{
		ID:          envelope.MakeID(1700000000000, 7, 42),
		TenantID:    "acme",
		SourceID:    "stripe",
		RouteParams: []envelope.Param{{Key: "app_id", Value: "app-1"}, {Key: "app_id", Value: "second"}},
	}
}

func TestAppendTo(t *testing.T) {
	e := testEnvelope()
	for src, want := range map[string]string{
		"https://x.example/in":                     "https://x.example/in",
		"https://{tenant_id}.x/{source_id}":        "https://acme.x/stripe",
		"{event_id}":                               e.ID.String(),
		"a={params.app_id}&b={params.missing}":     "a=app-1&b=",
		"{{{tenant_id}}}":                          "{acme}",
		"ankusa.{tenant_id}.{source_id}":           "ankusa.acme.stripe",
		"{params.app_id}{params.app_id}{event_id}": "app-1app-1" + e.ID.String(),
	} {
		got := AppendTo([]byte("prefix:"), config.MustParseTemplate(src), e)
		if string(got) != "prefix:"+want {
			t.Errorf("AppendTo(%q) = %q, want %q", src, got, "prefix:"+want)
		}
	}
}

// Expanding into a buffer with room does not allocate: the sinks expand
// a template per attempt.
func TestAppendToAllocs(t *testing.T) {
	tp := config.MustParseTemplate("https://{tenant_id}.x/{source_id}/{event_id}?a={params.app_id}")
	e := testEnvelope()
	buf := make([]byte, 0, 256)
	if n := testing.AllocsPerRun(100, func() { buf = AppendTo(buf[:0], tp, e) }); n != 0 {
		t.Fatalf("AppendTo allocates %v times", n)
	}
}
