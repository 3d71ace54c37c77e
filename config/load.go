package config

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"

	"github.com/goccy/go-yaml"
)

//go:embed default.yaml
var defaultYAML []byte

// DefaultYAML is the embedded configuration that `ankusa serve` runs with no
// -config: single tenant, path resolver, one demo source, data under ./data.
func DefaultYAML() []byte { return defaultYAML }

// Problems is every problem found in a configuration, one per line.
type Problems []string

func (p Problems) Error() string { return strings.Join(p, "\n") }

func (p *Problems) add(format string, args ...any) { *p = append(*p, fmt.Sprintf(format, args...)) }

// Load parses, defaults, resolves and validates a configuration. The error,
// when not nil, is a Problems naming every problem found.
func Load(data []byte, opts ValidateOptions) (*Config, error) {
	cfg, probs := Parse(data)
	if len(probs) > 0 {
		return nil, probs
	}
	probs = append(probs, cfg.ResolveSecrets()...)
	probs = append(probs, Validate(cfg, opts)...)
	if len(probs) > 0 {
		return cfg, probs
	}
	return cfg, nil
}

// LoadFile is Load on a file's contents.
func LoadFile(path string, opts ValidateOptions) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, Problems{fmt.Sprintf("cannot read config %q: %v", path, err)}
	}
	return Load(data, opts)
}

// Parse decodes YAML into a Config with defaults applied. Unknown keys are
// problems, each named by its path.
func Parse(data []byte) (*Config, Problems) {
	var probs Problems
	var raw any
	if err := yaml.Unmarshal(data, &raw); err != nil {
		probs.add("cannot parse config: %s", oneLine(yaml.FormatError(err, false, false)))
		return nil, probs
	}
	if raw != nil {
		if _, ok := raw.(map[string]any); !ok {
			probs.add("cannot parse config: the top level must be a mapping of keys")
			return nil, probs
		}
		unknownKeys(raw, reflect.TypeOf(Config{}), "", &probs)
		if len(probs) > 0 {
			sort.Strings(probs)
			return nil, probs
		}
	}
	cfg := &Config{}
	if err := yaml.UnmarshalWithOptions(data, cfg, yaml.DisallowUnknownField()); err != nil {
		probs.add("invalid config: %s", oneLine(yaml.FormatError(err, false, false)))
		return nil, probs
	}
	cfg.ApplyDefaults()
	return cfg, nil
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

var textUnmarshaler = reflect.TypeOf((*interface{ UnmarshalText([]byte) error })(nil)).Elem()

// unknownKeys walks a decoded YAML value against a struct type and records
// every key the type does not have, and every size or duration that does
// not parse.
func unknownKeys(v any, t reflect.Type, path string, probs *Problems) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(textUnmarshaler) {
		checkText(v, t, path, probs)
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return // a type error; the typed decode names it
		}
		fields := map[string]reflect.Type{}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name := strings.Split(f.Tag.Get("yaml"), ",")[0]
			if name != "" && name != "-" {
				fields[name] = f.Type
			}
		}
		for k, sub := range m {
			ft, ok := fields[k]
			p := joinPath(path, k)
			if !ok {
				probs.add("%s: unknown key", p)
				continue
			}
			unknownKeys(sub, ft, p, probs)
		}
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		for k, sub := range m {
			unknownKeys(sub, t.Elem(), joinPath(path, k), probs)
		}
	case reflect.Slice:
		s, ok := v.([]any)
		if !ok {
			return
		}
		for i, sub := range s {
			unknownKeys(sub, t.Elem(), fmt.Sprintf("%s[%d]", path, i), probs)
		}
	}
}

// checkText reports a scalar that a text-decoded type (a size, a duration)
// refuses, by its path: the typed decode names neither the key nor the line.
func checkText(v any, t reflect.Type, path string, probs *Problems) {
	switch v.(type) {
	case nil, map[string]any, []any:
		return // absent, or a type error the typed decode names
	}
	u := reflect.New(t).Interface().(interface{ UnmarshalText([]byte) error })
	if err := u.UnmarshalText([]byte(fmt.Sprint(v))); err != nil {
		probs.add("%s: %v", path, err)
	}
}

func joinPath(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// ResolveSecrets replaces env: and file: references by their values.
func (c *Config) ResolveSecrets() Problems {
	var probs Problems
	resolve := func(path string, s *Secret) {
		v, err := s.resolve()
		if err != nil {
			probs.add("%s: %v", path, err)
			return
		}
		s.Value = v
	}
	resolve("archive.access_key", &c.Archive.AccessKey)
	resolve("archive.secret_key", &c.Archive.SecretKey)
	resolve("secrets.kek", &c.Secrets.KEK)
	resolve("secrets.kek_previous", &c.Secrets.KEKPrevious)
	if c.Lifecycle.Sink != nil {
		resolve("lifecycle.sink.secret", &c.Lifecycle.Sink.Secret)
	}
	for _, name := range c.SourceNames() {
		src := c.Sources[name]
		p := "sources." + name
		resolve(p+".verify.secret", &src.Verify.Secret)
		for i := range src.Verify.Secrets {
			resolve(fmt.Sprintf("%s.verify.secrets[%d]", p, i), &src.Verify.Secrets[i])
		}
		for i := range src.Sinks {
			resolve(fmt.Sprintf("%s.sinks[%d].secret", p, i), &src.Sinks[i].Secret)
		}
		c.Sources[name] = src
	}
	return probs
}

// ErrSecretRef is wrapped by every failure to resolve a secret reference.
var ErrSecretRef = errors.New("cannot resolve secret")

func (s Secret) resolve() (string, error) {
	switch {
	case strings.HasPrefix(s.Ref, "env:"):
		name := strings.TrimPrefix(s.Ref, "env:")
		v, ok := os.LookupEnv(name)
		if !ok || v == "" {
			return "", fmt.Errorf("%w: environment variable %s is not set", ErrSecretRef, name)
		}
		return v, nil
	case strings.HasPrefix(s.Ref, "file:"):
		path := strings.TrimPrefix(s.Ref, "file:")
		b, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("%w: %v", ErrSecretRef, err)
		}
		v := strings.TrimRight(string(b), "\r\n")
		if v == "" {
			return "", fmt.Errorf("%w: file %s is empty", ErrSecretRef, path)
		}
		return v, nil
	default:
		return s.Ref, nil
	}
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
