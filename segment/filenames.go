package segment

import (
	"fmt"
	"strconv"
	"strings"
)

// File names in the segment directory, built here and nowhere else:
//
//	<first seq %020d>-<last seq %020d>.seg   a sealed segment
//	<first seq %020d>.partial                 the open segment, being written
//	<name>.corrupt                            a whole segment that failed its
//	                                          checks at boot, set aside
//	<name>.restoring                          the archived copy of a damaged
//	                                          segment, being downloaded
//
// The archive names its objects after the sealed segment's name
// (FileName, or Stem and ParseStem beside its own suffixes), so a segment's
// name is built and parsed only here.
const (
	// Suffix ends the name of a sealed segment.
	Suffix        = ".seg"
	partialSuffix = ".partial"
	corruptSuffix = ".corrupt"
	restoreSuffix = ".restoring"
)

// RestoringName is the name the archived copy of segment name is
// downloaded to before it is renamed over the damaged file; boot removes
// one a crash left.
func RestoringName(name string) string { return name + restoreSuffix }

// Stem is the name of the segment holding seqs first..last without its
// suffix: the seqs zero-padded, so names list in seq order. The archive's
// keys end in it too.
func Stem(first, last uint64) string { return fmt.Sprintf("%020d-%020d", first, last) }

// FileName is the name of the segment holding seqs first..last.
func FileName(first, last uint64) string { return Stem(first, last) + Suffix }

func partialName(first uint64) string { return fmt.Sprintf("%020d%s", first, partialSuffix) }

// parseFileName returns the seq range of a sealed segment's file name.
func parseFileName(name string) (first, last uint64, ok bool) {
	stem, found := strings.CutSuffix(name, Suffix)
	if !found {
		return 0, 0, false
	}
	return ParseStem(stem)
}

// ParseStem returns the seq range a Stem names. Seqs start at 1, so a
// stem whose first seq is 0, or whose last is below its first, names no
// segment.
func ParseStem(stem string) (first, last uint64, ok bool) {
	a, b, found := strings.Cut(stem, "-")
	if !found {
		return 0, 0, false
	}
	first, err1 := strconv.ParseUint(a, 10, 64)
	last, err2 := strconv.ParseUint(b, 10, 64)
	return first, last, err1 == nil && err2 == nil && first > 0 && last >= first
}
