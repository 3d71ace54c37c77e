package main

import (
	"context"
	"strconv"
	"time"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
)

// loadArgs is the loadgen command line of one run: the same for every
// server but the URL. rate 0 is closed loop.
func loadArgs(o *options, url string, conns int, rate float64) []string {
	args := []string{
		"-url", url,
		"-c", strconv.Itoa(conns),
		"-d", o.duration.String(),
		"-warmup", o.warmup.String(),
		"-size", "1KiB",
		"-kind", "stripe",
		"-json",
	}
	if rate > 0 {
		args = append(args, "-rate", strconv.FormatFloat(rate, 'f', 0, 64))
	}
	return args
}

// startLoad starts loadgen with args; a run that overstays its duration
// by a minute is stuck, and killed.
func startLoad(ctx context.Context, o *options, args []string) (*benchkit.Loadgen, error) {
	return benchkit.StartLoadgen(ctx, o.bin, args, o.warmup+o.duration+time.Minute)
}
