package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
	"github.com/ankusa/ankusa/tools/loadgen/result"
)

// loadRun is loadgen's closed-loop run against the seeded target source
// of a node with Sources sources.
type loadRun struct {
	Sources int            `json:"sources"`
	Result  result.Summary `json:"loadgen"`
	CPU     float64        `json:"node_cpu_s"`
}

// load runs loadgen against the target source: 1 KiB GitHub payloads
// signed as GitHub signs, -load-c connections, closed loop.
func load(ctx context.Context, o *options, n *node, sources int) (loadRun, []string, error) {
	args := []string{
		"-url", "http://" + n.Listen + "/webhooks/" + seedTargetTenant + "/" + seedTarget,
		"-c", strconv.Itoa(o.loadC),
		"-d", o.loadD.String(),
		"-warmup", o.loadWarm.String(),
		"-size", "1KiB", "-kind", "github",
		"-sign", "github", "-secret", seedTargetSecret,
		"-json",
	}
	cpu0, _ := benchkit.CPUSeconds(n.Pid())
	l, err := benchkit.StartLoadgen(ctx, o.bin, args, o.loadWarm+o.loadD+time.Minute)
	if err != nil {
		return loadRun{}, nil, err
	}
	r, _, exitErr, err := l.Wait()
	if err != nil {
		return loadRun{}, nil, err
	}
	cpu1, _ := benchkit.CPUSeconds(n.Pid())
	probs := benchkit.LoadProblems(&r)
	if exitErr != nil {
		probs = append(probs, exitErr.Error())
	}
	for i, p := range probs {
		probs[i] = fmt.Sprintf("loadgen with %d sources: %s", sources, p)
	}
	return loadRun{Sources: sources, Result: r, CPU: cpu1 - cpu0}, probs, nil
}
