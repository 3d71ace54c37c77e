package main

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// TestRespParser feeds answers whole and then byte by byte (every split a
// socket could make) and checks status, body, end and whether the
// connection must close.
func TestRespParser(t *testing.T) {
	type want struct {
		status int
		body   string
		close  bool
		rest   string // bytes after the answer
	}
	f := func(name, in string, eof bool, w want) {
		t.Helper()
		check := func(how string, end int, done bool, err error, p *respParser, buf []byte, rest string) {
			t.Helper()
			if err != nil || !done || p.status != w.status || string(p.body) != w.body || p.close != w.close || string(buf[end:]) != rest {
				t.Fatalf("%s, %s: err %v, done %v, status %d, body %q, close %v, rest %q; want %+v",
					name, how, err, done, p.status, p.body, p.close, buf[end:], w)
			}
		}
		var p respParser
		end, done, err := p.parse([]byte(in), eof)
		check("whole", end, done, err, &p, []byte(in), w.rest)
		p.reset()
		var buf []byte
		for i := range len(in) {
			buf = append(buf, in[i])
			last := i == len(in)-1
			end, done, err = p.parse(buf, eof && last)
			if done || err != nil {
				if !last && w.rest == "" {
					t.Fatalf("%s: done at byte %d of %d (err %v)", name, i+1, len(in), err)
				}
				break
			}
		}
		check("byte by byte", end, done, err, &p, buf, "") // it stops at the answer's end
	}
	f("content-length", "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 14\r\n\r\n{\"id\":\"evt_1\"}", false,
		want{status: 201, body: `{"id":"evt_1"}`})
	f("header case, spaces", "HTTP/1.1 404 Not Found\r\ncontent-LENGTH:  3 \r\nconnection: Keep-Alive\r\n\r\nabc", false,
		want{status: 404, body: "abc"})
	f("connection close", "HTTP/1.1 503 Service Unavailable\r\nConnection: foo, close\r\nContent-Length: 0\r\n\r\n", false,
		want{status: 503, close: true})
	f("bare LF", "HTTP/1.1 201 Created\nContent-Length: 2\n\nok", false, want{status: 201, body: "ok"})
	f("no reason", "HTTP/1.1 200\r\nContent-Length: 1\r\n\r\nx", false, want{status: 200, body: "x"})
	f("204 without length", "HTTP/1.1 204 No Content\r\n\r\n", false, want{status: 204})
	f("HTTP/1.0", "HTTP/1.0 201 Created\r\nContent-Length: 2\r\n\r\nok", false, want{status: 201, body: "ok", close: true})
	f("HTTP/1.0 keep-alive", "HTTP/1.0 201 Created\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok", false, want{status: 201, body: "ok"})
	f("until close", "HTTP/1.1 201 Created\r\nConnection: close\r\n\r\n{\"id\":\"x\"}", true, want{status: 201, body: `{"id":"x"}`, close: true})
	f("chunked", "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n7\r\n{\"id\":\"\r\n9;ext=1\r\nevt_123\"}\r\n0\r\n\r\n", false,
		want{status: 201, body: `{"id":"evt_123"}`})
	f("chunked, trailers, upper hex", "HTTP/1.1 201 Created\r\nTransfer-Encoding: gzip, chunked\r\nContent-Length: 99\r\n\r\nA\r\n0123456789\r\n0\r\nX-T: 1\r\n\r\n", false,
		want{status: 201, body: "0123456789"})
	f("other transfer coding", "HTTP/1.1 201 Created\r\nTransfer-Encoding: gzip\r\n\r\nzz", true, want{status: 201, body: "zz", close: true})
	f("100 continue first", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok", false, want{status: 201, body: "ok"})
	f("bytes after", "HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 408", false, want{status: 201, body: "ok", rest: "HTTP/1.1 408"})
}

func TestRespParserErrors(t *testing.T) {
	f := func(name, in string, eof bool, want error) {
		t.Helper()
		var p respParser
		_, done, err := p.parse([]byte(in), eof)
		if done || !errors.Is(err, want) {
			t.Fatalf("%s: done %v, err %v; want %v", name, done, err, want)
		}
	}
	f("closed before a byte", "", true, io.EOF)
	f("closed in the status line", "HTTP/1.1 20", true, io.ErrUnexpectedEOF)
	f("closed in the headers", "HTTP/1.1 201 Created\r\nContent-Le", true, io.ErrUnexpectedEOF)
	f("closed in the body", "HTTP/1.1 201 Created\r\nContent-Length: 10\r\n\r\nabc", true, io.ErrUnexpectedEOF)
	f("closed in a chunk", "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nabc", true, io.ErrUnexpectedEOF)
	f("closed before the last chunk", "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n", true, io.ErrUnexpectedEOF)
	f("not HTTP", "SSH-2.0-OpenSSH_9.6\r\n", false, errBadAnswer)
	f("bad status", "HTTP/1.1 2x1 Created\r\n\r\n", false, errBadAnswer)
	f("HTTP/2", "HTTP/2 201\r\n\r\n", false, errBadAnswer)
	f("bad length", "HTTP/1.1 201 Created\r\nContent-Length: -1\r\n\r\n", false, errBadAnswer)
	f("two lengths", "HTTP/1.1 201 Created\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", false, errBadAnswer)
	f("header without colon", "HTTP/1.1 201 Created\r\nfoo\r\n\r\n", false, errBadAnswer)
	f("bad chunk size", "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", false, errBadAnswer)
	f("chunk without CRLF", "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabX\r\n", false, errBadAnswer)
	f("endless header", "HTTP/1.1 201 Created\r\nX: "+strings.Repeat("a", maxHeaderBytes), false, errBadAnswer)
}
