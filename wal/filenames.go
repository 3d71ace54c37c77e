package wal

import (
	"fmt"
	"strconv"
	"strings"
)

const fileSuffix = ".wal"

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

func tmpName(n uint64) string { return FileName(n) + ".tmp" }
