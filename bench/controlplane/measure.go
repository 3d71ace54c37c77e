package main

import (
	"context"
	"fmt"
	"io"
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
	if err := o.alone.Wait(ctx); err != nil {
		return err
	}
	ready, rss, err := n.boot(ctx)
	if err != nil {
		return err
	}
	rep.smallBoot = bootRun{Sources: o.small + 1, Ready: ready, RSS: rss}
	fmt.Printf("booted with %d sources in %s, RSS %d MiB\n", o.small+1, ready.Round(time.Millisecond), rss>>20)
	if err := o.alone.Wait(ctx); err != nil {
		return err
	}
	var probs []string
	rep.loadSmall, probs, err = load(ctx, o, n, o.small+1)
	rep.failures = append(rep.failures, probs...)
	if err != nil {
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
		if err := o.alone.Wait(ctx); err != nil {
			return err
		}
		ready, rss, err := n.boot(ctx)
		if err != nil {
			return err
		}
		rep.boots = append(rep.boots, bootRun{Sources: o.sources + 1, Ready: ready, RSS: rss})
		fmt.Printf("booted with %d sources in %s, RSS %d MiB\n", o.sources+1, ready.Round(time.Millisecond), rss>>20)
	}
	if o.heapProfile != "" {
		if err := fetchProfile(n, "/debug/pprof/heap?gc=1", o.heapProfile, time.Minute); err != nil {
			rep.failures = append(rep.failures, "the heap profile: "+err.Error())
		}
	}
	if err := o.alone.Wait(ctx); err != nil {
		return err
	}
	var probs []string
	rep.loadLarge, probs, err = load(ctx, o, n, o.sources+1)
	rep.failures = append(rep.failures, probs...)
	if err != nil {
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
	l, err := benchkit.StartLoadgen(ctx, o.bin, args, o.loadWarm+o.loadD)
	if err != nil {
		return loadRun{}, nil, err
	}
	r, _, exited, err := l.Wait()
	if err != nil {
		return loadRun{}, nil, err
	}
	cpu1, _ := benchkit.CPUSeconds(n.Pid())
	probs := append(benchkit.LoadProblems(&r), exited...)
	return loadRun{Sources: sources, Result: r, CPU: cpu1 - cpu0}, benchkit.Prefixed(fmt.Sprintf("loadgen with %d sources", sources), probs), nil
}

// cpuProfile fetches the node's CPU profile over about d (the admin
// listener's /debug/pprof/profile) into path.
func cpuProfile(n *node, path string, d time.Duration) error {
	secs := max(1, int(d.Seconds())-1)
	return fetchProfile(n, fmt.Sprintf("/debug/pprof/profile?seconds=%d", secs), path, d+30*time.Second)
}

// fetchProfile gets the admin listener's profile at uri into path.
func fetchProfile(n *node, uri, path string, timeout time.Duration) error {
	c := &http.Client{Timeout: timeout}
	req, err := http.NewRequest("GET", "http://"+n.Admin+uri, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+adminToken) // the profiles need the debug scope
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("GET %s: %s %s", uri, resp.Status, benchkit.Tail(string(b)))
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("cannot write the profile %q: %w", path, err)
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
