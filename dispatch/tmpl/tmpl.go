// Package tmpl expands sink templates over an envelope: the HTTP sink's
// url, headers and secret and the RabbitMQ sink's routing key
// (DESIGN.md §2.7). A template is literal text with fields in braces:
//
//	{tenant_id}    the hook's tenant
//	{source_id}    the hook's source
//	{event_id}     the hook's event id (evt_...)
//	{params.NAME}  the route parameter NAME (empty when the route has none)
//
// "{{" and "}}" are literal braces. Parse refuses any other field, so a
// typo is a config error at load, not a wrong URL at delivery.
package tmpl

import (
	"fmt"
	"strings"

	"github.com/ankusa/ankusa/envelope"
)

type fieldKind uint8

const (
	literal fieldKind = iota
	tenantID
	sourceID
	eventID
	param
)

type part struct {
	kind fieldKind
	text string // literal text, or the parameter name
}

// Template is a parsed template; it is immutable and safe for concurrent
// use.
type Template struct {
	src   string
	parts []part
}

// Parse parses s. The error names the offending field and its offset.
func Parse(s string) (*Template, error) {
	t := &Template{src: s}
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			t.parts = append(t.parts, part{kind: literal, text: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '{' && i+1 < len(s) && s[i+1] == '{':
			lit.WriteByte('{')
			i++
		case c == '}' && i+1 < len(s) && s[i+1] == '}':
			lit.WriteByte('}')
			i++
		case c == '}':
			return nil, fmt.Errorf("unmatched '}' at offset %d (write '}}' for a literal brace)", i)
		case c == '{':
			end := strings.IndexByte(s[i+1:], '}')
			if end < 0 {
				return nil, fmt.Errorf("unclosed '{' at offset %d", i)
			}
			name := s[i+1 : i+1+end]
			p, err := field(name)
			if err != nil {
				return nil, fmt.Errorf("field {%s} at offset %d: %w", name, i, err)
			}
			flush()
			t.parts = append(t.parts, p)
			i += end + 1
		default:
			lit.WriteByte(c)
		}
	}
	flush()
	return t, nil
}

func field(name string) (part, error) {
	switch name {
	case "tenant_id":
		return part{kind: tenantID}, nil
	case "source_id":
		return part{kind: sourceID}, nil
	case "event_id":
		return part{kind: eventID}, nil
	}
	if p, ok := strings.CutPrefix(name, "params."); ok && p != "" {
		return part{kind: param, text: p}, nil
	}
	return part{}, fmt.Errorf("unknown field (have tenant_id, source_id, event_id, params.NAME)")
}

// MustParse is Parse for templates known to be valid (tests, defaults).
func MustParse(s string) *Template {
	t, err := Parse(s)
	if err != nil {
		panic("BUG: tmpl: " + err.Error())
	}
	return t
}

// String is the template's source text.
func (t *Template) String() string { return t.src }

// Static reports whether the template has no fields: its expansion is the
// same for every hook.
func (t *Template) Static() bool {
	for _, p := range t.parts {
		if p.kind != literal {
			return false
		}
	}
	return true
}

// AppendTo appends the expansion of t for e to dst.
func (t *Template) AppendTo(dst []byte, e *envelope.Envelope) []byte {
	for _, p := range t.parts {
		switch p.kind {
		case literal:
			dst = append(dst, p.text...)
		case tenantID:
			dst = append(dst, e.TenantID...)
		case sourceID:
			dst = append(dst, e.SourceID...)
		case eventID:
			dst = e.ID.AppendText(dst)
		case param:
			for _, kv := range e.RouteParams {
				if kv.Key == p.text {
					dst = append(dst, kv.Value...)
					break
				}
			}
		}
	}
	return dst
}

// Expand returns the expansion of t for e.
func (t *Template) Expand(e *envelope.Envelope) string { return string(t.AppendTo(nil, e)) }
