package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
	"github.com/ankusa/ankusa/tools/loadgen/result"
)

// What a latency run drives.
const (
	relayKind  = "relay"
	ankusaKind = "ankusa"
)

// latencyResult is one open-loop run measured the way Hookdeck Outpost's
// load test measures: t0 the request's scheduled send time, t2 its 201,
// t3 the receiver's first reading of the delivery; publish latency
// t2 − t0, delivery latency t3 − t0, and the ledger of every 201.
type latencyResult struct {
	Server  string         `json:"server"` // relay or ankusa
	Frac    float64        `json:"fraction"`
	Rate    float64        `json:"rate"`
	Command string         `json:"command"`
	Load    result.Summary `json:"loadgen"`
	Ledger  accounting     `json:"ledger"`
	DrainS  float64        `json:"drain_s"` // from the last 201 until the ledger closed
	// LoadIssues are loadgen's answers but 201 and failed requests: a
	// failure of a latency run, a rate not held for the relay's check.
	LoadIssues []string `json:"load_issues,omitempty"`
	outcome
}

// latencyRun runs server (relayKind or ankusaKind) in front of a receiver
// that stamps arrivals, loadgen open loop at rate with -sent, waits up to
// -latency-drain after the last answer for every 201 to arrive, and draws
// up the ledger. A void ledger is a problem of the result.
func latencyRun(ctx context.Context, o *options, server string, frac, rate float64) (*latencyResult, error) {
	recv, err := startReceiver(newStamps(), o.httpConc)
	if err != nil {
		return nil, err
	}
	defer recv.close()
	addr, stop, err := startBehind(ctx, o, server, recv)
	if err != nil {
		return nil, err
	}
	res := &latencyResult{Server: server, Frac: frac, Rate: rate}
	dir, err := os.MkdirTemp(o.tmp, "bench-dispatch-sent-")
	if err != nil {
		stop()
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "sent")
	args := openArgs(o, addr, rate, o.openD, o.warmup)
	res.Command = commandLine(append(args, "-sent", "FILE"), addr)
	l, err := benchkit.StartLoadgen(ctx, o.bin, append(args, "-sent", path), o.openD+o.warmup)
	if err != nil {
		stop()
		return nil, err
	}
	lr, _, exited, err := l.Wait()
	if err != nil {
		stop()
		return nil, err
	}
	res.Load = lr
	res.problem(exited...)
	lines, err := readSent(path)
	if err != nil {
		stop()
		return nil, err
	}
	res.DrainS = waitArrived(ctx, lines, recv.stamps, o.latencyDrain)
	res.problem(stop()...)
	res.Ledger = account(lr.Status["201"], lines, recv.stamps.arrived)
	what := fmt.Sprintf("%s at %.0f/s", server, rate)
	res.LoadIssues = benchkit.Prefixed(what, benchkit.LoadProblems(&lr))
	if res.Ledger.Void {
		res.problem(what + ": void: " + res.Ledger.Why)
	}
	g := res.Ledger
	fmt.Fprintf(os.Stderr, "bench-dispatch: %s: made %.0f/s, published %d delivered %d cut off %d missing %d, publish p99 %.1f ms, delivery p50 %.1f ms p99 %.1f ms\n",
		what, lr.ThroughputRPS, g.Published, g.Delivered, g.CutOff, g.Missing, float64(g.PublishUS.P99)/1000, float64(g.DeliveryUS.P50)/1000, float64(g.DeliveryUS.P99)/1000)
	return res, nil
}

// startBehind starts server in front of recv and returns the address
// loadgen posts to and how to stop it (its problems).
func startBehind(ctx context.Context, o *options, server string, recv *receiver) (string, func() []string, error) {
	if server == relayKind {
		s, err := benchkit.StartRef(ctx, o.bin, o.tmp, "relay", "-to", relayTarget(recv))
		if err != nil {
			return "", nil, err
		}
		return s.Addrs[0], func() []string { return errs(s.Shut(10 * time.Second)) }, nil
	}
	n, err := startNode(ctx, o, recv.sink(), "")
	if err != nil {
		return "", nil, err
	}
	return n.Listen, func() []string { return errs(n.stop()) }, nil
}

func errs(err error) []string {
	if err == nil {
		return nil
	}
	return []string{err.Error()}
}

// waitArrived waits until every 201 of lines has arrived, or limit after
// the last 201; it returns the seconds from the last 201 to then.
func waitArrived(ctx context.Context, lines []sentLine, st *stamps, limit time.Duration) float64 {
	var end int64
	var want []bodyKey
	for _, l := range lines {
		if l.status == 201 {
			end = max(end, l.done)
			want = append(want, l.key)
		}
	}
	deadline := time.Unix(0, end).Add(limit)
	for len(want) > 0 && time.Now().Before(deadline) && ctx.Err() == nil {
		for len(want) > 0 {
			if _, ok := st.arrived(want[len(want)-1]); !ok {
				break
			}
			want = want[:len(want)-1]
		}
		if len(want) > 0 {
			time.Sleep(10 * time.Millisecond)
		}
	}
	return max(0, time.Since(time.Unix(0, end)).Seconds())
}

// measureLatency runs the relay and the appliance at half the appliance's
// sustained rate.
func (rep *report) measureLatency(ctx context.Context, o *options) error {
	s := rep.sustained()
	if s == nil {
		rep.note("no latency runs: no open-loop rate of the appliance stayed bounded")
		return nil
	}
	for _, server := range []string{relayKind, ankusaKind} {
		var res *latencyResult
		err := rep.undisturbed(ctx, o, fmt.Sprintf("%s at half the appliance's sustained rate", server), func() (err error) {
			res, err = latencyRun(ctx, o, server, 0.5, 0.5*s.Rate)
			return err
		})
		if err != nil {
			return err
		}
		rep.Latency = append(rep.Latency, res)
		rep.fail(res.Problems...)
		rep.fail(res.LoadIssues...)
	}
	return nil
}

// voidRuns lists the latency runs whose ledger is void.
func (rep *report) voidRuns() []string {
	var out []string
	all := rep.Latency
	if rep.Relay != nil && rep.Relay.Check != nil {
		all = append([]*latencyResult{rep.Relay.Check}, all...)
	}
	for _, r := range all {
		if r.Ledger.Void {
			out = append(out, fmt.Sprintf("%s at %.0f/s: %s", r.Server, r.Rate, r.Ledger.Why))
		}
	}
	return out
}
