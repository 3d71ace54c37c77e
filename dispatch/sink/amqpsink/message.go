package amqpsink

import (
	"fmt"
	"strings"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/ankusa/ankusa/dispatch"
	"github.com/ankusa/ankusa/dispatch/tmpl"
	"github.com/ankusa/ankusa/envelope"
)

// AMQP message header names.
const (
	HeaderEventID     = "x-ankusa-event-id"
	HeaderTenant      = "x-ankusa-tenant"
	HeaderSource      = "x-ankusa-source"
	HeaderAttempt     = "x-ankusa-attempt"
	HeaderFlagged     = "x-ankusa-verification-flagged"
	HeaderEventType   = "x-ankusa-event-type"
	HeaderBodyClaim   = "x-ankusa-body-claim"
	HeaderParamPrefix = "x-ankusa-param-"
)

// AppID is the message's app-id property.
const AppID = "ankusa"

// maxShortstr is the longest AMQP short string (routing key, content type,
// header name, message id).
const maxShortstr = 255

// message is one publish being built. It comes from msgPool with its
// buffer and header table and goes back, by release, once the frames are
// written (the client library encodes the body and the table into its
// writer before Publish returns and keeps neither). After release nothing
// of it may be read: copy what is needed first.
type message struct {
	buf        []byte
	hdr        amqp.Table // m.pub.Headers, cleared on release
	pub        amqp.Publishing
	exchange   string
	messageID  string
	routingKey string
}

var msgPool = sync.Pool{New: func() any { return &message{buf: make([]byte, 0, 4096), hdr: make(amqp.Table, 8)} }}

// getMessage and (*message).release are the pool's Get/Put pair.
func getMessage() *message { return msgPool.Get().(*message) }

// release gives m back to the pool; m is gone after it. A message is
// released once.
func (m *message) release() {
	clear(m.hdr)
	buf := m.buf[:0]
	if cap(buf) > 1<<20 { // do not pin a huge body's buffer
		buf = make([]byte, 0, 4096)
	}
	*m = message{buf: buf, hdr: m.hdr}
	msgPool.Put(m)
}

// build makes the message of d. Its error is permanent: the same hook
// fails the same way on every attempt.
func (s *Sink) build(d *dispatch.Delivery) (*message, error) {
	e := d.Envelope
	m := getMessage()
	buf := tmpl.AppendTo(m.buf, s.key, e)
	m.buf = buf
	keyLen := len(buf)
	if keyLen > maxShortstr {
		m.release()
		return nil, fmt.Errorf("routing key is %d bytes, AMQP allows %d: shorten routing_key %q or the route parameters it uses",
			keyLen, maxShortstr, s.key.String())
	}
	buf = e.ID.AppendText(buf)
	m.buf = buf
	idEnd := len(buf)
	var ct string
	var body []byte
	if s.raw {
		ct = headerValue(e.Headers, "Content-Type")
		if len(ct) > maxShortstr {
			m.release()
			return nil, fmt.Errorf("the hook's Content-Type is %d bytes, AMQP allows %d: use format: envelope", len(ct), maxShortstr)
		}
		body = e.Body
	} else {
		ct = "application/json"
		buf = e.AppendJSON(buf)
		m.buf = buf
		body = buf[idEnd:]
	}
	m.exchange = s.o.Spec.Exchange
	// The key and id are kept as strings: the confirm goroutine matches
	// returns against them after the buffer has gone back to the pool.
	m.routingKey = string(buf[:keyLen])
	m.messageID = string(buf[keyLen:idEnd])
	h := m.hdr
	h[HeaderEventID] = m.messageID
	h[HeaderTenant] = e.TenantID
	h[HeaderSource] = e.SourceID
	h[HeaderAttempt] = int64(d.Attempt)
	if e.Verification.Flagged {
		h[HeaderFlagged] = true
	}
	if e.EventType != "" {
		h[HeaderEventType] = e.EventType
	}
	if e.BodyClaim != nil && s.raw {
		h[HeaderBodyClaim] = string(e.BodyClaim.AppendJSON(nil))
	}
	for _, p := range e.RouteParams {
		name := HeaderParamPrefix + p.Key
		if len(name) > maxShortstr {
			m.release()
			return nil, fmt.Errorf("route parameter %q makes a header name of %d bytes, AMQP allows %d", p.Key, len(name), maxShortstr)
		}
		h[name] = p.Value
	}
	m.pub = amqp.Publishing{
		Headers:      h,
		ContentType:  ct,
		DeliveryMode: amqp.Persistent,
		MessageId:    m.messageID,
		Timestamp:    time.Unix(0, e.ReceivedAt).UTC(),
		AppId:        AppID,
		Body:         body,
	}
	return m, nil
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
