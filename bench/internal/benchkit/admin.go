package benchkit

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// The admin-API load the control-plane benches share (bench/controlplane,
// bench/fleet): workers that call until told to stop, one request with
// its answer, and a creates/s run.

// Each runs f(w, i), the i-th call of worker w, on workers goroutines
// until f returns false or ctx is done.
func Each(ctx context.Context, workers int, f func(w, i int) bool) {
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil && f(w, i); i++ {
			}
		})
	}
	wg.Wait()
}

// Call sends a request with c, its headers given as name and value in
// turn, and returns the answer's status and body.
func Call(c *http.Client, method, url string, body []byte, header ...string) (int, []byte, error) {
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

// CreateRun is one creates/s run at one concurrency.
type CreateRun struct {
	Clients   int      `json:"clients"`
	Created   int      `json:"created"`
	Seconds   float64  `json:"seconds"`
	PerSecond float64  `json:"creates_per_s"`
	Latency   Latency  `json:"latency"`
	Refused   int      `json:"refused"` // answers but 201
	Errors    []string `json:"errors"`  // the first few refusals and failures
}

// Creates runs clients workers calling create (w, i: the worker and its
// call) for d, and times each call: an error counts as refused.
func Creates(ctx context.Context, clients int, d time.Duration, create func(w, i int) error) CreateRun {
	run := CreateRun{Clients: clients}
	var mu sync.Mutex
	var lat []time.Duration
	began := time.Now()
	end := began.Add(d)
	Each(ctx, clients, func(w, i int) bool {
		if !time.Now().Before(end) {
			return false
		}
		t0 := time.Now()
		err := create(w, i)
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
	run.Latency = Percentiles(lat)
	return run
}

// MiB is n bytes in whole MiB, for a report.
func MiB(n int64) string { return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20)) }

// Dur is d for a report: µs below a millisecond, ms below a second.
func Dur(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%.0f µs", float64(d)/1e3)
	case d < time.Second:
		return fmt.Sprintf("%.2f ms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}
