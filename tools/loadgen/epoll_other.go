//go:build !linux

package main

import (
	"context"
	"errors"
)

// epollSupported: -engine epoll is Linux only (epoll, timerfd); parseFlags
// refuses it elsewhere.
const epollSupported = false

func (rn *runner) runEpoll(context.Context) error {
	return errors.New("-engine epoll needs Linux")
}
