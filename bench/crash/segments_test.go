package crash

// Reading a stopped node's segment directory back and checking it against
// the WAL: whole segments only, each verified, tiling the seqs from 1 with
// no gap and no overlap, each record the WAL's hook of that seq.

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/klauspost/compress/zstd"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/segment"
	"github.com/ankusa/ankusa/wal"
)

// segDir is a listing of the segment directory.
type segDir struct {
	segs     []segName // by first seq
	partials []string  // open (or interrupted) segments: "<first seq>.partial"
	others   []string  // anything else (a ".corrupt" set aside at boot)
}

// segName is a sealed segment's file name and the seqs it names.
type segName struct {
	name        string
	first, last uint64
}

// listSegments lists dir; a missing directory is an empty one.
func listSegments(dir string) (segDir, error) {
	var d segDir
	names, err := readNames(dir)
	if err != nil {
		return d, err
	}
	for _, name := range names {
		switch {
		case strings.HasSuffix(name, ".partial"):
			d.partials = append(d.partials, name)
		case strings.HasSuffix(name, ".seg"):
			s, ok := parseSegName(name)
			if !ok {
				d.others = append(d.others, name)
				continue
			}
			d.segs = append(d.segs, s)
		default:
			d.others = append(d.others, name)
		}
	}
	slices.SortFunc(d.segs, func(a, b segName) int { return cmpUint(a.first, b.first) })
	return d, nil
}

// readNames is os.ReadDir without the stat and the sort: cheap enough to
// run right before a SIGKILL.
func readNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot list the segment directory: %w", err)
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("cannot list the segment directory: %w", err)
	}
	return names, nil
}

// parseSegName reads "<first>-<last>.seg", checking it is the name
// segment.FileName gives those seqs.
func parseSegName(name string) (segName, bool) {
	a, b, ok := strings.Cut(strings.TrimSuffix(name, ".seg"), "-")
	if !ok {
		return segName{}, false
	}
	first, err1 := strconv.ParseUint(a, 10, 64)
	last, err2 := strconv.ParseUint(b, 10, 64)
	if err1 != nil || err2 != nil || first == 0 || last < first || segment.FileName(first, last) != name {
		return segName{}, false
	}
	return segName{name: name, first: first, last: last}, true
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// tiling checks that segs (by first seq) cover 1..sealed with no gap and no
// overlap, and that sealed is within the WAL's 1..walLast. It returns
// sealed, the last seq the segments hold.
func tiling(segs []segName, walLast uint64) (sealed uint64, problems []string) {
	for _, s := range segs {
		switch {
		case s.first <= sealed:
			problems = append(problems, fmt.Sprintf("%s overlaps the segments before it, which end at seq %d", s.name, sealed))
		case s.first != sealed+1:
			problems = append(problems, fmt.Sprintf("seqs %d..%d are in no segment (the next is %s)", sealed+1, s.first-1, s.name))
		}
		sealed = max(sealed, s.last)
	}
	if sealed > walLast {
		problems = append(problems, fmt.Sprintf("segments reach seq %d, the WAL only %d", sealed, walLast))
	}
	return sealed, problems
}

// segCheck is what checkSegments found.
type segCheck struct {
	files, records int
	fileBytes      int64
	sealed         uint64 // last seq the segments hold
	problems       []string
}

func (c *segCheck) problem(format string, args ...any) {
	if len(c.problems) < 10 {
		c.problems = append(c.problems, fmt.Sprintf(format, args...))
	}
}

// checkSegments checks the segment directory of a stopped node against its
// WAL: no partial segment and nothing set aside; every segment opens,
// matches its name and passes Verify; the segments tile 1..sealed; and each
// record is the WAL's hook of its seq (same id, same body).
func checkSegments(dir string, w walHooks) (segCheck, error) {
	var c segCheck
	d, err := listSegments(dir)
	if err != nil {
		return c, err
	}
	for _, p := range d.partials {
		c.problem("%s: a partial segment is left after a clean stop", p)
	}
	for _, o := range d.others {
		c.problem("%s: not a segment (a damaged segment set aside at boot?)", o)
	}
	var problems []string
	c.sealed, problems = tiling(d.segs, uint64(w.hooks))
	for _, p := range problems {
		c.problem("%s", p)
	}
	bySeq := make(map[uint64]envelope.ID, len(w.byID))
	for id, s := range w.byID {
		bySeq[s.seq] = id
	}
	dec := segment.NewDecoder()
	defer dec.Close()
	for _, s := range d.segs {
		c.files++
		if err := c.checkFile(dir, s, w, bySeq, dec); err != nil {
			c.problem("%v", err)
		}
	}
	return c, nil
}

// checkFile opens, verifies and reads back one segment.
func (c *segCheck) checkFile(dir string, s segName, w walHooks, bySeq map[uint64]envelope.ID, dec *zstd.Decoder) error {
	f, err := segment.OpenFile(vfs.Default, filepath.Join(dir, s.name))
	if err != nil {
		return err
	}
	defer f.Close()
	c.fileBytes += f.Size
	if f.Footer.FirstSeq != s.first || f.Footer.LastSeq != s.last {
		return fmt.Errorf("%s: the footer says seqs %d..%d", s.name, f.Footer.FirstSeq, f.Footer.LastSeq)
	}
	if err := f.Verify(dec); err != nil {
		return fmt.Errorf("%s does not verify: %w", s.name, err)
	}
	var raw []byte
	var env envelope.Envelope
	for i := range f.Index {
		if raw, err = f.ReadBlock(i, dec, raw[:0]); err != nil {
			return err
		}
		err = segment.Records(raw, func(p []byte) error {
			if _, err := envelope.Decode(p, &env); err != nil {
				return fmt.Errorf("%s block %d: %w", s.name, i, err)
			}
			c.records++
			want, ok := bySeq[env.Seq]
			switch {
			case !ok:
				return fmt.Errorf("%s: seq %d (%s) is not in the WAL", s.name, env.Seq, env.ID)
			case want != env.ID:
				return fmt.Errorf("%s: seq %d is %s, in the WAL %s", s.name, env.Seq, env.ID, want)
			case sha256.Sum256(env.Body) != w.byID[want].hash:
				return fmt.Errorf("%s: seq %d (%s) holds another body than the WAL", s.name, env.Seq, env.ID)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// walFileGaps checks the WAL's file numbers run from 1 to the last without
// a gap: with no dispatch stage, no WAL file may ever be deleted. It
// returns the number of files.
func walFileGaps(dir string) (int, []string, error) {
	nums, err := wal.ListFiles(vfs.Default, dir)
	if err != nil {
		return 0, nil, err
	}
	var problems []string
	next := uint64(1)
	for _, n := range nums {
		if n != next {
			problems = append(problems, fmt.Sprintf("WAL files %s..%s are gone: no WAL file may be deleted while no dispatch stage exists", wal.FileName(next), wal.FileName(n-1)))
		}
		next = n + 1
	}
	return len(nums), problems, nil
}
