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
const (
	segSuffix     = ".seg"
	partialSuffix = ".partial"
	corruptSuffix = ".corrupt"
)

// Stem is the name of the segment holding seqs first..last without its
// suffix: the seqs zero-padded, so names list in seq order. The archive's
// keys end in it too.
func Stem(first, last uint64) string { return fmt.Sprintf("%020d-%020d", first, last) }

// FileName is the name of the segment holding seqs first..last.
func FileName(first, last uint64) string { return Stem(first, last) + segSuffix }

func partialName(first uint64) string { return fmt.Sprintf("%020d%s", first, partialSuffix) }

// parseFileName returns the seq range of a segment file name.
func parseFileName(name string) (first, last uint64, ok bool) {
	base, found := strings.CutSuffix(name, segSuffix)
	if !found {
		return 0, 0, false
	}
	a, b, found := strings.Cut(base, "-")
	if !found {
		return 0, 0, false
	}
	first, err1 := strconv.ParseUint(a, 10, 64)
	last, err2 := strconv.ParseUint(b, 10, 64)
	return first, last, err1 == nil && err2 == nil && first > 0 && last >= first
}
