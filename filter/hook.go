package filter

import (
	"strings"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/interpreter"
	"github.com/valyala/fastjson"

	"github.com/ankusa/ankusa/envelope"
)

// Hook is one hook as filters see it: the CEL activation that gives the
// variables of the package doc, each built the first time a filter reads
// it and kept for the next filter of the same hook. It is not safe for
// concurrent use, and it reads the envelope without copying it: the
// envelope must outlive the Hook's use.
type Hook struct {
	e      *envelope.Envelope
	hdrs   map[string]string
	params map[string]string
	body   ref.Val
	// parser holds the parsed body the body's maps read; Release gives
	// it back.
	parser *fastjson.Parser
	parsed bool
	// work is what reading the body has cost the current evaluation.
	work budget
}

var _ interpreter.Activation = (*Hook)(nil)

// NewHook returns the Hook of e.
func NewHook(e *envelope.Envelope) *Hook { return &Hook{e: e} }

// ResolveName implements interpreter.Activation.
func (h *Hook) ResolveName(name string) (any, bool) {
	switch name {
	case "event_type":
		return types.String(h.e.EventType), true
	case "tenant_id":
		return types.String(h.e.TenantID), true
	case "source_id":
		return types.String(h.e.SourceID), true
	case "headers":
		if h.hdrs == nil {
			h.hdrs = headerMap(h.e.Headers)
		}
		return types.NewStringStringMap(types.DefaultTypeAdapter, h.hdrs), true
	case "params":
		if h.params == nil {
			h.params = make(map[string]string, len(h.e.RouteParams))
			for _, p := range h.e.RouteParams {
				h.params[p.Key] = p.Value
			}
		}
		return types.NewStringStringMap(types.DefaultTypeAdapter, h.params), true
	case "body":
		if !h.parsed {
			h.parseBody()
		}
		return h.body, true
	}
	return nil, false
}

// Parent implements interpreter.Activation: there is none.
func (h *Hook) Parent() interpreter.Activation { return nil }

// headerMap is the package doc's headers: lower-case names, a repeated
// field's values joined by ", " in the order received.
func headerMap(hs []envelope.Header) map[string]string {
	m := make(map[string]string, len(hs))
	for _, f := range hs {
		k := strings.ToLower(f.Name)
		if v, ok := m[k]; ok {
			m[k] = v + ", " + f.Value
			continue
		}
		m[k] = f.Value
	}
	return m
}

var parsers fastjson.ParserPool

// parseBody reads the body as CEL sees it (json.go): JSON read lazily;
// anything that is not JSON (or nothing) an empty map, so has(body.x) is
// false.
func (h *Hook) parseBody() {
	h.parsed = true
	p := parsers.Get()
	v, err := p.ParseBytes(h.e.Body)
	if err != nil {
		parsers.Put(p)
		h.body = emptyBody
		return
	}
	h.parser, h.body = p, jsonValue(v, &h.work)
}

// Release gives back the parser of the hook's body. The Hook must not be
// evaluated again after it; a Hook never released is only garbage.
func (h *Hook) Release() {
	if h.parser != nil {
		parsers.Put(h.parser)
		h.parser, h.body, h.parsed = nil, nil, false
	}
}

// native copies a fastjson value out of the parser's memory, charging
// each value to b; ok false: past the budget.
func native(v *fastjson.Value, b *budget) (out any, ok bool) {
	if !b.spend(1) {
		return nil, false
	}
	switch v.Type() {
	case fastjson.TypeObject:
		o, _ := v.Object()
		m := make(map[string]any, o.Len())
		ok = true
		o.Visit(func(k []byte, x *fastjson.Value) {
			if ok {
				m[string(k)], ok = native(x, b)
			}
		})
		return m, ok
	case fastjson.TypeArray:
		a, _ := v.Array()
		l := make([]any, len(a))
		for i, x := range a {
			if l[i], ok = native(x, b); !ok {
				return nil, false
			}
		}
		return l, true
	}
	return scalar(v), true
}

// scalar is a JSON scalar as a Go value.
func scalar(v *fastjson.Value) any {
	switch v.Type() {
	case fastjson.TypeString:
		return string(v.GetStringBytes())
	case fastjson.TypeNumber:
		return v.GetFloat64()
	case fastjson.TypeTrue:
		return true
	case fastjson.TypeFalse:
		return false
	}
	return nil
}
