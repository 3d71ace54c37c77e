package payload

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestPayloadBodies(t *testing.T) {
	for _, kind := range Kinds {
		for _, c := range []struct{ size, n int }{{512, 300}, {700, 200}, {1024, 200}, {8192, 40}, {65536, 8}} {
			size := c.size
			mix := SizeMix{{Size: size, Percent: 100}}
			pool, err := NewPool(kind, mix, c.n, uint64(size), time.Now())
			if err != nil {
				t.Fatalf("%s %d: %v", kind, size, err)
			}
			checkBodies(t, kind, size, pool.classes[0])
		}
	}
}

// checkBodies checks that bodies are valid JSON of exactly size bytes, look
// like their provider's events, differ, and stay valid with a token in
// their slot.
func checkBodies(t *testing.T, kind string, size int, bodies []Body) {
	t.Helper()
	seen := map[string]bool{}
	kindsSeen := map[string]int{}
	for i, b := range bodies {
		if len(b.Data) != size {
			t.Fatalf("%s body %d: %d bytes, want %d", kind, i, len(b.Data), size)
		}
		if !json.Valid(b.Data) {
			t.Fatalf("%s body %d is not valid JSON:\n%s", kind, i, b.Data)
		}
		if seen[string(b.Data)] {
			t.Fatalf("%s body %d repeats an earlier body", kind, i)
		}
		seen[string(b.Data)] = true
		kindsSeen[b.Kind]++
		var ev map[string]any
		if err := json.Unmarshal(b.Data, &ev); err != nil {
			t.Fatal(err)
		}
		checkShape(t, b, ev)
		tokened := bytes.Clone(b.Data)
		copy(tokened[b.Slot:], "ZZZZZZZZZZZZZZZZ")
		if !json.Valid(tokened) || !bytes.Contains(tokened, []byte("ZZZZZZZZZZZZZZZZ\"")) {
			t.Fatalf("%s body %d: the token slot at %d is not inside a string:\n%s", kind, i, b.Slot, tokened)
		}
	}
	if kind == "mixed" && (kindsSeen["stripe"] == 0 || kindsSeen["github"] == 0) {
		t.Fatalf("mixed pool has %v, want both kinds", kindsSeen)
	}
}

func checkShape(t *testing.T, b Body, ev map[string]any) {
	t.Helper()
	switch b.Kind {
	case "stripe":
		data, _ := ev["data"].(map[string]any)
		obj, _ := data["object"].(map[string]any)
		id, _ := ev["id"].(string)
		if ev["object"] != "event" || ev["type"] != b.Event || !strings.HasPrefix(id, "evt_") || obj == nil || obj["id"] == nil {
			t.Fatalf("not a Stripe-like event (object, type, id evt_, data.object.id):\n%s", b.Data)
		}
		if _, ok := ev["created"].(float64); !ok {
			t.Fatalf("Stripe-like event without a created timestamp:\n%s", b.Data)
		}
	case "github":
		repo, _ := ev["repository"].(map[string]any)
		sender, _ := ev["sender"].(map[string]any)
		action, _ := ev["action"].(string)
		if action == "" || repo == nil || repo["full_name"] == nil || sender == nil || sender["login"] == nil {
			t.Fatalf("not a GitHub-like event (action, repository.full_name, sender.login):\n%s", b.Data)
		}
		if ev[map[string]string{"issues": "issue", "pull_request": "pull_request", "issue_comment": "comment"}[b.Event]] == nil {
			t.Fatalf("GitHub-like %s event without its object:\n%s", b.Event, b.Data)
		}
	default:
		t.Fatalf("body of kind %q", b.Kind)
	}
}

// TestPayloadVariety checks that bodies vary in more than ids: event
// types, nesting and list lengths.
func TestPayloadVariety(t *testing.T) {
	pool, err := NewPool("mixed", SizeMix{{Size: 8192, Percent: 100}}, 400, 7, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	events := map[string]bool{}
	for _, b := range pool.classes[0] {
		events[b.Kind+"/"+b.Event] = true
	}
	if len(events) < 8 {
		t.Fatalf("only %d distinct event types in 400 bodies: %v", len(events), events)
	}
	sample := string(pool.classes[0][0].Data) + string(pool.classes[0][1].Data)
	for _, want := range []string{`":[{`, `":{"`} {
		if !strings.Contains(sample, want) {
			t.Fatalf("no %s (nested arrays and objects) in\n%s", want, sample)
		}
	}
}
