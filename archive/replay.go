package archive

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/segment"
)

// Filter selects the hooks a replay passes on. The zero Filter selects
// every hook that was not quarantined and whose tenant was not erased.
type Filter struct {
	// Since and Until bound received_at: Since is inclusive, Until is
	// exclusive, so consecutive windows never replay a hook twice. A zero
	// time leaves that side open.
	Since, Until time.Time
	// Tenant, Source and Node, when set, keep only the hooks of that
	// tenant, of that source and sealed by that node.
	Tenant, Source, Node string
	// Quarantined includes quarantined hooks. They failed verification
	// and were never delivered, so a replay skips them unless asked.
	Quarantined bool
}

// Progress follows a replay, for a progress bar. Its methods are called
// on the goroutine that called Replay.
type Progress interface {
	// Start is called once, before the first hook, with the number and
	// the total size of the segments selected.
	Start(segments int, bytes int64)
	// Advance is called as the segments are read; the bytes it reports
	// add up to the total given to Start when the replay completes.
	Advance(bytes int64)
}

// Stats say what a replay did.
type Stats struct {
	Segments int   // segment objects read
	Hooks    int64 // hooks fn accepted
	Bytes    int64 // body bytes of those hooks
	Erased   int64 // hooks the filter kept but a tombstone says are erased
	// Uncatalogued are the keys of segment objects without a catalogue
	// object beside it, which were not replayed: the uploader writes the
	// .cat after the .seg, so an upload is in progress, or its node
	// stopped between the two and uploads the .cat when it starts again.
	Uncatalogued []string
}

// maxSegmentObject bounds a segment object replay holds in memory. A
// sealed segment passes segment.max_bytes (at most 4 GiB) by at most one
// hook (at most 513 MiB) and its index; anything larger is not a segment,
// and a damaged catalogue must not make replay allocate it.
const maxSegmentObject = 5 << 30

// maxCatalogueObject bounds a catalogue object (a few hundred bytes).
const maxCatalogueObject = 64 << 10

// catalogueReaders bounds the catalogue objects read at once: each is a
// round trip, and an archive holds thousands.
const catalogueReaders = 8

// Replay reads the segments of the archive in b that may hold hooks f
// selects, and calls fn with each such hook: in seq order within a node,
// node after node in name order. It needs no node: the catalogue objects
// beside the segments say which to read.
//
// Every object read is checked (its size and SHA-256 against its
// catalogue object, the footer against the catalogue, the seqs of its
// hooks against both), and damage is an error naming the key: a replay
// never silently skips hooks. Hooks of tenants erased after the hook was
// received (tombstones) are skipped and counted. At most two segments are
// in memory at a time: the one replayed and the next one, downloading.
//
// fn may keep the envelope. Replay stops at fn's first error and returns
// it unwrapped; Stats count what was done until then. p may be nil.
func Replay(ctx context.Context, b Backend, l Layout, f Filter, fn func(*envelope.Envelope) error, p Progress) (Stats, error) {
	var st Stats
	w := windowOf(f)
	ts, err := ReadTombstones(ctx, b, l)
	if err != nil {
		return st, err
	}
	refs, orphans, err := selectSegments(ctx, b, l, f.Node, w)
	st.Uncatalogued = orphans
	if err != nil {
		return st, err
	}
	var total int64
	for _, r := range refs {
		total += r.cat.Size
	}
	if p == nil {
		p = noProgress{}
	}
	p.Start(len(refs), total)
	dec := segment.NewDecoder()
	defer dec.Close()
	r := replayer{f: f, w: w, ts: ts, fn: fn, p: p, dec: dec, st: &st}
	ctx, cancel := context.WithCancel(ctx)
	downloads := prefetch(ctx, b, refs)
	defer func() {
		cancel()
		for range downloads { // let the downloader see ctx and end
		}
	}()
	for d := range downloads {
		if d.err != nil {
			return st, d.err
		}
		if err := r.segment(ctx, d.ref, d.data); err != nil {
			return st, err
		}
		st.Segments++
	}
	return st, ctx.Err()
}

type noProgress struct{}

func (noProgress) Start(int, int64) {}
func (noProgress) Advance(int64)    {}

// window is a Filter's time bounds in unix ns: lo <= received_at < hi.
type window struct{ lo, hi int64 }

func windowOf(f Filter) window {
	w := window{lo: math.MinInt64, hi: math.MaxInt64}
	if !f.Since.IsZero() {
		w.lo = unixNanos(f.Since)
	}
	if !f.Until.IsZero() {
		w.hi = unixNanos(f.Until)
	}
	return w
}

// unixNanos is t in unix ns, clamped to what int64 holds (UnixNano is
// undefined outside the years 1678..2262).
func unixNanos(t time.Time) int64 {
	switch {
	case t.Before(time.Unix(0, math.MinInt64)):
		return math.MinInt64
	case t.After(time.Unix(0, math.MaxInt64)):
		return math.MaxInt64
	}
	return t.UnixNano()
}

func (w window) contains(recv int64) bool { return recv >= w.lo && recv < w.hi }

// meets reports whether [min, max] holds a time in the window.
func (w window) meets(min, max int64) bool { return max >= w.lo && min < w.hi }

// segmentRef is one archived segment chosen for a replay.
type segmentRef struct {
	key     segmentKey // of the catalogue object
	catKey  string
	segKey  string
	catSize int64 // as listed
	segSize int64 // as listed
	cat     Catalogue
}

// segmentKey is what a key of the layout says:
// <prefix>/segments/node=<node>/<yyyy>/<mm>/<dd>/<first>-<last>.<ext>.
type segmentKey struct {
	node        string
	day         time.Time // UTC day of the segment's first receipt
	first, last uint64
}

// selectSegments reads the catalogue objects under the segments prefix
// (or node's) and returns the segments that may hold hooks in w, by node
// name and then seq, with the keys of segment objects that have no
// catalogue object.
func selectSegments(ctx context.Context, b Backend, l Layout, node string, w window) (refs []*segmentRef, orphans []string, err error) {
	refs, orphans, err = listSegments(ctx, b, l, node, w)
	if err != nil {
		return nil, orphans, err
	}
	if err := readCatalogues(ctx, b, refs); err != nil {
		return nil, orphans, err
	}
	slices.SortFunc(refs, func(a, b *segmentRef) int {
		if c := strings.Compare(a.key.node, b.key.node); c != 0 {
			return c
		}
		return cmp.Compare(a.cat.FirstSeq, b.cat.FirstSeq)
	})
	for i := 1; i < len(refs); i++ {
		a, b := refs[i-1], refs[i]
		if a.key.node == b.key.node && b.cat.FirstSeq <= a.cat.LastSeq {
			return nil, orphans, fmt.Errorf("archive: %s and %s hold the same seqs: is node.name %q used by two nodes?", a.segKey, b.segKey, a.key.node)
		}
	}
	return slices.DeleteFunc(refs, func(r *segmentRef) bool {
		return !w.meets(unixNanos(r.cat.MinReceivedAt), unixNanos(r.cat.MaxReceivedAt))
	}), orphans, nil
}

// listSegments pairs the .cat and .seg objects of the listing. A segment
// whose key's day (that of its first receipt) starts at or after the
// window's end is left out without reading its catalogue object.
func listSegments(ctx context.Context, b Backend, l Layout, node string, w window) (refs []*segmentRef, orphans []string, err error) {
	prefix := l.SegmentsPrefix()
	if node != "" {
		prefix = l.NodePrefix(node)
	}
	cats := map[string]*segmentRef{} // by key without extension
	segs := map[string]int64{}
	err = b.List(ctx, prefix, func(o Object) error {
		stem, isCat, ok := cutObjectSuffix(o.Key)
		if !ok {
			return nil // not an object of the layout
		}
		k, err := parseSegmentKey(l, o.Key, stem)
		if err != nil || unixNanos(k.day) >= w.hi {
			return err
		}
		if isCat {
			cats[stem] = &segmentRef{key: k, catKey: o.Key, segKey: stem + segment.Suffix, catSize: o.Size}
		} else {
			segs[stem] = o.Size
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	for stem := range segs {
		if cats[stem] == nil {
			orphans = append(orphans, stem+segment.Suffix)
		}
	}
	slices.Sort(orphans)
	for stem, r := range cats {
		size, ok := segs[stem]
		if !ok {
			return nil, orphans, fmt.Errorf("archive: %s has no segment object %s beside it", r.catKey, r.segKey)
		}
		r.segSize = size
		refs = append(refs, r)
	}
	return refs, orphans, nil
}

// parseSegmentKey reads a key of the layout, stem being key without its
// suffix (cutObjectSuffix). Any other key under the segments prefix
// ending in .cat or .seg is an error: it may hold hooks that replay would
// otherwise skip without a word.
func parseSegmentKey(l Layout, key, stem string) (segmentKey, error) {
	var k segmentKey
	parts := strings.Split(strings.TrimPrefix(stem, l.SegmentsPrefix()), "/")
	ok := len(parts) == 5
	if ok {
		k.node, ok = strings.CutPrefix(parts[0], "node=")
		ok = ok && k.node != ""
	}
	if ok {
		var err error
		k.day, err = time.Parse("2006/01/02", strings.Join(parts[1:4], "/"))
		ok = err == nil
	}
	if ok {
		k.first, k.last, ok = segment.ParseStem(parts[4])
	}
	if !ok {
		return k, fmt.Errorf("archive: %s is not a segment key (%snode=<node>/<yyyy>/<mm>/<dd>/<first_seq>-<last_seq>%s or %s)", key, l.SegmentsPrefix(), segment.Suffix, catSuffix)
	}
	return k, nil
}

// readCatalogues reads and checks the catalogue object of every ref, a
// few at a time.
func readCatalogues(ctx context.Context, b Backend, refs []*segmentRef) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		sem   = make(chan struct{}, catalogueReaders)
	)
	for _, r := range refs {
		sem <- struct{}{}
		mu.Lock()
		stop := first != nil
		mu.Unlock()
		if stop {
			<-sem
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := readCatalogue(ctx, b, r); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return first
}

// readCatalogue reads r's catalogue object and checks it against its key
// and the segment object listed beside it.
func readCatalogue(ctx context.Context, b Backend, r *segmentRef) error {
	if r.catSize > maxCatalogueObject {
		return fmt.Errorf("archive: catalogue object %s: %d bytes is too large", r.catKey, r.catSize)
	}
	rc, err := b.Get(ctx, r.catKey)
	if err != nil {
		return fmt.Errorf("archive: cannot read %s: %w", r.catKey, err)
	}
	data, err := io.ReadAll(io.LimitReader(rc, maxCatalogueObject+1))
	rc.Close()
	if err != nil {
		return fmt.Errorf("archive: cannot read %s: %w", r.catKey, err)
	}
	c, err := ParseCatalogue(r.catKey, data)
	if err != nil {
		return err
	}
	switch k := r.key; {
	case c.Node != k.node:
		return fmt.Errorf("archive: catalogue object %s names node %q, its key node %q", r.catKey, c.Node, k.node)
	case c.FirstSeq != k.first || c.LastSeq != k.last:
		return fmt.Errorf("archive: catalogue object %s holds seqs %d..%d, its key %d..%d", r.catKey, c.FirstSeq, c.LastSeq, k.first, k.last)
	case c.MinReceivedAt.UTC().Format(time.DateOnly) != k.day.Format(time.DateOnly):
		return fmt.Errorf("archive: catalogue object %s: min_received_at %s is not on the day of its key", r.catKey, c.MinReceivedAt.Format(time.RFC3339Nano))
	case c.Size != r.segSize:
		return fmt.Errorf("archive: %s has %d bytes; its catalogue object %s says %d", r.segKey, r.segSize, r.catKey, c.Size)
	case c.Size > maxSegmentObject:
		return fmt.Errorf("archive: %s: %d bytes is more than a segment can hold", r.segKey, c.Size)
	}
	r.cat = c
	return nil
}

// download is one segment object read into memory, or why it was not.
type download struct {
	ref  *segmentRef
	data []byte
	err  error
}

// prefetch downloads refs one after the other and sends them on the
// channel it returns, which it closes after the last or when ctx ends.
// The channel is unbuffered: the downloader holds at most one segment
// that the replay has not taken yet.
func prefetch(ctx context.Context, b Backend, refs []*segmentRef) <-chan download {
	ch := make(chan download)
	go func() {
		defer close(ch)
		for _, r := range refs {
			data, err := fetchSegment(ctx, b, r)
			select {
			case ch <- download{ref: r, data: data, err: err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return ch
}

// fetchSegment reads a segment object and checks its size and SHA-256
// against its catalogue object.
func fetchSegment(ctx context.Context, b Backend, r *segmentRef) ([]byte, error) {
	rc, err := b.Get(ctx, r.segKey)
	if err != nil {
		return nil, fmt.Errorf("archive: cannot read %s: %w", r.segKey, err)
	}
	defer rc.Close()
	data := make([]byte, r.cat.Size)
	n, err := io.ReadFull(rc, data)
	if err == nil {
		// One byte more would be an object longer than its catalogue says.
		var extra [1]byte
		if m, _ := io.ReadFull(rc, extra[:]); m > 0 {
			return nil, fmt.Errorf("archive: %s is longer than the %d bytes its catalogue object %s says", r.segKey, r.cat.Size, r.catKey)
		}
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("archive: %s has %d bytes; its catalogue object %s says %d", r.segKey, n, r.catKey, r.cat.Size)
	}
	if err != nil {
		return nil, fmt.Errorf("archive: cannot read %s: %w", r.segKey, err)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != r.cat.SHA256 {
		return nil, fmt.Errorf("archive: %s is damaged: its sha256 is %x; its catalogue object %s says %s", r.segKey, sum, r.catKey, r.cat.SHA256)
	}
	return data, nil
}

// replayer walks the downloaded segments.
type replayer struct {
	f   Filter
	w   window
	ts  Tombstones
	fn  func(*envelope.Envelope) error
	p   Progress
	dec *segment.Decoder
	st  *Stats
	raw []byte // the block being walked, reused
}

// segment passes on the selected hooks of one segment object, checking
// its footer against the catalogue and its seqs against both.
func (r *replayer) segment(ctx context.Context, ref *segmentRef, data []byte) error {
	c := &ref.cat
	sf, err := segment.OpenReaderAt(ref.segKey, bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	if err := checkFooter(&sf.Footer, c); err != nil {
		return fmt.Errorf("archive: %s: the footer does not match the catalogue object %s: %v", ref.segKey, ref.catKey, err)
	}
	minRecv, maxRecv := c.MinReceivedAt.UnixNano(), c.MaxReceivedAt.UnixNano()
	next, read := c.FirstSeq, int64(0)
	for i := range sf.Index {
		if err := ctx.Err(); err != nil {
			return err
		}
		r.raw, err = sf.ReadBlock(i, r.dec, r.raw[:0])
		if err != nil {
			return fmt.Errorf("archive: %w", err)
		}
		var fnErr error
		err = segment.Records(r.raw, func(p []byte) error {
			_, seq, _, _ := envelope.Identity(p)
			recv := int64(binary.BigEndian.Uint64(p[envelope.OffReceivedAt:]))
			switch {
			case seq != next:
				return fmt.Errorf("seq %d where %d was due", seq, next)
			case recv < minRecv || recv > maxRecv:
				return fmt.Errorf("received_at of seq %d is outside the catalogue's range", seq)
			}
			next++
			if fnErr = r.hook(p, seq, recv); fnErr != nil {
				return fnErr
			}
			return nil
		})
		if fnErr != nil {
			if errors.Is(fnErr, errDamaged) {
				return fmt.Errorf("archive: %s: block %d: %w", ref.segKey, i, fnErr)
			}
			return fnErr
		}
		if err != nil {
			return fmt.Errorf("archive: %s: block %d is damaged: %v", ref.segKey, i, err)
		}
		n := int64(sf.Index[i].CompLen)
		read += n
		r.p.Advance(n)
	}
	if next-1 != c.LastSeq {
		return fmt.Errorf("archive: %s ends at seq %d; its catalogue object says %d", ref.segKey, next-1, c.LastSeq)
	}
	r.p.Advance(int64(len(data)) - read) // header, index and footer
	return nil
}

// errDamaged marks a record hook could not decode.
var errDamaged = errors.New("damaged record")

// hook filters one record and passes it on.
func (r *replayer) hook(p []byte, seq uint64, recv int64) error {
	if !r.w.contains(recv) {
		return nil
	}
	tenant, source, ok := envelope.Names(p)
	if !ok {
		return fmt.Errorf("%w: seq %d: no tenant and source", errDamaged, seq)
	}
	switch {
	case r.f.Tenant != "" && string(tenant) != r.f.Tenant,
		r.f.Source != "" && string(source) != r.f.Source,
		!r.f.Quarantined && p[envelope.OffFlags]&envelope.FlagQuarantined != 0:
		return nil
	}
	if r.ts.Erased(string(tenant), recv) {
		r.st.Erased++
		return nil
	}
	env := new(envelope.Envelope)
	if _, err := envelope.Decode(p, env); err != nil {
		return fmt.Errorf("%w: seq %d: %v", errDamaged, seq, err)
	}
	if err := r.fn(env); err != nil {
		return err
	}
	r.st.Hooks++
	r.st.Bytes += int64(len(env.Body))
	return nil
}

// checkFooter compares what a segment's footer says with its catalogue
// object: the sha256 matched, so a difference is a catalogue that lies.
func checkFooter(f *segment.Footer, c *Catalogue) error {
	switch {
	case f.FirstSeq != c.FirstSeq || f.LastSeq != c.LastSeq || f.Count != c.Count:
		return fmt.Errorf("footer seqs %d..%d (%d hooks), catalogue %d..%d (%d hooks)", f.FirstSeq, f.LastSeq, f.Count, c.FirstSeq, c.LastSeq, c.Count)
	case f.FirstID.String() != c.FirstID || f.LastID.String() != c.LastID:
		return fmt.Errorf("footer event ids %s..%s, catalogue %s..%s", f.FirstID, f.LastID, c.FirstID, c.LastID)
	case f.MinReceivedAt != c.MinReceivedAt.UnixNano() || f.MaxReceivedAt != c.MaxReceivedAt.UnixNano():
		return fmt.Errorf("footer received_at %d..%d, catalogue %d..%d", f.MinReceivedAt, f.MaxReceivedAt, c.MinReceivedAt.UnixNano(), c.MaxReceivedAt.UnixNano())
	}
	return nil
}
