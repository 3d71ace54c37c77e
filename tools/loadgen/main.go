package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// Exit codes.
const (
	exitOK    = 0
	exitFatal = 1
	exitFlags = 2
)

// run is the whole command: parse, load, report. It returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, errHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "loadgen: %v\n", err)
		return exitFlags
	}
	ctx, stop := context.WithCancelCause(context.Background())
	defer stop(nil)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		select {
		case s := <-sigs:
			stop(interrupted{s.(syscall.Signal)})
		case <-ctx.Done():
		}
	}()

	if cfg.CPUProfile != "" {
		f, err := os.Create(cfg.CPUProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintf(stderr, "loadgen: -cpuprofile: %v\n", err)
			return exitFatal
		}
		defer func() {
			pprof.StopCPUProfile()
			if err := f.Close(); err != nil {
				fmt.Fprintf(stderr, "loadgen: -cpuprofile: %v\n", err)
			}
		}()
	}
	sum, err := Run(ctx, cfg, stderr)
	if sum != nil {
		if werr := writeSummary(stdout, cfg, sum); werr != nil {
			fmt.Fprintf(stderr, "loadgen: cannot write the summary: %v\n", werr)
			return exitFatal
		}
	}
	var sig interrupted
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &sig):
		fmt.Fprintf(stderr, "loadgen: %v; the figures cover the run so far\n", err)
		return 128 + int(sig.sig)
	default:
		fmt.Fprintf(stderr, "loadgen: %v\n", err)
		return exitFatal
	}
}

// interrupted is the cause of a run stopped by a signal.
type interrupted struct{ sig syscall.Signal }

func (i interrupted) Error() string { return "interrupted by " + i.sig.String() }
