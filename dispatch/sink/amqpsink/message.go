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

// message is one publish being built: its buffer comes from bufPool and
// goes back once the frames are written (the client library copies the
// body into its writer before Publish returns).
type message struct {
	buf        *[]byte
	pub        amqp.Publishing
	exchange   string
	messageID  string
	routingKey string
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// build makes the message of d. Its error is permanent: the same hook
// fails the same way on every attempt.
func (s *Sink) build(d *dispatch.Delivery) (*message, error) {
	e := d.Envelope
	bp := bufPool.Get().(*[]byte)
	buf := (*bp)[:0]
	buf = tmpl.AppendTo(buf, s.key, e)
	keyLen := len(buf)
	if keyLen > maxShortstr {
		*bp = buf[:0]
		bufPool.Put(bp)
		return nil, fmt.Errorf("routing key is %d bytes, AMQP allows %d: shorten routing_key %q or the route parameters it uses",
			keyLen, maxShortstr, s.key.String())
	}
	buf = e.ID.AppendText(buf)
	idEnd := len(buf)
	var ct string
	var body []byte
	if s.raw {
		ct = headerValue(e.Headers, "Content-Type")
		if len(ct) > maxShortstr {
			*bp = buf[:0]
			bufPool.Put(bp)
			return nil, fmt.Errorf("the hook's Content-Type is %d bytes, AMQP allows %d: use format: envelope", len(ct), maxShortstr)
		}
		body = e.Body
	} else {
		ct = "application/json"
		buf = e.AppendJSON(buf)
		body = buf[idEnd:]
	}
	*bp = buf
	m := &message{buf: bp, exchange: s.o.Spec.Exchange}
	// The key and id are kept as strings: the confirm goroutine matches
	// returns against them after buf has gone back to the pool.
	m.routingKey = string(buf[:keyLen])
	m.messageID = string(buf[keyLen:idEnd])
	h := amqp.Table{
		HeaderEventID: m.messageID,
		HeaderTenant:  e.TenantID,
		HeaderSource:  e.SourceID,
		HeaderAttempt: int64(d.Attempt),
	}
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

// release gives the buffer back; the message's body is gone after it.
func (m *message) release() {
	if m.buf == nil {
		return
	}
	if cap(*m.buf) <= 1<<20 { // do not pin a huge body's buffer
		*m.buf = (*m.buf)[:0]
		bufPool.Put(m.buf)
	}
	m.buf = nil
	m.pub.Body = nil
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
