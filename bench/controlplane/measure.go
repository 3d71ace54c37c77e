package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
	"github.com/ankusa/ankusa/tools/loadgen/result"
)

// bootRun is one boot of a node with its sources stored.
type bootRun struct {
	Sources int           `json:"sources"`
	Ready   time.Duration `json:"start_to_readyz_ns"`
	RSS     int64         `json:"rss_bytes"`
}

// loadRun is loadgen's closed-loop run against the seeded target source
// of a node with Sources sources.
type loadRun struct {
	Sources int            `json:"sources"`
	Result  result.Summary `json:"loadgen"`
	CPU     float64        `json:"node_cpu_s"`
}

// measure makes the small node's measurements, then the large one's.
func measure(ctx context.Context, o *options) (*report, error) {
	rep := newReport(o)
	if err := measureSmall(ctx, o, rep); err != nil {
		return nil, err
	}
	if err := measureLarge(ctx, o, rep); err != nil {
		return nil, err
	}
	rep.busy = o.alone.Busy
	rep.check()
	return rep, nil
}

// measureSmall boots a node with -small sources and runs loadgen on it.
func measureSmall(ctx context.Context, o *options, rep *report) error {
	n, err := newNode(o)
	if err != nil {
		return err
	}
	defer n.remove()
	if _, err := seed(n, o.small, min(o.tenants, o.small)); err != nil {
		return err
	}
	if rep.smallBoot, err = n.boot(ctx, o, o.small+1); err != nil {
		return err
	}
	if rep.loadSmall, err = rep.load(ctx, o, n, o.small+1); err != nil {
		return err
	}
	return n.stop()
}

// measureLarge seeds -sources, boots -boots times, runs loadgen, the
// creates/s runs and the write-to-serve run.
func measureLarge(ctx context.Context, o *options, rep *report) error {
	n, err := newNode(o)
	if err != nil {
		return err
	}
	defer n.remove()
	fmt.Printf("seeding %d sources over %d tenants...\n", o.sources, o.tenants)
	if rep.seed, err = seed(n, o.sources, o.tenants); err != nil {
		return err
	}
	fmt.Printf("seeded in %s\n", rep.seed.Round(time.Millisecond))
	for i := range o.boots {
		if i > 0 {
			if err := n.stop(); err != nil {
				return err
			}
		}
		b, err := n.boot(ctx, o, o.sources+1)
		if err != nil {
			return err
		}
		rep.boots = append(rep.boots, b)
	}
	if o.heapProfile != "" {
		if err := fetchProfile(n, "/debug/pprof/heap?gc=1", o.heapProfile, time.Minute); err != nil {
			rep.failures = append(rep.failures, "the heap profile: "+err.Error())
		}
	}
	if rep.loadLarge, err = rep.load(ctx, o, n, o.sources+1); err != nil {
		return err
	}
	existing := o.sources + 1
	busiest := slices.Max(o.clients)
	for _, c := range o.clients {
		if err := o.alone.Wait(ctx); err != nil {
			return err
		}
		var prof chan error
		if c == busiest && o.profile != "" {
			prof = make(chan error, 1)
			go func() { prof <- cpuProfile(n, o.profile, o.createD) }()
		}
		run := creates(ctx, n, c, o.tenants, o.createD, existing)
		existing += run.Created
		if prof != nil {
			if err := <-prof; err != nil {
				rep.failures = append(rep.failures, "the CPU profile: "+err.Error())
			} else {
				rep.profiled = c
			}
		}
		rep.creates = append(rep.creates, run)
		fmt.Printf("%d clients: %d creates in %.1fs, %.0f/s, p50 %s p99 %s, %d refused\n", c, run.Created, run.Seconds, run.PerSecond, run.Latency.P50, run.Latency.P99, run.Refused)
	}
	if err := o.alone.Wait(ctx); err != nil {
		return err
	}
	rep.serve = writeToServe(ctx, n, o.serve, o.serveClients, o.tenants)
	rep.serveExisting = existing
	fmt.Printf("write-to-serve: %d creates, %d not 201 at once, p50 %s p99 %s\n", rep.serve.Creates, rep.serve.NotServed, rep.serve.Latency.P50, rep.serve.Latency.P99)
	return n.stop()
}

// load waits for a quiet machine and runs loadgen against the target
// source of n, which holds sources sources: 1 KiB GitHub payloads signed
// as GitHub signs, -load-c connections, closed loop. What went wrong in
// the run is a failure of rep.
func (rep *report) load(ctx context.Context, o *options, n *node, sources int) (loadRun, error) {
	if err := o.alone.Wait(ctx); err != nil {
		return loadRun{}, err
	}
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
	l, err := benchkit.StartLoadgen(ctx, o.bin, args, o.loadWarm+o.loadD)
	if err != nil {
		return loadRun{}, err
	}
	r, _, exited, err := l.Wait()
	if err != nil {
		return loadRun{}, err
	}
	cpu1, _ := benchkit.CPUSeconds(n.Pid())
	rep.failures = append(rep.failures, benchkit.Prefixed(fmt.Sprintf("loadgen with %d sources", sources), append(benchkit.LoadProblems(&r), exited...))...)
	return loadRun{Sources: sources, Result: r, CPU: cpu1 - cpu0}, nil
}

// cpuProfile fetches the node's CPU profile over about d (the admin
// listener's /debug/pprof/profile) into path.
func cpuProfile(n *node, path string, d time.Duration) error {
	secs := max(1, int(d.Seconds())-1)
	return fetchProfile(n, fmt.Sprintf("/debug/pprof/profile?seconds=%d", secs), path, d+30*time.Second)
}

// fetchProfile gets the admin listener's profile at uri into path (the
// profiles need the token's debug scope).
func fetchProfile(n *node, uri, path string, timeout time.Duration) error {
	status, body, err := benchkit.Call(&http.Client{Timeout: timeout}, "GET", "http://"+n.Admin+uri, nil, "Authorization", "Bearer "+adminToken)
	if err == nil && status != http.StatusOK {
		err = fmt.Errorf("GET %s: %d %s", uri, status, benchkit.Tail(string(body)))
	}
	if err == nil {
		if err = os.WriteFile(path, body, 0o644); err != nil {
			err = fmt.Errorf("cannot write the profile %q: %w", path, err)
		}
	}
	return err
}
