package natssink

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ankusa/ankusa/dispatch"
	"github.com/ankusa/ankusa/dispatch/tmpl"
	"github.com/ankusa/ankusa/envelope"
)

// Message header names.
const (
	HeaderEventID     = "ankusa-event-id"
	HeaderTenant      = "ankusa-tenant"
	HeaderSource      = "ankusa-source"
	HeaderAttempt     = "ankusa-attempt"
	HeaderFlagged     = "ankusa-verification-flagged"
	HeaderEventType   = "ankusa-event-type"
	HeaderParamPrefix = "ankusa-param-"
	// HeaderBodyClaim carries a claimed body's reference in the raw
	// format (envelope.Claim's JSON form); the message's data is empty.
	HeaderBodyClaim   = "ankusa-body-claim"
	HeaderContentType = "Content-Type"
	// HeaderMsgID is JetStream's de-duplication header: the event id.
	HeaderMsgID = jetstream.MsgIDHeader
)

// build makes the message of d. Its error is permanent: the same hook
// fails the same way on every attempt.
func (s *Sink) build(d *dispatch.Delivery) (*nats.Msg, error) {
	e := d.Envelope
	subj := string(tmpl.AppendTo(make([]byte, 0, 64), s.st.subject, e))
	if bad := checkSubject(subj, false); bad != "" {
		return nil, fmt.Errorf("subject %q (from subject %q) %s", subj, s.st.subject.String(), bad)
	}
	id := e.ID.String()
	h := make(nats.Header, 8+len(e.RouteParams))
	h[HeaderMsgID] = []string{id}
	h[HeaderEventID] = []string{id}
	h[HeaderTenant] = []string{e.TenantID}
	h[HeaderSource] = []string{e.SourceID}
	h[HeaderAttempt] = []string{strconv.Itoa(d.Attempt)}
	if e.Verification.Flagged {
		h[HeaderFlagged] = []string{"true"}
	}
	if e.EventType != "" {
		h[HeaderEventType] = []string{e.EventType}
	}
	for _, p := range e.RouteParams {
		h[HeaderParamPrefix+p.Key] = []string{p.Value}
	}
	var data []byte
	if s.raw {
		if ct := headerValue(e.Headers, "Content-Type"); ct != "" {
			h[HeaderContentType] = []string{ct}
		}
		if e.BodyClaim != nil {
			h[HeaderBodyClaim] = []string{string(e.BodyClaim.AppendJSON(nil))}
		} else {
			data = e.Body
		}
	} else {
		h[HeaderContentType] = []string{"application/json"}
		data = e.AppendJSON(make([]byte, 0, len(e.Body)+512))
	}
	for k, vs := range h {
		if bad := badHeader(k, vs[0]); bad != "" {
			return nil, fmt.Errorf("header %q %s", k, bad)
		}
	}
	return &nats.Msg{Subject: subj, Header: h, Data: data}, nil
}

// badHeader says what the NATS header format cannot carry in a header
// ("" when nothing): a line break anywhere, a ':' or white space in the
// name.
func badHeader(name, value string) string {
	if name == "" || strings.ContainsAny(name, ": \t\r\n") {
		return "is not a header name (a route parameter's name?)"
	}
	if strings.ContainsAny(value, "\r\n") {
		return "has a line break in its value"
	}
	return ""
}

// headerValue is the first value of the header name (case-insensitive),
// "" when absent.
func headerValue(hs []envelope.Header, name string) string {
	for _, h := range hs {
		if strings.EqualFold(h.Name, name) {
			return h.Value
		}
	}
	return ""
}
