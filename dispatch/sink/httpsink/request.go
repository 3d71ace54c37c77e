package httpsink

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
	"github.com/ankusa/ankusa/dispatch/tmpl"
	"github.com/ankusa/ankusa/envelope"
)

// Header names the sink sets; they are sent in lower case, as written
// here (the request's header names are not normalized).
var (
	hEventID          = []byte("x-ankusa-event-id")
	hTenant           = []byte("x-ankusa-tenant")
	hSource           = []byte("x-ankusa-source")
	hAttempt          = []byte("x-ankusa-attempt")
	hFlagged          = []byte("x-ankusa-verification-flagged")
	hEventType        = []byte("x-ankusa-event-type")
	hBodyClaim        = []byte("x-ankusa-body-claim")
	hWebhookID        = []byte("webhook-id")
	hWebhookTimestamp = []byte("webhook-timestamp")
	hWebhookSignature = []byte("webhook-signature")
	vTrue             = []byte("true")
)

const (
	contentTypeJSON    = "application/json"
	contentTypeDefault = "application/octet-stream"
)

// headerTemplate is one entry of the sink's headers.
type headerTemplate struct {
	name []byte
	t    *config.Template
}

// parseHeaders parses the sink's headers, sorted by name so the request
// is the same for the same hook. The names the sink sets itself, and
// the framing headers, are refused.
func parseHeaders(hs map[string]string) ([]headerTemplate, error) {
	out := make([]headerTemplate, 0, len(hs))
	for name, v := range hs {
		if reservedHeader(name) {
			return nil, fmt.Errorf("headers.%s: is set by the sink itself; remove it", name)
		}
		t, err := config.ParseTemplate(v)
		if err != nil {
			return nil, fmt.Errorf("headers.%s: %w", name, err)
		}
		out = append(out, headerTemplate{name: []byte(name), t: t})
	}
	slices.SortFunc(out, func(a, b headerTemplate) int { return strings.Compare(string(a.name), string(b.name)) })
	return out, nil
}

func reservedHeader(name string) bool {
	n := strings.ToLower(name)
	switch n {
	case "content-length", "transfer-encoding", "connection",
		string(hWebhookID), string(hWebhookTimestamp), string(hWebhookSignature):
		return true
	}
	return strings.HasPrefix(n, "x-ankusa-")
}

// buildRequest fills a's request for d: the url, the body, the headers
// and the signature. Its error is a permanent *dispatch.Error: the hook
// cannot be sent as the sink is configured.
func (s *Sink) buildRequest(a *attempt, d *dispatch.Delivery) error {
	e := d.Envelope
	req := a.req
	req.Header.DisableNormalizing()
	req.Header.SetMethod(fasthttp.MethodPost)
	url, err := s.url.expand(a.scratch[:0], e)
	a.scratch = url
	if err != nil {
		return &dispatch.Error{Permanent: true, Err: fmt.Errorf("cannot build the url for this hook: %w", err)}
	}
	req.SetRequestURIBytes(url)
	s.setBody(a, e)
	s.setHeaders(a, d)
	if s.signer != nil {
		return s.signer.sign(a, e, s.opts.Now())
	}
	return nil
}

// setBody sets the body and its Content-Type. The body is copied into
// the attempt's buffer: the attempt may outlive Deliver (ctx done) and
// must not keep the envelope.
func (s *Sink) setBody(a *attempt, e *envelope.Envelope) {
	if s.envelopeFormat {
		a.body = e.AppendJSON(a.body[:0])
		a.req.Header.SetContentType(contentTypeJSON)
	} else {
		a.body = append(a.body[:0], e.Body...)
		a.req.Header.SetContentType(contentType(e))
	}
	a.req.SetBodyRaw(a.body)
}

// contentType is the Content-Type the hook came with, first of its name
// in any case.
func contentType(e *envelope.Envelope) string {
	for _, h := range e.Headers {
		if strings.EqualFold(h.Name, "Content-Type") {
			return h.Value
		}
	}
	return contentTypeDefault
}

// setHeaders sets the sink's headers, then the sink's own. fasthttp
// replaces CR and LF in values with spaces, so an expansion cannot add
// header lines.
func (s *Sink) setHeaders(a *attempt, d *dispatch.Delivery) {
	e := d.Envelope
	h := &a.req.Header
	for _, ht := range s.headers {
		a.scratch = tmpl.AppendTo(a.scratch[:0], ht.t, e)
		h.SetCanonical(ht.name, a.scratch)
	}
	h.SetCanonical(hEventID, e.ID.AppendText(a.id[:0]))
	a.scratch = append(a.scratch[:0], e.TenantID...)
	h.SetCanonical(hTenant, a.scratch)
	a.scratch = append(a.scratch[:0], e.SourceID...)
	h.SetCanonical(hSource, a.scratch)
	h.SetCanonical(hAttempt, strconv.AppendInt(a.ts[:0], int64(d.Attempt), 10))
	if e.Verification.Flagged {
		h.SetCanonical(hFlagged, vTrue)
	}
	if e.EventType != "" {
		a.scratch = append(a.scratch[:0], e.EventType...)
		h.SetCanonical(hEventType, a.scratch)
	}
	if e.BodyClaim != nil && !s.envelopeFormat {
		a.scratch = e.BodyClaim.AppendJSON(a.scratch[:0])
		h.SetCanonical(hBodyClaim, a.scratch)
	}
}
