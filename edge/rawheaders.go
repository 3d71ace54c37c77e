package edge

import "bytes"

// The edge stores a hook's header fields as they arrived, not as fasthttp
// presents them: fasthttp canonicalises names ("x-github-event" becomes
// "X-Github-Event"), drops a Content-Length that comes with
// Transfer-Encoding, and adds "Connection: close" to such a request. Its
// RequestHeader keeps the block's wire bytes (RawHeaders, with or without
// a streamed body), and rawFields reads the fields from them: each name
// in the case sent, each value as sent without the whitespace around it
// (not part of a field value, RFC 9110 §5.5), in order, repeats kept.
//
// Obsolete line folding (a line that starts with a space or a tab,
// continuing the field before it; RFC 9112 §5.2) is refused with a 400
// invalid_header (checkHeaders): the RFC lets a server refuse it or
// replace each fold with spaces, and refusing keeps what is stored, what
// verification reads and what is delivered the same bytes. fasthttp would
// join the lines; the wire bytes would keep the fold.

// nextField reads the first field of a raw header block: its name and
// value, and the block after it. ok is false at the block's end (the
// empty line, or no more bytes). It allocates nothing.
func nextField(raw []byte) (name, value, rest []byte, ok bool) {
	line, rest := cutLine(raw)
	if len(line) == 0 {
		return nil, nil, nil, false
	}
	colon := bytes.IndexByte(line, ':')
	if colon < 0 {
		// fasthttp refuses such a line; an empty name keeps checkHeaders
		// refusing it too.
		return nil, line, rest, true
	}
	return line[:colon], trimOWS(line[colon+1:]), rest, true
}

// cutLine splits raw at its first line end (CRLF or a bare LF, as
// fasthttp reads them).
func cutLine(raw []byte) (line, rest []byte) {
	i := bytes.IndexByte(raw, '\n')
	if i < 0 {
		return raw, nil
	}
	line, rest = raw[:i], raw[i+1:]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, rest
}

// isFold reports whether a header line continues the one before it.
func isFold(line []byte) bool {
	return len(line) > 0 && (line[0] == ' ' || line[0] == '\t')
}

func trimOWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}
