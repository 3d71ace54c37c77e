package wal

import (
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"
)

var (
	fsyncSeconds   = metrics.NewPrometheusHistogram("ankusa_wal_fsync_seconds")
	batchRecords   = metrics.NewPrometheusHistogramExt("ankusa_wal_commit_batch_records", []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096})
	batchBytes     = metrics.NewCounter("ankusa_wal_written_bytes_total")
	recordsTotal   = metrics.NewCounter("ankusa_wal_records_total")
	batchesTotal   = metrics.NewCounter("ankusa_wal_batches_total")
	rotationsTotal = metrics.NewCounter("ankusa_wal_rotations_total")
	// tenantLimited counts hooks refused because their new tenant would
	// pass tenants.max.
	tenantLimited = metrics.NewCounter("ankusa_wal_tenant_limit_refusals_total")
	fatalTotal    = metrics.NewCounter("ankusa_wal_fatal_errors_total")
	// enospcTotal counts ENOSPC the log met (a file's allocation, a
	// write); noSpaceRefusals the commits answered ErrNoSpace.
	enospcTotal     = metrics.NewCounter("ankusa_wal_enospc_total")
	noSpaceRefusals = metrics.NewCounter("ankusa_wal_no_space_refusals_total")

	// A rotation that had to wait for its file to be prepared: the log
	// fills files faster than it makes them (raise wal.max_file_bytes).
	rotationWaitsTotal = metrics.NewCounter("ankusa_wal_rotation_waits_total")
	// Preparing a file ahead of rotation: create, header fsync, rename,
	// directory fsync (off the commit loop).
	prepareSeconds = metrics.NewPrometheusHistogram("ankusa_wal_prepare_file_seconds")

	current atomic.Pointer[WAL]
	_       = metrics.NewGauge("ankusa_wal_queue_bytes", func() float64 {
		if w := current.Load(); w != nil {
			return float64(w.QueuedBytes())
		}
		return 0
	})
	_ = metrics.NewGauge("ankusa_wal_last_seq", func() float64 {
		if w := current.Load(); w != nil {
			return float64(w.LastSeq())
		}
		return 0
	})
)

func setGauges(w *WAL) { current.Store(w) }

func observeCommit(records int, bytes int64, sync time.Duration) {
	fsyncSeconds.Update(sync.Seconds())
	batchRecords.Update(float64(records))
	batchBytes.Add(int(bytes))
	recordsTotal.Add(records)
	batchesTotal.Inc()
}
