package main

import (
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram range and precision: 1 µs to 60 s, 3 significant digits.
const (
	histMinUs  = 1
	histMaxUs  = 60_000_000
	histDigits = 3
)

// maxStatus bounds the status codes counted one by one; others count as 0.
const maxStatus = 1000

// recorder accumulates the figures of measured requests. Workers share a
// few recorders (shards) to keep both lock contention and histogram memory
// low; every method is safe for concurrent use.
type recorder struct {
	mu       sync.Mutex
	latency  *hdrhistogram.Histogram // µs, answered requests
	lag      *hdrhistogram.Histogram // µs, open loop: actual send minus scheduled send
	service  *hdrhistogram.Histogram // µs, open loop: answered minus actual send
	maxUs    int64                   // exact maximum latency
	lagMax   int64                   // exact maximum lag, open loop
	svcMax   int64                   // exact maximum from send, open loop
	status   [maxStatus]int64
	kinds    [numKinds]int64
	answered int64
	errors   int64
	noID     int64     // 201 answers without a usable id (-acked)
	lastDone time.Time // completion of the last measured request
}

func newRecorder() *recorder {
	return &recorder{
		latency: hdrhistogram.New(histMinUs, histMaxUs, histDigits),
		lag:     hdrhistogram.New(histMinUs, histMaxUs, histDigits),
		service: hdrhistogram.New(histMinUs, histMaxUs, histDigits),
	}
}

// clampUs converts d to whole microseconds within the histogram's range.
func clampUs(d time.Duration) int64 {
	return min(max(d.Microseconds(), histMinUs), histMaxUs)
}

// answer records an HTTP answer with its latency and, in open loop, how
// late it was sent and how long it took from the actual send (lag < 0:
// closed loop, not tracked).
func (r *recorder) answer(status int, latency, lag, service time.Duration, done time.Time) {
	us := max(latency.Microseconds(), 0)
	r.mu.Lock()
	r.answered++
	if status <= 0 || status >= maxStatus {
		status = 0
	}
	r.status[status]++
	_ = r.latency.RecordValue(clampUs(latency)) // clamped: cannot fail
	if lag >= 0 {
		_ = r.lag.RecordValue(clampUs(lag))
		_ = r.service.RecordValue(clampUs(service))
		r.lagMax = max(r.lagMax, lag.Microseconds())
		r.svcMax = max(r.svcMax, service.Microseconds())
	}
	r.maxUs = max(r.maxUs, us)
	if done.After(r.lastDone) {
		r.lastDone = done
	}
	r.mu.Unlock()
}

// failure records a transport error.
func (r *recorder) failure(kind errKind, done time.Time) {
	r.mu.Lock()
	r.errors++
	r.kinds[kind]++
	if done.After(r.lastDone) {
		r.lastDone = done
	}
	r.mu.Unlock()
}

// missingID counts a 201 whose answer carried no id.
func (r *recorder) missingID() {
	r.mu.Lock()
	r.noID++
	r.mu.Unlock()
}

// merge adds o's figures into r. Neither may be in use.
func (r *recorder) merge(o *recorder) {
	r.latency.Merge(o.latency)
	r.lag.Merge(o.lag)
	r.service.Merge(o.service)
	r.maxUs = max(r.maxUs, o.maxUs)
	r.lagMax = max(r.lagMax, o.lagMax)
	r.svcMax = max(r.svcMax, o.svcMax)
	for i, n := range o.status {
		r.status[i] += n
	}
	for i, n := range o.kinds {
		r.kinds[i] += n
	}
	r.answered += o.answered
	r.errors += o.errors
	r.noID += o.noID
	if o.lastDone.After(r.lastDone) {
		r.lastDone = o.lastDone
	}
}
