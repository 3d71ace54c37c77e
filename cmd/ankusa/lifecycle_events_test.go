package main

// Acceptance 1 of the lifecycle events, the content half: every write of
// the admin API's OpenAPI document is made against the built binary, each
// that changes something and each that is refused, and the outbox the
// node leaves holds exactly one event per change, in order, with its type,
// subject, tenant and data (every secret "redacted", none anywhere in the
// event as sent), beside exactly one audit row. The crash half (row and
// event in the change's batch): lifecycle's and dispatch's
// TestOutboxCrash*.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ankusa/ankusa/lifecycle"
	"github.com/ankusa/ankusa/meta"
)

// lcEventsYAML: opaque catch URLs (the token resolver) to API-managed sources;
// the ops token may write every tenant and the rate limits.
const lcEventsYAML = `node: {name: lc-events, data_dir: %[1]s}
listen: %[2]s
admin:
  listen: %[3]s
  tokens:
    - {name: ops, sha256: %[4]s, scopes: ["tenant:*", "tenants:write"]}
route_resolver: {type: token, path: /webhooks/catch/:token}
rate_limits:
  default: {rate: 100000, burst: 100000}
source_store: {type: persistent}
log: {level: warn, format: json}
`

// The secrets the test's sources hold: no event may show one.
const (
	lcVerifySecret = "lc-verify-secret-4f1a"
	lcSinkSecret   = "lc-sink-secret-93bd"
	lcAMQPPassword = "lc-amqp-pw-27ce"
	lcHeaderValue  = "Bearer lc-header-token-81f0"
	lcPenSecret    = "lc-pen-secret-0b6e"
	lcPenSecretNew = "lc-pen-secret-new-d4c2"
)

// lcWant is the event (and audit row) one change must leave.
type lcWant struct {
	op                   string // the write it came from
	tenant, typ, subject string
	action               string // its audit row's
	data                 map[string]any
	absent               []string // data paths that must not be there
	start, end           time.Time
}

// lcRun drives the node and records what each write must leave.
type lcRun struct {
	*apiNode
	ops     map[string]*regexp.Regexp // the document's writes: "METHOD /path/{x}" -> path pattern
	changed map[string]int            // writes that changed something, by op
	refused map[string]int            // writes refused or that changed nothing, by op
	want    []lcWant
	secrets []string // every secret the node was given, and route tokens
}

// docWrites reads the node's OpenAPI document: every POST, PUT, PATCH and
// DELETE, as "METHOD path" with a pattern matching its concrete paths.
func docWrites(t *testing.T, n *apiNode) map[string]*regexp.Regexp {
	t.Helper()
	a := n.do("GET", "/v1/openapi.json", "", "")
	wantStatus(t, "GET /v1/openapi.json", a, http.StatusOK)
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	decode(t, "the OpenAPI document", a, &doc)
	out := map[string]*regexp.Regexp{}
	param := regexp.MustCompile(`\\\{[a-z_]+\\\}`)
	for path, item := range doc.Paths {
		for method := range item {
			m := strings.ToUpper(method)
			if m != "POST" && m != "PUT" && m != "PATCH" && m != "DELETE" {
				continue
			}
			out[m+" "+path] = regexp.MustCompile("^" + param.ReplaceAllString(regexp.QuoteMeta(path), "[^/?]+") + `(\?.*)?$`)
		}
	}
	if len(out) == 0 {
		t.Fatalf("the OpenAPI document names no write: %s", a.body)
	}
	return out
}

// write sends method path with body as op (a write of the document),
// requires status, and records the events it must leave: none for a
// refused write or one that changed nothing.
func (r *lcRun) write(op, method, path, body string, status int, want ...lcWant) answer {
	r.t.Helper()
	re, ok := r.ops[op]
	if !ok || !strings.HasPrefix(op, method+" ") || !re.MatchString(path) {
		r.t.Fatalf("%s %s is not the document's write %q", method, path, op)
	}
	start := time.Now()
	a := r.do(method, path, opsToken, body)
	end := time.Now()
	wantStatus(r.t, method+" "+path, a, status)
	if len(want) == 0 {
		r.refused[op]++
	} else {
		r.changed[op]++
	}
	for _, w := range want {
		w.op, w.start, w.end = op, start, end
		r.want = append(r.want, w)
	}
	return a
}

// Shapes of the events of each kind of change.

// auditVerbs are the audit actions' verbs of the event verbs.
var auditVerbs = map[string]string{"created": "create", "updated": "update", "deleted": "delete"}

func sourceEvent(verb, tenant, name string, data map[string]any, absent ...string) lcWant {
	data["name"] = name
	data["tenant_id"] = tenant
	return lcWant{tenant: tenant, typ: "io.ankusa.source." + verb, subject: name, action: "source." + auditVerbs[verb],
		data: data, absent: absent}
}

func routeEvent(verb, tenant, id, src string, tokens int) lcWant {
	return lcWant{tenant: tenant, typ: "io.ankusa.route." + verb, subject: id, action: "route." + auditVerbs[verb],
		data: map[string]any{"id": id, "tenant_id": tenant, "source_id": src, "tokens.#": float64(tokens)}}
}

func rateEvent(verb, tenant, action string, rate, burst, maxQueue float64) lcWant {
	return lcWant{tenant: tenant, typ: "io.ankusa.rate_limit." + verb, subject: tenant, action: action,
		data: map[string]any{"rate": rate, "burst": burst, "max_queue": maxQueue, "max_queue_bytes": 0.0}}
}

func TestLifecycleEventOfEveryAdminWrite(t *testing.T) {
	n := &apiNode{testNode: newTestNode(t), t: t, c: &http.Client{Timeout: 10 * time.Second}}
	t.Cleanup(n.c.CloseIdleConnections)
	writeConfig(t, n.testNode, fmt.Sprintf(lcEventsYAML, n.dataDir, n.listen, n.admin, sha256Hex(opsToken)))
	recv := newSinkRecorder(t)
	p := n.serve(t)
	r := &lcRun{apiNode: n, ops: docWrites(t, n), changed: map[string]int{}, refused: map[string]int{},
		secrets: []string{lcVerifySecret, lcSinkSecret, lcAMQPPassword, lcHeaderValue, lcPenSecret, lcPenSecretNew}}
	lcSources(r, recv)
	lcDeadLetters(r, recv)
	lcQuarantine(r, recv)
	lcRoutesAndBacklog(r, recv)
	lcRateLimits(r)
	lcErase(r)
	p.stop()

	// Every write of the document was made, changing something and
	// refused: a write added to the document without a case here fails.
	var missing []string
	for op := range r.ops {
		if r.changed[op] == 0 || r.refused[op] == 0 {
			missing = append(missing, fmt.Sprintf("%s (changed %d, refused %d)", op, r.changed[op], r.refused[op]))
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("writes of the OpenAPI document without a change and a refusal checked here:\n%s", strings.Join(missing, "\n"))
	}
	checkEveryWriteOutbox(t, r)
}

// lcSources: a source holding every kind of secret is created, updated
// (the secrets kept) and deleted; another tenant's source; refusals.
func lcSources(r *lcRun, recv *sinkRecorder) {
	const create = "POST /v1/tenants/{tenant}/sources"
	const update = "PUT /v1/tenants/{tenant}/sources/{name}"
	const remove = "DELETE /v1/tenants/{tenant}/sources/{name}"
	sinks := fmt.Sprintf(`[{"id": "out", "type": "http", "url": "%s/good/vault", "allow_private": true%%s, "headers": {"Authorization": %q}},
	  {"id": "mq", "type": "rabbitmq", "url": "amqp://ankusa:%s@127.0.0.1:5672/", "exchange": "hooks", "routing_key": "k"}]`,
		recv.url, lcHeaderValue, lcAMQPPassword)
	full := fmt.Sprintf(`{"name": "vault", "verify": {"type": "hmac", "header": "X-Sig", "algorithm": "sha256", "encoding": "hex", "secret": %q},
	  "sinks": %s}`, lcVerifySecret, fmt.Sprintf(sinks, fmt.Sprintf(`, "secret": %q`, lcSinkSecret)))
	redacted := func(extra map[string]any) map[string]any {
		d := map[string]any{"verify.type": "hmac", "verify.secret": "redacted", "verify.header": "X-Sig",
			"sinks.0.secret": "redacted", "sinks.0.headers.Authorization": "redacted", "sinks.0.url": recv.url + "/good/vault",
			"sinks.1.url": "amqp://ankusa:redacted@127.0.0.1:5672/", "sinks.1.exchange": "hooks", "sinks.#": 2.0}
		for k, v := range extra {
			d[k] = v
		}
		return d
	}
	r.write(create, "POST", sourcesOf("acme"), full, http.StatusCreated, sourceEvent("created", "acme", "vault", redacted(nil), "max_body_bytes", "sinks.1.secret"))
	r.write(create, "POST", sourcesOf("acme"), full, http.StatusConflict)
	r.write(create, "POST", sourcesOf("acme"), `{"name": "bad", "verify": {"type": "bogus"}}`, http.StatusBadRequest)
	r.write(create, "POST", sourcesOf("globex"), `{"name": "gx", "verify": {"type": "none"}}`, http.StatusCreated,
		sourceEvent("created", "globex", "gx", map[string]any{"verify.type": "none"}, "verify.secret", "sinks"))
	// The update gives no secret: the stored ones are kept, and redacted.
	noSecrets := fmt.Sprintf(`{"verify": {"type": "hmac", "header": "X-Sig", "algorithm": "sha256", "encoding": "hex"}, "max_body_bytes": 4096, "sinks": %s}`,
		fmt.Sprintf(sinks, ""))
	r.write(update, "PUT", sourceAt("acme", "vault"), noSecrets, http.StatusOK, sourceEvent("updated", "acme", "vault", redacted(map[string]any{"max_body_bytes": 4096.0})))
	r.write(update, "PUT", sourceAt("acme", "nope"), noSecrets, http.StatusNotFound)
	r.write(update, "PUT", sourceAt("globex", "vault"), noSecrets, http.StatusNotFound)
	r.write(update, "PUT", sourceAt("acme", "vault"), `{"name": "other", "verify": {"type": "none"}}`, http.StatusBadRequest)
	r.write(remove, "DELETE", sourceAt("acme", "vault"), "", http.StatusOK, sourceEvent("deleted", "acme", "vault", redacted(map[string]any{"max_body_bytes": 4096.0})))
	r.write(remove, "DELETE", sourceAt("acme", "vault"), "", http.StatusNotFound)
}

// lcRoute creates a route with a minted token to src and returns the
// token; the token is a secret no event may show.
func lcRoute(r *lcRun, tenant, id, src string) string {
	a := r.write("POST /v1/tenants/{tenant}/routes", "POST", "/v1/tenants/"+tenant+"/routes", fmt.Sprintf(`{"id": %q, "source_id": %q, "token": "auto"}`, id, src),
		http.StatusCreated, routeEvent("created", tenant, id, src, 1))
	var v routeAnswer
	decode(r.t, "POST route "+id, a, &v)
	if v.Token == "" {
		r.t.Fatalf("POST route %s: no token in %s", id, a.body)
	}
	r.secrets = append(r.secrets, v.Token)
	return v.Token
}

// lcHooks posts n hooks to the catch URL of token, signed with secret
// (none when ""), and requires status; it returns their ids.
func lcHooks(r *lcRun, token, secret string, n, status int) []string {
	var ids []string
	for i := range n {
		body := fmt.Sprintf(`{"lc":%d,"at":%d}`, i, time.Now().UnixNano())
		var hdr []string
		if secret != "" {
			hdr = []string{"X-Sig", hmacHex(secret, body)}
		}
		a := r.hookAt("/webhooks/catch/"+token, body, hdr...)
		var v struct {
			ID string `json:"id"`
		}
		if a.status != status || json.Unmarshal(a.body, &v) != nil || v.ID == "" {
			r.t.Fatalf("hook %d to %s: %d %s, want %d with an id", i, token, a.status, a.body, status)
		}
		ids = append(ids, v.ID)
	}
	return ids
}

// waitDeadLetters waits until tenant has exactly n dead letters and returns them.
func waitDeadLetters(r *lcRun, tenant string, n int) []deliveryRow {
	var rows []deliveryRow
	if !waitFor(15*time.Second, func() bool { rows = deadRows(r.t, r.apiNode, tenant); return len(rows) == n }) {
		r.t.Fatalf("tenant %s has %d dead letters, want %d: %+v", tenant, len(rows), n, rows)
	}
	return rows
}

// lcDeadLetters: a sink that fails at once (max_attempts 1) makes dead
// letters; one is retried, one dropped, the rest retried and dropped in
// bulk.
func lcDeadLetters(r *lcRun, recv *sinkRecorder) {
	spec := fmt.Sprintf(`{"name": "dl", "verify": {"type": "none"}, "sinks": [{"id": "out", "type": "http", "url": "%s/bad/dl", "allow_private": true, "max_attempts": 1}]}`, recv.url)
	r.write("POST /v1/tenants/{tenant}/sources", "POST", sourcesOf("acme"), spec, http.StatusCreated,
		sourceEvent("created", "acme", "dl", map[string]any{"sinks.0.max_attempts": 1.0, "sinks.0.id": "out"}, "sinks.0.secret", "sinks.0.headers"))
	token := lcRoute(r, "acme", "dl-route", "dl")
	ids := lcHooks(r, token, "", 4, http.StatusCreated)
	waitDeadLetters(r, "acme", 4)
	one := func(id string) string { return "/v1/tenants/acme/deliveries/" + id + "/out" }
	delivery := func(verb, id string) lcWant {
		return lcWant{tenant: "acme", typ: "io.ankusa.delivery." + verb, subject: id, action: map[string]string{"retried": "deliveries.retry", "dropped": "deliveries.drop"}[verb],
			data: map[string]any{"event_id": id, "sink": "out"}}
	}
	const retryOne = "POST /v1/tenants/{tenant}/deliveries/{event_id}/{sink}/retry"
	const dropOne = "DELETE /v1/tenants/{tenant}/deliveries/{event_id}/{sink}"
	r.write(retryOne, "POST", one(ids[0])+"/retry", "", http.StatusOK, delivery("retried", ids[0]))
	r.write(retryOne, "POST", "/v1/tenants/acme/deliveries/"+ids[0]+"/nope/retry", "", http.StatusNotFound)
	r.write(retryOne, "POST", "/v1/tenants/globex/deliveries/"+ids[0]+"/out/retry", "", http.StatusNotFound)
	waitDeadLetters(r, "acme", 4) // the retried one failed again
	r.write(dropOne, "DELETE", one(ids[1]), "", http.StatusNoContent, delivery("dropped", ids[1]))
	r.write(dropOne, "DELETE", one(ids[1]), "", http.StatusNotFound)
	// A redelivery of a dead letter retries it; refused for a sink the
	// source lacks and for another tenant's hook.
	const redeliver = "POST /v1/tenants/{tenant}/hooks/{event_id}/sinks/{sink}/redeliver"
	again := func(tenant, id, sink string) string {
		return "/v1/tenants/" + tenant + "/hooks/" + id + "/sinks/" + sink + "/redeliver"
	}
	r.write(redeliver, "POST", again("acme", ids[2], "out"), "", http.StatusOK,
		lcWant{tenant: "acme", typ: "io.ankusa.delivery.redelivered", subject: ids[2], action: "hooks.redeliver", data: map[string]any{"event_id": ids[2], "sink": "out"}})
	r.write(redeliver, "POST", again("acme", ids[2], "nope"), "", http.StatusNotFound)
	r.write(redeliver, "POST", again("globex", ids[2], "out"), "", http.StatusNotFound)
	waitDeadLetters(r, "acme", 3) // the redelivered one failed again
	bulk := func(verb, action string, count float64) lcWant {
		return lcWant{tenant: "acme", typ: "io.ankusa.delivery." + verb, subject: "acme", action: action,
			data: map[string]any{"count": count, "source": "dl"}, absent: []string{"since", "until"}}
	}
	const retryAll = "POST /v1/tenants/{tenant}/deliveries/retry"
	const dropAll = "POST /v1/tenants/{tenant}/deliveries/drop"
	r.write(retryAll, "POST", "/v1/tenants/acme/deliveries/retry?source=dl", "", http.StatusOK, bulk("bulk_retried", "deliveries.retry_all", 3))
	r.write(retryAll, "POST", "/v1/tenants/acme/deliveries/retry?colour=red", "", http.StatusBadRequest)
	waitDeadLetters(r, "acme", 3)
	r.write(dropAll, "POST", "/v1/tenants/acme/deliveries/drop", "", http.StatusBadRequest)
	r.write(dropAll, "POST", "/v1/tenants/acme/deliveries/drop?source=dl", "", http.StatusOK, bulk("bulk_dropped", "deliveries.drop_all", 3))
	// Nothing left: a bulk change of nothing is no change, and no event.
	if a := r.write(dropAll, "POST", "/v1/tenants/acme/deliveries/drop?all=true", "", http.StatusOK); !strings.Contains(string(a.body), `"dropped":0`) {
		r.t.Fatalf("drop all of no dead letter: %s", a.body)
	}
	if a := r.write(retryAll, "POST", "/v1/tenants/acme/deliveries/retry", "", http.StatusOK); !strings.Contains(string(a.body), `"retried":0`) {
		r.t.Fatalf("retry all of no dead letter: %s", a.body)
	}
}

// penHooks lists tenant's quarantined hooks.
func penHooks(r *lcRun, tenant string) []string {
	a := r.do("GET", "/v1/tenants/"+tenant+"/quarantine?limit=1000", opsToken, "")
	wantStatus(r.t, "GET quarantine", a, http.StatusOK)
	var v struct {
		Hooks []struct {
			EventID string `json:"event_id"`
		} `json:"hooks"`
	}
	decode(r.t, "GET quarantine", a, &v)
	var ids []string
	for _, h := range v.Hooks {
		ids = append(ids, h.EventID)
	}
	return ids
}

// lcQuarantine: hooks that fail verification are held; one release is
// refused (it still does not verify), one forced, one verified after the
// secret is rotated; one is dropped, the rest in bulk.
func lcQuarantine(r *lcRun, recv *sinkRecorder) {
	spec := func(secret string) string {
		return fmt.Sprintf(`{"name": "pen", "verify": {"type": "hmac", "header": "X-Sig", "algorithm": "sha256", "encoding": "hex", "secret": %q},
		  "on_verify_failure": "quarantine", "sinks": [{"id": "out", "type": "http", "url": "%s/good/pen", "allow_private": true}]}`, secret, recv.url)
	}
	penData := map[string]any{"verify.secret": "redacted", "on_verify_failure": "quarantine"}
	r.write("POST /v1/tenants/{tenant}/sources", "POST", sourcesOf("acme"), spec(lcPenSecret), http.StatusCreated, sourceEvent("created", "acme", "pen", penData))
	token := lcRoute(r, "acme", "pen-route", "pen")
	held := lcHooks(r, token, "not-the-secret", 4, http.StatusAccepted)
	held = append(held, lcHooks(r, token, lcPenSecretNew, 1, http.StatusAccepted)...)
	if !waitFor(10*time.Second, func() bool { return len(penHooks(r, "acme")) == len(held) }) {
		r.t.Fatalf("the pen holds %v, want %v", penHooks(r, "acme"), held)
	}
	const release = "POST /v1/tenants/{tenant}/quarantine/{event_id}/release"
	const dropOne = "DELETE /v1/tenants/{tenant}/quarantine/{event_id}"
	const dropAll = "POST /v1/tenants/{tenant}/quarantine/drop"
	pen := func(verb, action, id string, forced any) lcWant {
		w := lcWant{tenant: "acme", typ: "io.ankusa.quarantine." + verb, subject: id, action: action,
			data: map[string]any{"event_id": id, "source": "pen"}}
		if forced != nil {
			w.data["forced"] = forced
		} else {
			w.absent = []string{"forced"}
		}
		return w
	}
	at := func(id string) string { return "/v1/tenants/acme/quarantine/" + id }
	r.write(release, "POST", at(held[0])+"/release", "", http.StatusConflict)
	r.write(release, "POST", at(held[0])+"/release?force=true", "", http.StatusOK, pen("released", "quarantine.release_forced", held[0], true))
	r.write(release, "POST", at(held[0])+"/release?force=true", "", http.StatusNotFound)
	r.write("PUT /v1/tenants/{tenant}/sources/{name}", "PUT", sourceAt("acme", "pen"), spec(lcPenSecretNew), http.StatusOK, sourceEvent("updated", "acme", "pen", penData))
	r.write(release, "POST", at(held[4])+"/release", "", http.StatusOK, pen("released", "quarantine.release", held[4], false))
	r.write(dropOne, "DELETE", at(held[1]), "", http.StatusNoContent, pen("dropped", "quarantine.drop", held[1], nil))
	r.write(dropOne, "DELETE", at(held[1]), "", http.StatusNotFound)
	r.write(dropOne, "DELETE", "/v1/tenants/globex/quarantine/"+held[2], "", http.StatusNotFound)
	r.write(dropAll, "POST", "/v1/tenants/acme/quarantine/drop", "", http.StatusBadRequest)
	r.write(dropAll, "POST", "/v1/tenants/acme/quarantine/drop?all=true", "", http.StatusOK,
		lcWant{tenant: "acme", typ: "io.ankusa.quarantine.bulk_dropped", subject: "acme", action: "quarantine.drop_all", data: map[string]any{"count": 2.0}})
	if a := r.write(dropAll, "POST", "/v1/tenants/acme/quarantine/drop?all=true", "", http.StatusOK); !strings.Contains(string(a.body), `"dropped":0`) {
		r.t.Fatalf("drop all of an empty pen: %s", a.body)
	}
}

// lcRoutesAndBacklog: a route is updated (a second token) and deleted; a
// source with undelivered hooks is deleted only with
// ?deliveries=dead_letter, which leaves two events (deleted, then
// dead_lettered).
func lcRoutesAndBacklog(r *lcRun, recv *sinkRecorder) {
	const update = "PUT /v1/tenants/{tenant}/routes/{id}"
	const remove = "DELETE /v1/tenants/{tenant}/routes/{id}"
	a := r.write(update, "PUT", "/v1/tenants/acme/routes/dl-route", `{"source_id": "dl", "token": "auto"}`, http.StatusOK, routeEvent("updated", "acme", "dl-route", "dl", 2))
	var v routeAnswer
	decode(r.t, "PUT dl-route", a, &v)
	r.secrets = append(r.secrets, v.Token)
	r.write(update, "PUT", "/v1/tenants/acme/routes/nope", `{"source_id": "dl", "token": "auto"}`, http.StatusNotFound)
	r.write(update, "PUT", "/v1/tenants/acme/routes/dl-route", `{"id": "other", "source_id": "dl"}`, http.StatusBadRequest)
	r.write("POST /v1/tenants/{tenant}/routes", "POST", "/v1/tenants/acme/routes", `{"id": "dl-route", "source_id": "dl", "token": "auto"}`, http.StatusConflict)
	r.write(remove, "DELETE", "/v1/tenants/acme/routes/dl-route", "", http.StatusNoContent, routeEvent("deleted", "acme", "dl-route", "dl", 2))
	r.write(remove, "DELETE", "/v1/tenants/acme/routes/dl-route", "", http.StatusNotFound)

	// Each failing receiver is the source's own: its failures say the
	// source's hooks have rows.
	busyRecv, splitRecv := newSinkRecorder(r.t), newSinkRecorder(r.t)
	spec := fmt.Sprintf(`{"name": "busy", "verify": {"type": "none"}, "sinks": [{"id": "out", "type": "http", "url": "%s/bad/busy", "allow_private": true, "max_attempts": 1000, "retry_base": "20ms", "retry_max": "50ms"}]}`, busyRecv.url)
	r.write("POST /v1/tenants/{tenant}/sources", "POST", sourcesOf("acme"), spec, http.StatusCreated, sourceEvent("created", "acme", "busy", map[string]any{"sinks.0.max_attempts": 1000.0}))
	token := lcRoute(r, "acme", "busy-route", "busy")
	lcHooks(r, token, "", 2, http.StatusCreated)
	waitFailures(r, busyRecv, 2)
	r.write(remove, "DELETE", "/v1/tenants/acme/routes/busy-route", "", http.StatusNoContent, routeEvent("deleted", "acme", "busy-route", "busy", 1))
	const del = "DELETE /v1/tenants/{tenant}/sources/{name}"
	r.write(del, "DELETE", sourceAt("acme", "busy"), "", http.StatusConflict)
	a = r.write(del, "DELETE", sourceAt("acme", "busy")+"?deliveries=dead_letter", "", http.StatusOK,
		sourceEvent("deleted", "acme", "busy", map[string]any{"sinks.0.max_attempts": 1000.0}),
		lcWant{tenant: "acme", typ: "io.ankusa.source.dead_lettered", subject: "busy", action: "source.dead_letter", data: map[string]any{"source": "busy"}, absent: []string{"sinks"}})
	if !strings.Contains(string(a.body), `"dead_lettered":2`) {
		r.t.Fatalf("DELETE busy?deliveries=dead_letter: %s, want 2 dead-lettered", a.body)
	}

	// An update that removes a sink with undelivered hooks: the same, with
	// the sinks named.
	two := fmt.Sprintf(`{"name": "split", "verify": {"type": "none"}, "sinks": [
	  {"id": "keep", "type": "http", "url": "%[1]s/good/split", "allow_private": true},
	  {"id": "gone", "type": "http", "url": "%[2]s/bad/split", "allow_private": true, "max_attempts": 1000, "retry_base": "20ms", "retry_max": "50ms"}]}`, recv.url, splitRecv.url)
	one := fmt.Sprintf(`{"verify": {"type": "none"}, "sinks": [{"id": "keep", "type": "http", "url": "%s/good/split", "allow_private": true}]}`, recv.url)
	r.write("POST /v1/tenants/{tenant}/sources", "POST", sourcesOf("acme"), two, http.StatusCreated, sourceEvent("created", "acme", "split", map[string]any{"sinks.#": 2.0}))
	token = lcRoute(r, "acme", "split-route", "split")
	lcHooks(r, token, "", 2, http.StatusCreated)
	waitFailures(r, splitRecv, 2)
	const put = "PUT /v1/tenants/{tenant}/sources/{name}"
	r.write(put, "PUT", sourceAt("acme", "split"), one, http.StatusConflict)
	a = r.write(put, "PUT", sourceAt("acme", "split")+"?deliveries=dead_letter", one, http.StatusOK,
		sourceEvent("updated", "acme", "split", map[string]any{"sinks.#": 1.0, "sinks.0.id": "keep"}),
		lcWant{tenant: "acme", typ: "io.ankusa.source.dead_lettered", subject: "split", action: "source.dead_letter",
			data: map[string]any{"source": "split", "sinks.#": 1.0, "sinks.0": "gone"}})
	if got := a.header.Get("X-Ankusa-Dead-Lettered"); got != "2" {
		r.t.Fatalf("PUT split?deliveries=dead_letter: X-Ankusa-Dead-Lettered %q, want 2", got)
	}
}

// waitFailures waits until recv has answered n failures.
func waitFailures(r *lcRun, recv *sinkRecorder, n int) {
	if !waitFor(10*time.Second, func() bool { return recv.failures() >= n }) {
		r.t.Fatalf("the failing receiver got %d attempts in 10s, want %d", recv.failures(), n)
	}
}

// lcRateLimits: an override is created, updated and cleared for two
// tenants; refusals.
func lcRateLimits(r *lcRun) {
	const set = "PUT /v1/tenants/{tenant}/rate_limit"
	const clear = "DELETE /v1/tenants/{tenant}/rate_limit"
	body := func(rate, burst, maxQueue int) string {
		return fmt.Sprintf(`{"rate": %d, "burst": %d, "max_queue": %d, "max_queue_bytes": 0}`, rate, burst, maxQueue)
	}
	const setAction, clearAction = "tenant.rate_limit.set", "tenant.rate_limit.clear"
	r.write(set, "PUT", "/v1/tenants/acme/rate_limit", body(50, 100, 1000), http.StatusOK, rateEvent("created", "acme", setAction, 50, 100, 1000))
	r.write(set, "PUT", "/v1/tenants/acme/rate_limit", `{"rate": 5}`, http.StatusBadRequest)
	r.write(set, "PUT", "/v1/tenants/acme/rate_limit", body(60, 120, 0), http.StatusOK, rateEvent("updated", "acme", setAction, 60, 120, 0))
	r.write(set, "PUT", "/v1/tenants/globex/rate_limit", body(7, 9, 11), http.StatusOK, rateEvent("created", "globex", setAction, 7, 9, 11))
	r.write(clear, "DELETE", "/v1/tenants/acme/rate_limit", "", http.StatusNoContent, rateEvent("deleted", "acme", clearAction, 60, 120, 0))
	r.write(clear, "DELETE", "/v1/tenants/acme/rate_limit", "", http.StatusNotFound)
	r.write(clear, "DELETE", "/v1/tenants/globex/rate_limit", "", http.StatusNoContent, rateEvent("deleted", "globex", clearAction, 7, 9, 11))
}

// lcErase: erasing a tenant with nothing on the node leaves its one
// tenant.deleted event and audit row; a refused erase leaves none. The
// erase runs after its 202: its event is due once GET .../erase says
// erased.
func lcErase(r *lcRun) {
	const erase = "DELETE /v1/tenants/{tenant}"
	r.write(erase, "DELETE", "/v1/tenants/default?confirm=default", "", http.StatusConflict)
	r.write(erase, "DELETE", "/v1/tenants/initech?confirm=globex", "", http.StatusBadRequest)
	r.write(erase, "DELETE", "/v1/tenants/initech?confirm=initech", "", http.StatusAccepted,
		lcWant{tenant: "initech", typ: "io.ankusa.tenant.deleted", subject: "initech", action: "tenant.delete",
			data: map[string]any{"tenant": "initech", "hooks": 0.0}})
	deadline := time.Now().Add(15 * time.Second)
	for {
		a := r.do("GET", "/v1/tenants/initech/erase", opsToken, "")
		if a.status == http.StatusOK && strings.Contains(string(a.body), `"state":"erased"`) {
			break
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("the erase of initech did not finish in 15s: %d %s", a.status, a.body)
		}
		time.Sleep(10 * time.Millisecond)
	}
	r.want[len(r.want)-1].end = time.Now()
}

// checkEveryWriteOutbox opens the stopped node's meta store and checks its outbox
// and audit log against what the writes must have left, one by one.
func checkEveryWriteOutbox(t *testing.T, r *lcRun) {
	t.Helper()
	ms, err := meta.Open(meta.Options{Dir: filepath.Join(r.dataDir, "meta")})
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	var evs []meta.EventRecord
	if err := ms.Events(0, math.MaxUint64, func(ev *meta.EventRecord) (bool, error) { evs = append(evs, *ev); return false, nil }); err != nil {
		t.Fatal(err)
	}
	rows, err := ms.Audit(time.Time{}, 100000)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d writes of %d kinds left %d events and %d audit rows", total(r.changed)+total(r.refused), len(r.ops), len(evs), len(rows))
	if len(evs) != len(r.want) || len(rows) != len(r.want) {
		t.Errorf("the outbox holds %d events and the audit log %d rows; the changes made were %d", len(evs), len(rows), len(r.want))
		for i, ev := range evs {
			t.Logf("event %d: %s %s %s", i+1, ev.Tenant, ev.Type, ev.Subject)
		}
		for i, w := range r.want {
			t.Logf("want %d: %s %s %s (%s)", i+1, w.tenant, w.typ, w.subject, w.op)
		}
		t.FailNow()
	}
	for i, w := range r.want {
		if err := checkEvent(&evs[i], &w, r.secrets); err != nil {
			t.Errorf("event %d, of %s: %v\n%s", i+1, w.op, err, lifecycle.Render(&evs[i], "lc-events"))
		}
		if a := rows[i]; a.Action != w.action || a.Tenant != w.tenant || a.Outcome != "ok" || a.Principal != "ops" {
			t.Errorf("audit row %d, of %s: %+v; want action %s, tenant %s, principal ops, outcome ok", i+1, w.op, a, w.action, w.tenant)
		}
		if b, _ := json.Marshal(rows[i]); containsAny(b, r.secrets) != "" {
			t.Errorf("audit row %d holds a secret: %s", i+1, b)
		}
	}
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// checkEvent checks one event as the node sends it (lifecycle.Render)
// against what its change must leave.
func checkEvent(ev *meta.EventRecord, w *lcWant, secrets []string) error {
	sent := lifecycle.Render(ev, "lc-events")
	if s := containsAny(sent, secrets); s != "" {
		return fmt.Errorf("the event holds the secret %q", s)
	}
	var ce struct {
		SpecVersion, ID, Source, Type, Subject, Time, Tenant, DataContentType string
		Data                                                                  any
	}
	if err := json.Unmarshal(sent, &ce); err != nil {
		return err
	}
	at, err := time.Parse(time.RFC3339Nano, ce.Time)
	switch {
	case ce.SpecVersion != "1.0" || ce.Source != "ankusa://lc-events" || ce.DataContentType != "application/json":
		return fmt.Errorf("specversion %q source %q datacontenttype %q", ce.SpecVersion, ce.Source, ce.DataContentType)
	case ce.ID != ev.ID.String() || !strings.HasPrefix(ce.ID, "evt_"):
		return fmt.Errorf("id %q, stored %s", ce.ID, ev.ID)
	case ce.Type != w.typ || ce.Subject != w.subject || ce.Tenant != w.tenant:
		return fmt.Errorf("type %q subject %q tenant %q; want %q %q %q", ce.Type, ce.Subject, ce.Tenant, w.typ, w.subject, w.tenant)
	case err != nil || at.Before(w.start.Add(-time.Second)) || at.After(w.end.Add(time.Second)):
		return fmt.Errorf("time %q (%v) is not between the request (%s) and its answer (%s)", ce.Time, err, w.start, w.end)
	}
	for path, want := range w.data {
		if got, ok := jsonAt(ce.Data, path); !ok || got != want {
			return fmt.Errorf("data %s: %v (%v), want %v", path, got, ok, want)
		}
	}
	for _, path := range w.absent {
		if got, ok := jsonAt(ce.Data, path); ok {
			return fmt.Errorf("data %s: %v, want it absent", path, got)
		}
	}
	return nil
}

// jsonAt is the value at path in v, a dotted list of keys and indexes;
// "#" is the length of the array there.
func jsonAt(v any, path string) (any, bool) {
	for _, k := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[k]; !ok {
				return nil, false
			}
		case []any:
			if k == "#" {
				return float64(len(x)), true
			}
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// containsAny is the first of secrets that b holds ("" for none).
func containsAny(b []byte, secrets []string) string {
	i := slices.IndexFunc(secrets, func(s string) bool { return bytes.Contains(b, []byte(s)) })
	if i < 0 {
		return ""
	}
	return secrets[i]
}
