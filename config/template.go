package config

import (
	"fmt"
	"strings"
)

// A sink template is the language of a sink's url, header values and
// secret and of the RabbitMQ sink's routing key (DESIGN.md §2.7): literal
// text with fields in braces.
//
//	{tenant_id}    the hook's tenant
//	{source_id}    the hook's source
//	{event_id}     the hook's event id (evt_...)
//	{params.NAME}  the route parameter NAME (empty when the route has none)
//
// "{{" and "}}" are literal braces. ParseTemplate refuses any other field,
// so a typo is a config error at load, not a wrong URL at delivery.
//
// The language is config's, because validation parses every template; what
// a field expands to for one hook is delivery's (package dispatch/tmpl), as
// config cannot know the envelope.

// TemplateField is what one part of a template stands for.
type TemplateField uint8

// The parts of a template.
const (
	// TemplateLiteral is literal text (TemplatePart.Text).
	TemplateLiteral TemplateField = iota
	TemplateTenantID
	TemplateSourceID
	TemplateEventID
	// TemplateParam is the route parameter named TemplatePart.Text.
	TemplateParam
)

// TemplatePart is one literal run or one field of a template.
type TemplatePart struct {
	Field TemplateField
	Text  string // the literal text, or the parameter name
}

// Template is a parsed template; it is immutable and safe for concurrent
// use.
type Template struct {
	src   string
	parts []TemplatePart
}

// ParseTemplate parses s. The error names the offending field and its
// offset.
func ParseTemplate(s string) (*Template, error) {
	t := &Template{src: s}
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			t.parts = append(t.parts, TemplatePart{Field: TemplateLiteral, Text: lit.String()})
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
			p, err := templateField(name)
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

func templateField(name string) (TemplatePart, error) {
	switch name {
	case "tenant_id":
		return TemplatePart{Field: TemplateTenantID}, nil
	case "source_id":
		return TemplatePart{Field: TemplateSourceID}, nil
	case "event_id":
		return TemplatePart{Field: TemplateEventID}, nil
	}
	if p, ok := strings.CutPrefix(name, "params."); ok && p != "" {
		return TemplatePart{Field: TemplateParam, Text: p}, nil
	}
	return TemplatePart{}, fmt.Errorf("unknown field (have tenant_id, source_id, event_id, params.NAME)")
}

// MustParseTemplate is ParseTemplate for templates known to be valid
// (tests, defaults).
func MustParseTemplate(s string) *Template {
	t, err := ParseTemplate(s)
	if err != nil {
		panic("BUG: config: template: " + err.Error())
	}
	return t
}

// String is the template's source text.
func (t *Template) String() string { return t.src }

// Parts are the template's literal runs and fields, in order. The slice is
// the template's own: read it, never change it.
func (t *Template) Parts() []TemplatePart { return t.parts }

// Static reports whether the template has no fields: its expansion is the
// same for every hook.
func (t *Template) Static() bool {
	for _, p := range t.parts {
		if p.Field != TemplateLiteral {
			return false
		}
	}
	return true
}
