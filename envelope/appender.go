package envelope

import "encoding/binary"

// bodyLenSize is the size of the body's length field.
const bodyLenSize = 4

// Appender appends one envelope to a buffer a field at a time, in the
// order of the binary form (see the package doc). It is the only code that
// lays an envelope out: AppendTo is built on it, and so is the edge, which
// holds views into the request it is serving and must neither convert
// them nor build an Envelope.
//
// Each step takes the buffer and returns it grown, like append; the steps,
// in order:
//
//	Begin(buf, receivedAt, flags, tenant, source, verifier)
//	Params(buf, n), then n × Pair(buf, key, value)
//	Headers(buf, n), then n × Pair(buf, name, value)
//	BeginBody(buf), the body's bytes appended to buf, EndBody(buf)   (or Body(buf, b))
//	End(buf, dedupeKey)   (or EndFrom(buf, dedupeKey, remoteAddr),
//	                       or EndEvent(buf, dedupeKey, remoteAddr, eventType))
//
// Between BeginBody and EndBody the caller appends the body itself (the
// edge reads it from the socket straight into the record). Every step
// takes the buffer the step before it returned. Strings may be views of
// bytes the caller does not own: their bytes are copied at once and none
// is kept. AddFlags sets flag bits at any step before End.
//
// A step out of order, or a count that its pairs do not match, panics: it
// is a bug in the caller, never a property of a hook. The zero Appender
// is ready for Begin; an Appender holds offsets into the buffer, never
// the buffer, and allocates nothing but what the buffer grows by.
type Appender struct {
	start  int // offset of the envelope in the buffer
	bodyAt int // offset of the body's length field
	left   int // pairs still due in the current list
	step   step
}

// step is where an Appender is in the layout: what it expects next.
type step uint8

const (
	stepIdle    step = iota // Begin (the zero Appender)
	stepParams              // Params
	stepPairs               // Pair of a route param, then Headers
	stepHeaders             // Pair of a header, then BeginBody
	stepBody                // the body's bytes, then EndBody
	stepKey                 // End
	stepDone                // Begin (the envelope is whole; Flags still reads it)
)

// expect panics unless the Appender is at s: the caller broke the order.
func (a *Appender) expect(s step, what string) {
	if a.step != s {
		panic("BUG: envelope: Appender." + what + " out of order")
	}
}

// Begin starts an envelope at the end of buf: the fixed prefix with a
// zero identity (the commit loop fills it in, see PutIdentity), then the
// tenant, source and verifier names.
func (a *Appender) Begin(buf []byte, receivedAt int64, flags byte, tenant, source, verifier string) []byte {
	if a.step != stepIdle && a.step != stepDone {
		panic("BUG: envelope: Appender.Begin inside an envelope")
	}
	*a = Appender{start: len(buf), step: stepParams}
	buf = appendFixed(buf, receivedAt, flags)
	buf = AppendString(buf, tenant)
	buf = AppendString(buf, source)
	return AppendString(buf, verifier)
}

// Params announces the route params: n calls of Pair follow.
func (a *Appender) Params(buf []byte, n int) []byte {
	a.expect(stepParams, "Params")
	if n < 0 {
		panic("BUG: envelope: Appender.Params with a negative count")
	}
	a.left, a.step = n, stepPairs
	return binary.AppendUvarint(buf, uint64(n))
}

// Headers announces the header fields as received, a repeated name being
// several fields: n calls of Pair follow.
func (a *Appender) Headers(buf []byte, n int) []byte {
	if a.step != stepPairs || a.left != 0 || n < 0 {
		panic("BUG: envelope: Appender.Headers out of order, after too few route params or with a negative count")
	}
	a.left, a.step = n, stepHeaders
	return binary.AppendUvarint(buf, uint64(n))
}

// Pair appends one route param or header field.
func (a *Appender) Pair(buf []byte, key, value string) []byte {
	// left is positive only between Params or Headers and their last pair.
	if a.left <= 0 {
		panic("BUG: envelope: Appender.Pair past its count or out of order")
	}
	a.left--
	// AppendString twice, written out: so the compiler inlines Pair into
	// the edge's header loop.
	buf = binary.AppendUvarint(buf, uint64(len(key)))
	buf = append(buf, key...)
	buf = binary.AppendUvarint(buf, uint64(len(value)))
	return append(buf, value...)
}

// BeginBody appends the body's length field: the caller appends the
// body's bytes, then calls EndBody.
func (a *Appender) BeginBody(buf []byte) []byte {
	if a.step != stepHeaders || a.left != 0 {
		panic("BUG: envelope: Appender.BeginBody out of order or after too few headers")
	}
	a.bodyAt, a.step = len(buf), stepBody
	return append(buf, 0, 0, 0, 0)
}

// EndBody writes the length of what buf gained since BeginBody into the
// body's length field and returns the body, a view of buf.
func (a *Appender) EndBody(buf []byte) []byte {
	a.expect(stepBody, "EndBody")
	a.step = stepKey
	body := buf[a.bodyAt+bodyLenSize:]
	binary.BigEndian.PutUint32(buf[a.bodyAt:], uint32(len(body)))
	return body
}

// Body appends the body whole: BeginBody, its bytes, EndBody.
func (a *Appender) Body(buf, body []byte) []byte {
	buf = append(a.BeginBody(buf), body...)
	a.EndBody(buf)
	return buf
}

// End appends the dedupe key, the last field: the envelope is whole, and
// the Appender ready for the next Begin.
func (a *Appender) End(buf []byte, dedupeKey string) []byte {
	return a.EndFrom(buf, dedupeKey, "")
}

// EndFrom is End for a hook whose sender's address is known: remoteAddr
// ("ip:port") follows the dedupe key, and FlagRemoteAddr says so. An
// empty remoteAddr is End.
func (a *Appender) EndFrom(buf []byte, dedupeKey, remoteAddr string) []byte {
	return a.EndEvent(buf, dedupeKey, remoteAddr, "")
}

// EndEvent is EndFrom for a hook whose event type is known: eventType
// follows the remote address (or the dedupe key when there is none), and
// FlagEventType says so. An empty eventType is EndFrom. Like every step it
// copies the strings' bytes at once, so they may view the request.
func (a *Appender) EndEvent(buf []byte, dedupeKey, remoteAddr, eventType string) []byte {
	a.expect(stepKey, "End")
	a.step = stepDone
	buf = AppendString(buf, dedupeKey)
	if remoteAddr != "" {
		buf[a.start+OffFlags] |= FlagRemoteAddr
		buf = AppendString(buf, remoteAddr)
	}
	if eventType != "" {
		buf[a.start+OffFlags] |= FlagEventType
		buf = AppendString(buf, eventType)
	}
	return buf
}

// AddFlags sets verification flag bits (Flag*, FailureBits) of the
// envelope being appended to buf, before End.
func (a *Appender) AddFlags(buf []byte, f byte) {
	if a.step == stepIdle || a.step == stepDone {
		panic("BUG: envelope: Appender.AddFlags outside an envelope")
	}
	buf[a.start+OffFlags] |= f
}

// Flags is the verification flags byte of the envelope being appended to
// buf, or just ended.
func (a *Appender) Flags(buf []byte) byte {
	if a.step == stepIdle {
		panic("BUG: envelope: Appender.Flags outside an envelope")
	}
	return buf[a.start+OffFlags]
}
