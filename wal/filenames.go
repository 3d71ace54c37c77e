package wal

import (
	"fmt"
	"strconv"
	"strings"
)

const (
	fileSuffix = ".wal"
	// tmpSuffix marks a file that is not yet, or no longer, part of the
	// log: a tail cut being written, a file being prepared, a retired file
	// being erased. Recovery removes them.
	tmpSuffix = ".tmp"
)

// FileName is the name of WAL file number n.
func FileName(n uint64) string { return fmt.Sprintf("%012d%s", n, fileSuffix) }

// ParseFileName returns the number of a WAL file name.
func ParseFileName(name string) (uint64, bool) {
	if !strings.HasSuffix(name, fileSuffix) {
		return 0, false
	}
	n, err := strconv.ParseUint(strings.TrimSuffix(name, fileSuffix), 10, 64)
	return n, err == nil && n > 0
}

// tmpName is the name WAL file n is written under before it is renamed
// into the log.
func tmpName(n uint64) string { return FileName(n) + tmpSuffix }
