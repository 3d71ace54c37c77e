package segment_test

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/meta"
)

// scaleHook is hook number i of the round-trip test. Everything in it is
// a function of i, so the test keeps only (seq, id, ordinal) per hook and
// rebuilds the rest. Bodies: about 5% empty, most 1..600 bytes, one in
// 500 between 4 KiB and 64 KiB, and one in 12500 exactly 1 MiB (8 of
// 100k); text and binary. Many tenants (1000), varied params, headers,
// verification flags, dedupe keys (some empty) and received_at (not in
// commit order).
func scaleHook(i int) envelope.Envelope {
	h := fnv.New64a()
	fmt.Fprintf(h, "scale-%d", i)
	sum := h.Sum64()
	var n int
	switch {
	case i%12500 == 777:
		n = 1 << 20
	case i%500 == 3:
		n = 4<<10 + int(sum%(60<<10))
	case sum%20 == 0:
		n = 0
	default:
		n = 1 + int(sum%600)
	}
	var body []byte
	if n > 0 {
		body = make([]byte, n)
		x := sum
		binary := sum%3 == 0
		for j := range body {
			x = x*6364136223846793005 + 1442695040888963407
			if binary {
				body[j] = byte(x >> 56)
			} else {
				body[j] = "{}\":,abcdefghij0123456789 "[(x>>59)%26]
			}
		}
	}
	e := envelope.Envelope{
		TenantID:   fmt.Sprintf("tenant-%d", (sum>>8)%1000),
		SourceID:   fmt.Sprintf("src-%d", (sum>>20)%7),
		ReceivedAt: 1_764_445_200_000_000_000 + int64((sum>>24)%(1<<40)),
		Body:       body,
		Verification: envelope.Verification{
			Verifier:    []string{"none", "hmac", "stripe", "github"}[(sum>>30)%4],
			Verified:    (sum>>32)%2 == 0,
			Flagged:     (sum>>33)%7 == 0,
			Quarantined: (sum>>34)%11 == 0,
		},
	}
	if (sum>>36)%4 != 0 {
		e.DedupeKey = fmt.Sprintf("evt_%d_%x", i, sum)
	}
	for k := range int((sum >> 40) % 4) {
		e.RouteParams = append(e.RouteParams, envelope.Param{Key: fmt.Sprintf("p%d", k), Value: fmt.Sprintf("v%d-%d", i, k)})
	}
	for k := range int((sum >> 44) % 6) {
		e.Headers = append(e.Headers, envelope.Header{Name: fmt.Sprintf("X-H%d", k), Value: fmt.Sprintf("%x", sum>>k)})
	}
	return e
}

// assigned is what the commit loop gave a hook.
type assigned struct {
	i       int
	seq     uint64
	id      envelope.ID
	ordinal uint32
}

func (a assigned) envelope() envelope.Envelope {
	e := scaleHook(a.i)
	e.Seq, e.ID, e.TenantOrdinal = a.seq, a.id, a.ordinal
	return e
}

// TestRoundTripAtScale commits 100k hooks of varied sizes (a handful of
// 1 MiB bodies; see scaleHook) from several goroutines, lets the sealer
// cut them into many segments (segment.max_bytes 1 MiB, 64 KiB blocks)
// and reads every one back by id and by scan, before and after a restart.
// It fails on any byte, header, param or metadata difference, on a gap or
// disorder in a scan, and on a range scan that returns more or less than
// asked.
func TestRoundTripAtScale(t *testing.T) {
	total := 100_000
	if raceEnabled || testing.Short() {
		total = 20_000 // the race detector makes each fetch ~10× slower
	}
	maxBytes := int64(1 << 20)
	if total < 100_000 {
		maxBytes = 256 << 10 // as many segments from fewer hooks
	}
	fs := vfs.NewMem()
	n := openNode(t, fs, nodeOptions{maxBytes: maxBytes, maxAge: time.Hour, blockSize: 64 << 10, walFile: 16 << 20})
	start := time.Now()
	bySeq := commitScale(t, n, total)
	t.Logf("%d hooks committed in %v", total, time.Since(start))

	// Everything committed so far must come back, sealed or not; then the
	// same once the last segment is sealed and after a restart.
	start = time.Now()
	checkScale(t, n, bySeq, true)
	t.Logf("checked in %v", time.Since(start))
	entries := n.catalogue()
	if len(entries) < 30 {
		t.Fatalf("only %d segments sealed: the test needs many", len(entries))
	}
	last := checkCatalogue(t, fs, entries, 1)
	t.Logf("%d segments, the last ends at seq %d of %d", len(entries), last, total)
	checkScanRanges(t, n, entries, uint64(total))
	n.close()

	n = openNode(t, fs, nodeOptions{maxBytes: maxBytes, maxAge: 20 * time.Millisecond, blockSize: 64 << 10, walFile: 16 << 20})
	defer n.close()
	n.waitSealed(uint64(total))
	checkScale(t, n, bySeq, false)
	checkCatalogue(t, fs, n.catalogue(), 1)
}

// commitScale commits hooks 0..total-1 from 8 goroutines and returns what
// each seq was given, indexed by seq.
func commitScale(t *testing.T, n *node, total int) []assigned {
	const workers = 8
	bySeq := make([]assigned, total+1)
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < total; i += workers {
				e, err := n.commit(scaleHook(i))
				if err != nil {
					errs <- fmt.Errorf("commit of hook %d: %w", i, err)
					return
				}
				if e.Seq == 0 || e.Seq > uint64(total) {
					errs <- fmt.Errorf("hook %d got seq %d", i, e.Seq)
					return
				}
				mu.Lock()
				bySeq[e.Seq] = assigned{i: i, seq: e.Seq, id: e.ID, ordinal: e.TenantOrdinal}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// Seqs and ids grow together; one tenant, one ordinal.
	ords := map[string]uint32{}
	for seq := 1; seq <= total; seq++ {
		a := bySeq[seq]
		if a.seq != uint64(seq) {
			t.Fatalf("no hook got seq %d", seq)
		}
		if seq > 1 && bytes.Compare(bySeq[seq-1].id[:], a.id[:]) >= 0 {
			t.Fatalf("id of seq %d does not grow", seq)
		}
		tenant := scaleHook(a.i).TenantID
		if o, ok := ords[tenant]; ok && o != a.ordinal {
			t.Fatalf("tenant %s has ordinals %d and %d", tenant, o, a.ordinal)
		}
		ords[tenant] = a.ordinal
	}
	return bySeq
}

// checkScale fetches every hook by id (unless fetchAll is false: then one
// in 7 and every large one) and scans them all.
func checkScale(t *testing.T, n *node, bySeq []assigned, fetchAll bool) {
	t.Helper()
	total := len(bySeq) - 1
	const workers = 2
	var wg sync.WaitGroup
	errs := make(chan string, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := 1 + w; seq <= total; seq += workers {
				a := bySeq[seq]
				if !fetchAll && seq%7 != 0 && a.i%12500 != 777 {
					continue
				}
				want := a.envelope()
				got, err := n.store.Fetch(a.id)
				if err != nil {
					errs <- fmt.Sprintf("fetch of seq %d (hook %d, id %s): %v", seq, a.i, a.id, err)
					return
				}
				if !sameEnvelope(got, &want) {
					errs <- fmt.Sprintf("fetch of seq %d:\n got %s\nwant %s", seq, describe(got), describe(&want))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for msg := range errs {
		t.Fatal(msg)
	}
	next := uint64(1)
	err := n.store.Scan(1, math.MaxUint64, func(e *envelope.Envelope) error {
		if e.Seq != next {
			return fmt.Errorf("scan met seq %d where %d was due", e.Seq, next)
		}
		if want := bySeq[next].envelope(); !sameEnvelope(e, &want) {
			return fmt.Errorf("scan of seq %d:\n got %s\nwant %s", next, describe(e), describe(&want))
		}
		next++
		return nil
	})
	if err != nil {
		t.Fatalf("scan 1..max: %v", err)
	}
	if next != uint64(total)+1 {
		t.Fatalf("scan 1..max ended at seq %d, want %d", next-1, total)
	}
}

// checkScanRanges scans ranges that start and end inside blocks, across
// segment boundaries, exactly one segment, in the open segment, one hook,
// and past the end: each returns exactly the seqs asked for that exist.
func checkScanRanges(t *testing.T, n *node, entries []meta.SegmentEntry, total uint64) {
	t.Helper()
	mid := entries[len(entries)/2]
	next := entries[len(entries)/2+1]
	ranges := [][2]uint64{
		{1, 1},
		{2, 17},
		{total / 3, total / 3},
		{total / 3, total/3 + 5000},
		{mid.FirstSeq, mid.LastSeq},
		{mid.LastSeq, mid.LastSeq},
		{mid.LastSeq, next.FirstSeq},
		{mid.LastSeq - 3, next.FirstSeq + 3},
		{mid.FirstSeq + 1, next.LastSeq - 1},
		{entries[0].FirstSeq, entries[len(entries)-1].LastSeq},
		{entries[len(entries)-1].LastSeq - 2, total}, // into the open segment, if any
		{total - 10, total + 100},                    // past the durable end
		{total + 1, total + 100},                     // nothing there
		{0, 3},                                       // seq 0 is no hook
	}
	for _, r := range ranges {
		got := scanSeqs(t, n.store, r[0], r[1])
		checkDense(t, fmt.Sprintf("scan %d..%d", r[0], r[1]), got, max(r[0], 1), min(r[1], total))
	}
}
