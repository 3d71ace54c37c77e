package main

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
	"github.com/ankusa/ankusa/tools/loadgen/result"
)

// loadShape is the request every run sends, gcref's included: 1 KiB
// Stripe-like bodies over o.tenants tenants.
func loadShape(o *options, addr string) []string {
	return []string{
		"-url", "http://" + addr + loadPath,
		"-tenants", strconv.Itoa(o.tenants),
		"-c", strconv.Itoa(o.conns),
		"-size", "1KiB",
		"-kind", "stripe",
		"-json",
	}
}

// closedArgs is a closed-loop run of d after warmup.
func closedArgs(o *options, addr string, d, warmup time.Duration) []string {
	return append(loadShape(o, addr), "-d", d.String(), "-warmup", warmup.String())
}

// openArgs is an open-loop run at rate.
func openArgs(o *options, addr string, rate float64, d, warmup time.Duration) []string {
	return append(loadShape(o, addr), "-rate", strconv.FormatFloat(rate, 'f', 0, 64), "-d", d.String(), "-warmup", warmup.String())
}

// commandLine is how the report shows a loadgen run: the port replaced.
func commandLine(args []string, addr string) string {
	return "loadgen " + strings.ReplaceAll(strings.Join(args, " "), addr, "127.0.0.1:PORT")
}

// startLoad starts loadgen with args; it is killed once it has run for
// limit.
func startLoad(ctx context.Context, o *options, args []string, limit time.Duration) (*benchkit.Loadgen, error) {
	return benchkit.StartLoadgen(ctx, o.bin, args, limit)
}

// loadResultOf waits for l to finish and parses its JSON. A non-zero exit
// with a parsable result comes back as a problem beside the result.
func loadResultOf(l *benchkit.Loadgen) (r result.Summary, problem string, err error) {
	r, _, exitErr, err := l.Wait()
	if exitErr != nil {
		problem = exitErr.Error()
	}
	return r, problem, err
}
