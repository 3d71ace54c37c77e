// Package tmpl expands sink templates over one hook's envelope: the HTTP
// sink's url, headers and secret and the RabbitMQ sink's routing key
// (DESIGN.md §2.7).
//
// The template language — its fields, its syntax, its errors — is the
// config's (config.Template): config parses every template when it
// validates, and config may import no package of this module, so it cannot
// know the envelope. This package owns only what each field is for one
// hook. It imports config and envelope and nothing else of this module.
package tmpl

import (
	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/envelope"
)

// AppendTo appends the expansion of t for e to dst. It does not allocate
// beyond growing dst.
func AppendTo(dst []byte, t *config.Template, e *envelope.Envelope) []byte {
	for _, p := range t.Parts() {
		switch p.Field {
		case config.TemplateLiteral:
			dst = append(dst, p.Text...)
		case config.TemplateTenantID:
			dst = append(dst, e.TenantID...)
		case config.TemplateSourceID:
			dst = append(dst, e.SourceID...)
		case config.TemplateEventID:
			dst = e.ID.AppendText(dst)
		case config.TemplateParam:
			dst = appendParam(dst, e, p.Text)
		}
	}
	return dst
}

// appendParam appends the value of the route parameter name, nothing when
// the route has none.
func appendParam(dst []byte, e *envelope.Envelope, name string) []byte {
	for _, kv := range e.RouteParams {
		if kv.Key == name {
			return append(dst, kv.Value...)
		}
	}
	return dst
}
