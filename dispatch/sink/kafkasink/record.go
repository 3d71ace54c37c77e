package kafkasink

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ankusa/ankusa/dispatch"
	"github.com/ankusa/ankusa/dispatch/tmpl"
	"github.com/ankusa/ankusa/envelope"
)

// Kafka record header names (see the package doc).
const (
	HeaderEventID     = "ankusa-event-id"
	HeaderTenant      = "ankusa-tenant"
	HeaderSource      = "ankusa-source"
	HeaderAttempt     = "ankusa-attempt"
	HeaderFlagged     = "ankusa-verification-flagged"
	HeaderEventType   = "ankusa-event-type"
	HeaderParamPrefix = "ankusa-param-"
	HeaderBodyClaim   = "ankusa-body-claim"
	HeaderContentType = "content-type"
)

// bufPool holds the buffers records are built in. A buffer backs the
// record's key, value and header values from build until the record is
// finished: its promise has run and Deliver no longer needs it (see
// flight); only then does it go back.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// putBuf gives a record buffer back to the pool; a huge one is left to
// the collector so that the pool does not pin it.
func putBuf(bp *[]byte) {
	if cap(*bp) <= 1<<20 {
		*bp = (*bp)[:0]
		bufPool.Put(bp)
	}
}

// build makes the record of d in a pooled buffer, which the caller owns
// (putBuf once the record is finished). Nothing of d is kept: strings and
// bytes the record needs are copied into the buffer. Its error is
// permanent: the same hook fails the same way on every attempt.
func (s *Sink) build(d *dispatch.Delivery) (*kgo.Record, *[]byte, error) {
	e := d.Envelope
	bp := bufPool.Get().(*[]byte)
	b := (*bp)[:0]
	topic := s.p.literalTopic
	if topic == "" {
		b = tmpl.AppendTo(b, s.p.topic, e)
		if err := checkTopicName(string(b)); err != nil {
			*bp = b
			putBuf(bp)
			return nil, nil, fmt.Errorf("topic %q expands for this hook to a name the cluster refuses: %w", s.p.topic.String(), err)
		}
		topic = string(b)
		b = b[:0]
	}
	// Each piece is appended to b and its end recorded; the slices are
	// cut once b no longer grows.
	var ends [8]int
	b = tmpl.AppendTo(b, s.p.key, e)
	ends[0] = len(b)
	b = e.ID.AppendText(b)
	ends[1] = len(b)
	b = append(b, e.TenantID...)
	ends[2] = len(b)
	b = append(b, e.SourceID...)
	ends[3] = len(b)
	b = strconv.AppendInt(b, int64(d.Attempt), 10)
	ends[4] = len(b)
	ct := "application/json"
	if s.raw {
		ct = headerValue(e.Headers, "Content-Type")
	}
	b = append(b, ct...)
	ends[5] = len(b)
	if s.raw && e.BodyClaim != nil {
		b = e.BodyClaim.AppendJSON(b)
	}
	ends[6] = len(b)
	paramEnds := make([]int, len(e.RouteParams))
	for i, p := range e.RouteParams {
		b = append(b, p.Value...)
		paramEnds[i] = len(b)
	}
	valStart := len(b)
	if s.raw {
		b = append(b, e.Body...) // nothing with a claim: the body is by reference
	} else {
		b = e.AppendJSON(b)
	}
	*bp = b

	hs := make([]kgo.RecordHeader, 0, 8+len(e.RouteParams))
	hs = append(hs,
		kgo.RecordHeader{Key: HeaderEventID, Value: b[ends[0]:ends[1]:ends[1]]},
		kgo.RecordHeader{Key: HeaderTenant, Value: b[ends[1]:ends[2]:ends[2]]},
		kgo.RecordHeader{Key: HeaderSource, Value: b[ends[2]:ends[3]:ends[3]]},
		kgo.RecordHeader{Key: HeaderAttempt, Value: b[ends[3]:ends[4]:ends[4]]})
	if ends[5] > ends[4] {
		hs = append(hs, kgo.RecordHeader{Key: HeaderContentType, Value: b[ends[4]:ends[5]:ends[5]]})
	}
	if e.Verification.Flagged {
		hs = append(hs, kgo.RecordHeader{Key: HeaderFlagged, Value: []byte("true")})
	}
	if e.EventType != "" {
		hs = append(hs, kgo.RecordHeader{Key: HeaderEventType, Value: []byte(e.EventType)})
	}
	if ends[6] > ends[5] {
		hs = append(hs, kgo.RecordHeader{Key: HeaderBodyClaim, Value: b[ends[5]:ends[6]:ends[6]]})
	}
	prev := ends[6]
	for i, p := range e.RouteParams {
		hs = append(hs, kgo.RecordHeader{Key: HeaderParamPrefix + p.Key, Value: b[prev:paramEnds[i]:paramEnds[i]]})
		prev = paramEnds[i]
	}
	// No Timestamp: franz-go stamps the record when it is produced, and
	// times a record out (RecordDeliveryTimeout) from its timestamp, so
	// a retried hook stamped with its received time would time out
	// before it was sent.
	r := &kgo.Record{
		Topic:   topic,
		Value:   b[valStart:len(b):len(b)], // never nil: a null value is a tombstone on a compacted topic
		Headers: hs,
	}
	if ends[0] > 0 {
		r.Key = b[:ends[0]:ends[0]]
	}
	return r, bp, nil
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

// clone is a fresh record with r's content (a record once produced
// carries the partition, offset and producer state of that produce).
func clone(r *kgo.Record) *kgo.Record {
	return &kgo.Record{Topic: r.Topic, Key: r.Key, Value: r.Value, Headers: r.Headers}
}
