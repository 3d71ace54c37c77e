package deploy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

const (
	module     = "github.com/ankusa/ankusa"
	vmPkg      = "github.com/VictoriaMetrics/metrics"
	root       = ".."
	dashboard  = "grafana/ankusa.json"
	alertsFile = "prometheus/alerts.yml"
	metricsDoc = "../docs/metrics.md"
)

// kind is how a metric is exported, which decides the series it has:
// VictoriaMetrics histograms export _bucket{vmrange=...} (Prometheus's
// histogram_quantile cannot read them), Prometheus histograms
// _bucket{le=...}; both export _sum and _count.
type kind string

const (
	counter     kind = "counter"
	gauge       kind = "gauge"
	histLE      kind = "histogram (le)"
	histVMRange kind = "histogram (vmrange)"
	summary     kind = "summary"
)

// constructors are the metrics package's functions that register a metric
// under the name in their first argument.
var constructors = map[string]kind{
	"NewCounter": counter, "GetOrCreateCounter": counter,
	"NewFloatCounter": counter, "GetOrCreateFloatCounter": counter,
	"NewGauge": gauge, "GetOrCreateGauge": gauge,
	"NewHistogram": histVMRange, "GetOrCreateHistogram": histVMRange,
	"NewPrometheusHistogram": histLE, "NewPrometheusHistogramExt": histLE,
	"GetOrCreatePrometheusHistogram": histLE, "GetOrCreatePrometheusHistogramExt": histLE,
	"NewSummary": summary, "NewSummaryExt": summary,
	"GetOrCreateSummary": summary, "GetOrCreateSummaryExt": summary,
}

// metricRef is the regex a PromQL expression's metric names are found
// with; metricName takes a name off the front of a registered literal
// (the part before its {labels}).
var (
	metricRef  = regexp.MustCompile(`ankusa_[a-z0-9_]+`)
	metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*`)
)

// exportedMetrics scans the non-test Go files of every package of this
// module the node's binary (cmd/ankusa) links, and returns each metric
// registered through the metrics package, with its kind. A name the scan
// cannot read (not a string literal, or an ankusa_ literal that no
// constructor takes) fails the test: a metric the scan misses would let
// the dashboard, the alerts and the docs drift without a failure.
func exportedMetrics(t *testing.T) map[string]kind {
	t.Helper()
	kinds, _ := scanModule(t)
	return kinds
}

// scanModule is exportedMetrics, with each metric's label names (sorted,
// joined by commas; a histogram's le or vmrange among them), or
// labelsUnknown when a registration builds its labels out of sight.
func scanModule(t *testing.T) (map[string]kind, map[string]string) {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Dir,GoFiles,Module", "./cmd/ankusa")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go list: %v\n%s", err, stderr)
	}
	got := map[string]kind{}
	labels := map[string]map[string]bool{}
	fset := token.NewFileSet()
	dec := json.NewDecoder(bytes.NewReader(out))
	pkgs := 0
	for dec.More() {
		var p struct {
			ImportPath, Dir string
			GoFiles         []string
			Module          *struct{ Path string }
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("go list: %v", err)
		}
		if p.Module == nil || p.Module.Path != module {
			continue
		}
		pkgs++
		for _, name := range p.GoFiles {
			path := filepath.Join(p.Dir, name)
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			scanFile(t, fset, f, got, labels)
		}
	}
	if pkgs < 10 || len(got) < 100 {
		t.Fatalf("the scan found %d metrics in %d packages: it no longer sees how the node registers them", len(got), pkgs)
	}
	joined := map[string]string{}
	for name, set := range labels {
		switch got[name] {
		case histLE:
			set["le"] = true
		case histVMRange:
			set["vmrange"] = true
		}
		joined[name] = strings.Join(sortedKeys(set), ",")
		if set[labelsUnknown] {
			joined[name] = labelsUnknown
		}
	}
	return got, joined
}

// labelsUnknown stands for the labels of a metric whose name is joined to
// something other than a label's value ("name" + labels).
const labelsUnknown = "?"

var labelName = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="`)

// labelsOf returns the label names of a registration's name expression:
// its literals joined, each other operand standing for a label's value.
func labelsOf(e ast.Expr) []string {
	var parts []ast.Expr
	var flatten func(e ast.Expr)
	flatten = func(e ast.Expr) {
		switch x := e.(type) {
		case *ast.BinaryExpr:
			flatten(x.X)
			flatten(x.Y)
		case *ast.ParenExpr:
			flatten(x.X)
		default:
			parts = append(parts, e)
		}
	}
	flatten(e)
	var b strings.Builder
	for _, p := range parts {
		if lit, ok := p.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			s, _ := strconv.Unquote(lit.Value)
			b.WriteString(s)
			continue
		}
		if !strings.HasSuffix(b.String(), `="`) {
			return []string{labelsUnknown}
		}
		b.WriteString("v")
	}
	var names []string
	for _, m := range labelName.FindAllStringSubmatch(b.String(), -1) {
		names = append(names, m[1])
	}
	return names
}

func scanFile(t *testing.T, fset *token.FileSet, f *ast.File, got map[string]kind, labels map[string]map[string]bool) {
	t.Helper()
	local := ""
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == vmPkg {
			local = "metrics"
			if imp.Name != nil {
				local = imp.Name.Name
			}
		}
	}
	if local == "." {
		t.Fatalf("%s dot-imports %s: name its calls so the metric scan can see them", fset.File(f.Pos()).Name(), vmPkg)
	}
	taken := map[*ast.BasicLit]bool{}
	if local != "" && local != "_" {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); !ok || x.Name != local {
				return true
			}
			k, ok := constructors[sel.Sel.Name]
			if !ok {
				if strings.HasPrefix(sel.Sel.Name, "New") || strings.HasPrefix(sel.Sel.Name, "GetOrCreate") {
					t.Errorf("%s: metrics.%s registers metrics the scan does not know: teach it (constructors)", fset.Position(call.Pos()), sel.Sel.Name)
				}
				return true
			}
			lit := leadingLiteral(call.Args[0])
			if lit == nil {
				t.Errorf("%s: metrics.%s's name does not start with a string literal: the scan cannot read it", fset.Position(call.Pos()), sel.Sel.Name)
				return true
			}
			taken[lit] = true
			s, _ := strconv.Unquote(lit.Value)
			name := metricName.FindString(s)
			if name == "" {
				t.Errorf("%s: %q is no metric name", fset.Position(lit.Pos()), s)
				return true
			}
			if prev, dup := got[name]; dup && prev != k {
				t.Errorf("%s: %s registered as a %s and as a %s", fset.Position(lit.Pos()), name, prev, k)
			}
			got[name] = k
			if labels[name] == nil {
				labels[name] = map[string]bool{}
			}
			for _, l := range labelsOf(call.Args[0]) {
				labels[name][l] = true
			}
			return true
		})
	}
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING || taken[lit] {
			return true
		}
		if s, _ := strconv.Unquote(lit.Value); strings.HasPrefix(s, "ankusa_") {
			t.Errorf("%s: %q looks like a metric name outside a metrics constructor: the scan cannot see what registers it", fset.Position(lit.Pos()), s)
		}
		return true
	})
}

// leadingLiteral is the string literal a name expression starts with:
// "name" or `name{label="` + v + `"}`.
func leadingLiteral(e ast.Expr) *ast.BasicLit {
	for {
		switch x := e.(type) {
		case *ast.BasicLit:
			if x.Kind == token.STRING {
				return x
			}
			return nil
		case *ast.BinaryExpr:
			if x.Op != token.ADD {
				return nil
			}
			e = x.X
		case *ast.ParenExpr:
			e = x.X
		default:
			return nil
		}
	}
}

// unknownRefs returns the problems of the ankusa_ metric names expr
// references: a name not exported (a histogram's or summary's _sum and
// _count, a histogram's _bucket, are the series of their base), and a
// histogram_quantile over VictoriaMetrics buckets, which Prometheus cannot
// compute (vmrange is not le).
func unknownRefs(expr string, exported map[string]kind) []string {
	var bad []string
	for _, ref := range metricRef.FindAllString(expr, -1) {
		if _, ok := exported[ref]; ok {
			continue
		}
		base, k, ok := seriesOf(ref, exported)
		if !ok {
			bad = append(bad, fmt.Sprintf("%s is not a metric the node exports", ref))
			continue
		}
		if strings.HasSuffix(ref, "_bucket") && k == histVMRange && strings.Contains(expr, "histogram_quantile") {
			bad = append(bad, fmt.Sprintf("%s has vmrange buckets: histogram_quantile over them is empty in Prometheus (use _sum/_count)", base))
		}
	}
	return bad
}

func seriesOf(ref string, exported map[string]kind) (string, kind, bool) {
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(ref, suffix)
		if !ok {
			continue
		}
		k, ok := exported[base]
		switch {
		case !ok:
		case suffix == "_bucket" && (k == histLE || k == histVMRange):
			return base, k, true
		case suffix != "_bucket" && (k == histLE || k == histVMRange || k == summary):
			return base, k, true
		}
	}
	return "", "", false
}

// docRow is a metric's row in docs/metrics.md.
type docRow struct {
	kind   kind
	line   int
	labels string // sorted, joined by commas
}

var docRowRE = regexp.MustCompile("^\\|\\s*`([^`]+)`\\s*\\|\\s*([^|]+?)\\s*\\|\\s*([^|]+?)\\s*\\|")

// readDoc reads docs/metrics.md's table rows: | `name` | kind | labels | what |.
func readDoc(t *testing.T, path string) map[string]docRow {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("cannot read the metrics reference: %v", err)
	}
	rows := map[string]docRow{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		m := docRowRE.FindStringSubmatch(sc.Text())
		if m == nil || !strings.HasPrefix(m[1], "ankusa_") {
			continue
		}
		if prev, dup := rows[m[1]]; dup {
			t.Errorf("%s:%d: %s listed twice (line %d too)", path, n, m[1], prev.line)
		}
		var labels []string
		if m[3] != "-" {
			for l := range strings.SplitSeq(m[3], ",") {
				labels = append(labels, strings.TrimSpace(l))
			}
		}
		sort.Strings(labels)
		rows[m[1]] = docRow{kind(m[2]), n, strings.Join(labels, ",")}
	}
	return rows
}

// docProblems compares the reference with what the node exports: a metric
// missing from it, one it lists that is not exported, and a wrong type.
func docProblems(doc map[string]docRow, exported map[string]kind) []string {
	var bad []string
	for _, name := range sortedKeys(exported) {
		row, ok := doc[name]
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("%s (%s) is exported but docs/metrics.md does not list it", name, exported[name]))
		case row.kind != exported[name]:
			bad = append(bad, fmt.Sprintf("docs/metrics.md:%d: %s is a %s, the row says %q", row.line, name, exported[name], row.kind))
		}
	}
	for _, name := range sortedKeys(doc) {
		if _, ok := exported[name]; !ok {
			bad = append(bad, fmt.Sprintf("docs/metrics.md:%d lists %s, which the node does not export", doc[name].line, name))
		}
	}
	return bad
}

// labelProblems compares each row's labels with the ones the code gives
// its metric, where the scan can read them.
func labelProblems(doc map[string]docRow, labels map[string]string) []string {
	var bad []string
	for _, name := range sortedKeys(doc) {
		want, ok := labels[name]
		if ok && want != labelsUnknown && doc[name].labels != want {
			bad = append(bad, fmt.Sprintf("docs/metrics.md:%d: %s has the labels %q, the row says %q", doc[name].line, name, want, doc[name].labels))
		}
	}
	return bad
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// balanced reports an expression whose brackets or quotes do not pair: a
// cheap guard against a broken query, short of a PromQL parser.
func balanced(expr string) error {
	var stack []rune
	pair := map[rune]rune{')': '(', ']': '[', '}': '{'}
	inQuote := false
	for _, r := range expr {
		switch {
		case r == '"':
			inQuote = !inQuote
		case inQuote:
		case r == '(' || r == '[' || r == '{':
			stack = append(stack, r)
		case pair[r] != 0:
			if len(stack) == 0 || stack[len(stack)-1] != pair[r] {
				return fmt.Errorf("unpaired %q", r)
			}
			stack = stack[:len(stack)-1]
		}
	}
	if inQuote || len(stack) > 0 {
		return fmt.Errorf("unclosed bracket or quote")
	}
	return nil
}

// TestChecksFail: the checks find each kind of drift, over a made-up list
// of exports.
func TestChecksFail(t *testing.T) {
	exported := map[string]kind{
		"ankusa_a_total":     counter,
		"ankusa_g":           gauge,
		"ankusa_le_seconds":  histLE,
		"ankusa_vm_seconds":  histVMRange,
		"ankusa_sum_seconds": summary,
	}
	for _, tc := range []struct {
		expr string
		bad  int
	}{
		{`rate(ankusa_a_total[5m])`, 0},
		{`histogram_quantile(0.99, sum by (le) (rate(ankusa_le_seconds_bucket[5m])))`, 0},
		{`rate(ankusa_vm_seconds_sum[5m]) / rate(ankusa_vm_seconds_count[5m])`, 0},
		{`ankusa_sum_seconds_count`, 0},
		{`rate(ankusa_gone_total[5m])`, 1},
		{`ankusa_a_total_bucket`, 1},
		{`ankusa_g_sum`, 1},
		{`ankusa_sum_seconds_bucket`, 1},
		{`histogram_quantile(0.99, sum by (vmrange) (rate(ankusa_vm_seconds_bucket[5m])))`, 1},
		{`ankusa_g + ankusa_x + ankusa_y_count`, 2},
	} {
		if got := unknownRefs(tc.expr, exported); len(got) != tc.bad {
			t.Errorf("%s: %d problems %q, want %d", tc.expr, len(got), got, tc.bad)
		}
	}

	doc := map[string]docRow{}
	for name, k := range exported {
		doc[name] = docRow{kind: k, line: 1}
	}
	if got := docProblems(doc, exported); len(got) != 0 {
		t.Errorf("a complete reference: %q", got)
	}
	delete(doc, "ankusa_g")
	doc["ankusa_old_total"] = docRow{kind: counter, line: 9}
	doc["ankusa_a_total"] = docRow{kind: gauge, line: 3}
	got := docProblems(doc, exported)
	for _, want := range []string{"ankusa_g (gauge) is exported", "lists ankusa_old_total", "ankusa_a_total is a counter, the row says \"gauge\""} {
		if !slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, want) }) {
			t.Errorf("docProblems %q misses %q", got, want)
		}
	}
	if len(got) != 3 {
		t.Errorf("docProblems: %d problems %q, want 3", len(got), got)
	}

	rows := map[string]docRow{
		"ankusa_a_total":    {kind: counter, line: 1, labels: "code"},
		"ankusa_le_seconds": {kind: histLE, line: 2, labels: "le"},
		"ankusa_f_total":    {kind: counter, line: 3, labels: "sink,source"},
		"ankusa_g":          {kind: gauge, line: 4},
	}
	scanned := map[string]string{"ankusa_a_total": "code,sink", "ankusa_le_seconds": "le", "ankusa_f_total": labelsUnknown, "ankusa_g": ""}
	if got := labelProblems(rows, scanned); len(got) != 1 || !strings.Contains(got[0], `ankusa_a_total has the labels "code,sink", the row says "code"`) {
		t.Errorf("labelProblems: %q, want the one of ankusa_a_total", got)
	}
	for src, want := range map[string]string{
		"`n_total`": "",
		"`n_total{code=\"` + strconv.Itoa(c) + `\"}`": "code",
		"`n{a=\"` + x + `\",b=\"` + y + `\"}`":        "a,b",
		"\"n_total\" + labels":                        labelsUnknown,
	} {
		e, err := parser.ParseExpr(src)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(labelsOf(e), ","); got != want {
			t.Errorf("labelsOf(%s) = %q, want %q", src, got, want)
		}
	}

	for expr, ok := range map[string]bool{
		`sum(rate(x{a="b)"}[5m]))`: true,
		`sum(rate(x[5m])`:          false,
		`x{a="b}`:                  false,
		`rate(x[5m)]`:              false,
	} {
		if err := balanced(expr); (err == nil) != ok {
			t.Errorf("balanced(%s) = %v", expr, err)
		}
	}
}

// TestScanSeesRegistrations: the scan reads each way the node names a
// metric (a literal, one with labels concatenated, a kind per constructor),
// and the real docs fail as soon as a metric is added or removed.
func TestScanSeesRegistrations(t *testing.T) {
	exported := exportedMetrics(t)
	for name, want := range map[string]kind{
		"ankusa_wal_fsync_seconds":         histLE,
		"ankusa_dispatch_delivery_seconds": histVMRange,
		"ankusa_edge_requests_total":       counter, // `...{code="` + strconv.Itoa(c) + `"}`
		"ankusa_filter_skipped_total":      counter, // "..." + labels
		"ankusa_storage_free_bytes":        gauge,
		"ankusa_edge_handshakes_total":     counter,
	} {
		if got := exported[name]; got != want {
			t.Errorf("%s scanned as %q, want %q", name, got, want)
		}
	}
	_, labels := scanModule(t)
	for name, want := range map[string]string{
		"ankusa_edge_requests_total":       "code",
		"ankusa_edge_handshakes_total":     "kind,outcome",
		"ankusa_wal_fsync_seconds":         "le",
		"ankusa_dispatch_delivery_seconds": "vmrange",
		"ankusa_filter_skipped_total":      labelsUnknown,
		"ankusa_edge_body_bytes_total":     "",
	} {
		if got := labels[name]; got != want {
			t.Errorf("%s's labels scanned as %q, want %q", name, got, want)
		}
	}
	doc := readDoc(t, metricsDoc)
	added := map[string]kind{"ankusa_new_total": counter}
	for k, v := range exported {
		added[k] = v
	}
	if got := docProblems(doc, added); !slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, "ankusa_new_total") }) {
		t.Errorf("a metric added without docs: %q", got)
	}
	removed := map[string]kind{}
	for k, v := range exported {
		if k != "ankusa_wal_fsync_seconds" {
			removed[k] = v
		}
	}
	if got := docProblems(doc, removed); !slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, "lists ankusa_wal_fsync_seconds") }) {
		t.Errorf("a metric removed, still in the docs: %q", got)
	}
}

// TestMetricsDoc: docs/metrics.md lists every exported metric, with its
// type and labels, and no other.
func TestMetricsDoc(t *testing.T) {
	kinds, labels := scanModule(t)
	doc := readDoc(t, metricsDoc)
	for _, p := range append(docProblems(doc, kinds), labelProblems(doc, labels)...) {
		t.Error(p)
	}
}

// TestDashboard: the dashboard is Grafana JSON with the datasource and
// node variables, every query names only exported metrics, and it has the
// rows an operator looks for.
func TestDashboard(t *testing.T) {
	exported := exportedMetrics(t)
	b, err := os.ReadFile(dashboard)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Title         string
		UID           string
		SchemaVersion int
		Templating    struct {
			List []struct {
				Name, Type string
				Query      any
			}
		}
		Panels []panel
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboard, err)
	}
	if d.Title == "" || d.UID == "" || d.SchemaVersion < 36 {
		t.Errorf("%s: title %q uid %q schemaVersion %d: want a title, a uid and schemaVersion 36 or later", dashboard, d.Title, d.UID, d.SchemaVersion)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		q, _ := v.Query.(string)
		if m, ok := v.Query.(map[string]any); ok {
			q, _ = m["query"].(string)
		}
		vars[v.Name] = v.Type + " " + q
		for _, p := range unknownRefs(q, exported) {
			t.Errorf("variable %s: %s", v.Name, p)
		}
	}
	if vars["DS_PROMETHEUS"] != "datasource prometheus" {
		t.Errorf("variable DS_PROMETHEUS is %q, want a prometheus datasource variable", vars["DS_PROMETHEUS"])
	}
	if !strings.HasPrefix(vars["node"], "query label_values(") || !strings.HasSuffix(vars["node"], ", instance)") {
		t.Errorf("variable node is %q, want a query over the instance label", vars["node"])
	}

	var rows []string
	ids := map[int]string{}
	exprs := 0
	var walk func(ps []panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if prev, dup := ids[p.ID]; dup {
				t.Errorf("panel %q has the id %d of %q", p.Title, p.ID, prev)
			}
			ids[p.ID] = p.Title
			if p.Type == "row" {
				rows = append(rows, p.Title)
				walk(p.Panels)
				continue
			}
			if len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			for _, tg := range p.Targets {
				exprs++
				if tg.Datasource.UID != "${DS_PROMETHEUS}" {
					t.Errorf("panel %q: datasource %q, want ${DS_PROMETHEUS}", p.Title, tg.Datasource.UID)
				}
				if !strings.Contains(tg.Expr, "ankusa_") || !strings.Contains(tg.Expr, `instance=~"$node"`) {
					t.Errorf("panel %q: %q should query an ankusa_ metric on instance=~\"$node\"", p.Title, tg.Expr)
				}
				if err := balanced(tg.Expr); err != nil {
					t.Errorf("panel %q: %s: %v", p.Title, tg.Expr, err)
				}
				for _, prob := range unknownRefs(tg.Expr, exported) {
					t.Errorf("panel %q: %s", p.Title, prob)
				}
			}
		}
	}
	walk(d.Panels)
	for _, want := range []string{"Ingest", "Durability", "Archive", "Delivery", "Filters", "Handshakes", "Disk reserve"} {
		if !slices.Contains(rows, want) {
			t.Errorf("the dashboard has no row %q (rows: %q)", want, rows)
		}
	}
	// Titles and descriptions name metrics too: they must be real.
	for _, p := range unknownRefs(string(b), exported) {
		t.Errorf("%s: %s", dashboard, p)
	}
	t.Logf("%d panels, %d queries", len(ids), exprs)
}

type panel struct {
	ID      int
	Type    string
	Title   string
	Panels  []panel
	Targets []struct {
		Expr       string
		Datasource struct{ Type, UID string }
	}
}

// alertRules is the shape of a Prometheus rule file, as Prometheus reads
// it (a field it does not know is refused here too).
type alertRules struct {
	Groups []struct {
		Name     string `yaml:"name"`
		Interval string `yaml:"interval"`
		Rules    []struct {
			Alert       string            `yaml:"alert"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

var promDuration = regexp.MustCompile(`^([0-9]+(ms|s|m|h|d|w|y))+$`)

// TestAlerts: the rule file has Prometheus's shape, every rule a name, an
// expression over exported metrics, a duration, a severity and both
// annotations, and the alerts an operator needs are there.
func TestAlerts(t *testing.T) {
	exported := exportedMetrics(t)
	b, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	var f alertRules
	if err := yaml.UnmarshalWithOptions(b, &f, yaml.Strict(), yaml.DisallowUnknownField()); err != nil {
		t.Fatalf("%s: %v", alertsFile, err)
	}
	if len(f.Groups) == 0 {
		t.Fatalf("%s: no groups", alertsFile)
	}
	names := map[string]bool{}
	var all strings.Builder
	for _, g := range f.Groups {
		if g.Name == "" || len(g.Rules) == 0 {
			t.Errorf("group %q: want a name and rules", g.Name)
		}
		if g.Interval != "" && !promDuration.MatchString(g.Interval) {
			t.Errorf("group %q: interval %q is no duration", g.Name, g.Interval)
		}
		for _, r := range g.Rules {
			if r.Alert == "" || names[r.Alert] {
				t.Errorf("group %q: alert %q: want a name, once", g.Name, r.Alert)
			}
			names[r.Alert] = true
			if !promDuration.MatchString(r.For) {
				t.Errorf("alert %s: for %q is no duration", r.Alert, r.For)
			}
			if s := r.Labels["severity"]; s != "warning" && s != "critical" {
				t.Errorf("alert %s: severity %q, want warning or critical", r.Alert, s)
			}
			if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("alert %s: want a summary and a description", r.Alert)
			}
			if strings.TrimSpace(r.Expr) == "" {
				t.Errorf("alert %s: no expr", r.Alert)
			}
			if err := balanced(r.Expr); err != nil {
				t.Errorf("alert %s: %s: %v", r.Alert, r.Expr, err)
			}
			for _, p := range unknownRefs(r.Expr+" "+r.Annotations["summary"]+" "+r.Annotations["description"], exported) {
				t.Errorf("alert %s: %s", r.Alert, p)
			}
			all.WriteString(r.Expr + "\n")
		}
	}
	// What each alert the operations guide promises watches.
	for _, want := range []string{
		"ankusa_wal_fsync_seconds_bucket", "ankusa_wal_queue_bytes", "ankusa_segment_sealed_seq",
		"ankusa_archive_lag_seconds", "ankusa_archive_upload_failures_total",
		"ankusa_dispatch_dead_letters_total", `code="429"`, `code="503"`,
		"ankusa_storage_free_bytes", "ankusa_storage_full", `up{job="ankusa"} == 0`,
	} {
		if !strings.Contains(all.String(), want) {
			t.Errorf("no alert's expr has %q", want)
		}
	}
}
