package main

import (
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/valyala/fasthttp"
)

// errKind is the class of a transport error (a request with no HTTP answer).
type errKind uint8

const (
	kindTimeout errKind = iota // no answer within -timeout, or dial timeout
	kindRefused                // connection refused: nothing listens
	kindReset                  // connection reset or broken pipe
	kindClosed                 // the server closed the connection before answering
	kindOther                  // anything else
	kindUnsent                 // open loop: scheduled in the window, never sent (see runOpen)
	numKinds
)

// kindNames are the error_kinds keys of the summary, by errKind.
var kindNames = [numKinds]string{"timeout", "refused", "reset", "closed", "other", "unsent"}

// classify maps a fasthttp client error to its kind.
func classify(err error) errKind {
	var ne net.Error
	switch {
	case errors.Is(err, fasthttp.ErrTimeout), errors.Is(err, fasthttp.ErrDialTimeout),
		errors.As(err, &ne) && ne.Timeout():
		return kindTimeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return kindRefused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return kindReset
	case errors.Is(err, fasthttp.ErrConnectionClosed), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return kindClosed
	}
	return kindOther
}
