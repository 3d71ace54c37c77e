package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
)

// TestEarlyAnswerIsCounted: a server that refuses a body by its
// Content-Length answers 413 and closes without reading the body (what
// fasthttp does past MaxRequestBodySize). The 413 is in the client's
// socket buffer, yet httpConn.do returns the writev error (EPIPE or
// ECONNRESET) without reading it, so the run counts transport errors of
// kind "reset" instead of 413 answers.
func TestEarlyAnswerIsCounted(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close() // unread body: the close sends RST
				if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
					return // the probe
				}
				_, _ = io.WriteString(c, "HTTP/1.1 413 Request Entity Too Large\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
			}()
		}
	}()
	sum := mustRun(t, "-url", "http://"+ln.Addr().String()+"/x", "-c", "1", "-n", "10", "-warmup", "0", "-size", "4MiB")
	if sum.Status["413"] != 10 || sum.Errors != 0 {
		t.Fatalf("status %v, errors %d %v; want 10 answers 413 (the server answered every request)", sum.Status, sum.Errors, sum.ErrorKinds)
	}
}
