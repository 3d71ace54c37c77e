// Package golden reads the annotated hex files that pin on-disk formats
// (envelope, WAL): hex digits, whitespace ignored, '#' to the end of a line
// a comment, so each field can sit on its own line with what it is. Only
// tests import it; it imports nothing of this module.
package golden

import (
	"encoding/hex"
	"fmt"
	"os"
	"strings"
)

// ReadHex returns the bytes an annotated hex file spells.
func ReadHex(path string) ([]byte, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var digits strings.Builder
	for _, line := range strings.Split(string(text), "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		digits.WriteString(strings.Join(strings.Fields(line), ""))
	}
	b, err := hex.DecodeString(digits.String())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return b, nil
}
