package archive

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/ankusa/ankusa/segment"
)

// Problem is one thing wrong in an archive: the object it is about and
// what is wrong with it.
type Problem struct {
	Key  string
	What string
}

func (p Problem) String() string { return p.Key + ": " + p.What }

// VerifyStats sums up a Verify.
type VerifyStats struct {
	Segments int   // segment objects checked (with or without problems)
	Bytes    int64 // bytes of segment objects read
	Problems int
}

// verifyRef is one segment's pair of objects as listed.
type verifyRef struct {
	stem           string
	key            segmentKey
	cat, seg       bool
	catSize, size  int64
	catKey, segKey string
}

// Verify checks every archived segment under l's segments prefix (node's
// only, when node is not empty) against its catalogue object: both
// objects are there, the catalogue object parses and agrees with its key,
// the segment object has the size and SHA-256 the catalogue object says
// (and the SHA-256 the backend recorded at upload, where it keeps one),
// its footer the catalogue's seqs, event ids and receipt times, every
// block its CRC and records; and no two segments of a node hold the same
// seqs. report is called once per problem; the error is for a listing
// that failed (nothing could be checked).
func Verify(ctx context.Context, b Backend, l Layout, node string, report func(Problem)) (VerifyStats, error) {
	var st VerifyStats
	problem := func(key, format string, a ...any) {
		st.Problems++
		verifyProblems.Inc()
		report(Problem{Key: key, What: fmt.Sprintf(format, a...)})
	}
	refs, err := listForVerify(ctx, b, l, node, problem)
	if err != nil {
		return st, err
	}
	dec := segment.NewDecoder()
	defer dec.Close()
	var checked []*segmentRef
	for _, r := range refs {
		if ctx.Err() != nil {
			return st, ctx.Err()
		}
		switch {
		case !r.cat:
			st.Segments++
			problem(r.segKey, "segment object has no catalogue object %s beside it", r.catKey)
			continue
		case !r.seg:
			problem(r.catKey, "catalogue object has no segment object %s beside it", r.segKey)
			continue
		}
		st.Segments++
		ref := &segmentRef{key: r.key, catKey: r.catKey, segKey: r.segKey, catSize: r.catSize, segSize: r.size}
		if err := readCatalogue(ctx, b, ref); err != nil {
			problem(r.catKey, "%v", trimPrefix(err))
			continue
		}
		n, ok := verifySegment(ctx, b, ref, dec, problem)
		st.Bytes += n
		if ok {
			checked = append(checked, ref)
		}
	}
	checkOverlaps(checked, problem)
	return st, nil
}

// listForVerify pairs the .cat and .seg objects of the listing, in key
// order; a key under the prefix that is not of the layout is a problem.
func listForVerify(ctx context.Context, b Backend, l Layout, node string, problem func(string, string, ...any)) ([]*verifyRef, error) {
	prefix := l.SegmentsPrefix()
	if node != "" {
		prefix = l.NodePrefix(node)
	}
	byStem := map[string]*verifyRef{}
	err := b.List(ctx, prefix, func(o Object) error {
		stem, isCat, ok := cutObjectSuffix(o.Key)
		if !ok {
			problem(o.Key, "not an object of the archive's layout")
			return nil
		}
		k, err := parseSegmentKey(l, o.Key, stem)
		if err != nil {
			problem(o.Key, "%v", trimPrefix(err))
			return nil
		}
		r := byStem[stem]
		if r == nil {
			r = &verifyRef{stem: stem, key: k, catKey: stem + catSuffix, segKey: stem + segment.Suffix}
			byStem[stem] = r
		}
		if isCat {
			r.cat, r.catSize = true, o.Size
		} else {
			r.seg, r.size = true, o.Size
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	refs := make([]*verifyRef, 0, len(byStem))
	for _, r := range byStem {
		refs = append(refs, r)
	}
	slices.SortFunc(refs, func(a, b *verifyRef) int { return strings.Compare(a.stem, b.stem) })
	return refs, nil
}

// verifySegment downloads one segment object and checks it; it returns
// the bytes read and whether it passed.
func verifySegment(ctx context.Context, b Backend, r *segmentRef, dec *segment.Decoder, problem func(string, string, ...any)) (int64, bool) {
	data, err := fetchSegment(ctx, b, r)
	if err != nil {
		problem(r.segKey, "%v", trimPrefix(err))
		return int64(len(data)), false
	}
	ok := true
	if obj, err := b.Stat(ctx, r.segKey); err != nil {
		problem(r.segKey, "cannot stat: %v", trimPrefix(err))
		ok = false
	} else if obj.SHA256 != "" && obj.SHA256 != r.cat.SHA256 {
		problem(r.segKey, "the archive recorded sha256 %s at upload, its catalogue object says %s", obj.SHA256, r.cat.SHA256)
		ok = false
	}
	f, err := segment.OpenReaderAt(r.segKey, bytes.NewReader(data), int64(len(data)))
	if err != nil {
		problem(r.segKey, "%v", err)
		return int64(len(data)), false
	}
	if err := checkFooter(&f.Footer, &r.cat); err != nil {
		problem(r.segKey, "%v (catalogue object %s)", err, r.catKey)
		ok = false
	}
	if err := f.Verify(dec); err != nil {
		problem(r.segKey, "%v", err)
		ok = false
	}
	return int64(len(data)), ok
}

// checkOverlaps reports segments of one node that hold the same seqs.
func checkOverlaps(refs []*segmentRef, problem func(string, string, ...any)) {
	slices.SortFunc(refs, func(a, b *segmentRef) int {
		if c := strings.Compare(a.key.node, b.key.node); c != 0 {
			return c
		}
		return cmp.Compare(a.cat.FirstSeq, b.cat.FirstSeq)
	})
	for i := 1; i < len(refs); i++ {
		a, b := refs[i-1], refs[i]
		if a.key.node == b.key.node && b.cat.FirstSeq <= a.cat.LastSeq {
			problem(b.segKey, "holds seqs %d..%d, which overlap %s (%d..%d): is node.name %q used by two nodes?",
				b.cat.FirstSeq, b.cat.LastSeq, a.segKey, a.cat.FirstSeq, a.cat.LastSeq, a.key.node)
		}
	}
}

// trimPrefix drops the "archive: " of an error: the problem line names
// the object already.
func trimPrefix(err error) string { return strings.TrimPrefix(err.Error(), "archive: ") }
