package httpsink

import "errors"

var (
	// ErrPrivateTarget is wrapped by the refusals of the SSRF guard: the
	// receiver's host is, or resolves to, an address the sink does not send
	// to without allow_private: true. The refusal reaches the dispatcher as
	// a permanent *dispatch.Error.
	ErrPrivateTarget = errors.New("refused by the SSRF guard")
	// ErrClosed is returned (inside a retryable *dispatch.Error) by Deliver
	// after Close.
	ErrClosed = errors.New("httpsink: the sink is closed")
)
