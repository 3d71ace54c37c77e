package config

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// Reading a config walks its YAML tree against the schema (the yaml tags of
// Config, by reflection) before anything is decoded, so that one run names
// every problem:
//
//   - a key the schema does not have is a problem ("limits.max_bodyy_bytes:
//     unknown key"), and the decode leaves it out;
//   - a value that does not decode into its key's type (a size or a
//     duration that does not parse, a list where a string belongs) is a
//     problem, and the walk replaces it by null, so that its key takes its
//     default;
//   - the rest is decoded, defaulted and validated.
//
// Every problem is reported, the walk's and validation's alike, even where
// one may be the consequence of another (a misspelt secret key also reads
// as a missing secret): an operator sees the whole list in one run, and
// each line names the key it is about. The one exception is the value the
// walk replaced: it is named once, by the walk, and what validation would
// say of the default standing in its place (a list entry that was not a
// mapping, checked as an empty one) is left out.

// parsed is a configuration as far as it parses.
type parsed struct {
	cfg   *Config  // nil: the text is not YAML, or its top is not a mapping
	probs Problems // unknown keys and values that do not decode, sorted
	// nulled are the paths of the values the walk replaced by null.
	nulled []string
}

func parse(data []byte) parsed {
	file, err := parser.ParseBytes(data, 0)
	if err != nil {
		return parsed{probs: Problems{"cannot parse config: " + oneLine(yaml.FormatError(err, false, false))}}
	}
	w := walker{anchors: anchorSet{}}
	var body ast.Node
	if len(file.Docs) > 0 && file.Docs[0].Body != nil {
		body = file.Docs[0].Body
		ast.Walk(w.anchors, body)
	}
	cfg := &Config{}
	if !isNull(w.resolve(body)) {
		if _, ok := w.entries(body, 0); !ok {
			return parsed{probs: Problems{"cannot parse config: the top level must be a mapping of keys"}}
		}
		w.object(body, reflect.TypeFor[Config](), "")
		if err := yaml.NodeToValue(body, cfg); err != nil {
			// The walk replaced every value that does not decode: this one
			// is in a form it does not know.
			cfg = nil
			w.probs.add("invalid config: %s", oneLine(yaml.FormatError(err, false, false)))
		}
	}
	if cfg != nil {
		cfg.ApplyDefaults()
	}
	sort.Strings(w.probs)
	return parsed{cfg: cfg, probs: w.probs, nulled: w.nulled}
}

// walker checks a YAML tree against the schema (see above).
type walker struct {
	anchors anchorSet
	probs   Problems
	nulled  []string
}

// value checks the node n, the value at path, against
// the type t, and reports false, after naming the problem, when n does not
// decode into t: the caller then replaces n by null.
func (w *walker) value(n ast.Node, t reflect.Type, path string) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	n = w.resolve(n)
	switch {
	case isNull(n):
		return true
	case reflect.PointerTo(t).Implements(textUnmarshaler):
		return w.leaf(n, t, path)
	case t.Kind() == reflect.Struct:
		return w.object(n, t, path)
	case t.Kind() == reflect.Map:
		return w.mapOf(n, t, path)
	case t.Kind() == reflect.Slice:
		return w.listOf(n, t, path)
	}
	return w.leaf(n, t, path)
}

var textUnmarshaler = reflect.TypeFor[interface{ UnmarshalText([]byte) error }]()

// object checks a mapping against a struct's fields.
func (w *walker) object(n ast.Node, t reflect.Type, path string) bool {
	entries, ok := w.entries(n, 0)
	if !ok {
		return w.mismatch(n, t, path)
	}
	fields := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if name, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); name != "" && name != "-" {
			fields[name] = f.Type
		}
	}
	for _, mv := range entries {
		p := joinPath(path, keyText(mv.Key))
		ft, ok := fields[keyText(mv.Key)]
		if !ok {
			w.problem(p, "unknown key")
			continue
		}
		if !w.value(mv.Value, ft, p) {
			mv.Value = nullAt(mv.Value)
		}
	}
	return true
}

// mapOf checks a mapping against a map type: any keys, each value of the
// map's element type.
func (w *walker) mapOf(n ast.Node, t reflect.Type, path string) bool {
	entries, ok := w.entries(n, 0)
	if !ok {
		return w.mismatch(n, t, path)
	}
	for _, mv := range entries {
		p := joinPath(path, keyText(mv.Key))
		if !w.value(mv.Value, t.Elem(), p) {
			mv.Value = nullAt(mv.Value)
		}
	}
	return true
}

// listOf checks a sequence against a slice type.
func (w *walker) listOf(n ast.Node, t reflect.Type, path string) bool {
	if tag, ok := n.(*ast.TagNode); ok {
		n = w.resolve(tag.Value)
	}
	seq, ok := n.(*ast.SequenceNode)
	if !ok {
		return w.mismatch(n, t, path)
	}
	for i, v := range seq.Values {
		p := fmt.Sprintf("%s[%d]", path, i)
		if !w.value(v, t.Elem(), p) {
			seq.Values[i] = nullAt(v)
		}
	}
	return true
}

// leaf checks a single value (a string, a number, a size, a secret) by
// decoding it alone, with the decoder that decodes the whole, so that the
// two agree on what decodes ("env:X" in a flow list is a one-pair mapping
// to the parser and a string to the decoder).
func (w *walker) leaf(n ast.Node, t reflect.Type, path string) bool {
	err := yaml.NodeToValue(n, reflect.New(t).Interface())
	if err == nil {
		return true
	}
	if kind := nodeKind(n); kind == "mapping" || kind == "sequence" {
		if kind == "mapping" && t.Kind() == reflect.String {
			// brokers: [k1:9092] is a list of one mapping to YAML.
			return w.replace(path, fmt.Sprintf("cannot unmarshal mapping into Go value of type %s; a string with a colon, such as host:port in a flow list [...], must be quoted: \"k1:9092\"", t))
		}
		return w.mismatch(n, t, path)
	}
	msg := oneLine(yaml.FormatError(err, false, false))
	if strings.HasPrefix(msg, "[") { // the position: the path says where
		_, msg, _ = strings.Cut(msg, "] ")
	}
	return w.replace(path, msg)
}

func (w *walker) mismatch(n ast.Node, t reflect.Type, path string) bool {
	return w.replace(path, fmt.Sprintf("cannot unmarshal %s into Go value of type %s", nodeKind(n), t))
}

// replace names the problem of a value that does not decode and reports
// false: the caller puts null in its place.
func (w *walker) replace(path, msg string) bool {
	w.problem(path, msg)
	w.nulled = append(w.nulled, path)
	return false
}

// problem names a problem at path.
func (w *walker) problem(path, msg string) {
	w.probs.add("%s: %s", path, msg)
}

// entries are the key-value pairs of a mapping node, those it merges in
// (<<) included; ok is false when n is not a mapping. A merge nested
// deeper than any config needs is left to the decoder to refuse.
func (w *walker) entries(n ast.Node, depth int) (entries []*ast.MappingValueNode, ok bool) {
	n = w.resolve(n)
	if tag, isTag := n.(*ast.TagNode); isTag {
		n = w.resolve(tag.Value)
	}
	var mvs []*ast.MappingValueNode
	switch m := n.(type) {
	case *ast.MappingNode:
		mvs = m.Values
	case *ast.MappingValueNode:
		mvs = []*ast.MappingValueNode{m}
	default:
		return nil, false
	}
	for _, mv := range mvs {
		if !mv.Key.IsMergeKey() {
			entries = append(entries, mv)
			continue
		}
		from := []ast.Node{w.resolve(mv.Value)}
		if seq, isSeq := from[0].(*ast.SequenceNode); isSeq {
			from = seq.Values
		}
		for _, src := range from {
			if depth >= 8 {
				break
			}
			if merged, isMap := w.entries(src, depth+1); isMap {
				entries = append(entries, merged...)
			}
		}
	}
	return entries, true
}

// resolve follows anchors and aliases to the node they stand for.
func (w *walker) resolve(n ast.Node) ast.Node {
	for range 64 {
		switch v := n.(type) {
		case *ast.AnchorNode:
			n = v.Value
		case *ast.AliasNode:
			target, ok := w.anchors[v.Value.GetToken().Value]
			if !ok {
				return n // the decoder names the unknown alias
			}
			n = target
		default:
			return n
		}
	}
	return n
}

// anchorSet maps each anchor's name to its node (the last one of a name
// wins, as an alias after both names the last).
type anchorSet map[string]ast.Node

func (a anchorSet) Visit(n ast.Node) ast.Visitor {
	if an, ok := n.(*ast.AnchorNode); ok {
		a[an.Name.GetToken().Value] = an.Value
	}
	return a
}

func isNull(n ast.Node) bool {
	_, null := n.(*ast.NullNode)
	return n == nil || null
}

// nullAt is a null in n's place.
func nullAt(n ast.Node) ast.Node {
	var pos *token.Position
	if tk := n.GetToken(); tk != nil {
		pos = tk.Position
	}
	return ast.Null(token.New("null", "null", pos))
}

// nodeKind names what a node holds, for messages.
func nodeKind(n ast.Node) string {
	if tag, ok := n.(*ast.TagNode); ok {
		n = tag.Value
	}
	switch n.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
		return "mapping"
	case *ast.SequenceNode:
		return "sequence"
	case *ast.StringNode, *ast.LiteralNode:
		return "string"
	case *ast.IntegerNode:
		return "integer"
	case *ast.FloatNode, *ast.InfinityNode, *ast.NanNode:
		return "number"
	case *ast.BoolNode:
		return "boolean"
	}
	return "value"
}

func keyText(k ast.MapKeyNode) string {
	if s, ok := k.(*ast.StringNode); ok {
		return s.Value
	}
	return k.GetToken().Value
}

func joinPath(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}
