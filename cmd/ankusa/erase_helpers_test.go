package main

// Helpers of the tenant erase tests against the built binary (issue 20:
// erase_trace_test.go, erase_kill_test.go, erase_api_test.go): a node
// that holds every kind of tenant data the erase deletes, a tenant
// populated with all of it through the admin API and the public
// listener, the erase driven through the API, and the trace a tenant
// leaves in the stopped node's meta store, its claim stores and its Redis
// namespace.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/minio/minio-go/v7"
	"github.com/redis/go-redis/v9"

	"github.com/ankusa/ankusa/internal/redistest"
	"github.com/ankusa/ankusa/internal/s3test"
	"github.com/ankusa/ankusa/meta"
)

// The erase tests' admin tokens besides opsToken (tenant:*) and acmeToken
// (tenant:acme): erAdminToken may erase (tenants:read, tenants:write and
// tenant:*), erWriterToken holds tenants:write alone.
const (
	erAdminToken  = "ankusa-test-eraser-6a91c2"
	erWriterToken = "ankusa-test-writer-0d47be"
)

// erPenSecret signs the pen source's hooks; erPopulate signs its hooks
// with another secret, so they are quarantined.
const erPenSecret = "er-pen-secret-5b2e"

// erClaimOver is the sinks' claim.over_bytes, and erLargeBody a body above it.
const erClaimOver = 4 << 10

var erLargeBody = `{"large":"` + strings.Repeat("claimed body ", 600) + `"}`

// erNodeYAML: %[1]s node name, %[2]s data_dir, %[3]s listen, %[4]s admin,
// %[5]s ops digest, %[6]s acme-team digest, %[7]s eraser digest, %[8]s
// writer digest, %[9]s more rate_limits keys (a "scope: fleet" line),
// %[10]s the source store, %[11]s the archive dir, %[12]s the lifecycle
// sink, %[13]s the claim stores (lines under claims.stores), %[14]s the
// wal, %[15]s more top-level keys.
const erNodeYAML = `node: {name: %[1]s, data_dir: %[2]s}
listen: %[3]s
admin:
  listen: %[4]s
  tokens:
    - {name: ops, sha256: %[5]s, scopes: ["tenant:*"]}
    - {name: acme-team, sha256: %[6]s, scopes: ["tenant:acme"]}
    - {name: eraser, sha256: %[7]s, scopes: ["tenants:read", "tenants:write", "tenant:*"]}
    - {name: writer, sha256: %[8]s, scopes: ["tenants:write"]}
limits: {max_body_bytes: 256KiB, max_header_bytes: 16KiB}
route_resolver: {type: tenantpath, prefix: [webhooks]}
routes: {enabled: true}
rate_limits:
%[9]s  default: {rate: 100000, burst: 100000}
source_store: {%[10]s}
%[14]s
segment: {max_age: 1s}
archive: {type: dir, path: %[11]s}
log: {level: warn, format: json}
lifecycle:
  sink: %[12]s
claims:
  stores:
%[13]s%[15]s
`

// erOptions shape an erNode; see the erWith options.
type erOptions struct {
	name              string // node.name; "" is erase-test
	redisURL, redisNS string // "": the persistent source store
	fleetRate         bool   // rate_limits.scope: fleet (needs redisURL)
	s3                *s3test.Server
	wal               string // the wal line; "" is a disk wal
}

// erOption is an option of newErNode.
type erOption func(*erOptions)

// erWithRedis keeps sources and routes in the Redis at url under the
// namespace ns (the node's redis: key gets the same url and namespace).
func erWithRedis(url, ns string) erOption {
	return func(o *erOptions) { o.redisURL, o.redisNS = url, ns }
}

// erWithName names the node (two nodes of one fleet need two names).
func erWithName(name string) erOption { return func(o *erOptions) { o.name = name } }

// erWithFleetRate sets rate_limits.scope: fleet (with erWithRedis).
func erWithFleetRate() erOption { return func(o *erOptions) { o.fleetRate = true } }

// erWithS3 adds the claim store s3packs in bucket "claims" of s (made by
// newErNode) beside the dir store; erPopulate gives the dd source a sink
// that claims into it.
func erWithS3(s *s3test.Server) erOption { return func(o *erOptions) { o.s3 = s } }

// erWithWAL replaces the wal line (e.g. "wal: {type: none}"). A node
// without a wal takes only sources with a durable (broker) sink, which
// erPopulate's HTTP sinks are not: such a test makes its own sources.
func erWithWAL(line string) erOption { return func(o *erOptions) { o.wal = line } }

// erNode is a node under test for the erase: a persistent (or Redis)
// source store, a wal on disk, an archive dir, segments sealed after 1s,
// the tenant-path resolver with the route guard on, a lifecycle sink to
// lc, a dir claim store packs (and s3packs with erWithS3), and recv, the
// customer's receiver the populated sources deliver to.
type erNode struct {
	*apiNode
	name     string
	o        erOptions
	lc       *lcReceiver
	recv     *sinkRecorder
	archive  string // the archive dir
	claimDir string // the dir claim store
	down     string // an address nothing listens on: a sink that never answers
}

// newErNode writes the config of an erNode into a fresh directory and has
// check-config accept it; the node is not started (n.serve).
func newErNode(t *testing.T, opts ...erOption) *erNode {
	t.Helper()
	n := &erNode{name: "erase-test", recv: newSinkRecorder(t), down: freeAddr(t)}
	for _, f := range opts {
		f(&n.o)
	}
	if n.o.name != "" {
		n.name = n.o.name
	}
	n.lc = newLCReceiver(t, n.name)
	n.apiNode = &apiNode{testNode: newTestNode(t), t: t}
	n.c = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	t.Cleanup(n.c.CloseIdleConnections)
	n.archive = filepath.Join(n.dir, "archive")
	n.claimDir = filepath.Join(n.dir, "claims")
	if n.o.s3 != nil {
		n.o.s3.MakeBucket(t, "claims")
	}
	writeConfig(t, n.testNode, n.yaml())
	return n
}

// yaml is n's config (erNodeYAML with n's options).
func (n *erNode) yaml() string {
	store, rate, top := "type: persistent", "", ""
	if n.o.redisURL != "" {
		store = "type: " + fsStore(n.o.redisURL, n.o.redisNS, 50*time.Millisecond)
		top += fmt.Sprintf("\nredis: {url: %q, namespace: %q}", n.o.redisURL, n.o.redisNS)
	}
	if n.o.fleetRate {
		rate = "  scope: fleet\n"
	}
	stores := fmt.Sprintf("    packs: {type: dir, path: %s, pack_delay: 20ms}\n", n.claimDir)
	if s := n.o.s3; s != nil {
		ak, sk := filepath.Join(n.dir, "s3.key"), filepath.Join(n.dir, "s3.secret")
		for path, v := range map[string]string{ak: s.AccessKey, sk: s.SecretKey} {
			if err := os.WriteFile(path, []byte(v), 0o600); err != nil {
				n.t.Fatal(err)
			}
		}
		stores += fmt.Sprintf("    s3packs: {type: s3, endpoint: %q, bucket: claims, prefix: tenants-data, access_key: file:%s, secret_key: file:%s, pack_delay: 20ms}\n", s.Endpoint, ak, sk)
	}
	wal := n.o.wal
	if wal == "" {
		wal = "wal: {type: disk, max_file_bytes: 4MiB}"
	}
	return fmt.Sprintf(erNodeYAML, n.name, n.dataDir, n.listen, n.admin, sha256Hex(opsToken), sha256Hex(acmeToken), sha256Hex(erAdminToken),
		sha256Hex(erWriterToken), rate, store, n.archive, lcHTTPSink(n.lc.addr, "200ms"), stores, wal, top)
}

// erPopulated is what erPopulate made for one tenant.
type erPopulated struct {
	Tenant  string
	Sources []string // the API sources (erSource names)
	Routes  []string // the API routes (one per source)
	Pending []string // hooks whose rows stay pending (their sink never answers)
	Dead    []string // hooks dead-lettered (their sink answers 500, max_attempts 1)
	Claimed []string // hooks delivered with their body claimed (large ones)
	Small   []string // hooks of the dedupe source delivered whole
	Pen     []string // quarantined hooks
}

// The kinds of source erPopulate makes, by what their hooks leave.
const (
	erSrcPending = "pend"
	erSrcDead    = "dead"
	erSrcDedupe  = "dd"
	erSrcPen     = "pen"
)

// erSource is the name of tenant's source of a kind (erSrc*): source
// names are global, so each tenant's carry its name.
func erSource(tenant, kind string) string { return tenant + "-" + kind }

// erSources are the specs of erPopulate's sources for tenant, by kind.
func (n *erNode) erSources(tenant string) map[string]string {
	claimSinks := fmt.Sprintf(`{"id": "out", "type": "http", "url": "%s/good/dd", "allow_private": true, "claim": {"store": "packs", "over_bytes": %d}}`, n.recv.url, erClaimOver)
	if n.o.s3 != nil {
		claimSinks += fmt.Sprintf(`, {"id": "s3out", "type": "http", "url": "%s/good/dd-s3", "allow_private": true, "claim": {"store": "s3packs", "over_bytes": %d}}`, n.recv.url, erClaimOver)
	}
	return map[string]string{
		erSrcPending: fmt.Sprintf(`{"name": %q, "verify": {"type": "none"}, "sinks": [{"id": "out", "type": "http", "url": "http://%s/down/%s", "allow_private": true,
		  "max_attempts": 1000, "retry_base": "200ms", "retry_max": "1s", "timeout": "1s"}]}`, erSource(tenant, erSrcPending), n.down, tenant),
		erSrcDead: fmt.Sprintf(`{"name": %q, "verify": {"type": "none"}, "sinks": [{"id": "out", "type": "http", "url": "%s/bad/%s", "allow_private": true, "max_attempts": 1}]}`,
			erSource(tenant, erSrcDead), n.recv.url, tenant),
		erSrcDedupe: fmt.Sprintf(`{"name": %q, "verify": {"type": "none"}, "dedupe": {"key": "header:X-Id"}, "sinks": [%s]}`, erSource(tenant, erSrcDedupe), claimSinks),
		erSrcPen: fmt.Sprintf(`{"name": %q, "verify": {"type": "hmac", "header": "X-Sig", "algorithm": "sha256", "encoding": "hex", "secret": %q},
		  "on_verify_failure": "quarantine", "sinks": [{"id": "out", "type": "http", "url": "%s/good/pen", "allow_private": true}]}`, erSource(tenant, erSrcPen), erPenSecret, n.recv.url),
	}
}

// erAddSource creates the API source spec of tenant and its route (id
// "r-<source>", path /webhooks/<tenant>/<source>); both 201.
func (n *erNode) erAddSource(tenant, name, spec string) {
	n.t.Helper()
	wantStatus(n.t, "POST source "+tenant+"/"+name, n.do("POST", sourcesOf(tenant), erAdminToken, spec), http.StatusCreated)
	route := fmt.Sprintf(`{"id": "r-%s", "source_id": %q, "path": "/webhooks/%s/%s"}`, name, name, tenant, name)
	wantStatus(n.t, "POST route "+tenant+"/r-"+name, n.do("POST", "/v1/tenants/"+tenant+"/routes", erAdminToken, route), http.StatusCreated)
}

// erPopulate gives tenant, on the running node, everything an erase
// deletes (with erWithFleetRate, its override is 0.1 hooks/s, burst 1000): the sources <tenant>-pend (pending rows), -dead (dead rows),
// -dd (dedupe keys, claims in every claim store) and -pen (quarantined
// hooks), a route
// to each, a rate-limit override, and the lifecycle events all of these
// make. It returns once the rows, claims and pen rows are there.
func erPopulate(t *testing.T, n *erNode, tenant string) erPopulated {
	t.Helper()
	p := erPopulated{Tenant: tenant}
	specs := n.erSources(tenant)
	for _, kind := range []string{erSrcPending, erSrcDead, erSrcDedupe, erSrcPen} {
		name := erSource(tenant, kind)
		n.erAddSource(tenant, name, specs[kind])
		p.Sources = append(p.Sources, name)
		p.Routes = append(p.Routes, "r-"+name)
	}
	// With fleet rate limits the override is slow (a hook every 10s) with
	// a burst of 1000: each hook moves the tenant's GCRA bucket 10s on, so
	// rl:<tenant> stays in Redis for minutes rather than microseconds.
	override := `{"rate": 90000, "burst": 90000, "max_queue": 0, "max_queue_bytes": 0}`
	if n.o.fleetRate {
		override = `{"rate": 0.1, "burst": 1000, "max_queue": 0, "max_queue_bytes": 0}`
	}
	wantStatus(t, "PUT rate_limit of "+tenant, n.do("PUT", "/v1/tenants/"+tenant+"/rate_limit", erAdminToken, override), http.StatusOK)
	post := func(kind, body string, status int, hdr ...string) string {
		t.Helper()
		src := erSource(tenant, kind)
		a := n.hook(tenant, src, body, hdr...)
		var v struct {
			ID string `json:"id"`
		}
		if a.status != status || json.Unmarshal(a.body, &v) != nil || v.ID == "" {
			t.Fatalf("hook to %s/%s: %d %s, want %d with an id", tenant, src, a.status, a.body, status)
		}
		return v.ID
	}
	for i := range 3 {
		p.Pending = append(p.Pending, post(erSrcPending, fmt.Sprintf(`{"pending":%d}`, i), http.StatusCreated))
	}
	for i := range 2 {
		p.Dead = append(p.Dead, post(erSrcDead, fmt.Sprintf(`{"dead":%d}`, i), http.StatusCreated))
	}
	for i := range 2 {
		p.Claimed = append(p.Claimed, post(erSrcDedupe, erLargeBody, http.StatusCreated, "X-Id", fmt.Sprintf("%s-large-%d", tenant, i)))
	}
	p.Small = append(p.Small, post(erSrcDedupe, `{"small":1}`, http.StatusCreated, "X-Id", tenant+"-small"))
	// The same key again: a duplicate, answered with the first hook's id.
	if a := n.hook(tenant, erSource(tenant, erSrcDedupe), `{"small":1}`, "X-Id", tenant+"-small"); a.status/100 != 2 || !bytes.Contains(a.body, []byte(p.Small[0])) {
		t.Fatalf("duplicate hook to %s/%s: %d %s, want 2xx naming %s", tenant, erSrcDedupe, a.status, a.body, p.Small[0])
	}
	for i := range 2 {
		body := fmt.Sprintf(`{"pen":%d}`, i)
		p.Pen = append(p.Pen, post(erSrcPen, body, http.StatusAccepted, "X-Sig", hmacHex("not-the-secret", body)))
	}
	// Wait for what the hooks leave: dead rows, deliveries (so claims),
	// pen rows, attempts on the pending rows.
	if !waitFor(20*time.Second, func() bool { return len(deadRows(t, n.apiNode, tenant)) == len(p.Dead) }) {
		t.Fatalf("tenant %s has dead rows %+v, want %d", tenant, deadRows(t, n.apiNode, tenant), len(p.Dead))
	}
	sinks := 1
	if n.o.s3 != nil {
		sinks = 2
	}
	if !waitFor(20*time.Second, func() bool {
		got := n.recv.delivered()
		for _, id := range append(slices.Clone(p.Claimed), p.Small...) {
			if got[id] < sinks {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("tenant %s: the receiver has %v, want %v and %v delivered %d times", tenant, n.recv.delivered(), p.Claimed, p.Small, sinks)
	}
	if !waitFor(10*time.Second, func() bool { return len(erPenIDs(t, n, tenant)) == len(p.Pen) }) {
		t.Fatalf("tenant %s: the pen holds %v, want %v", tenant, erPenIDs(t, n, tenant), p.Pen)
	}
	return p
}

// erPenIDs lists tenant's quarantined hooks.
func erPenIDs(t *testing.T, n *erNode, tenant string) []string {
	t.Helper()
	a := n.do("GET", "/v1/tenants/"+tenant+"/quarantine?limit=1000", erAdminToken, "")
	wantStatus(t, "GET quarantine of "+tenant, a, http.StatusOK)
	var v struct {
		Hooks []struct {
			EventID string `json:"event_id"`
		} `json:"hooks"`
	}
	decode(t, "GET quarantine of "+tenant, a, &v)
	var ids []string
	for _, h := range v.Hooks {
		ids = append(ids, h.EventID)
	}
	return ids
}

// erStatus is GET /v1/tenants/{t}/erase's answer.
type erStatus struct {
	Tenant     string           `json:"tenant"`
	State      string           `json:"state"`
	Stage      string           `json:"stage"`
	StartedAt  *string          `json:"started_at"`
	Removed    map[string]int64 `json:"removed"`
	ErasedAt   *string          `json:"erased_at"`
	SeqAtClose *uint64          `json:"seq_at_close"`
	Ordinals   []uint32         `json:"ordinals"`
}

// erStart sends DELETE /v1/tenants/{tenant}?confirm={tenant} with
// erAdminToken, requires status, and returns the erase status the answer
// holds.
func erStart(t *testing.T, n *erNode, tenant string, status int) erStatus {
	t.Helper()
	a := n.do("DELETE", "/v1/tenants/"+tenant+"?confirm="+tenant, erAdminToken, "")
	wantStatus(t, "DELETE tenant "+tenant, a, status)
	var st erStatus
	decode(t, "DELETE tenant "+tenant, a, &st)
	return st
}

// erGetStatus is GET /v1/tenants/{tenant}/erase (200 required).
func erGetStatus(t *testing.T, n *erNode, tenant string) erStatus {
	t.Helper()
	a := n.do("GET", "/v1/tenants/"+tenant+"/erase", erAdminToken, "")
	wantStatus(t, "GET erase of "+tenant, a, http.StatusOK)
	var st erStatus
	decode(t, "GET erase of "+tenant, a, &st)
	return st
}

// erWaitErased polls GET .../erase until its state is erased (60 s at
// most) and returns the status.
func erWaitErased(t *testing.T, n *erNode, tenant string) erStatus {
	t.Helper()
	var st erStatus
	if !waitFor(60*time.Second, func() bool { st = erGetStatus(t, n, tenant); return st.State == "erased" }) {
		t.Fatalf("the erase of %s did not finish in 60s: %+v", tenant, st)
	}
	if st.ErasedAt == nil || st.SeqAtClose == nil || len(st.Ordinals) == 0 {
		t.Fatalf("the erase of %s finished with %+v: want erased_at, seq_at_close and ordinals", tenant, st)
	}
	return st
}

// erErase erases tenant: DELETE (202), then GET .../erase until erased.
func erErase(t *testing.T, n *erNode, tenant string) erStatus {
	t.Helper()
	erStart(t, n, tenant, http.StatusAccepted)
	return erWaitErased(t, n, tenant)
}

// erTenantOrdinal is GET /v1/tenants/{tenant}'s ordinal; found false on a 404.
func erTenantOrdinal(t *testing.T, n *erNode, tenant string) (ord uint32, found bool) {
	t.Helper()
	a := n.do("GET", "/v1/tenants/"+tenant, erAdminToken, "")
	if a.status == http.StatusNotFound {
		return 0, false
	}
	wantStatus(t, "GET tenant "+tenant, a, http.StatusOK)
	var v struct {
		Ordinal uint32 `json:"ordinal"`
	}
	decode(t, "GET tenant "+tenant, a, &v)
	return v.Ordinal, true
}

// erTraceReport is what a tenant left in a stopped node.
type erTraceReport struct {
	Tenant string
	// Tombstone is m:erased:<tenant>, nil when absent; Erasing: the
	// progress row m:erase:<tenant> is there.
	Tombstone *meta.Tombstone
	Erasing   bool
	// Live is the tenant's ordinal in the tenant map, if it has one.
	Live    uint32
	HasLive bool
	// Ordinals are the ordinals looked at: the tombstone's and the live
	// one; with neither, only the name's families are looked at
	// (erNameFamilies).
	Ordinals []uint32
	// Keys lists, by family, the keys in the tenant's ranges
	// (meta.Store.TenantRanges) of every ordinal looked at: an erased
	// tenant must have none.
	Keys map[string][]string
	// MirrorMarkers are the keys of the Redis store's local mirror that
	// hold a removal (a version, no record): the mirror keeps what Redis
	// keeps (RedisMarkers), so that a node restoring Redis after a loss
	// gives the removals back too. They are not in Keys.
	MirrorMarkers []string
	// Census is the whole store's key count by family.
	Census map[string]int
	// Events are the tenant's lifecycle events in the outbox.
	Events []meta.EventRecord
	// Audit counts the tenant's audit rows.
	Audit int
	// Claims lists, by claim store, the objects under claims/tenant=<t>/.
	Claims map[string][]string
	// Redis lists the keys of the Redis namespace naming the tenant
	// (bucket, tokens, source and route records with their spec);
	// RedisMarkers the deletion markers of its removed sources and routes
	// (a record without "r", and the log's members naming them), which
	// hold names and versions only.
	Redis, RedisMarkers []string
}

// KeyCount is how many keys Keys lists.
func (r *erTraceReport) KeyCount() int {
	n := 0
	for _, ks := range r.Keys {
		n += len(ks)
	}
	return n
}

// erNameFamilies are the meta store's families keyed by tenant name
// (meta/families.go: ByName and ByNameEntity), which a tenant has on a
// node without an ordinal there.
var erNameFamilies = []string{"tenant", "rate-limit", "source", "route", "mirror-source", "mirror-route"}

// erTrace opens the meta store of the stopped node at dataDir and reports
// what tenant has in it (Claims and Redis are left empty: erNode.trace
// fills them).
func erTrace(t *testing.T, dataDir, tenant string) erTraceReport {
	t.Helper()
	dir := filepath.Join(dataDir, "meta")
	ms, err := meta.Open(meta.Options{Dir: dir})
	if err != nil {
		t.Fatalf("cannot open the node's meta store: %v", err)
	}
	r := erTraceReport{Tenant: tenant, Keys: map[string][]string{}}
	var ranges []meta.KeyRange
	func() {
		defer ms.Close()
		ts, found, err := ms.TombstoneOf(tenant)
		if err != nil {
			t.Fatal(err)
		}
		if found {
			r.Tombstone = &ts
			r.Ordinals = append(r.Ordinals, ts.Ordinals...)
		}
		if _, r.Erasing, err = ms.EraseProgress(tenant); err != nil {
			t.Fatal(err)
		}
		tenants, err := ms.Tenants()
		if err != nil {
			t.Fatal(err)
		}
		if r.Live, r.HasLive = tenants[tenant]; r.HasLive && !slices.Contains(r.Ordinals, r.Live) {
			r.Ordinals = append(r.Ordinals, r.Live)
		}
		for _, ord := range r.Ordinals {
			rs, err := ms.TenantRanges(ord, tenant)
			if err != nil {
				t.Fatal(err)
			}
			ranges = append(ranges, rs...)
		}
		if len(r.Ordinals) == 0 {
			// A node the tenant never sent to (another node of the fleet)
			// still holds its name's keys: its mirror, an override.
			rs, err := ms.TenantRanges(0, tenant)
			if err != nil {
				t.Fatal(err)
			}
			for _, kr := range rs {
				if slices.Contains(erNameFamilies, kr.Family) {
					ranges = append(ranges, kr)
				}
			}
		}
		if r.Census, err = ms.Census(); err != nil {
			t.Fatal(err)
		}
		err = ms.TenantEvents(tenant, 0, func(ev *meta.EventRecord) (bool, error) {
			r.Events = append(r.Events, *ev)
			return false, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		q := meta.AuditQuery{Tenant: tenant, Limit: 1000}
		for {
			rows, next, err := ms.AuditPage(q)
			if err != nil {
				t.Fatal(err)
			}
			r.Audit += len(rows)
			if next == "" {
				break
			}
			q.Cursor = next
		}
	}()
	// The meta store has no reader of a bare key range: pebble's, read
	// only, on the closed store.
	db, err := pebble.Open(dir, &pebble.Options{ReadOnly: true, Logger: erQuietLog{}})
	if err != nil {
		t.Fatalf("cannot open the meta store read-only: %v", err)
	}
	defer db.Close()
	for _, kr := range ranges {
		it, err := db.NewIter(&pebble.IterOptions{LowerBound: kr.Lo, UpperBound: kr.Hi})
		if err != nil {
			t.Fatal(err)
		}
		for ok := it.First(); ok; ok = it.Next() {
			k := fmt.Sprintf("%q", it.Key())
			if strings.HasPrefix(kr.Family, "mirror-") && len(it.Value()) <= 8 {
				// A version and no record: the mirror's copy of a
				// removal marker (meta.Batch.PutMirrored).
				r.MirrorMarkers = append(r.MirrorMarkers, k)
				continue
			}
			r.Keys[kr.Family] = append(r.Keys[kr.Family], k)
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// erQuietLog keeps pebble's read-only open of the meta store out of the
// test's output; a fatal error panics (pebble's fatal must not return).
type erQuietLog struct{}

func (erQuietLog) Infof(string, ...any)  {}
func (erQuietLog) Errorf(string, ...any) {}
func (erQuietLog) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf("pebble: fatal: "+format, args...))
}

// trace is erTrace of the stopped node plus a listing of every claim
// store and, with the Redis store, a SCAN of the namespace.
func (n *erNode) trace(t *testing.T, tenant string) erTraceReport {
	t.Helper()
	r := erTrace(t, n.dataDir, tenant)
	r.Claims = map[string][]string{"packs": erDirObjects(t, filepath.Join(n.claimDir, "claims", "tenant="+tenant))}
	if s := n.o.s3; s != nil {
		r.Claims["s3packs"] = erS3Objects(t, s.Client(t), "claims", "tenants-data/claims/tenant="+tenant+"/")
	}
	if n.o.redisURL != "" {
		r.Redis, r.RedisMarkers = erRedisTrace(t, n.o.redisURL, n.o.redisNS, tenant)
	}
	return r
}

// erDirObjects lists the files under root ("" paths when it is absent).
func erDirObjects(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if os.IsNotExist(err) && path == root {
			return filepath.SkipDir
		}
		if err != nil {
			return err
		}
		if !d.IsDir() {
			out = append(out, path)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("cannot list the claim store %s: %v", root, err)
	}
	return out
}

// erS3Objects lists the objects of bucket under prefix.
func erS3Objects(t *testing.T, c *minio.Client, bucket, prefix string) []string {
	t.Helper()
	var out []string
	for o := range c.ListObjects(context.Background(), bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			t.Fatalf("cannot list s3 bucket %s under %s: %v", bucket, prefix, o.Err)
		}
		out = append(out, o.Key)
	}
	return out
}

// erRedisTrace SCANs the namespace ns for what names tenant: keys and
// values of its own (the rate-limit bucket, route tokens, source and
// route records with their spec) and the deletion markers of its removed
// sources and routes (records without "r", log members), which must hold
// no spec.
func erRedisTrace(t *testing.T, url, ns, tenant string) (keys, markers []string) {
	t.Helper()
	c := redistest.Client(t, url)
	ctx := context.Background()
	var all []string
	it := c.Scan(ctx, 0, ns+"*", 1000).Iterator()
	for it.Next(ctx) {
		all = append(all, it.Val())
	}
	if err := it.Err(); err != nil {
		t.Fatalf("cannot SCAN redis namespace %s: %v", ns, err)
	}
	sort.Strings(all)
	names := func(s string) bool {
		return strings.Contains(s, "/"+tenant+"/") || strings.HasSuffix(s, ":"+tenant) || strings.HasPrefix(s, tenant+"/") || strings.Contains(s, "tenant="+tenant)
	}
	for _, k := range all {
		typ, err := c.Type(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		switch typ {
		case "hash":
			h, err := c.HGetAll(ctx, k).Result()
			if err != nil {
				t.Fatal(err)
			}
			if h["t"] != tenant && !names(k) {
				continue
			}
			if _, spec := h["r"]; spec {
				keys = append(keys, fmt.Sprintf("%s %v", k, h))
			} else {
				markers = append(markers, fmt.Sprintf("%s %v", k, h))
			}
		case "zset":
			ms, err := c.ZRange(ctx, k, 0, -1).Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range ms {
				of := names(m) || names("/"+m)
				if base, isLog := strings.CutSuffix(k, "ss:log"); isLog && !of {
					// The store's log names an entity by kind and name
					// (a source's name does not say its tenant): its
					// record does.
					owner, err := c.HGet(ctx, base+"ss:"+m, "t").Result()
					if err != nil && err != redis.Nil {
						t.Fatal(err)
					}
					of = owner == tenant
				}
				if of {
					markers = append(markers, k+" member "+m)
				}
			}
		case "string":
			v, err := c.Get(ctx, k).Result()
			if err != nil {
				t.Fatal(err)
			}
			if names(k) || names(v) {
				keys = append(keys, fmt.Sprintf("%s = %q", k, v))
			}
		default:
			if names(k) {
				keys = append(keys, typ+" "+k)
			}
		}
	}
	return keys, markers
}

// erCheckErased fails the test unless r is the trace of an erased tenant:
// no key in its ranges, no claim object, no Redis key with a spec, no
// progress row; the tombstone, audit rows and exactly one lifecycle
// event, io.ankusa.tenant.deleted. ords, when given, are the ordinals the
// tombstone must name.
func erCheckErased(t *testing.T, what string, r erTraceReport, ords ...uint32) {
	t.Helper()
	if r.Tombstone == nil {
		t.Errorf("%s: no tombstone m:erased:%s", what, r.Tenant)
	} else if len(ords) > 0 && !slices.Equal(r.Tombstone.Ordinals, ords) {
		t.Errorf("%s: the tombstone names ordinals %v, want %v", what, r.Tombstone.Ordinals, ords)
	}
	if r.Erasing {
		t.Errorf("%s: the progress row m:erase:%s is still there", what, r.Tenant)
	}
	if n := r.KeyCount(); n != 0 {
		t.Errorf("%s: %d keys left in the tenant's ranges: %v", what, n, r.Keys)
	}
	if len(r.Events) != 1 || r.Events[0].Type != "io.ankusa.tenant.deleted" {
		var types []string
		for _, ev := range r.Events {
			types = append(types, ev.Type+" "+ev.Subject)
		}
		t.Errorf("%s: the outbox holds %d events of %s (%v), want exactly io.ankusa.tenant.deleted", what, len(r.Events), r.Tenant, types)
	}
	if r.Audit == 0 {
		t.Errorf("%s: no audit row of %s stays", what, r.Tenant)
	}
	for store, objs := range r.Claims {
		if len(objs) != 0 {
			t.Errorf("%s: claim store %s still holds %v", what, store, objs)
		}
	}
	if len(r.Redis) != 0 {
		t.Errorf("%s: the Redis namespace still holds %v", what, r.Redis)
	}
}
