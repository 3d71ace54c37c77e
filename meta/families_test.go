package meta

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestFamiliesRegistered holds the registry against the source: every key
// constant declared in the package (every string constant of keys.go, and
// every constant named key* or prefix* anywhere in it) is the prefix of a
// registered family, every registered family's prefix is such a constant,
// and no family's keys can be taken for another's.
func TestFamiliesRegistered(t *testing.T) {
	declared := keyConstants(t)
	if len(declared) == 0 {
		t.Fatal("no key constant found in the package's source")
	}
	registered := map[string]string{}
	for _, f := range families {
		if other, dup := registered[f.Prefix]; dup {
			t.Errorf("families %s and %s share the prefix %q", other, f.Name, f.Prefix)
		}
		registered[f.Prefix] = f.Name
	}
	values := map[string]bool{}
	for name, v := range declared {
		values[v] = true
		if _, ok := registered[v]; !ok {
			t.Errorf("key constant %s = %q is not registered: add its family to families in families.go", name, v)
		}
	}
	names := map[string]bool{}
	for _, f := range families {
		if !values[f.Prefix] {
			t.Errorf("family %s: its prefix %q is not a key constant of keys.go", f.Name, f.Prefix)
		}
		if names[f.Name] {
			t.Errorf("two families are named %s", f.Name)
		}
		names[f.Name] = true
		if f.Scope == NotPerTenant && f.Why == "" {
			t.Errorf("family %s is not per tenant and does not say why", f.Name)
		}
		for _, g := range families {
			if f.Name != g.Name && !f.Exact && strings.HasPrefix(g.Prefix, f.Prefix) {
				t.Errorf("family %s's prefix %q starts family %s's %q: their keys cannot be told apart", f.Name, f.Prefix, g.Name, g.Prefix)
			}
		}
	}
}

// keyConstants parses the package's non-test source and returns its key
// constants, by name.
func keyConstants(t *testing.T) map[string]string {
	t.Helper()
	paths, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	fset := token.NewFileSet()
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, path, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					isKey := strings.HasPrefix(name.Name, "key") || strings.HasPrefix(name.Name, "prefix") ||
						strings.HasPrefix(name.Name, "Key") || strings.HasPrefix(name.Name, "Prefix")
					if i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						if isKey {
							t.Errorf("%s: key constant %s is not a string literal", fset.Position(name.Pos()), name.Name)
						}
						continue
					}
					if path == "keys.go" || isKey {
						v, _ := strconv.Unquote(lit.Value)
						out[name.Name] = v
					}
				}
			}
		}
	}
	return out
}
