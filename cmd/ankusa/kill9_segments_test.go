package main

// Reading a node's segment directory back into its log: whole segments
// only, each verified, tiling the seqs from 1 with no gap and no overlap.

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/segment"
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
// overlap. It returns sealed, the last seq the segments hold.
func tiling(segs []segName) (sealed uint64, problems []string) {
	for _, s := range segs {
		switch {
		case s.first <= sealed:
			problems = append(problems, fmt.Sprintf("%s overlaps the segments before it, which end at seq %d", s.name, sealed))
		case s.first != sealed+1:
			problems = append(problems, fmt.Sprintf("seqs %d..%d are in no segment (the next is %s)", sealed+1, s.first-1, s.name))
		}
		sealed = max(sealed, s.last)
	}
	return sealed, problems
}

// segCheck is what readSegments found.
type segCheck struct {
	files, records int
	dictFiles      int // version 2: compressed with the segment before's last records
	fileBytes      int64
	sealed         uint64 // last seq the segments hold
	problems       []string
}

func (c *segCheck) problem(format string, args ...any) {
	if len(c.problems) < 10 {
		c.problems = append(c.problems, fmt.Sprintf(format, args...))
	}
}

// readSegmentFiles reads every sealed segment in dir into l and checks the
// directory: nothing set aside, and no partial segment if the node stopped
// cleanly; every segment opens, matches its name, passes Verify (if
// verify: the last read, after a clean stop) and holds exactly the seqs
// its name gives, in order; the segments tile 1..sealed. An error is one
// the check cannot go on from (the directory cannot be listed).
func readSegmentFiles(dir string, l *nodeLog, stopped, verify bool) error {
	c := &l.seg
	d, err := listSegments(dir)
	if err != nil {
		return err
	}
	if stopped {
		for _, p := range d.partials {
			c.problem("%s: a partial segment is left after a clean stop", p)
		}
	}
	for _, o := range d.others {
		c.problem("%s: not a segment (a damaged segment set aside at boot?)", o)
	}
	var problems []string
	c.sealed, problems = tiling(d.segs)
	for _, p := range problems {
		c.problem("%s", p)
	}
	dec := segment.NewDecoder()
	defer dec.Close()
	var raw []byte
	for _, s := range d.segs {
		c.files++
		if raw, err = c.readFile(dir, s, l, dec, verify, raw); err != nil {
			c.problem("%v", err)
		}
	}
	return nil
}

// readFile opens, verifies and reads back one segment into l; raw is a
// reused block buffer.
func (c *segCheck) readFile(dir string, s segName, l *nodeLog, dec *segment.Decoder, verify bool, raw []byte) ([]byte, error) {
	f, err := segment.OpenFile(vfs.Default, filepath.Join(dir, s.name))
	if err != nil {
		return raw, err
	}
	defer f.Close()
	c.fileBytes += f.Size
	if f.DictID != 0 {
		c.dictFiles++
	}
	if f.Footer.FirstSeq != s.first || f.Footer.LastSeq != s.last {
		return raw, fmt.Errorf("%s: the footer says seqs %d..%d", s.name, f.Footer.FirstSeq, f.Footer.LastSeq)
	}
	if verify {
		if err := f.Verify(dec); err != nil {
			return raw, fmt.Errorf("%s does not verify: %w", s.name, err)
		}
	}
	var env envelope.Envelope
	next := s.first
	for i := range f.Index {
		if raw, err = f.ReadBlock(i, dec, raw[:0]); err != nil {
			return raw, err
		}
		err = segment.Records(raw, func(p []byte) error {
			if _, err := envelope.Decode(p, &env); err != nil {
				return fmt.Errorf("%s block %d: %w", s.name, i, err)
			}
			if env.Seq != next {
				return fmt.Errorf("%s block %d: seq %d where %d was due", s.name, i, env.Seq, next)
			}
			next++
			c.records++
			l.addSegment(&env, sha256.Sum256(p), s.name)
			return nil
		})
		if err != nil {
			return raw, err
		}
	}
	if next != s.last+1 {
		return raw, fmt.Errorf("%s holds seqs %d..%d, its name says %d..%d", s.name, s.first, next-1, s.first, s.last)
	}
	return raw, nil
}
