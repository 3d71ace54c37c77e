package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestPayloadBodies(t *testing.T) {
	for _, kind := range kinds {
		for _, c := range []struct{ size, n int }{{512, 300}, {700, 200}, {1024, 200}, {8192, 40}, {65536, 8}} {
			size := c.size
			mix := sizeMix{{size: size, percent: 100}}
			pool, err := newPayloadPool(kind, mix, c.n, uint64(size), time.Now())
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
func checkBodies(t *testing.T, kind string, size int, bodies []poolBody) {
	t.Helper()
	seen := map[string]bool{}
	kindsSeen := map[string]int{}
	for i, b := range bodies {
		if len(b.data) != size {
			t.Fatalf("%s body %d: %d bytes, want %d", kind, i, len(b.data), size)
		}
		if !json.Valid(b.data) {
			t.Fatalf("%s body %d is not valid JSON:\n%s", kind, i, b.data)
		}
		if seen[string(b.data)] {
			t.Fatalf("%s body %d repeats an earlier body", kind, i)
		}
		seen[string(b.data)] = true
		kindsSeen[b.kind]++
		var ev map[string]any
		if err := json.Unmarshal(b.data, &ev); err != nil {
			t.Fatal(err)
		}
		checkShape(t, b, ev)
		tokened := bytes.Clone(b.data)
		copy(tokened[b.slot:], "ZZZZZZZZZZZZZZZZ")
		if !json.Valid(tokened) || !bytes.Contains(tokened, []byte("ZZZZZZZZZZZZZZZZ\"")) {
			t.Fatalf("%s body %d: the token slot at %d is not inside a string:\n%s", kind, i, b.slot, tokened)
		}
	}
	if kind == "mixed" && (kindsSeen["stripe"] == 0 || kindsSeen["github"] == 0) {
		t.Fatalf("mixed pool has %v, want both kinds", kindsSeen)
	}
}

func checkShape(t *testing.T, b poolBody, ev map[string]any) {
	t.Helper()
	switch b.kind {
	case "stripe":
		data, _ := ev["data"].(map[string]any)
		obj, _ := data["object"].(map[string]any)
		id, _ := ev["id"].(string)
		if ev["object"] != "event" || ev["type"] != b.event || !strings.HasPrefix(id, "evt_") || obj == nil || obj["id"] == nil {
			t.Fatalf("not a Stripe-like event (object, type, id evt_, data.object.id):\n%s", b.data)
		}
		if _, ok := ev["created"].(float64); !ok {
			t.Fatalf("Stripe-like event without a created timestamp:\n%s", b.data)
		}
	case "github":
		repo, _ := ev["repository"].(map[string]any)
		sender, _ := ev["sender"].(map[string]any)
		action, _ := ev["action"].(string)
		if action == "" || repo == nil || repo["full_name"] == nil || sender == nil || sender["login"] == nil {
			t.Fatalf("not a GitHub-like event (action, repository.full_name, sender.login):\n%s", b.data)
		}
		if ev[map[string]string{"issues": "issue", "pull_request": "pull_request", "issue_comment": "comment"}[b.event]] == nil {
			t.Fatalf("GitHub-like %s event without its object:\n%s", b.event, b.data)
		}
	default:
		t.Fatalf("body of kind %q", b.kind)
	}
}

// TestPayloadVariety checks that bodies vary in more than ids: event
// types, nesting and list lengths.
func TestPayloadVariety(t *testing.T) {
	pool, err := newPayloadPool("mixed", sizeMix{{size: 8192, percent: 100}}, 400, 7, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	events := map[string]bool{}
	for _, b := range pool.classes[0] {
		events[b.kind+"/"+b.event] = true
	}
	if len(events) < 8 {
		t.Fatalf("only %d distinct event types in 400 bodies: %v", len(events), events)
	}
	sample := string(pool.classes[0][0].data) + string(pool.classes[0][1].data)
	for _, want := range []string{`":[{`, `":{"`} {
		if !strings.Contains(sample, want) {
			t.Fatalf("no %s (nested arrays and objects) in\n%s", want, sample)
		}
	}
}

func TestRequestTokensDiffer(t *testing.T) {
	ts := startServer(t, &testServer{})
	mustRun(t, "-url", ts.url+"/x", "-c", "4", "-n", "300", "-warmup", "0", "-kind", "mixed")
	if len(ts.bodies) != 300 {
		t.Fatalf("server kept %d distinct 201s, want 300", len(ts.bodies))
	}
	hashes := map[[32]byte]bool{}
	for _, h := range ts.bodies {
		hashes[h] = true
	}
	if len(hashes) != 300 {
		t.Fatalf("%d distinct bodies among 300 requests, want every body different", len(hashes))
	}
}
