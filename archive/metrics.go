package archive

import (
	"sync/atomic"

	"github.com/VictoriaMetrics/metrics"
)

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

// Claim packs (claims.go).
var (
	claimPacksUploaded    = metrics.NewCounter("ankusa_claim_packs_uploaded_total")
	claimBytesUploaded    = metrics.NewCounter("ankusa_claim_uploaded_bytes_total")
	claimUploadFailures   = metrics.NewCounter("ankusa_claim_upload_failures_total")
	claimUploadSeconds    = metrics.NewPrometheusHistogram("ankusa_claim_upload_seconds")
	claimRoomWaits        = metrics.NewCounter("ankusa_claim_room_waits_total")
	claimCacheHits        = metrics.NewCounter("ankusa_claim_cache_hits_total")
	claimReads            = metrics.NewCounter("ankusa_claim_reads_total")
	claimReadFailures     = metrics.NewCounter("ankusa_claim_read_failures_total")
	claimPacksDeleted     = metrics.NewCounter("ankusa_claim_packs_deleted_total")
	claimRetainFailures   = metrics.NewCounter("ankusa_claim_retention_failures_total")
	claimTenantDeleteFail = metrics.NewCounter("ankusa_claim_tenant_delete_failures_total")
	// claimOpenBytes is the bytes held in open and uploading packs, every
	// Claims of the process together.
	claimOpenBytes atomic.Int64
	_              = metrics.NewGauge("ankusa_claim_open_bytes", func() float64 { return float64(claimOpenBytes.Load()) })
)
