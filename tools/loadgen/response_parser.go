package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// respParser reads HTTP/1.x answers for the epoll engine, which has no
// bufio.Reader under it to hand to fasthttp: the connection appends what
// it reads to one buffer and calls parse until an answer is complete. It
// knows what a load generator needs and no more: the status line, the
// headers that frame the body (Content-Length, Transfer-Encoding: chunked,
// Connection), the body (for -acked), and whether the connection ends
// after the answer. Interim 1xx answers are skipped. It does not allocate
// once its chunk buffer has grown to the largest chunked body seen.
//
// A parser keeps its place between calls, so a large answer read in many
// pieces is scanned once.
type respParser struct {
	// The answer, once parse reports it complete.
	status int
	close  bool   // the connection ends after this answer
	body   []byte // aliases the connection's buffer, or chunked; valid until the next reset

	start    int // offset of the current answer (past skipped 1xx answers)
	hdrEnd   int // offset just past the header block; 0 until it is parsed
	mode     bodyMode
	length   int  // modeLength: body length
	pos      int  // modeChunked: where the next chunk line starts
	trailers bool // modeChunked: past the last chunk, reading trailer lines
	chunked  []byte
}

type bodyMode uint8

const (
	modeNone       bodyMode = iota // no body (204, 304)
	modeLength                     // Content-Length
	modeChunked                    // Transfer-Encoding: chunked
	modeUntilClose                 // neither: the body ends with the connection
)

// maxHeaderBytes bounds an answer's status line and headers; maxLineBytes
// a chunk-size or trailer line.
const (
	maxHeaderBytes = 64 << 10
	maxLineBytes   = 4 << 10
)

// errBadAnswer wraps every malformed answer; such an answer is a
// transport error of kind "other", as fasthttp's parse errors are.
var errBadAnswer = errors.New("malformed HTTP answer")

// reset readies the parser for the next answer.
func (p *respParser) reset() {
	*p = respParser{chunked: p.chunked[:0]}
}

// parse looks for one whole answer at the start of buf, which holds every
// byte read since the answer began; eof says the peer has closed its side
// (no more bytes will come). It returns the answer's end offset and true
// when it is complete, 0 and false when more bytes are needed, or an
// error: io.EOF when the connection closed before any byte of the answer,
// io.ErrUnexpectedEOF when it closed mid-answer, errBadAnswer for a
// malformed one.
func (p *respParser) parse(buf []byte, eof bool) (end int, done bool, err error) {
	for p.hdrEnd == 0 {
		n, ok, err := p.parseHeader(buf[p.start:])
		switch {
		case err != nil:
			return 0, false, err
		case !ok:
			return 0, false, p.short(buf, eof)
		}
		if p.status >= 100 && p.status < 200 && p.status != 101 {
			// An interim answer (100 Continue, 103 Early Hints): the
			// final one follows.
			p.start += n
			continue
		}
		p.hdrEnd = p.start + n
	}
	switch p.mode {
	case modeNone:
		p.body = buf[p.hdrEnd:p.hdrEnd]
		return p.hdrEnd, true, nil
	case modeLength:
		if end := p.hdrEnd + p.length; len(buf) >= end {
			p.body = buf[p.hdrEnd:end]
			return end, true, nil
		}
		return 0, false, p.short(buf, eof)
	case modeChunked:
		end, done, err := p.parseChunks(buf)
		if err == nil && !done {
			err = p.short(buf, eof)
		}
		return end, done, err
	}
	// modeUntilClose
	if !eof {
		return 0, false, nil
	}
	p.body = buf[p.hdrEnd:]
	return len(buf), true, nil
}

// short is the error of an incomplete answer: none while more may come.
func (p *respParser) short(buf []byte, eof bool) error {
	switch {
	case !eof:
		return nil
	case len(buf) == 0:
		return io.EOF
	}
	return io.ErrUnexpectedEOF
}

// parseHeader parses the status line and headers at the start of b. It
// returns the header block's length when it is whole.
func (p *respParser) parseHeader(b []byte) (n int, ok bool, err error) {
	line, rest, found := nextLine(b)
	if !found {
		if len(b) > maxHeaderBytes {
			return 0, false, fmt.Errorf("%w: no end of the status line in %d bytes", errBadAnswer, len(b))
		}
		return 0, false, nil
	}
	// HTTP/1.x SP 3DIGIT [SP reason]
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[7] < '0' || line[7] > '9' || line[8] != ' ' ||
		!isDigit(line[9]) || !isDigit(line[10]) || !isDigit(line[11]) || (len(line) > 12 && line[12] != ' ') {
		return 0, false, fmt.Errorf("%w: status line %.80q", errBadAnswer, line)
	}
	http10 := line[7] == '0'
	p.status = int(line[9]-'0')*100 + int(line[10]-'0')*10 + int(line[11]-'0')
	var (
		length             = -1
		chunked, otherTE   bool
		connClose, connKA  bool
		name, value, field []byte
	)
	for {
		field, rest, found = nextLine(rest)
		if !found {
			if len(b) > maxHeaderBytes {
				return 0, false, fmt.Errorf("%w: headers longer than %d bytes", errBadAnswer, maxHeaderBytes)
			}
			return 0, false, nil
		}
		if len(field) == 0 {
			break
		}
		colon := bytes.IndexByte(field, ':')
		if colon <= 0 {
			return 0, false, fmt.Errorf("%w: header line %.80q", errBadAnswer, field)
		}
		name, value = field[:colon], bytes.Trim(field[colon+1:], " \t")
		switch {
		case asciiEqualFold(name, "Content-Length"):
			v, ok := parseDecimal(value)
			if !ok || (length >= 0 && v != length) {
				return 0, false, fmt.Errorf("%w: Content-Length %.40q", errBadAnswer, value)
			}
			length = v
		case asciiEqualFold(name, "Transfer-Encoding"):
			// The last coding decides: chunked frames the body; any other
			// leaves it to end with the connection (RFC 9112 §6.3).
			last := value
			if i := bytes.LastIndexByte(value, ','); i >= 0 {
				last = bytes.Trim(value[i+1:], " \t")
			}
			chunked = asciiEqualFold(last, "chunked")
			otherTE = !chunked
		case asciiEqualFold(name, "Connection"):
			for tok := range bytes.SplitSeq(value, []byte(",")) {
				tok = bytes.Trim(tok, " \t")
				connClose = connClose || asciiEqualFold(tok, "close")
				connKA = connKA || asciiEqualFold(tok, "keep-alive")
			}
		}
	}
	p.close = connClose || (http10 && !connKA) || p.status == 101
	switch {
	case p.status == 204 || p.status == 304 || (p.status >= 100 && p.status < 200):
		p.mode = modeNone
	case chunked:
		p.mode = modeChunked
	case otherTE || length < 0:
		p.mode, p.close = modeUntilClose, true
	default:
		p.mode, p.length = modeLength, length
	}
	return len(b) - len(rest), true, nil
}

// parseChunks decodes chunks into p.chunked from p.pos on, keeping its
// place; it reports the answer's end once the last chunk and the trailers
// are in.
func (p *respParser) parseChunks(buf []byte) (end int, done bool, err error) {
	if p.pos < p.hdrEnd {
		p.pos = p.hdrEnd
	}
	for {
		line, rest, found := nextLine(buf[p.pos:])
		if !found {
			if len(buf)-p.pos > maxLineBytes {
				return 0, false, fmt.Errorf("%w: chunk line longer than %d bytes", errBadAnswer, maxLineBytes)
			}
			return 0, false, nil
		}
		lineEnd := len(buf) - len(rest)
		if p.trailers {
			p.pos = lineEnd
			if len(line) == 0 {
				p.body = p.chunked
				return lineEnd, true, nil
			}
			continue
		}
		if i := bytes.IndexByte(line, ';'); i >= 0 {
			line = line[:i] // chunk extensions
		}
		size, ok := parseHex(bytes.Trim(line, " \t"))
		if !ok {
			return 0, false, fmt.Errorf("%w: chunk size %.40q", errBadAnswer, line)
		}
		if size == 0 {
			p.trailers, p.pos = true, lineEnd
			continue
		}
		// The data, then CRLF (or a bare LF).
		if len(buf)-lineEnd < size+1 {
			return 0, false, nil
		}
		data := buf[lineEnd : lineEnd+size]
		after := lineEnd + size
		switch {
		case buf[after] == '\n':
			after++
		case buf[after] == '\r' && len(buf) > after+1 && buf[after+1] == '\n':
			after += 2
		case buf[after] == '\r' && len(buf) == after+1:
			return 0, false, nil
		default:
			return 0, false, fmt.Errorf("%w: chunk of %d bytes not followed by CRLF", errBadAnswer, size)
		}
		p.chunked = append(p.chunked, data...)
		p.pos = after
	}
}

// nextLine splits b at its first LF; the line excludes the LF and a CR
// before it.
func nextLine(b []byte) (line, rest []byte, ok bool) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return nil, b, false
	}
	line, rest = b[:i], b[i+1:]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, rest, true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// parseDecimal parses a non-negative decimal of at most 15 digits.
func parseDecimal(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 15 {
		return 0, false
	}
	v := 0
	for _, c := range b {
		if !isDigit(c) {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, true
}

// parseHex parses a chunk size: hexadecimal, at most 12 digits.
func parseHex(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 12 {
		return 0, false
	}
	v := 0
	for _, c := range b {
		var d byte
		switch {
		case isDigit(c):
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		v = v<<4 | int(d)
	}
	return v, true
}

// asciiEqualFold reports whether b equals s, ignoring ASCII case.
func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		if lowerASCII(b[i]) != lowerASCII(s[i]) {
			return false
		}
	}
	return true
}

func lowerASCII(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
