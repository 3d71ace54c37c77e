package payload

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Body size bounds. The floor leaves room for every mandatory field of the
// generated events; the ceiling keeps the payload pools in memory.
const (
	minBodySize = 512
	maxBodySize = 16 << 20
)

// SizeClass is one body size and its share of requests.
type SizeClass struct {
	Size    int
	Percent float64
}

// SizeMix is the -size distribution: classes in the order given.
type SizeMix []SizeClass

// pick draws a class index with the mix's weights.
func (m SizeMix) pick(r *rand.Rand) int {
	if len(m) == 1 {
		return 0
	}
	u := r.Float64() * 100
	for i, c := range m {
		if u < c.Percent {
			return i
		}
		u -= c.Percent
	}
	return len(m) - 1
}

// String renders the mix as -size accepts it.
func (m SizeMix) String() string {
	if len(m) == 1 {
		return formatSize(m[0].Size)
	}
	parts := make([]string, len(m))
	for i, c := range m {
		parts[i] = strconv.FormatFloat(c.Percent, 'f', -1, 64) + "%" + formatSize(c.Size)
	}
	return strings.Join(parts, ",")
}

// ParseSizeMix parses "1KiB", "512" or "70%1KiB,25%8KiB,5%64KiB".
func ParseSizeMix(s string) (SizeMix, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("empty size")
	}
	if !strings.ContainsAny(s, "%,") {
		n, err := parseSize(s)
		if err != nil {
			return nil, err
		}
		return SizeMix{{Size: n, Percent: 100}}, nil
	}
	var mix SizeMix
	total := 0.0
	for item := range strings.SplitSeq(s, ",") {
		c, err := parseSizeClass(strings.TrimSpace(item))
		if err != nil {
			return nil, err
		}
		total += c.Percent
		mix = append(mix, c)
	}
	if math.Abs(total-100) > 1e-6 {
		return nil, fmt.Errorf("percentages sum to %g, not 100", total)
	}
	return mix, nil
}

// parseSizeClass parses one "P%SIZE" item of a mix.
func parseSizeClass(item string) (SizeClass, error) {
	pct, size, ok := strings.Cut(item, "%")
	if !ok {
		return SizeClass{}, fmt.Errorf("mix item %q: write it as PERCENT%%SIZE, e.g. 70%%1KiB", item)
	}
	p, err := strconv.ParseFloat(strings.TrimSpace(pct), 64)
	if err != nil || p <= 0 || p > 100 || math.IsNaN(p) {
		return SizeClass{}, fmt.Errorf("mix item %q: the percentage must be a number in (0, 100]", item)
	}
	n, err := parseSize(strings.TrimSpace(size))
	if err != nil {
		return SizeClass{}, fmt.Errorf("mix item %q: %w", item, err)
	}
	return SizeClass{Size: n, Percent: p}, nil
}

// sizeUnits are the accepted suffixes, longest first.
var sizeUnits = []struct {
	suffix string
	mult   int
}{{"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}}

// parseSize parses "512", "512B", "1KiB" or "2MiB" into bytes, within the
// body size bounds.
func parseSize(s string) (int, error) {
	num, mult := s, 1
	for _, u := range sizeUnits {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			num, mult = rest, u.mult
			break
		}
	}
	n, err := strconv.Atoi(strings.TrimSpace(num))
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("size %q: want a positive whole number of bytes, optionally with B, KiB or MiB", s)
	}
	if n > maxBodySize/mult {
		return 0, fmt.Errorf("size %q: larger than the %s limit", s, formatSize(maxBodySize))
	}
	if n*mult < minBodySize {
		return 0, fmt.Errorf("size %q: smaller than %d bytes, the room the generated events need", s, minBodySize)
	}
	return n * mult, nil
}

// formatSize renders a byte count the way parseSize reads it.
func formatSize(n int) string {
	switch {
	case n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + "MiB"
	case n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + "KiB"
	}
	return strconv.Itoa(n)
}
