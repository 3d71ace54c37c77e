package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
)

// createRun is one creates/s run at one concurrency, with the sources
// stored when it began.
type createRun struct {
	benchkit.CreateRun
	Existing int `json:"existing"`
}

// serveRun is the write-to-serve run: creates each followed at once by a
// signed hook to the new source.
type serveRun struct {
	Clients   int              `json:"clients"`
	Creates   int              `json:"creates"`
	NotServed int              `json:"not_201_first_try"` // must be 0
	Failures  []string         `json:"failures"`          // the first few
	Latency   benchkit.Latency `json:"admin_201_to_edge_201"`
	Create    benchkit.Latency `json:"create"`
}

// creates runs clients workers creating sources for d, each source under
// a random one of tenants tenants.
func creates(ctx context.Context, n *node, clients, tenants int, d time.Duration, existing int) createRun {
	run := benchkit.Creates(ctx, clients, d, func(w, i int) error {
		return createSource(n, fmt.Sprintf("t%05d", rand.IntN(tenants)), fmt.Sprintf("c%d-%d-%d", clients, w, i))
	})
	return createRun{CreateRun: run, Existing: existing}
}

// writeToServe makes count creates over clients workers; after each 201 it
// posts one hook to the source's catch URL (/webhooks/<tenant>/<name>),
// signed as the source's verifier wants, and times the admin 201 to the
// edge's answer.
func writeToServe(ctx context.Context, n *node, count, clients, tenants int) serveRun {
	run := serveRun{Clients: clients, Creates: count}
	var next atomic.Int64
	var mu sync.Mutex
	var lat, create []time.Duration
	fail := func(msg string) {
		mu.Lock()
		defer mu.Unlock()
		run.NotServed++
		if len(run.Failures) < 5 {
			run.Failures = append(run.Failures, msg)
		}
	}
	benchkit.Each(ctx, clients, func(int, int) bool {
		i := int(next.Add(1) - 1)
		if i >= count {
			return false
		}
		tenant, name := fmt.Sprintf("t%05d", rand.IntN(tenants)), fmt.Sprintf("w2s-%d", i)
		t0 := time.Now()
		if err := createSource(n, tenant, name); err != nil {
			fail("create: " + err.Error())
			return true
		}
		answered := time.Now()
		status, body, err := postHook(n, tenant, name)
		served := time.Since(answered)
		if err != nil || status != http.StatusCreated {
			fail(fmt.Sprintf("hook to /webhooks/%s/%s right after its 201: %d %s %v", tenant, name, status, bytes.TrimSpace(body), err))
			return true
		}
		mu.Lock()
		lat, create = append(lat, served), append(create, answered.Sub(t0))
		mu.Unlock()
		return true
	})
	run.Latency, run.Create = benchkit.Percentiles(lat), benchkit.Percentiles(create)
	return run
}

// createSource posts a create of the source name of tenant.
func createSource(n *node, tenant, name string) error {
	status, body, err := benchkit.Call(client, "POST", "http://"+n.Admin+"/v1/tenants/"+tenant+"/sources", []byte(createBody(name)),
		"Authorization", "Bearer "+adminToken, "Content-Type", "application/json")
	if err == nil && status != http.StatusCreated {
		err = fmt.Errorf("POST /v1/tenants/%s/sources (%s): %d %s", tenant, name, status, bytes.TrimSpace(body))
	}
	return err
}

// postHook posts a small JSON hook to the source name of tenant, signed
// with its secret: X-Sig is the hex HMAC-SHA256 of the body (verify's
// generic hmac, no prefix).
func postHook(n *node, tenant, name string) (int, []byte, error) {
	body := []byte(fmt.Sprintf(`{"id":"evt_%s","type":"bench.created"}`, name))
	mac := hmac.New(sha256.New, []byte(hookSecret(name)))
	mac.Write(body)
	return benchkit.Call(client, "POST", "http://"+n.Listen+"/webhooks/"+tenant+"/"+name, body,
		"Content-Type", "application/json", "X-Sig", hex.EncodeToString(mac.Sum(nil)))
}
