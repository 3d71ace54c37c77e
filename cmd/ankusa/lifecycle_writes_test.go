package main

// The admin writes of the lifecycle tests and how their outcomes are held
// to the outbox: each entity (a source, a route, a tenant's rate limit)
// has one writer that sends one write at a time, so the order of its
// writes is the order they were acknowledged, and each create or update
// carries a mark of its own into the event's data.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"syscall"
	"testing"

	"github.com/ankusa/ankusa/meta"
)

// outcome is how a write was answered.
type outcome int

const (
	// answered 2xx: the change is made, its event is in the outbox.
	wroteOK outcome = iota
	// answered 4xx or 5xx, or the connection was refused (the node was
	// down): nothing changed, no event.
	wroteFailed
	// the connection died before the answer (kill -9): the change and
	// its event are both there, or neither.
	wroteUnknown
)

// lcWrite is one admin write of an entity and how it went.
type lcWrite struct {
	method, path, body string
	// types are the event types the write may make (the rate limit's PUT
	// creates or updates the override, whichever it finds).
	types []string
	// mark is what the event's data must hold of this write (markOf);
	// empty for a delete, whose data is the entity as it was.
	mark    string
	status  int
	outcome outcome
	err     error
}

// lcEntity is one entity a writer changes, and what it believes of it.
type lcEntity struct {
	tenant, kind, name string // kind: source, route, rate_limit
	writes             []*lcWrite
	// exists: 1 the entity exists, 0 it does not, -1 unknown.
	exists int
	n      int // writes made, for the marks
}

func (e *lcEntity) key() string { return e.tenant + "/" + e.kind + "/" + e.name }

// next is the entity's next write: mostly the one that makes sense for
// what the writer believes, sometimes one the node must refuse (a create
// of what exists, a change of what does not, a malformed body).
func (e *lcEntity) next(rng *rand.Rand) *lcWrite {
	var op string
	switch roll := rng.IntN(100); {
	case roll < 6:
		op = "invalid"
	case e.exists == 1 && roll < 75, e.exists == -1 && roll < 50:
		op = "update"
	case e.exists == 1 && roll < 92, e.exists == -1:
		op = "delete"
	case e.exists == 1:
		op = "create" // refused: it exists
	case roll < 86:
		op = "create"
	case roll < 93:
		op = "update" // refused: it does not exist
	default:
		op = "delete" // refused: it does not exist
	}
	return e.write(op, rng)
}

// write is the entity's next write of op: create, update, delete or
// invalid (a body the node refuses with 400).
func (e *lcEntity) write(op string, rng *rand.Rand) *lcWrite {
	e.n++
	switch e.kind {
	case "source":
		return e.sourceWrite(op)
	case "route":
		return e.routeWrite(op, rng)
	default:
		return e.rateLimitWrite(op)
	}
}

func (e *lcEntity) sourceWrite(op string) *lcWrite {
	base := "/v1/tenants/" + e.tenant + "/sources"
	header := fmt.Sprintf("X-Mark-%d", e.n)
	spec := fmt.Sprintf(`"verify":{"type":"hmac","header":%q,"algorithm":"sha256","encoding":"hex","secret":"sekrit-%s-%d"}`, header, e.name, e.n)
	switch op {
	case "create":
		return &lcWrite{method: "POST", path: base, body: `{"name":"` + e.name + `",` + spec + `}`, types: []string{"io.ankusa.source.created"}, mark: header}
	case "update":
		return &lcWrite{method: "PUT", path: base + "/" + e.name, body: "{" + spec + "}", types: []string{"io.ankusa.source.updated"}, mark: header}
	case "delete":
		return &lcWrite{method: "DELETE", path: base + "/" + e.name, types: []string{"io.ankusa.source.deleted"}}
	}
	return &lcWrite{method: "PUT", path: base + "/" + e.name, body: `{"verify":{"type":"no-such-verifier"}}`}
}

func (e *lcEntity) routeWrite(op string, rng *rand.Rand) *lcWrite {
	base := "/v1/tenants/" + e.tenant + "/routes"
	token := fmt.Sprintf("lc-%s-%s-%d-%08x", e.tenant, e.name, e.n, rng.Uint32())
	switch op {
	case "create":
		return &lcWrite{method: "POST", path: base, body: fmt.Sprintf(`{"id":%q,"source_id":%q,"token":%q}`, e.name, lcSharedSource, token),
			types: []string{"io.ankusa.route.created"}, mark: tokenID(token)}
	case "update":
		return &lcWrite{method: "PUT", path: base + "/" + e.name, body: fmt.Sprintf(`{"source_id":%q,"token":%q,"tokens":[]}`, lcSharedSource, token),
			types: []string{"io.ankusa.route.updated"}, mark: tokenID(token)}
	case "delete":
		return &lcWrite{method: "DELETE", path: base + "/" + e.name, types: []string{"io.ankusa.route.deleted"}}
	}
	return &lcWrite{method: "POST", path: base, body: fmt.Sprintf(`{"id":%q,"source_id":"no-such-source","token":%q}`, e.name, token)}
}

func (e *lcEntity) rateLimitWrite(op string) *lcWrite {
	path := "/v1/tenants/" + e.tenant + "/rate_limit"
	switch op {
	case "create", "update":
		rate := 1000 + e.n
		return &lcWrite{method: "PUT", path: path, body: fmt.Sprintf(`{"rate":%d,"burst":%d,"max_queue":0,"max_queue_bytes":0}`, rate, rate),
			types: []string{"io.ankusa.rate_limit.created", "io.ankusa.rate_limit.updated"}, mark: fmt.Sprint(rate)}
	case "delete":
		return &lcWrite{method: "DELETE", path: path, types: []string{"io.ankusa.rate_limit.deleted"}}
	}
	return &lcWrite{method: "PUT", path: path, body: `{"rate":-1,"burst":1,"max_queue":0,"max_queue_bytes":0}`}
}

// tokenID is the id a route shows of a token (source.newToken).
func tokenID(token string) string {
	sum := sha256.Sum256([]byte(token))
	return "tok-" + hex.EncodeToString(sum[:6])
}

// send makes w against n and records how it went, and what the writer
// believes of the entity afterwards.
func (e *lcEntity) send(n *apiNode, w *lcWrite) {
	a, err := n.tryDo(w.method, w.path, opsToken, w.body)
	w.status, w.err = a.status, err
	switch {
	case err != nil && errors.Is(err, syscall.ECONNREFUSED):
		w.outcome = wroteFailed
	case err != nil:
		w.outcome, e.exists = wroteUnknown, -1
	case a.status >= 200 && a.status < 300:
		w.outcome = wroteOK
		e.exists = 1
		if w.method == "DELETE" {
			e.exists = 0
		}
	default:
		w.outcome = wroteFailed
		switch {
		case a.status == http.StatusConflict && w.method == "POST" && len(w.types) > 0:
			e.exists = 1
		case a.status == http.StatusNotFound:
			e.exists = 0
		}
	}
	e.writes = append(e.writes, w)
}

// markOf is what an event's data says of the write that made it: a
// source's verify header, a route's one token id, a rate limit's rate.
func markOf(kind string, data json.RawMessage) string {
	switch kind {
	case "source":
		var v struct {
			Verify struct {
				Header string `json:"header"`
			} `json:"verify"`
		}
		if json.Unmarshal(data, &v) == nil {
			return v.Verify.Header
		}
	case "route":
		var v struct {
			Tokens []struct {
				ID string `json:"id"`
			} `json:"tokens"`
		}
		if json.Unmarshal(data, &v) == nil && len(v.Tokens) == 1 {
			return v.Tokens[0].ID
		}
	case "rate_limit":
		var v struct {
			Rate float64 `json:"rate"`
		}
		if json.Unmarshal(data, &v) == nil {
			return fmt.Sprint(v.Rate)
		}
	}
	return ""
}

// made reports whether ev is the event of w.
func (w *lcWrite) made(kind string, ev *meta.EventRecord) bool {
	ok := false
	for _, typ := range w.types {
		ok = ok || ev.Type == typ
	}
	return ok && (w.mark == "" || strings.EqualFold(markOf(kind, ev.Data), w.mark))
}

// matchWrites reports whether the events of an entity (in outbox order)
// are its writes' events in the order of the writes: one for each write
// answered 2xx, none for a failed one, one or none for an unknown one.
func matchWrites(kind string, writes []*lcWrite, events []*meta.EventRecord) bool {
	// can[i][j]: writes[i:] account for exactly events[j:].
	can := make([][]bool, len(writes)+1)
	for i := range can {
		can[i] = make([]bool, len(events)+1)
	}
	can[len(writes)][len(events)] = true
	for i := len(writes) - 1; i >= 0; i-- {
		w := writes[i]
		for j := len(events); j >= 0; j-- {
			made := j < len(events) && w.made(kind, events[j]) && can[i+1][j+1]
			switch w.outcome {
			case wroteOK:
				can[i][j] = made
			case wroteFailed:
				can[i][j] = can[i+1][j]
			default:
				can[i][j] = made || can[i+1][j]
			}
		}
	}
	return can[0][0]
}

// checkEntityEvents holds an entity's events to its life: created only
// when it did not exist, updated and deleted only when it did; and no
// event carries a secret the writes gave.
func checkEntityEvents(t *testing.T, e *lcEntity, events []*meta.EventRecord) {
	t.Helper()
	exists := false
	for _, ev := range events {
		verb := ev.Type[strings.LastIndexByte(ev.Type, '.')+1:]
		if (verb == "created") == exists {
			t.Errorf("%s: event %d is %s while the entity exists=%t", e.key(), ev.Seq, ev.Type, exists)
		}
		exists = verb != "deleted"
		if strings.Contains(string(ev.Data), "sekrit-") || (e.kind == "source" && !strings.Contains(string(ev.Data), `"secret":"redacted"`)) {
			t.Errorf("%s: event %d's data does not redact the secret: %s", e.key(), ev.Seq, ev.Data)
		}
	}
}

// writeCounts tallies writes by outcome.
type writeCounts struct{ ok, failed, unknown, refused, rejected int }

func countWrites(entities []*lcEntity) (c writeCounts) {
	for _, e := range entities {
		for _, w := range e.writes {
			switch {
			case w.outcome == wroteOK:
				c.ok++
			case w.outcome == wroteUnknown:
				c.unknown++
			case w.err != nil:
				c.refused++
			default:
				c.failed++
				if w.status >= 500 {
					c.rejected++
				}
			}
		}
	}
	return c
}

// checkOutbox holds the outbox to the writes: each entity's events are
// the events of its writes, in their order (matchWrites); every event
// belongs to an entity the test wrote.
func checkOutbox(t *testing.T, entities []*lcEntity, outbox []meta.EventRecord) {
	t.Helper()
	byEntity := map[string][]*meta.EventRecord{}
	for i := range outbox {
		ev := &outbox[i]
		// Nothing was swept: seqs are dense from 1, and ids (whose text
		// sorts as they do) and times follow them, across every restart.
		if ev.Seq != uint64(i+1) || i > 0 && (ev.ID.String() <= outbox[i-1].ID.String() || ev.Time.Before(outbox[i-1].Time)) {
			t.Errorf("outbox event %d is seq %d, id %s at %s; the one before is seq %d, id %s at %s", i+1, ev.Seq, ev.ID, ev.Time,
				outbox[max(i-1, 0)].Seq, outbox[max(i-1, 0)].ID, outbox[max(i-1, 0)].Time)
		}
		byEntity[entityOf(ev)] = append(byEntity[entityOf(ev)], ev)
	}
	for _, e := range entities {
		events := byEntity[e.key()]
		delete(byEntity, e.key())
		checkEntityEvents(t, e, events)
		if !matchWrites(e.kind, e.writes, events) {
			t.Errorf("%s: its %d events are not the events of its %d writes:\n%s", e.key(), len(events), len(e.writes), describeEntity(e, events))
		}
	}
	for ent, events := range byEntity {
		t.Errorf("the outbox holds %d events of %s, which no write changed (first: %s)", len(events), ent, events[0].Type)
	}
}

// describeEntity lists an entity's writes and events for a failure.
func describeEntity(e *lcEntity, events []*meta.EventRecord) string {
	var b strings.Builder
	names := map[outcome]string{wroteOK: "ok", wroteFailed: "failed", wroteUnknown: "unknown"}
	for _, w := range e.writes {
		fmt.Fprintf(&b, "  write %s %s mark %q: %s (%d %v)\n", w.method, w.path, w.mark, names[w.outcome], w.status, w.err)
	}
	for _, ev := range events {
		fmt.Fprintf(&b, "  event %d %s mark %q\n", ev.Seq, ev.Type, markOf(e.kind, ev.Data))
	}
	return b.String()
}

// The matcher the kill test leans on tells the outcomes apart: a missing,
// extra, repeated or reordered event, or one for a refused write, does
// not match.
func TestLifecycleMatchWrites(t *testing.T) {
	put := func(mark string, o outcome) *lcWrite {
		return &lcWrite{types: []string{"io.ankusa.rate_limit.created", "io.ankusa.rate_limit.updated"}, mark: mark, outcome: o}
	}
	del := func(o outcome) *lcWrite { return &lcWrite{types: []string{"io.ankusa.rate_limit.deleted"}, outcome: o} }
	ev := func(verb, rate string) *meta.EventRecord {
		return &meta.EventRecord{Type: "io.ankusa.rate_limit." + verb, Data: []byte(`{"rate":` + rate + `}`)}
	}
	for _, c := range []struct {
		what   string
		writes []*lcWrite
		events []*meta.EventRecord
		want   bool
	}{
		{"each ok write its event", []*lcWrite{put("1", wroteOK), put("2", wroteOK), del(wroteOK)}, []*meta.EventRecord{ev("created", "1"), ev("updated", "2"), ev("deleted", "2")}, true},
		{"an ok write without its event", []*lcWrite{put("1", wroteOK), put("2", wroteOK)}, []*meta.EventRecord{ev("created", "1")}, false},
		{"an ok write's event twice", []*lcWrite{put("1", wroteOK)}, []*meta.EventRecord{ev("created", "1"), ev("created", "1")}, false},
		{"two events out of order", []*lcWrite{put("1", wroteOK), put("2", wroteOK)}, []*meta.EventRecord{ev("updated", "2"), ev("created", "1")}, false},
		{"an event for a failed write", []*lcWrite{put("1", wroteOK), put("2", wroteFailed)}, []*meta.EventRecord{ev("created", "1"), ev("updated", "2")}, false},
		{"a failed delete's event", []*lcWrite{del(wroteFailed)}, []*meta.EventRecord{ev("deleted", "1")}, false},
		{"an unknown write that happened", []*lcWrite{put("1", wroteUnknown), put("2", wroteOK)}, []*meta.EventRecord{ev("created", "1"), ev("updated", "2")}, true},
		{"an unknown write that did not", []*lcWrite{put("1", wroteUnknown), put("2", wroteOK)}, []*meta.EventRecord{ev("created", "2")}, true},
		{"an unknown delete followed by an ok one", []*lcWrite{del(wroteUnknown), del(wroteOK)}, []*meta.EventRecord{ev("deleted", "1")}, true},
		{"an unknown write's event twice", []*lcWrite{put("1", wroteUnknown)}, []*meta.EventRecord{ev("created", "1"), ev("created", "1")}, false},
		{"an event no write made", []*lcWrite{put("1", wroteOK)}, []*meta.EventRecord{ev("created", "1"), ev("updated", "7")}, false},
	} {
		if got := matchWrites("rate_limit", c.writes, c.events); got != c.want {
			t.Errorf("%s: matchWrites is %t, want %t", c.what, got, c.want)
		}
	}
}
