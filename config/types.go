package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Size is a byte count written as a number of bytes or with a KiB, MiB or GiB
// suffix ("64MiB").
type Size int64

// UnmarshalText parses a size.
func (s *Size) UnmarshalText(b []byte) error {
	v, err := ParseSize(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// ParseSize parses "123", "16KiB", "64MiB", "1GiB" (KB/MB/GB are taken as
// the binary units too, "B" is allowed).
func ParseSize(text string) (Size, error) {
	t := strings.TrimSpace(text)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1 << 10}, {"MB", 1 << 20}, {"GB", 1 << 30}, {"B", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("invalid size %q: want bytes or a number with KiB, MiB or GiB", text)
	}
	return Size(n * mult), nil
}

// Duration is a Go duration ("250ms", "72h").
type Duration time.Duration

// UnmarshalText parses a duration.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(strings.TrimSpace(string(b)))
	if err != nil || v < 0 {
		return fmt.Errorf("invalid duration %q: want a Go duration such as 250ms or 72h", string(b))
	}
	*d = Duration(v)
	return nil
}

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// Secret is a secret value written literally, as env:NAME or as file:/path.
// Load resolves references; Value holds the resolved secret and Ref what
// the config said (kept so that messages never print the secret itself).
type Secret struct {
	Ref   string
	Value string
}

// UnmarshalText keeps the reference; Load resolves it.
func (s *Secret) UnmarshalText(b []byte) error {
	s.Ref = string(b)
	return nil
}

// IsSet reports whether the config gave a value.
func (s Secret) IsSet() bool { return s.Ref != "" }

// String never prints the secret.
func (s Secret) String() string {
	if strings.HasPrefix(s.Ref, "env:") || strings.HasPrefix(s.Ref, "file:") {
		return s.Ref
	}
	if s.Ref == "" {
		return ""
	}
	return "<redacted>"
}
