package main

// Issue 17, acceptance 3: a tenant-scoped lifecycle replay sees only its
// tenant's events, and after= resumes without gaps or repeats across a
// kill -9 of the node. The stock binary, no lifecycle sink: the node keeps
// its outbox for replay all the same.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/ankusa/ankusa/envelope"
)

// globexToken holds tenant:globex (opsToken and acmeToken are
// admin_node_test.go's; here ops holds every scope).
const globexToken = "ankusa-test-globex-5d0a71"

// replayYAML: the token resolver with routes, the persistent source
// store, and no lifecycle sink.
const replayYAML = `node: {name: lc-replay, data_dir: %[1]s}
listen: %[2]s
admin:
  listen: %[3]s
  tokens:
    - {name: ops, sha256: %[4]s, scopes: ["tenant:*", "tenants:read", "tenants:write"]}
    - {name: acme-team, sha256: %[5]s, scopes: ["tenant:acme"]}
    - {name: globex-team, sha256: %[6]s, scopes: ["tenant:globex"]}
route_resolver: {type: token, path: /webhooks/catch/:token}
routes: {enabled: true}
rate_limits:
  default: {rate: 100000, burst: 100000}
source_store: {type: persistent}
log: {level: warn, format: json}
`

// lcEvent is one event of a replay as a client reads it.
type lcEvent struct {
	ID      string `json:"id"`
	Source  string `json:"source"`
	Type    string `json:"type"`
	Subject string `json:"subject"`
	Tenant  string `json:"tenant"`
}

// lcChange is what a write's event must say.
type lcChange struct{ tenant, typ, subject string }

func (e lcEvent) change() lcChange { return lcChange{e.Tenant, e.Type, e.Subject} }

func changesOf(evs []lcEvent) []lcChange {
	out := make([]lcChange, len(evs))
	for i, e := range evs {
		out[i] = e.change()
	}
	return out
}

func changesOfTenant(cs []lcChange, tenant string) []lcChange {
	var out []lcChange
	for _, c := range cs {
		if c.tenant == tenant {
			out = append(out, c)
		}
	}
	return out
}

// eventSeq is the outbox seq of a lifecycle event id (the top bit of its
// sequence part set: never a hook's id).
func eventSeq(t *testing.T, id string) uint64 {
	t.Helper()
	eid, err := envelope.ParseID([]byte(id))
	if err != nil || eid.Seq()&(1<<63) == 0 {
		t.Fatalf("%q is not a lifecycle event id (%v)", id, err)
	}
	return eid.Seq() &^ (1 << 63)
}

// replayPage reads one page of GET /v1/events?query as token, in the JSON
// form or as NDJSON, and returns its events and its cursor ("" at the end).
func replayPage(t *testing.T, n *apiNode, query url.Values, token string, ndjson bool) ([]lcEvent, string) {
	t.Helper()
	req, err := http.NewRequest("GET", "http://"+n.admin+"/v1/events?"+query.Encode(), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if ndjson {
		req.Header.Set("Accept", "application/x-ndjson")
	}
	a, err := n.send(req)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "replay "+query.Encode(), a, http.StatusOK)
	next := a.header.Get("X-Next-Cursor")
	var evs []lcEvent
	if ndjson {
		if ct := a.header.Get("Content-Type"); ct != "application/x-ndjson" {
			t.Fatalf("replay %s as NDJSON: Content-Type %q", query.Encode(), ct)
		}
		for _, line := range bytes.Split(bytes.TrimSuffix(a.body, []byte("\n")), []byte("\n")) {
			if len(line) == 0 {
				continue
			}
			var ev lcEvent
			if err := json.Unmarshal(line, &ev); err != nil {
				t.Fatalf("replay %s: a line that is not an event: %v: %s", query.Encode(), err, line)
			}
			evs = append(evs, ev)
		}
		return evs, next
	}
	var page struct {
		Events     []lcEvent `json:"events"`
		NextCursor string    `json:"next_cursor"`
	}
	decode(t, "replay "+query.Encode(), a, &page)
	if page.NextCursor != next {
		t.Fatalf("replay %s: next_cursor %q, X-Next-Cursor %q", query.Encode(), page.NextCursor, next)
	}
	return page.Events, next
}

// replayFrom follows the replay from after to its end, pages at most
// pages (0: no bound) and returns what it read and where it stopped: the
// cursor to go on from ("" once it reached the end).
func replayFrom(t *testing.T, n *apiNode, query url.Values, token, after string, pages int, ndjson bool) ([]lcEvent, string) {
	t.Helper()
	var out []lcEvent
	for i := 0; pages == 0 || i < pages; i++ {
		q := url.Values{}
		for k, v := range query {
			q[k] = v
		}
		if after != "" {
			q.Set("after", after)
		}
		evs, next := replayPage(t, n, q, token, ndjson)
		out = append(out, evs...)
		if next == "" {
			return out, ""
		}
		after = next
		if i > 10000 {
			t.Fatalf("replay %s: the cursor never ends", query.Encode())
		}
	}
	return out, after
}

// writeChanges makes admin writes for acme and globex (sources, routes,
// rate limits; creates, updates and deletes), round r's names unique, and
// returns the changes in the order they were answered.
func writeChanges(t *testing.T, n *apiNode, r int) []lcChange {
	t.Helper()
	var out []lcChange
	w := func(method, path, body string, want int, c lcChange) {
		t.Helper()
		wantStatus(t, method+" "+path, n.do(method, path, opsToken, body), want)
		out = append(out, c)
	}
	const rl = `{"rate": %d, "burst": 10, "max_queue": 100, "max_queue_bytes": 1048576}`
	for _, tn := range []string{"acme", "globex"} {
		T := "/v1/tenants/" + tn
		src, route := fmt.Sprintf("%s-src-%d", tn, r), fmt.Sprintf("%s-route-%d", tn, r)
		w("POST", T+"/sources", fmt.Sprintf(`{"name": %q, "verify": {"type": "hmac", "header": "X-Sig", "secret": "s%d"}, "sinks": [{"id": "out", "type": "http", "url": "https://example.com/%s"}]}`, src, r, tn),
			201, lcChange{tn, "io.ankusa.source.created", src})
		w("POST", T+"/routes", fmt.Sprintf(`{"id": %q, "source_id": %q, "token": "auto"}`, route, src), 201, lcChange{tn, "io.ankusa.route.created", route})
		verb := "created"
		if r > 0 {
			verb = "updated"
		}
		w("PUT", T+"/rate_limit", fmt.Sprintf(rl, 5+r), 200, lcChange{tn, "io.ankusa.rate_limit." + verb, tn})
	}
	w("PUT", fmt.Sprintf("/v1/tenants/acme/sources/acme-src-%d", r), `{"verify": {"type": "hmac", "header": "X-Sig-2"}}`, 200,
		lcChange{"acme", "io.ankusa.source.updated", fmt.Sprintf("acme-src-%d", r)})
	w("DELETE", fmt.Sprintf("/v1/tenants/globex/routes/globex-route-%d", r), "", 204, lcChange{"globex", "io.ankusa.route.deleted", fmt.Sprintf("globex-route-%d", r)})
	return out
}

// TestLifecycleReplayAcrossRestart is acceptance 3 of issue 17.
func TestLifecycleReplayAcrossRestart(t *testing.T) {
	n := &apiNode{testNode: newTestNode(t), t: t, c: &http.Client{Timeout: 10 * time.Second}}
	t.Cleanup(n.c.CloseIdleConnections)
	writeConfig(t, n.testNode, fmt.Sprintf(replayYAML, n.dataDir, n.listen, n.admin, sha256Hex(opsToken), sha256Hex(acmeToken), sha256Hex(globexToken)))
	p := n.serve(t)
	var want []lcChange
	for r := range 3 {
		want = append(want, writeChanges(t, n, r)...)
	}

	// Every event, in the order the writes were answered, from this node.
	all, _ := replayFrom(t, n, url.Values{}, opsToken, "", 0, false)
	if got := changesOf(all); !slices.Equal(got, want) {
		t.Fatalf("the full replay:\n%v\nwant\n%v", got, want)
	}
	for i, ev := range all {
		if ev.Source != "ankusa://lc-replay" || i > 0 && eventSeq(t, ev.ID) <= eventSeq(t, all[i-1].ID) {
			t.Fatalf("event %d: %+v after %+v", i, ev, all[max(i-1, 0)])
		}
	}

	// A tenant's token sees its tenant's events only, and must name it.
	for _, c := range []struct{ tenant, token string }{{"acme", acmeToken}, {"globex", globexToken}} {
		mine, _ := replayFrom(t, n, url.Values{"tenant": {c.tenant}}, c.token, "", 0, false)
		if got := changesOf(mine); !slices.Equal(got, changesOfTenant(want, c.tenant)) || len(got) == 0 {
			t.Fatalf("%s's replay: %v", c.tenant, got)
		}
	}
	wantError(t, "acme's token without ?tenant=", n.do("GET", "/v1/events", acmeToken, ""), 403, "forbidden")
	wantError(t, "acme's token naming globex", n.do("GET", "/v1/events?tenant=globex", acmeToken, ""), 403, "forbidden")

	// Page partway (acme's events two at a time, every event three at a
	// time), then kill -9 and go on from the cursors after the restart.
	acmeQ, allQ := url.Values{"tenant": {"acme"}, "limit": {"2"}}, url.Values{"limit": {"3"}}
	acmeHead, acmeAt := replayFrom(t, n, acmeQ, acmeToken, "", 2, false)
	allHead, allAt := replayFrom(t, n, allQ, opsToken, "", 3, true)
	if len(acmeHead) != 4 || len(allHead) != 9 || acmeAt == "" || allAt == "" {
		t.Fatalf("before the kill: %d acme events (cursor %q), %d events (cursor %q)", len(acmeHead), acmeAt, len(allHead), allAt)
	}
	p.kill9()
	p = n.serve(t)
	acmeTail, _ := replayFrom(t, n, acmeQ, acmeToken, acmeAt, 0, true)
	allTail, _ := replayFrom(t, n, allQ, opsToken, allAt, 0, false)
	if got := changesOf(append(acmeHead, acmeTail...)); !slices.Equal(got, changesOfTenant(want, "acme")) {
		t.Fatalf("acme's replay across the restart:\n%v\nwant\n%v", got, changesOfTenant(want, "acme"))
	}
	union := append(allHead, allTail...)
	if !slices.Equal(union, all) {
		t.Fatalf("the replay across the restart (ids and all):\n%v\nwant\n%v", union, all)
	}

	// Writes after the restart come after every earlier event, with
	// higher ids; the cursor of the last event read goes on to exactly
	// them.
	more := writeChanges(t, n, 3)
	fresh, _ := replayFrom(t, n, url.Values{}, opsToken, all[len(all)-1].ID, 0, true)
	if got := changesOf(fresh); !slices.Equal(got, more) {
		t.Fatalf("after the restart's writes:\n%v\nwant\n%v", got, more)
	}
	if eventSeq(t, fresh[0].ID) != eventSeq(t, all[len(all)-1].ID)+1 {
		t.Fatalf("the first event after the restart is %s, the last before %s: not the next seq", fresh[0].ID, all[len(all)-1].ID)
	}
	acmeFresh, _ := replayFrom(t, n, url.Values{"tenant": {"acme"}}, acmeToken, acmeTail[len(acmeTail)-1].ID, 0, false)
	if got := changesOf(acmeFresh); !slices.Equal(got, changesOfTenant(more, "acme")) {
		t.Fatalf("acme after the restart's writes: %v", got)
	}
	p.stop()
}
