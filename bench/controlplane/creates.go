package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
)

// createRun is one creates/s run at one concurrency.
type createRun struct {
	Clients   int              `json:"clients"`
	Created   int              `json:"created"`
	Seconds   float64          `json:"seconds"`
	PerSecond float64          `json:"creates_per_s"`
	Latency   benchkit.Latency `json:"latency"`
	Refused   int              `json:"refused"`  // answers but 201
	Errors    []string         `json:"errors"`   // the first few refusals and failures
	Existing  int              `json:"existing"` // sources stored when the run began
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
	run := createRun{Clients: clients, Existing: existing}
	var mu sync.Mutex
	var lat []time.Duration
	began := time.Now()
	end := began.Add(d)
	each(ctx, clients, func(w, i int) bool {
		if !time.Now().Before(end) {
			return false
		}
		t0 := time.Now()
		err := createSource(n, fmt.Sprintf("t%05d", rand.IntN(tenants)), fmt.Sprintf("c%d-%d-%d", clients, w, i))
		took := time.Since(t0)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			run.Refused++
			if len(run.Errors) < 5 {
				run.Errors = append(run.Errors, err.Error())
			}
		} else {
			lat = append(lat, took)
		}
		return true
	})
	run.Seconds = time.Since(began).Seconds()
	run.Created = len(lat)
	run.PerSecond = float64(run.Created) / run.Seconds
	run.Latency = benchkit.Percentiles(lat)
	return run
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
	each(ctx, clients, func(int, int) bool {
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

// each runs f(w, i), the i-th call of worker w, on workers goroutines
// until f returns false or ctx is done.
func each(ctx context.Context, workers int, f func(w, i int) bool) {
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil && f(w, i); i++ {
			}
		})
	}
	wg.Wait()
}

// createSource posts a create of the source name of tenant.
func createSource(n *node, tenant, name string) error {
	status, body, err := call(client, "POST", "http://"+n.Admin+"/v1/tenants/"+tenant+"/sources", []byte(createBody(name)),
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
	return call(client, "POST", "http://"+n.Listen+"/webhooks/"+tenant+"/"+name, body,
		"Content-Type", "application/json", "X-Sig", hex.EncodeToString(mac.Sum(nil)))
}

// call sends a request with c, its headers given as name and value in
// turn, and returns the answer's status and body.
func call(c *http.Client, method, url string, body []byte, header ...string) (int, []byte, error) {
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	return resp.StatusCode, answer, err
}
