package segment

import "github.com/VictoriaMetrics/metrics"

var (
	sealedTotal      = metrics.NewCounter("ankusa_segment_sealed_total")
	sealedRawBytes   = metrics.NewCounter("ankusa_segment_sealed_raw_bytes_total")
	sealedFileBytes  = metrics.NewCounter("ankusa_segment_sealed_file_bytes_total")
	dictSegments     = metrics.NewCounter("ankusa_segment_dictionary_segments_total")
	dictBytes        = metrics.NewCounter("ankusa_segment_dictionary_bytes_total")
	sealSeconds      = metrics.NewPrometheusHistogram("ankusa_segment_seal_seconds")
	adoptedTotal     = metrics.NewCounter("ankusa_segment_adopted_total")
	discardedTotal   = metrics.NewCounter("ankusa_segment_partial_discarded_total")
	corruptTotal     = metrics.NewCounter("ankusa_segment_corrupt_total")
	gapsTotal        = metrics.NewCounter("ankusa_segment_wal_gaps_total")
	removedTotal     = metrics.NewCounter("ankusa_segment_retention_removed_total")
	walFilesDeleted  = metrics.NewCounter("ankusa_wal_files_deleted_total")
	fetchTotal       = metrics.NewCounter("ankusa_segment_fetch_total")
	fetchNotFound    = metrics.NewCounter("ankusa_segment_fetch_not_found_total")
	blockCacheHits   = metrics.NewCounter("ankusa_segment_block_cache_hits_total")
	blockCacheMisses = metrics.NewCounter("ankusa_segment_block_cache_misses_total")
	blockCacheBytes  = metrics.NewGauge("ankusa_segment_block_cache_bytes", nil)
	unsealedHooks    = metrics.NewGauge("ankusa_segment_unsealed_hooks", nil)
	// sealRetries counts seals dropped for a full disk and tried again.
	sealRetries = metrics.NewCounter("ankusa_segment_seal_retries_total")
	// sealedSeqGauge is the last seq in a sealed segment: beside
	// ankusa_wal_last_seq it says how far the sealer is behind the log,
	// which unsealed_hooks (the open segment only) does not count.
	sealedSeqGauge = metrics.NewGauge("ankusa_segment_sealed_seq", nil)

	// The scrubber and the restore of damaged segments.
	scrubBytes       = metrics.NewCounter("ankusa_segment_scrub_bytes_total")
	scrubPasses      = metrics.NewCounter("ankusa_segment_scrub_passes_total")
	scrubErrors      = metrics.NewCounter("ankusa_segment_scrub_read_failures_total")
	damagedGauge     = metrics.NewGauge("ankusa_segment_damaged", nil)
	damageFoundTotal = metrics.NewCounter("ankusa_segment_damage_found_total")
	restoredTotal    = metrics.NewCounter("ankusa_segment_restored_total")
	restoreFailures  = metrics.NewCounter("ankusa_segment_restore_failures_total")
	restoreSeconds   = metrics.NewPrometheusHistogram("ankusa_segment_restore_seconds")
)
