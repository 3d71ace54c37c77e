package filesink

import (
	"errors"

	"github.com/ankusa/ankusa/dispatch"
)

// Errors callers may test for (with errors.Is; Deliver wraps them in a
// *dispatch.Error).
var (
	// ErrClosed: Deliver after Close.
	ErrClosed = errors.New("filesink: sink closed")
	// ErrNoSync: no fsync of the line within the attempt's time. The line
	// may be in the file.
	ErrNoSync = errors.New("filesink: no fsync in time")
)

// retryable wraps err for the dispatcher: retried with backoff.
func retryable(err error) error { return &dispatch.Error{Err: err} }
