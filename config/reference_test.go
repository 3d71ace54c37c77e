package config_test

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ankusa/ankusa/config"
)

// The configuration reference (docs/configuration.md) must name every key
// of the config file, and only keys that exist: the key paths are read off
// config.Config's yaml tags, as the loader's schema walk reads them, so a
// key added, renamed or removed without its line in the reference fails
// here.
//
// Notation: a map's entries are <name> (sources.<name>.tenant_id), a
// list's items [] (sources.<name>.sinks[].filter). A map or list of plain
// values (route_resolver.options, node.roles) is one key.

const referencePath = "../docs/configuration.md"

// configKeys walks t and returns every leaf key path (what the reference
// must document) and every path at all, sections included (what it may
// name).
func configKeys(t reflect.Type) (leaves, all []string) {
	var walk func(t reflect.Type, path string)
	walk = func(t reflect.Type, path string) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if path != "" {
			all = append(all, path)
		}
		switch {
		case reflect.PointerTo(t).Implements(textUnmarshaler):
			leaves = append(leaves, path)
		case t.Kind() == reflect.Struct:
			for i := 0; i < t.NumField(); i++ {
				f := t.Field(i)
				name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
				if name == "" || name == "-" || !f.IsExported() {
					continue
				}
				walk(f.Type, joinKey(path, name))
			}
		case (t.Kind() == reflect.Map || t.Kind() == reflect.Slice) && composite(t.Elem()):
			if t.Kind() == reflect.Map {
				walk(t.Elem(), path+".<name>")
			} else {
				walk(t.Elem(), path+"[]")
			}
		default:
			leaves = append(leaves, path)
		}
	}
	walk(t, "")
	return leaves, all
}

var textUnmarshaler = reflect.TypeFor[interface{ UnmarshalText([]byte) error }]()

// composite reports whether values of t have keys of their own.
func composite(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(textUnmarshaler) {
		return false
	}
	switch t.Kind() {
	case reflect.Struct:
		return true
	case reflect.Map, reflect.Slice:
		return composite(t.Elem())
	}
	return false
}

func joinKey(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

var (
	// A table row's first cell, a backquoted key: | `limits.max_body_bytes` | ...
	rowKey = regexp.MustCompile("^\\|\\s*`([^`]+)`\\s*\\|")
	// A backquoted key in a heading: ## `sources.<name>.sinks[]`
	headingKey = regexp.MustCompile("`([^`]+)`")
	// What a key looks like, so that prose in backquotes inside a heading
	// is not taken for one.
	keyShape = regexp.MustCompile(`^[a-z_][a-z0-9_]*(\[\]|\.<name>|\.[a-z_][a-z0-9_]*)*$`)
)

// documentedKeys are the keys the reference names: the first cell of each
// table row and the backquoted keys of headings.
func documentedKeys(doc string) []string {
	var out []string
	inFence := false
	for line := range strings.Lines(doc) {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		switch {
		case strings.HasPrefix(line, "#"):
			for _, m := range headingKey.FindAllStringSubmatch(line, -1) {
				if keyShape.MatchString(m[1]) {
					out = append(out, m[1])
				}
			}
		case strings.HasPrefix(line, "|"):
			if m := rowKey.FindStringSubmatch(line); m != nil {
				out = append(out, m[1])
			}
		}
	}
	return out
}

// referenceGaps compares the keys of t with a reference's text: missing are
// leaf keys the reference does not name, stale what it names that t has
// not.
func referenceGaps(t reflect.Type, doc string) (missing, stale []string) {
	leaves, all := configKeys(t)
	documented := documentedKeys(doc)
	for _, k := range leaves {
		if !slices.Contains(documented, k) {
			missing = append(missing, k)
		}
	}
	for _, k := range documented {
		if !slices.Contains(all, k) && !slices.Contains(stale, k) {
			stale = append(stale, k)
		}
	}
	return missing, stale
}

func TestConfigurationReferenceCoversEveryKey(t *testing.T) {
	b, err := os.ReadFile(referencePath)
	if err != nil {
		t.Fatalf("the configuration reference: %v", err)
	}
	leaves, _ := configKeys(reflect.TypeFor[config.Config]())
	// The walk itself must see the deep keys, or the check proves nothing.
	for _, k := range []string{"node.data_dir", "sources.<name>.sinks[].filter", "sources.<name>.verify.secrets",
		"claims.stores.<name>.pack_bytes", "lifecycle.sink.sasl.password", "admin.tokens[].scopes", "rate_limits.tenants.<name>.burst"} {
		if !slices.Contains(leaves, k) {
			t.Fatalf("the key walk does not yield %s; it yields %v", k, leaves)
		}
	}
	missing, stale := referenceGaps(reflect.TypeFor[config.Config](), string(b))
	if len(missing) > 0 {
		t.Errorf("%s does not document %d keys (add each as a table row | `key` | ...):\n  %s",
			referencePath, len(missing), strings.Join(missing, "\n  "))
	}
	if len(stale) > 0 {
		t.Errorf("%s documents %d keys the config no longer has:\n  %s",
			referencePath, len(stale), strings.Join(stale, "\n  "))
	}
	t.Logf("%d keys documented", len(leaves))
}

// TestReferenceGapsFindsMissingAndStaleKeys runs the check on a made-up
// config type and reference, so that the failing direction is proven too.
func TestReferenceGapsFindsMissingAndStaleKeys(t *testing.T) {
	type sink struct {
		URL    string            `yaml:"url"`
		Hidden string            `yaml:"-"`
		Extra  map[string]string `yaml:"headers"`
	}
	type source struct {
		Sinks []sink          `yaml:"sinks"`
		Size  config.Size     `yaml:"max_body_bytes"`
		Keys  []config.Secret `yaml:"secrets"`
	}
	type fake struct {
		Listen  string            `yaml:"listen"`
		Fake    int               `yaml:"fake_key"`
		Sources map[string]source `yaml:"sources"`
	}
	doc := strings.Join([]string{
		"# Reference",
		"## `sources.<name>`",
		"| Key | Type |",
		"|---|---|",
		"| `listen` | host:port |",
		"| `sources.<name>.sinks[].url` | string |",
		"| `sources.<name>.sinks[].headers` | map |",
		"| `sources.<name>.max_body_bytes` | size |",
		"| `sources.<name>.removed_key` | string |",
		"```yaml",
		"| `inside_a_fence` | not a row |",
		"```",
		"Prose naming `fake_key` documents nothing.",
	}, "\n")
	missing, stale := referenceGaps(reflect.TypeFor[fake](), doc)
	if want := []string{"fake_key", "sources.<name>.secrets"}; !slices.Equal(missing, want) {
		t.Errorf("missing = %q, want %q", missing, want)
	}
	if want := []string{"sources.<name>.removed_key"}; !slices.Equal(stale, want) {
		t.Errorf("stale = %q, want %q", stale, want)
	}
}
