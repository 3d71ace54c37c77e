package segment_test

import (
	"fmt"
	"hash/fnv"
	"math"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/internal/vfsutil"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/segment"
	"github.com/ankusa/ankusa/wal"
)

// node is a WAL, a meta store and a segment store on one file system, as
// `ankusa serve` wires them.
type node struct {
	t     testing.TB
	fs    vfs.FS
	wal   *wal.WAL
	meta  *meta.Store
	store *segment.Store
	fatal chan error
}

// nodeOptions tune a test node.
type nodeOptions struct {
	maxBytes  int64
	maxAge    time.Duration
	blockSize int
	// dispatch is the dispatch checkpoint the store's Keeper answers
	// (nil: there is none, as on a node whose dispatch has checkpointed
	// nothing: no WAL file goes and no segment is removed;
	// checkpointAtTop: every hook's rows are durable).
	dispatch func() uint64
	walFile  int64
	// now is the segment store's clock (nil: time.Now); retainLocal,
	// canRemoveLocal and archiving drive retention (segment.retain_local):
	// canRemoveLocal answers the store's HoldsLive question (true: every
	// hook in the segment is delivered or dead).
	now            func() time.Time
	retainLocal    time.Duration
	canRemoveLocal func(meta.SegmentEntry) bool
	archiving      bool
	// log wraps the WAL as the segment store sees it (nil: the WAL).
	log func(segment.Log) segment.Log
	// remote reads the segments retention removed (nil: none).
	remote segment.Remote
	// scrubRate and repair drive the scrubber (0: no passes; nil: no
	// restore).
	scrubRate int64
	repair    segment.Repairer
	// noDict writes segments without dictionaries (segment.dictionary:
	// false).
	noDict bool
}

func openNode(t testing.TB, fs vfs.FS, o nodeOptions) *node {
	t.Helper()
	n, err := tryOpenNode(t, fs, o)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func tryOpenNode(t testing.TB, fs vfs.FS, o nodeOptions) (*node, error) {
	n := &node{t: t, fs: fs, fatal: make(chan error, 4)}
	if err := vfsutil.MkdirAllSynced(fs, "data"); err != nil {
		return nil, err
	}
	m, err := meta.Open(meta.Options{Dir: "data/meta", FS: fs})
	if err != nil {
		return nil, err
	}
	n.meta = m
	w, err := wal.Open(wal.Options{FS: fs, Dir: "data/wal", Node: 3, MaxFileBytes: o.walFile, Meta: m})
	if err != nil {
		m.Close()
		return nil, err
	}
	n.wal = w
	var log segment.Log = w
	if o.log != nil {
		log = o.log(w)
	}
	s, err := segment.Open(segment.Options{
		FS: fs, Dir: "data/segments", Log: log, Meta: m,
		MaxBytes: o.maxBytes, MaxAge: o.maxAge, BlockSize: o.blockSize,
		Keeper:      o.keeper(),
		Archiving:   o.archiving,
		Now:         o.now,
		RetainLocal: o.retainLocal,
		Remote:      o.remote,
		ScrubRate:   o.scrubRate,
		Repair:      o.repair,
		NoDict:      o.noDict,
		OnFatal: func(err error) {
			select {
			case n.fatal <- err:
			default:
			}
		},
	})
	if err != nil {
		w.Close()
		m.Close()
		return nil, err
	}
	n.store = s
	return n, nil
}

func (n *node) close() {
	n.t.Helper()
	if err := n.store.Close(); err != nil {
		n.t.Fatal(err)
	}
	if err := n.wal.Close(); err != nil {
		n.t.Fatal(err)
	}
	if err := n.meta.Close(); err != nil {
		n.t.Fatal(err)
	}
}

// testHook builds the envelope of hook number i of a test: tenant, params,
// headers and a body (0 bytes to maxBody, binary ones too) that are
// functions of i, so what is read back can be checked by i alone.
func testHook(i int, maxBody int) envelope.Envelope {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d", i)
	sum := h.Sum64()
	n := 0
	if maxBody > 0 {
		n = int(sum % uint64(maxBody+1))
	}
	body := make([]byte, n)
	x := sum
	for j := range body {
		x = x*6364136223846793005 + 1442695040888963407
		if sum%3 == 0 {
			body[j] = byte(x >> 56) // binary
		} else {
			body[j] = "{}\":,abcdefghij0123456789 "[x>>59%26]
		}
	}
	return envelope.Envelope{
		TenantID:     fmt.Sprintf("t%d", sum%37),
		SourceID:     "src",
		ReceivedAt:   1_764_445_200_000_000_000 + int64(i),
		RouteParams:  []envelope.Param{{Key: "i", Value: fmt.Sprint(i)}},
		Headers:      []envelope.Header{{Name: "Content-Type", Value: "application/json"}, {Name: "X-I", Value: fmt.Sprint(i)}},
		Body:         body,
		Verification: envelope.Verification{Verifier: "none"},
		DedupeKey:    fmt.Sprintf("k%d", i),
	}
}

// commit commits the envelope and returns it with what the loop assigned.
func (n *node) commit(e envelope.Envelope) (envelope.Envelope, error) {
	req := wal.AcquireRequest()
	defer wal.ReleaseRequest(req)
	req.Buf = e.AppendTo(req.Buf)
	wal.SealPayload(req.Buf)
	if err := n.wal.Commit(req); err != nil {
		return e, err
	}
	e.Seq, e.ID, e.TenantOrdinal = req.Seq, req.ID, req.Ordinal
	return e, nil
}

// keeper is what the store asks dispatch, from the node's options: nil
// when they ask nothing (no WAL file is deleted, retention goes by age).
// keeper is the store's Keeper: the test's dispatch checkpoint (nil: 0,
// none) and its HoldsLive answer (nil: no hook is live).
func (o nodeOptions) keeper() segment.Keeper {
	k := testKeeper{checkpoint: o.dispatch, removable: o.canRemoveLocal}
	if k.checkpoint == nil {
		k.checkpoint = func() uint64 { return 0 }
	}
	return k
}

// checkpointAtTop is a dispatch checkpoint above every seq: every hook's
// delivery rows are durable, as on a node with nothing left to deliver.
func checkpointAtTop() uint64 { return math.MaxUint64 }

// testKeeper answers the store's questions with the test's functions.
type testKeeper struct {
	checkpoint func() uint64
	removable  func(meta.SegmentEntry) bool
}

func (k testKeeper) DurableCheckpoint() uint64 { return k.checkpoint() }

func (k testKeeper) HoldsLive(first, last uint64) (bool, error) {
	if k.removable == nil {
		return false, nil
	}
	return !k.removable(meta.SegmentEntry{FirstSeq: first, LastSeq: last}), nil
}
