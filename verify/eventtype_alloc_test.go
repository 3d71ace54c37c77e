//go:build !race

package verify

import (
	"testing"

	"github.com/ankusa/ankusa/config"
)

// TestEventTypeAllocs: reading an event type allocates nothing once the
// pooled parser is warm, from a header or from the JSON body (a string or
// a number).
func TestEventTypeAllocs(t *testing.T) {
	h := reqHeaders("POST", "/in/s", "X-GitHub-Event", "push")
	body := []byte(`{"id":"evt_1","type":"invoice.paid","data":{"object":{"amount":1200}}}`)
	for _, spec := range []string{"header:X-GitHub-Event", "json:type", "json:data.object.amount"} {
		v, err := withPreset(None{}, &Preset{Name: "p"}, config.Verify{EventType: spec}, nil)
		if err != nil {
			t.Fatal(err)
		}
		et := v.(EventTyper)
		buf := make([]byte, 0, MaxEventTypeBytes)
		var got []byte
		allocs := testing.AllocsPerRun(200, func() { got = et.AppendEventType(buf[:0], h, body) })
		if len(got) == 0 || allocs != 0 {
			t.Fatalf("%s: %q, %.1f allocations per call", spec, got, allocs)
		}
	}
}
