package dispatch

import (
	"github.com/VictoriaMetrics/metrics"
)

var (
	deliverySeconds = metrics.NewHistogram("ankusa_dispatch_delivery_seconds")
	deadTotal       = metrics.NewCounter("ankusa_dispatch_dead_letters_total")
	intakeOverflow  = metrics.NewCounter("ankusa_dispatch_intake_overflow_total")
	unknownSource   = metrics.NewCounter("ankusa_dispatch_unknown_source_hooks_total")
	rebuiltRows     = metrics.NewCounter("ankusa_dispatch_rows_rebuilt_total")
	checkpointSeq   = metrics.NewGauge("ankusa_dispatch_checkpoint_seq", nil)
	inFlightRows    = metrics.NewGauge(`ankusa_dispatch_backlog{state="in_flight"}`, nil)
	pendingRows     = metrics.NewGauge(`ankusa_dispatch_backlog{state="pending"}`, nil)
	deadRows        = metrics.NewGauge(`ankusa_dispatch_backlog{state="dead"}`, nil)
	sweptAttempts   = metrics.NewCounter("ankusa_dispatch_attempt_log_swept_total")
	directFailures  = metrics.NewCounter("ankusa_dispatch_direct_refused_total")
	damagedRows     = metrics.NewCounter("ankusa_dispatch_damaged_rows_total")
	sinksRetired    = metrics.NewCounter("ankusa_dispatch_sinks_retired_total")
	operatorDead    = metrics.NewCounter("ankusa_dispatch_operator_dead_letters_total")
	// The tenant erase (erase.go): hooks of a closed tenant the row writer
	// dropped, attempts of one not started or whose outcome was not
	// written, and erase deletions that failed.
	closedDropped = metrics.NewCounter("ankusa_dispatch_erasing_hooks_dropped_total")
	closedSkips   = metrics.NewCounter("ankusa_dispatch_erasing_attempts_skipped_total")
	eraseFailures = metrics.NewCounter("ankusa_dispatch_erase_failures_total")
)

// attemptCounter is the counter of one sink's attempts with one outcome;
// sinks come from the config, so the label set stays bounded.
func attemptCounter(sink, outcome string) *metrics.Counter {
	return metrics.GetOrCreateCounter(`ankusa_dispatch_attempts_total{sink="` + sink + `",outcome="` + outcome + `"}`)
}

// backlogGauges publishes the row counts. Pending counts every row not
// dead, in-flight ones included (in flight is a lease over a pending row).
func backlogGauges(d *Dispatcher) {
	pendingRows.Set(float64(d.pending.Load()))
	deadRows.Set(float64(d.dead.Load()))
}
