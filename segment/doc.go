// Package segment seals committed WAL records into compressed segment files,
// keeps their catalogue in the meta store, and reads hooks back: by event id
// (Fetch) and by seq range (Scan), from sealed segments and from the part of
// the log not sealed yet.
//
// # Segment file (versions 1 and 2)
//
// A segment holds the hooks of many tenants, in seq order. All integers are
// big-endian; CRCs are CRC-32C (Castagnoli).
//
//	offset        size  field
//	0             8     magic "ANKUSASG"
//	8             4     version: 1, or 2 when a dictionary follows
//	12            4     flags = 0 (reserved)
//	16            16+m  version 2 only: the dictionary section
//	16 (+16+m)    ...   blocks, one after the other
//	index offset  48×n  block index: one entry per block, in block order
//	end - 112     112   footer
//
// A block is one zstd frame (klauspost/compress) whose content is records
// one after the other, each:
//
//	4     payload length n
//	n     payload: the envelope's binary form (package envelope), identity
//	      prefix included (kind 1, seq, id, ordinal, ...)
//
// The dictionary section (version 2; dict.go) holds the zstd raw-content
// dictionary every block of the segment is compressed with:
//
//	0     4     dictionary id (what each block's frame header names;
//	            from the content's CRC-32C, in 32768..2^31-1)
//	4     4     dictionary length n (1 KiB to DictBytes, 256 KiB)
//	8     4     stored length m
//	12    4     CRC-32C of bytes 0..11 and the m stored bytes
//	16    m     the dictionary, one zstd frame without a dictionary
//
// A reader needs nothing but the segment: the archive, a restore and a
// replay with no node running read it as the store does, and the
// dictionary goes when the segment goes. The dictionary is the last
// min(DictBytes, raw/16) bytes of records of the segment sealed just
// before, when that one was sealed within segment.max_age (so a hook's
// bytes outlive its own segment only inside the next one);
// segment.dictionary: false writes version 1. A damaged section makes
// the whole segment damaged (every block needs it).
//
// Blocks are cut at about Options.BlockSize bytes of records; a record is
// never split, so a record larger than that makes a block of its own.
//
// Block index entry (48 bytes):
//
//	0     8     offset of the block's frame in the file
//	8     4     compressed length (the frame)
//	12    4     raw length (the records)
//	16    4     CRC-32C of the compressed bytes
//	20    4     record count
//	24    8     seq of the block's first record
//	32    16    event id of the block's first record
//
// Footer (112 bytes):
//
//	0     8     index offset
//	8     4     block count n
//	12    4     CRC-32C of the index (48×n bytes)
//	16    8     record count
//	24    8     raw bytes (sum of the blocks' raw lengths)
//	32    8     first seq
//	40    8     last seq
//	48    16    first event id
//	64    16    last event id
//	80    8     earliest received_at (unix ns)
//	88    8     latest received_at (unix ns)
//	96    4     version, as the header's
//	100   4     CRC-32C of footer bytes 0..99
//	104   8     magic "ANKUSASF"
//
// The per-block checksums live in the index, which the footer's index CRC
// covers, and the footer covers itself: a flipped byte anywhere in a
// segment is found by Verify, and by a fetch that reads the damaged block.
// Seqs are dense within a segment (first..last, count = last-first+1) and
// event ids grow with seq, so a block is found by either with a binary
// search of the index.
//
// # Files and the catalogue
//
// The sealer writes a segment as "<first seq>.partial", fsyncs it, renames it
// to "<first seq>-<last seq>.seg" (20-digit zero-padded decimals), fsyncs
// the directory, and only then enters it in the catalogue with a synced
// write. At boot a ".partial" file is removed (its records are still in the
// WAL and are sealed again), and a whole ".seg" file missing from the
// catalogue (a crash between the rename and the catalogue write) is
// verified and adopted. See DESIGN.md §6 item 3.
//
// A full disk stops nothing (space.go, DESIGN.md §6 item 10): a seal whose
// file, block, footer, rename or catalogue entry meets ENOSPC drops the
// segment (its .partial, or its renamed file no entry names, is removed),
// rewinds the tail to the last sealed seq and seals again after a
// backoff; ankusa_segment_seal_retries_total counts it. A failed fsync
// stays fatal.
//
// # Damage: boot checks, the scrubber, restores
//
// Open checks every local catalogued segment's header, footer, index and
// size (checkLocal) and marks a damaged one instead of failing. A
// scrubber goroutine reads every block of every local segment at
// Options.ScrubRate bytes a second and checks its CRC, one pass after
// another. Damage, wherever found (boot, scrubber, a fetch or scan), is
// listed by Damaged with the seqs it costs (the block's, or the whole
// segment's), logged once and counted; a damaged segment that is
// archived is read through Remote and restored through Options.Repair
// (the archive writes the checked copy to RestoringName, syncs it and
// renames it over the damaged file), then verified whole. The list is in
// memory: boot and the next pass find the damage again after a restart.
//
// # What may be deleted
//
// The store applies the deletion rules of DESIGN.md §6 item 3 itself: it
// retires a WAL file only when every hook in it is sealed, catalogued and
// at or below the dispatch checkpoint, and removes a local segment past
// segment.retain_local only when it holds nothing past the checkpoint and
// is archived (Options.Archiving) or holds no live hook. It asks what
// dispatch still needs through Options.Keeper, which the meta store
// answers; Open refuses a store without one, so neither rule can be off.
//
// # Imports
//
// segment imports envelope, wal, meta, internal/backoff, internal/throttle
// and internal/vfsutil; never
// dispatch, archive (which reads segments through Remote), the edge or the
// admin API.
package segment
