package archive

import "github.com/VictoriaMetrics/metrics"

var (
	lagSegments      = metrics.NewGauge("ankusa_archive_lag_segments", nil)
	lagSeconds       = metrics.NewGauge("ankusa_archive_lag_seconds", nil)
	uploadedTotal    = metrics.NewCounter("ankusa_archive_uploaded_segments_total")
	uploadBytes      = metrics.NewCounter("ankusa_archive_upload_bytes_total")
	uploadFailures   = metrics.NewCounter("ankusa_archive_upload_failures_total")
	uploadSeconds    = metrics.NewPrometheusHistogram("ankusa_archive_upload_seconds")
	alreadyPresent   = metrics.NewCounter("ankusa_archive_already_present_total")
	remoteReads      = metrics.NewCounter("ankusa_archive_reads_total")
	remoteReadBytes  = metrics.NewCounter("ankusa_archive_read_bytes_total")
	remoteReadErrors = metrics.NewCounter("ankusa_archive_read_failures_total")
	restoredBytes    = metrics.NewCounter("ankusa_archive_restored_bytes_total")
	restoreRefused   = metrics.NewCounter("ankusa_archive_restore_failures_total")
	verifyProblems   = metrics.NewCounter("ankusa_archive_verify_problems_total")
)
