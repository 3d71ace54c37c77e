package envelope

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"
	"unsafe"
)

// Body encodings of the JSON form.
const (
	BodyUTF8   = "utf8"
	BodyBase64 = "base64"
)

// receivedAtLayout is RFC 3339 with a fixed nine-digit fraction.
const receivedAtLayout = "2006-01-02T15:04:05.000000000Z07:00"

// groupLinear is the header count up to which AppendJSON groups names by
// scanning (no allocation); past it, it chains fields of the same name.
const groupLinear = 32

// AppendJSON appends the JSON form (version 1) of e to dst and returns the
// extended buffer. The admin API, replay output (one object per line) and
// envelope-format deliveries show an envelope this way: one JSON object, keys
// in this order (DESIGN.md §2.3), written compactly, with no spaces and no
// trailing newline:
//
//	{"id":"evt_01KB8J27QV003G00000000001A","seq":42,"tenant_id":"acme","source_id":"stripe",
//	 "received_at":"2025-11-29T19:40:00.123456789Z","route_params":{"app_id":"a1"},
//	 "headers":{"Stripe-Signature":["t=1,v1=abc"]},"body":"{\"id\":\"evt_1\"}",
//	 "body_encoding":"utf8","verification":{"verifier":"stripe","verified":true,"flagged":false},
//	 "dedupe_key":"evt_1"}
//
// In detail:
//
//   - received_at is RFC 3339 in UTC with exactly nine fractional digits
//     (time.RFC3339Nano would drop trailing zeros), so every timestamp has the
//     same width and the text is a function of the envelope.
//   - route_params is an object in the envelope's order; {} when there are none.
//   - headers is an object from each name, as the envelope holds it (the
//     edge stores names in the case the sender used: "x-github-event" and
//     "X-GitHub-Event" are two names), to its values in the order received;
//     names appear in the order of their first occurrence, so fields of
//     different names that were interleaved come out grouped (the binary
//     form keeps the exact order). {} when there are none.
//   - body is the body's text with body_encoding "utf8" when it is valid UTF-8
//     (an empty body is "" and "utf8"), otherwise standard padded base64 with
//     body_encoding "base64". Either way the body round-trips byte for byte.
//   - A body delivered by reference (a sink's claim) is "" with
//     body_encoding "claim", followed by body_claim, the reference
//     (Claim.AppendJSON): "body":"","body_encoding":"claim","body_claim":
//     {"store":..,"key":..,"offset":..,"length":..,"sha256":..}.
//   - Strings are escaped as encoding/json escapes them with HTML escaping off:
//     ", \ and control characters are escaped (\b \f \n \r \t, else \u00XX),
//     U+2028 and U+2029 become \u2028 and \u2029, everything else is written as
//     is. A string field that is not valid UTF-8 (a header value is bytes as
//     received, and may hold obs-text) has each invalid byte replaced by
//     \ufffd, again as encoding/json does: JSON strings cannot carry raw bytes.
//     Only the JSON view is lossy there; the binary form keeps the bytes.
//   - event_type, after dedupe_key, is the provider's name for what
//     happened ("push", "invoice.paid"); it is left out when the hook has
//     none, so the form of a hook without one is unchanged.
//   - remote_addr, last, is the sender's address at receipt, "ip:port" (the
//     PROXY header's sender behind a trusted balancer, else the TCP peer);
//     it is left out when unknown (hooks stored before it was recorded).
//   - The tenant ordinal and the quarantined flag are node-internal and not
//     part of the JSON form.
//
// AppendJSON does not keep dst or e. With up to 32 header fields it
// allocates only when dst must grow. UnmarshalJSON reads the form back.
func (e *Envelope) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"id":"`...)
	dst = e.ID.AppendText(dst)
	dst = append(dst, `","seq":`...)
	dst = strconv.AppendUint(dst, e.Seq, 10)
	dst = append(dst, `,"tenant_id":`...)
	dst = appendJSONString(dst, e.TenantID)
	dst = append(dst, `,"source_id":`...)
	dst = appendJSONString(dst, e.SourceID)
	dst = append(dst, `,"received_at":"`...)
	dst = time.Unix(0, e.ReceivedAt).UTC().AppendFormat(dst, receivedAtLayout)
	dst = append(dst, `","route_params":{`...)
	for i, p := range e.RouteParams {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, p.Key)
		dst = append(dst, ':')
		dst = appendJSONString(dst, p.Value)
	}
	dst = append(dst, `},"headers":`...)
	dst = appendHeaders(dst, e.Headers)
	dst = append(dst, `,"body":`...)
	if e.BodyClaim != nil {
		dst = append(dst, `"","body_encoding":"`+BodyClaim+`","body_claim":`...)
		dst = e.BodyClaim.AppendJSON(dst)
	} else if utf8.Valid(e.Body) {
		// The string view lives only for this call.
		dst = appendJSONString(dst, unsafe.String(unsafe.SliceData(e.Body), len(e.Body)))
		dst = append(dst, `,"body_encoding":"`+BodyUTF8+`"`...)
	} else {
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, e.Body)
		dst = append(dst, `","body_encoding":"`+BodyBase64+`"`...)
	}
	dst = append(dst, `,"verification":{"verifier":`...)
	dst = appendJSONString(dst, e.Verification.Verifier)
	dst = append(dst, `,"verified":`...)
	dst = strconv.AppendBool(dst, e.Verification.Verified)
	dst = append(dst, `,"flagged":`...)
	dst = strconv.AppendBool(dst, e.Verification.Flagged)
	dst = append(dst, `},"dedupe_key":`...)
	dst = appendJSONString(dst, e.DedupeKey)
	if e.EventType != "" {
		dst = append(dst, `,"event_type":`...)
		dst = appendJSONString(dst, e.EventType)
	}
	if e.RemoteAddr != "" {
		dst = append(dst, `,"remote_addr":`...)
		dst = appendJSONString(dst, e.RemoteAddr)
	}
	return append(dst, '}')
}

// MarshalJSON returns the JSON form of e, so an envelope inside another
// value encodes as AppendJSON writes it. It has a value receiver so that
// encoding an Envelope that is not addressable does not fall back to the
// reflective form.
func (e Envelope) MarshalJSON() ([]byte, error) { return e.AppendJSON(nil), nil }

// appendHeaders appends the headers object: each name once, at its first
// occurrence, with all its values in order.
func appendHeaders(dst []byte, hs []Header) []byte {
	dst = append(dst, '{')
	var g headerGroups
	if len(hs) > groupLinear {
		g = groupHeaders(hs)
	}
	first := true
	for i, h := range hs {
		if g.next == nil && seenBefore(hs, i) || g.next != nil && g.repeat[i] {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = appendJSONString(dst, h.Name)
		dst = append(dst, ":["...)
		dst = appendJSONString(dst, h.Value)
		if g.next != nil {
			for j := g.next[i]; j != 0; j = g.next[j] {
				dst = append(dst, ',')
				dst = appendJSONString(dst, hs[j].Value)
			}
		} else {
			for _, h2 := range hs[i+1:] {
				if h2.Name == h.Name {
					dst = append(dst, ',')
					dst = appendJSONString(dst, h2.Value)
				}
			}
		}
		dst = append(dst, ']')
	}
	return append(dst, '}')
}

func seenBefore(hs []Header, i int) bool {
	for j := range i {
		if hs[j].Name == hs[i].Name {
			return true
		}
	}
	return false
}

// headerGroups chains the fields of each name: next[i] is the index of the
// next field named as field i (0 after the last), repeat[i] is true for all
// but the first field of a name.
type headerGroups struct {
	next   []int
	repeat []bool
}

func groupHeaders(hs []Header) headerGroups {
	g := headerGroups{next: make([]int, len(hs)), repeat: make([]bool, len(hs))}
	last := make(map[string]int, len(hs))
	for i, h := range hs {
		if j, ok := last[h.Name]; ok {
			g.next[j] = i
			g.repeat[i] = true
		}
		last[h.Name] = i
	}
	return g
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string, escaped as encoding/json
// escapes it with HTML escaping off (see AppendJSON).
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// UnmarshalJSON reads the JSON form back into e, replacing all of e. id,
// received_at and body_encoding are required; other absent fields are zero,
// unknown fields are ignored, and received_at may be any RFC 3339 time
// (with any fraction or offset) that unix nanoseconds can hold. Headers come
// back grouped by name (see the JSON form), and the tenant ordinal and the
// quarantined flag are zero. JSON null leaves e as it is.
func (e *Envelope) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var f jsonForm
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("envelope: cannot decode JSON form: %w", err)
	}
	id, err := ParseID([]byte(f.ID))
	if err != nil {
		return fmt.Errorf("envelope: JSON field id %q: %w", f.ID, err)
	}
	at, err := parseReceivedAt(f.ReceivedAt)
	if err != nil {
		return err
	}
	var body []byte
	switch f.BodyEncoding {
	case BodyUTF8:
		body = []byte(f.Body)
	case BodyBase64:
		if body, err = base64.StdEncoding.DecodeString(f.Body); err != nil {
			return fmt.Errorf("envelope: JSON field body is not standard base64: %w", err)
		}
	case BodyClaim:
		if f.BodyClaim == nil {
			return fmt.Errorf("envelope: JSON field body_encoding is %q but body_claim is absent", BodyClaim)
		}
		if err := f.BodyClaim.Check(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("envelope: JSON field body_encoding %q must be %q, %q or %q", f.BodyEncoding, BodyUTF8, BodyBase64, BodyClaim)
	}
	*e = Envelope{
		Seq:         f.Seq,
		ID:          id,
		TenantID:    f.TenantID,
		SourceID:    f.SourceID,
		ReceivedAt:  at,
		RouteParams: f.RouteParams,
		Headers:     f.Headers,
		Body:        body,
		Verification: Verification{
			Verifier: f.Verification.Verifier,
			Verified: f.Verification.Verified,
			Flagged:  f.Verification.Flagged,
		},
		DedupeKey:  f.DedupeKey,
		EventType:  f.EventType,
		RemoteAddr: f.RemoteAddr,
	}
	if f.BodyEncoding == BodyClaim {
		e.BodyClaim = f.BodyClaim
	}
	return nil
}

// jsonForm is the JSON form as encoding/json reads it.
type jsonForm struct {
	ID           string      `json:"id"`
	Seq          uint64      `json:"seq"`
	TenantID     string      `json:"tenant_id"`
	SourceID     string      `json:"source_id"`
	ReceivedAt   string      `json:"received_at"`
	RouteParams  jsonParams  `json:"route_params"`
	Headers      jsonHeaders `json:"headers"`
	Body         string      `json:"body"`
	BodyEncoding string      `json:"body_encoding"`
	BodyClaim    *Claim      `json:"body_claim"`
	Verification struct {
		Verifier string `json:"verifier"`
		Verified bool   `json:"verified"`
		Flagged  bool   `json:"flagged"`
	} `json:"verification"`
	DedupeKey  string `json:"dedupe_key"`
	EventType  string `json:"event_type"`
	RemoteAddr string `json:"remote_addr"`
}

var (
	minReceivedAt = time.Unix(0, math.MinInt64)
	maxReceivedAt = time.Unix(0, math.MaxInt64)
)

func parseReceivedAt(s string) (int64, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, fmt.Errorf("envelope: JSON field received_at %q is not an RFC 3339 time: %w", s, err)
	}
	if t.Before(minReceivedAt) || t.After(maxReceivedAt) {
		return 0, fmt.Errorf("envelope: JSON field received_at %q is outside the years 1678 to 2262", s)
	}
	return t.UnixNano(), nil
}

// jsonParams reads route_params, an object, keeping its order.
type jsonParams []Param

func (ps *jsonParams) UnmarshalJSON(b []byte) error {
	*ps = nil
	return readObject(b, "route_params", func(d *json.Decoder, key string) error {
		v, err := readString(d)
		if err != nil {
			return err
		}
		*ps = append(*ps, Param{Key: key, Value: v})
		return nil
	})
}

// jsonHeaders reads headers, an object of arrays, keeping its order.
type jsonHeaders []Header

func (hs *jsonHeaders) UnmarshalJSON(b []byte) error {
	*hs = nil
	return readObject(b, "headers", func(d *json.Decoder, name string) error {
		if err := readDelim(d, '['); err != nil {
			return err
		}
		for d.More() {
			v, err := readString(d)
			if err != nil {
				return err
			}
			*hs = append(*hs, Header{Name: name, Value: v})
		}
		return readDelim(d, ']')
	})
}

// readObject calls member for each key of the JSON object b, in order; the
// callback reads the key's value from d. null is an empty object.
func readObject(b []byte, field string, member func(d *json.Decoder, key string) error) error {
	if string(b) == "null" {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(b))
	err := readDelim(d, '{')
	for err == nil && d.More() {
		var key string
		if key, err = readString(d); err == nil {
			err = member(d, key)
		}
	}
	if err == nil {
		err = readDelim(d, '}')
	}
	if err != nil {
		return fmt.Errorf("envelope: JSON field %s: %w", field, err)
	}
	return nil
}

func readDelim(d *json.Decoder, want json.Delim) error {
	t, err := d.Token()
	if err != nil {
		return err
	}
	if t != want {
		return fmt.Errorf("found %v where %v belongs", t, want)
	}
	return nil
}

func readString(d *json.Decoder) (string, error) {
	t, err := d.Token()
	if err != nil {
		return "", err
	}
	s, ok := t.(string)
	if !ok {
		return "", fmt.Errorf("found %v where a string belongs", t)
	}
	return s, nil
}
