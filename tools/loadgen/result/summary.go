// Package result is the object `loadgen -json` prints, as a Go type: the
// load generator fills it, and the programs that run loadgen and read its
// output (the benchmarks under bench/, the crash tests of cmd/ankusa)
// decode it, so that the format is written down once.
//
// It imports nothing of this module, and the product never imports it.
package result

import (
	"math"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Summary is the result of a run. Its JSON form is loadgen's -json output
// (the fields are described in tools/loadgen's package doc).
type Summary struct {
	Mode          string           `json:"mode"` // open or closed
	Connections   int              `json:"connections"`
	Rate          float64          `json:"rate"`
	DurationS     float64          `json:"duration_s"`
	Requests      int64            `json:"requests"`
	ThroughputRPS float64          `json:"throughput_rps"`
	LatencyUs     Latency          `json:"latency_us"`
	Status        map[string]int64 `json:"status"` // answers by status code
	Errors        int64            `json:"errors"` // transport errors
	ErrorKinds    map[string]int64 `json:"error_kinds"`
	// Open loop only: how late requests went out (actual send minus due
	// time), and the latency from the actual send (what a closed-loop
	// client such as wrk measures).
	SendLagUs  *Latency `json:"send_lag_us,omitempty"`
	FromSendUs *Latency `json:"from_send_us,omitempty"`
}

// Latency is a latency distribution in microseconds.
type Latency struct {
	P50  int64   `json:"p50"`
	P90  int64   `json:"p90"`
	P99  int64   `json:"p99"`
	P999 int64   `json:"p999"`
	Max  int64   `json:"max"`
	Mean float64 `json:"mean"`
}

// LatencyOf is the distribution h holds, in µs, with max its exact
// maximum; the mean is rounded to 0.1 µs.
func LatencyOf(h *hdrhistogram.Histogram, max int64) Latency {
	if h.TotalCount() == 0 {
		return Latency{}
	}
	return Latency{
		P50: h.ValueAtQuantile(50), P90: h.ValueAtQuantile(90),
		P99: h.ValueAtQuantile(99), P999: h.ValueAtQuantile(99.9),
		Max: max, Mean: math.Round(h.Mean()*10) / 10,
	}
}
