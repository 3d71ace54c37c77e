package main

import (
	"context"
	"fmt"
	"time"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
	"github.com/ankusa/ankusa/tools/loadgen/result"
)

// relayResult is bench/relay's figures: store-and-forward without the
// store, to the same in-process receiver under the same request. It
// answers 201 only after the receiver's 2xx, so its closed-loop rate is
// its end-to-end rate; the open-loop check runs it at that rate.
type relayResult struct {
	Command string         `json:"command"`
	Rounds  []float64      `json:"rounds_rps"`
	P99     []float64      `json:"rounds_p99_us"`
	Max     float64        `json:"max_rps"` // the median of the rounds
	Check   *latencyResult `json:"open_loop_check,omitempty"`
	Held    bool           `json:"held"` // the check made the rate, every answer 201, its ledger whole
	// Sustained is the reference the appliance's sustained rate is
	// compared with: like it, a rate held open loop. Max when the check
	// held it; otherwise what the check made (the closed-loop figure of
	// two shared cores swings by a third between runs, what an open loop
	// makes much less).
	Sustained float64 `json:"sustained_rps"`
}

// settle sets Held and Sustained from the open-loop check.
func (r *relayResult) settle() {
	r.Sustained = r.Max
	c := r.Check
	if c == nil {
		return
	}
	r.Held = c.Load.ThroughputRPS >= ingestShare*c.Rate && len(c.LoadIssues) == 0 && !c.Ledger.Void
	if !r.Held && !c.Ledger.Void && c.Load.ThroughputRPS > 0 {
		r.Sustained = min(r.Max, c.Load.ThroughputRPS)
	}
}

// relayTarget is where the relay forwards: the receiver's path for it.
func relayTarget(r *receiver) string { return "http://" + r.addr + "/in/relay" }

// measureRelay runs the relay closed loop -relay-rounds times, then open
// loop at the median.
func (rep *report) measureRelay(ctx context.Context, o *options) error {
	rep.Relay = &relayResult{}
	var err error
	rep.Relay.Rounds, rep.Relay.P99, rep.Relay.Max, err = rep.closedRounds(ctx, o, "relay", o.relayRounds, func() (result.Summary, error) {
		return rep.relayRound(ctx, o)
	})
	if err != nil {
		return err
	}
	err = rep.undisturbed(ctx, o, "relay open loop at its maximum", func() (err error) {
		rep.Relay.Check, err = latencyRun(ctx, o, relayKind, 1, rep.Relay.Max)
		return err
	})
	if err != nil {
		return err
	}
	// Not holding its own maximum open loop is a figure, not a failure;
	// a void ledger is.
	rep.Relay.settle()
	rep.fail(rep.Relay.Check.Problems...)
	return nil
}

// relayRound is one closed-loop run of the relay to a fresh receiver. A
// 201 means the receiver had the hook, so fewer deliveries than 201s is a
// failure of the run.
func (rep *report) relayRound(ctx context.Context, o *options) (result.Summary, error) {
	recv, err := startReceiver(nil, 0)
	if err != nil {
		return result.Summary{}, err
	}
	defer recv.close()
	s, err := benchkit.StartRef(ctx, o.bin, o.tmp, "relay", "-to", relayTarget(recv))
	if err != nil {
		return result.Summary{}, err
	}
	args := closedArgs(o, s.Addrs[0], o.duration, o.warmup)
	rep.Relay.Command = commandLine(args, s.Addrs[0])
	l, err := benchkit.StartLoadgen(ctx, o.bin, args, o.duration+o.warmup)
	if err != nil {
		s.Shut(10 * time.Second)
		return result.Summary{}, err
	}
	r, _, exited, err := l.Wait()
	if serr := s.Shut(10 * time.Second); serr != nil {
		exited = append(exited, serr.Error())
	}
	if err != nil {
		return r, err
	}
	problems := append(exited, benchkit.LoadProblems(&r)...)
	if _, total, _ := recv.tally.counts(); total < r.Status["201"] {
		problems = append(problems, fmt.Sprintf("%d deliveries for %d 201 answers", total, r.Status["201"]))
	}
	rep.fail(benchkit.Prefixed("relay", problems)...)
	return r, nil
}
