package archtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/ankusa/ankusa"

// table is ARCHITECTURE.md's import table: for each package, the packages
// of this module it may import (non-test files), and the rules no row may
// break.
type table struct {
	allowed map[string][]string // package → may import
	never   []rule
}

// rule forbids the arrows from any package matching from to any matching
// to; a pattern is a package, or prefix/... for it and those below it, or
// * for every package. A line "name = patterns" in the never block names
// a group, used as @name in the rules after it.
type rule struct{ from, to []string }

// TestImports: every package of the module has a row, imports only what
// its row allows, and its row allows nothing it does not import; no row
// breaks a rule of the "never" list.
func TestImports(t *testing.T) {
	tab := readTable(t, filepath.Join("..", "..", "ARCHITECTURE.md"))
	got := projectImports(t)
	for _, p := range sortedKeys(got) {
		allowed, ok := tab.allowed[p]
		if !ok {
			t.Errorf("%s has no row in ARCHITECTURE.md's import table: add one (what it may import, and why in the package doc)", p)
			continue
		}
		for _, imp := range got[p] {
			if !slices.Contains(allowed, imp) {
				t.Errorf("%s imports %s, which its row in ARCHITECTURE.md does not allow: a new arrow is a design decision, change the table in the same commit and say why", p, imp)
			}
		}
		for _, a := range allowed {
			if !slices.Contains(got[p], a) {
				t.Errorf("ARCHITECTURE.md allows %s to import %s, which it does not: keep the table true", p, a)
			}
		}
	}
	for _, p := range sortedKeys(tab.allowed) {
		if _, ok := got[p]; !ok {
			t.Errorf("ARCHITECTURE.md has a row for %s, which is not a package of the module", p)
		}
		for _, a := range tab.allowed[p] {
			for _, r := range tab.never {
				if r.forbids(p, a) {
					t.Errorf("ARCHITECTURE.md allows %s → %s, which its rule %q forbids", p, a, r)
				}
			}
		}
	}
}

func (r rule) forbids(from, to string) bool {
	return from != to && matchAny(r.from, from) && matchAny(r.to, to)
}

func (r rule) String() string { return strings.Join(r.from, " ") + " -> " + strings.Join(r.to, " ") }

func matchAny(patterns []string, p string) bool {
	for _, pat := range patterns {
		switch {
		case pat == "*", pat == p:
			return true
		case strings.HasSuffix(pat, "/..."):
			base := strings.TrimSuffix(pat, "/...")
			if p == base || strings.HasPrefix(p, base+"/") {
				return true
			}
		}
	}
	return false
}

// readTable parses the two fenced blocks of path that follow the lines
// "<!-- imports -->" and "<!-- never -->".
func readTable(t *testing.T, path string) table {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("cannot read the import table: %v", err)
	}
	tab := table{allowed: map[string][]string{}}
	for _, line := range block(t, b, "<!-- imports -->") {
		f := strings.Fields(line)
		if _, dup := tab.allowed[f[0]]; dup {
			t.Fatalf("ARCHITECTURE.md: two rows for %s", f[0])
		}
		tab.allowed[f[0]] = nil
		if len(f) > 1 && f[1] != "-" {
			tab.allowed[f[0]] = f[1:]
		}
	}
	groups := map[string][]string{}
	expand := func(fields []string) []string {
		var out []string
		for _, f := range fields {
			if g, ok := groups[strings.TrimPrefix(f, "@")]; ok && strings.HasPrefix(f, "@") {
				out = append(out, g...)
			} else if strings.HasPrefix(f, "@") {
				t.Fatalf("ARCHITECTURE.md: no group %s", f)
			} else {
				out = append(out, f)
			}
		}
		return out
	}
	for _, line := range block(t, b, "<!-- never -->") {
		if name, pkgs, ok := strings.Cut(line, "="); ok {
			groups[strings.TrimSpace(name)] = expand(strings.Fields(pkgs))
			continue
		}
		from, to, ok := strings.Cut(line, "->")
		if !ok {
			t.Fatalf("ARCHITECTURE.md: never rule %q has no ->", line)
		}
		tab.never = append(tab.never, rule{expand(strings.Fields(from)), expand(strings.Fields(to))})
	}
	if len(tab.allowed) == 0 || len(tab.never) == 0 {
		t.Fatal("ARCHITECTURE.md: the import table or the never rules are empty")
	}
	return tab
}

// block returns the lines of the fenced block after marker, without
// blank lines and # comments.
func block(t *testing.T, b []byte, marker string) []string {
	t.Helper()
	i := bytes.Index(b, []byte(marker))
	if i < 0 {
		t.Fatalf("ARCHITECTURE.md: no %s", marker)
	}
	sc := bufio.NewScanner(bytes.NewReader(b[i+len(marker):]))
	var lines []string
	in := false
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "```") {
			if in {
				return lines
			}
			in = true
			continue
		}
		if line, _, _ = strings.Cut(line, "#"); in && strings.TrimSpace(line) != "" {
			lines = append(lines, strings.TrimSpace(line))
		}
	}
	t.Fatalf("ARCHITECTURE.md: the block after %s does not end", marker)
	return nil
}

// projectImports lists, for every package of the module, the packages of
// the module its non-test files import (paths relative to the module).
func projectImports(t *testing.T) map[string][]string {
	t.Helper()
	got := map[string][]string{}
	for name, imps := range listImports(t) {
		got[name] = []string{}
		for _, imp := range imps {
			if imp == module || strings.HasPrefix(imp, module+"/") {
				got[name] = append(got[name], rel(imp))
			}
		}
	}
	return got
}

// listImports is go list's word: for every package of the module (relative
// to the module), every import of its non-test files.
func listImports(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", module+"/...")
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	got := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("go list: %v", err)
		}
		got[rel(p.ImportPath)] = p.Imports
	}
	if len(got) < 10 {
		panic(fmt.Sprintf("BUG: go list found %d packages", len(got)))
	}
	return got
}

// TestStoreAccess: meta is the only package that talks to pebble; the
// others may use its file-system interface (pebble/v2/vfs, DESIGN.md §6
// item 7), never the store itself.
func TestStoreAccess(t *testing.T) {
	const pebble = "github.com/cockroachdb/pebble/v2"
	for name, imps := range listImports(t) {
		for _, imp := range imps {
			if name == "meta" || (imp != pebble && !strings.HasPrefix(imp, pebble+"/")) {
				continue
			}
			if imp != pebble+"/vfs" && !strings.HasPrefix(imp, pebble+"/vfs/") {
				t.Errorf("%s imports %s: only meta reads and writes the node's store; use its typed API", name, imp)
			}
		}
	}
}

func rel(p string) string {
	if p == module {
		return "."
	}
	return strings.TrimPrefix(p, module+"/")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TestRules: the patterns of the never block match what they say.
func TestRules(t *testing.T) {
	storage := rule{from: []string{"wal", "dispatch/..."}, to: []string{"edge"}}
	leaf := rule{from: []string{"config"}, to: []string{"*"}}
	for _, tc := range []struct {
		r        rule
		from, to string
		want     bool
	}{
		{storage, "wal", "edge", true},
		{storage, "dispatch", "edge", true},
		{storage, "dispatch/sink/httpsink", "edge", true},
		{storage, "dispatcher", "edge", false},
		{storage, "wal", "envelope", false},
		{storage, "edge", "wal", false},
		{leaf, "config", "envelope", true},
		{leaf, "config", "config", false},
		{leaf, "meta", "envelope", false},
	} {
		if got := tc.r.forbids(tc.from, tc.to); got != tc.want {
			t.Errorf("%q forbids %s -> %s = %v, want %v", tc.r, tc.from, tc.to, got, tc.want)
		}
	}
}
