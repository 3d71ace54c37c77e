//go:build !linux

package main

import "time"

// fineTimer falls back to the runtime's timers outside Linux.
type fineTimer struct{}

func newFineTimer() *fineTimer { return &fineTimer{} }

func (*fineTimer) sleep(d time.Duration) { time.Sleep(d) }

func (*fineTimer) close() {}
