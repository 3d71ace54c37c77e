package config

import (
	_ "embed"
	"fmt"
	"os"
	"sort"
)

//go:embed default.yaml
var defaultYAML []byte

// DefaultYAML is the embedded configuration that `ankusa serve` runs with no
// -config: single tenant, path resolver, one demo source, data under ./data.
func DefaultYAML() []byte { return defaultYAML }

// Load parses, defaults, resolves and validates a configuration. The error,
// when not nil, is a Problems naming every problem found: the unknown keys
// and the values that do not parse (sorted by key), then what resolving
// and validating the rest found, in the file's order (see schema.go). The
// config comes back with problems too, nil only when the text is not YAML
// or not a mapping; a caller must not run a config that has problems.
func Load(data []byte, opts ValidateOptions) (*Config, error) {
	d := parse(data)
	if d.cfg == nil {
		return nil, d.probs
	}
	probs := d.probs
	probs = append(probs, d.cfg.ResolveSecrets().outside(d.nulled)...)
	probs = append(probs, Validate(d.cfg, opts).outside(d.nulled)...)
	if len(probs) > 0 {
		return d.cfg, probs
	}
	return d.cfg, nil
}

// LoadFile is Load on a file's contents.
func LoadFile(path string, opts ValidateOptions) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, Problems{fmt.Sprintf("cannot read config %q: %v", path, err)}
	}
	return Load(data, opts)
}

// Parse decodes YAML into a Config with defaults applied. Unknown keys and
// values that do not parse are problems, each named by its path, sorted;
// the Config holds everything else (a value that did not parse is left out,
// so its key takes its default). The Config is nil only when the text is
// not YAML or its top level is not a mapping.
func Parse(data []byte) (*Config, Problems) {
	d := parse(data)
	return d.cfg, d.probs
}

// SourceNames returns the configured source names, sorted.
func (c *Config) SourceNames() []string {
	names := make([]string, 0, len(c.Sources))
	for n := range c.Sources {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
