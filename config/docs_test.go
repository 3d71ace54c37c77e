package config_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"unicode"

	"github.com/ankusa/ankusa/config"
)

// The operator documentation (docs/*.md) quotes config keys and links to
// other files. Both go stale silently when a key is renamed or a file
// moves, so this test holds them to the reference: every config key a
// page quotes in backquotes must be a key (or a section) of
// docs/configuration.md, which reference_test.go holds to the config
// types, and every relative link of docs/*.md and README.md must name a
// file that exists.

const docsDir = "../docs"

var (
	// A quoted key: a top-level key, then .segments (a name of your
	// choice, <name>, or a key) and [] or [n] list items, e.g.
	// `sources.stripe.sinks[0].url` or `wal.type: none`.
	quotedKey = regexp.MustCompile(`^([a-z_][a-z0-9_]*)((?:\.(?:<name>|[a-z0-9_-]+)|\[[0-9]*\])+)`)
	codeSpan  = regexp.MustCompile("`([^`\n]+)`")
	mdLink    = regexp.MustCompile(`\[[^\]\n]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	itemIndex = regexp.MustCompile(`\[[0-9]*\]`)
	urlScheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
	// A metric name: ankusa_..., maybe with a histogram's suffix.
	metricName = regexp.MustCompile(`\bankusa_[a-z0-9_]*[a-z0-9]`)
)

const metricsPath = "../docs/metrics.md"

// unknownMetrics lists the ankusa_ metric names doc mentions that are not a
// row of the metrics page (rows: documented), one "line: name" each. A
// histogram's _bucket, _sum and _count are its own name.
func unknownMetrics(doc string, documented []string) []string {
	var out []string
	proseLines(doc, func(n int, line string) {
		for _, m := range metricName.FindAllString(line, -1) {
			base := m
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if b, ok := strings.CutSuffix(m, suffix); ok && slices.Contains(documented, b) {
					base = b
				}
			}
			if !slices.Contains(documented, base) {
				out = append(out, fmt.Sprintf("line %d: %s", n, m))
			}
		}
	})
	return out
}

// topLevelKeys are the config file's top-level keys, read off the yaml
// tags of config.Config.
func topLevelKeys() []string {
	var out []string
	t := reflect.TypeFor[config.Config]()
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

// proseLines yields the lines of a markdown text outside fenced code
// blocks, with their numbers.
func proseLines(doc string, yield func(n int, line string)) {
	inFence := false
	n := 0
	for line := range strings.Lines(doc) {
		n++
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if !inFence {
			yield(n, line)
		}
	}
}

// quotedKeys returns the config keys a page quotes: code spans that start
// with one of top (followed by at least one .segment), cut at the first
// character that cannot be part of a key (`wal.type: none` quotes
// wal.type). File names (config.go, ...) are not keys.
func quotedKeys(doc string, top []string) []string {
	var out []string
	proseLines(doc, func(_ int, line string) {
		for _, m := range codeSpan.FindAllStringSubmatch(line, -1) {
			span := m[1]
			k := quotedKey.FindStringSubmatch(span)
			if k == nil || !slices.Contains(top, k[1]) {
				continue
			}
			key := k[0]
			if rest := span[len(key):]; rest != "" && !strings.ContainsAny(rest[:1], ": =,)") {
				continue // not a key followed by a value: a path, a type, prose
			}
			switch filepath.Ext(key) {
			case ".go", ".md", ".yaml", ".yml", ".json":
				continue
			}
			out = append(out, key)
		}
	})
	return out
}

// keyIn reports whether key (as quoted, with names of your choice and
// list items) is a key or a section of one of the reference's keys (with
// <name> and []).
func keyIn(key string, reference []string) bool {
	q := strings.Split(itemIndex.ReplaceAllString(key, ""), ".")
	for _, r := range reference {
		d := strings.Split(strings.ReplaceAll(r, "[]", ""), ".")
		if len(q) > len(d) {
			continue
		}
		match := true
		for i := range q {
			if q[i] != d[i] && d[i] != "<name>" && q[i] != "<name>" {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

// unknownKeys lists the quoted keys of doc that the reference does not
// have, one "line: key" each.
func unknownKeys(doc string, reference []string, top []string) []string {
	var out []string
	proseLines(doc, func(n int, line string) {
		for _, k := range quotedKeys(line, top) {
			if !keyIn(k, reference) {
				out = append(out, fmt.Sprintf("line %d: `%s`", n, k))
			}
		}
	})
	return out
}

// brokenLinks lists the relative links of the page at path (text doc)
// whose file does not exist. Links inside code are not links; absolute
// URLs and in-page anchors are not checked.
func brokenLinks(path, doc string) []string {
	var out []string
	proseLines(doc, func(n int, line string) {
		line = codeSpan.ReplaceAllString(line, "")
		for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
			target := m[1]
			if urlScheme.MatchString(target) || strings.HasPrefix(target, "#") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			file = filepath.Join(filepath.Dir(path), filepath.FromSlash(file))
			b, err := os.ReadFile(file)
			switch {
			case err != nil && !errors.Is(err, syscall.EISDIR):
				out = append(out, fmt.Sprintf("%s line %d: %s", path, n, m[1]))
			case err == nil && anchor != "" && strings.HasSuffix(file, ".md") && !slices.Contains(anchors(string(b)), anchor):
				out = append(out, fmt.Sprintf("%s line %d: %s (no heading makes that anchor)", path, n, m[1]))
			}
		}
	})
	return out
}

// anchors are the in-page anchors the headings of a markdown page make,
// as GitHub makes them: lower case, punctuation dropped, spaces as
// hyphens, a repeated one suffixed -1, -2...
func anchors(doc string) []string {
	var out []string
	seen := map[string]int{}
	proseLines(doc, func(_ int, line string) {
		if !strings.HasPrefix(line, "#") {
			return
		}
		text := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		a := b.String()
		if k := seen[a]; k > 0 {
			out = append(out, fmt.Sprintf("%s-%d", a, k))
		} else {
			out = append(out, a)
		}
		seen[a]++
	})
	return out
}

func readReferenceKeys(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(referencePath)
	if err != nil {
		t.Fatalf("the configuration reference: %v", err)
	}
	keys := documentedKeys(string(b))
	if len(keys) < 100 {
		t.Fatalf("%s yields %d keys: the row parser no longer reads it", referencePath, len(keys))
	}
	return keys
}

func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(docsDir, "*.md"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no pages under %s: %v", docsDir, err)
	}
	return pages
}

// operatorPages are docs/*.md but the reference itself, which
// reference_test.go holds to the config types (and whose prose quotes a
// misspelt key on purpose).
func operatorPages(t *testing.T) []string {
	t.Helper()
	return slices.DeleteFunc(docPages(t), func(p string) bool { return filepath.Base(p) == filepath.Base(referencePath) })
}

func TestDocsQuoteOnlyReferenceKeys(t *testing.T) {
	reference := readReferenceKeys(t)
	top := topLevelKeys()
	quoted := 0
	for _, page := range operatorPages(t) {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		quoted += len(quotedKeys(string(b), top))
		if bad := unknownKeys(string(b), reference, top); len(bad) > 0 {
			t.Errorf("%s quotes %d config keys that %s does not have (renamed or misspelled?):\n  %s",
				page, len(bad), referencePath, strings.Join(bad, "\n  "))
		}
	}
	// The operator pages quote hundreds of keys; a handful means the
	// extraction broke and the check proves nothing.
	if quoted < 100 {
		t.Errorf("only %d quoted config keys found in %s/*.md", quoted, docsDir)
	}
}

// Every metric an operator page names is one the metrics page lists, which
// deploy/metrics_test.go holds to the code.
func TestDocsNameOnlyExportedMetrics(t *testing.T) {
	b, err := os.ReadFile(metricsPath)
	if err != nil {
		t.Fatal(err)
	}
	documented := documentedKeys(string(b)) // the first cell of each row
	if len(documented) < 100 {
		t.Fatalf("%s yields %d metric rows: the row parser no longer reads it", metricsPath, len(documented))
	}
	if got := unknownMetrics("`ankusa_wal_fsync_seconds_bucket` and ankusa_wal_last_seq, not `ankusa_wal_lastseq`", documented); !slices.Equal(got, []string{"line 1: ankusa_wal_lastseq"}) {
		t.Fatalf("unknownMetrics on a made-up line = %q", got)
	}
	named := 0
	for _, page := range operatorPages(t) {
		if filepath.Base(page) == filepath.Base(metricsPath) {
			continue
		}
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		named += len(metricName.FindAllString(string(b), -1))
		if bad := unknownMetrics(string(b), documented); len(bad) > 0 {
			t.Errorf("%s names %d metrics that %s does not list:\n  %s", page, len(bad), metricsPath, strings.Join(bad, "\n  "))
		}
	}
	if named < 20 {
		t.Errorf("only %d metric names found in the operator pages", named)
	}
}

func TestDocsLinksResolve(t *testing.T) {
	pages := append(docPages(t), "../README.md")
	links := 0
	for _, page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		links += len(mdLink.FindAllString(string(b), -1))
		for _, bad := range brokenLinks(page, string(b)) {
			t.Errorf("a link to a file that does not exist: %s", bad)
		}
	}
	if links < 10 {
		t.Errorf("only %d links found: the link parser no longer reads the pages", links)
	}
}

// TestDocsCheckFindsRenamedKey removes a key from the reference, as a
// rename does, and expects the real pages that quote it to fail; then runs
// both checks on a made-up page.
func TestDocsCheckFindsRenamedKey(t *testing.T) {
	reference := readReferenceKeys(t)
	top := topLevelKeys()
	renamed := slices.DeleteFunc(slices.Clone(reference), func(k string) bool { return k == "wal.type" })
	renamed = append(renamed, "wal.kind")
	found := false
	for _, page := range operatorPages(t) {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range unknownKeys(string(b), renamed, top) {
			if strings.HasSuffix(bad, "`wal.type`") {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("with wal.type renamed in the reference, no page was found quoting it")
	}

	page := strings.Join([]string{
		"Set `wal.type: none` and `sources.stripe.sinks[0].url`, `rate_limits.tenants.acme.rate`,",
		"`sources.<name>.dedupe.key` and the section `rate_limits.default`.",
		"Wrong: `wal.typo`, `sources.stripe.sinks[].urll`, `limits.max_body` and `dedupe.key: auto`.",
		"Not keys: `wal/`, `config.Config`, `admin.go`, `ankusa_wal_last_seq`, `tenant.Erase`.",
		"```yaml",
		"`wal.in_a_fence`",
		"```",
		"[ok](configuration.md), [ok too](metrics.md#edge-public-listener), [web](https://example.com/x.md),",
		"[gone](nowhere.md), `[in code](nowhere-either.md)`, [anchor](#here), [dir](../config/),",
		"[a heading](configuration.md#sourcesnamesinks), [no such heading](configuration.md#sinks-of-a-source).",
	}, "\n")
	want := []string{"line 3: `wal.typo`", "line 3: `sources.stripe.sinks[].urll`", "line 3: `limits.max_body`", "line 3: `dedupe.key`"}
	if got := unknownKeys(page, reference, top); !slices.Equal(got, want) {
		t.Errorf("unknownKeys = %q, want %q", got, want)
	}
	if got, want := brokenLinks(filepath.Join(docsDir, "page.md"), page), []string{
		filepath.Join(docsDir, "page.md") + " line 9: nowhere.md",
		filepath.Join(docsDir, "page.md") + " line 10: configuration.md#sinks-of-a-source (no heading makes that anchor)",
	}; !slices.Equal(got, want) {
		t.Errorf("brokenLinks = %q, want %q", got, want)
	}
}

// The config snippets of the operator pages (```yaml blocks whose first key
// is a top-level key of the file) load: no unknown key, no value of the
// wrong type, no rule broken. env: references are set to a value each
// reference accepts.
func TestDocsConfigSnippetsLoad(t *testing.T) {
	top := topLevelKeys()
	envRef := regexp.MustCompile(`env:([A-Z_][A-Z0-9_]*)`)
	fence := regexp.MustCompile("(?s)```yaml\n(.*?)```")
	loaded := 0
	for _, page := range operatorPages(t) {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range fence.FindAllStringSubmatch(string(b), -1) {
			snippet := m[1]
			first, _, _ := strings.Cut(strings.TrimSpace(snippet), ":")
			if !slices.Contains(top, first) {
				continue // a fragment (a sink's filter line), not a config file
			}
			for _, ref := range envRef.FindAllStringSubmatch(snippet, -1) {
				t.Setenv(ref[1], "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
			}
			if _, err := config.Load([]byte(snippet), config.ValidateOptions{}); err != nil {
				t.Errorf("%s, yaml block %d does not load:\n%v", page, i+1, err)
			}
			loaded++
		}
	}
	if loaded < 3 {
		t.Errorf("only %d config snippets found: the three products' snippets are gone or the fence parser broke", loaded)
	}
}
