package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/ankusa/ankusa/segment"
)

// ingested is one run of committing the corpus through the WAL, with or
// without the segment store sealing behind it.
type ingested struct {
	hooks    int
	raw      int64
	commit   time.Duration // until every commit was answered
	cpu      time.Duration // process CPU time meanwhile
	catchUp  time.Duration // then Store.Fetch of the last hook (see ingest)
	segments int           // sealed by then
	syncs    float64       // WAL fdatasyncs (ankusa_wal_fsync_seconds_count)
	syncTime float64       // their seconds (ankusa_wal_fsync_seconds_sum)
}

// ingest commits the corpus repeat times from conns goroutines through a
// fresh node in dir (the edge's path once a request is verified: WAL
// group commit, fdatasync), with the segment store following the log
// when withStore (default options: 64 MiB segments of 256 KiB blocks).
// rate paces the commits (hooks a second, 0: as fast as they go).
//
// Whether the sealer kept up shows in a fetch of the last hook right after
// the last commit is answered: Store.Fetch first moves whatever the sealer
// has not read yet into the open segment, so it takes about the backlog
// divided by the sealing rate.
func ingest(dir string, h *hooks, conns, repeat int, rate float64, withStore bool) (ingested, error) {
	var so *segment.Options
	if withStore {
		so = &segment.Options{}
	}
	n, err := openNode(dir, so)
	if err != nil {
		return ingested{}, err
	}
	defer n.close()
	total := repeat * len(h.envs)
	jobs := make(chan int, conns)
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	sync0, syncTime0 := walSyncs()
	cpu0, start := cpuTime(), time.Now()
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				if _, err := n.commit(&h.envs[i%len(h.envs)]); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	pace(jobs, total, rate, start)
	wg.Wait()
	res := ingested{hooks: total, raw: int64(repeat) * h.raw, commit: time.Since(start), cpu: cpuTime() - cpu0}
	sync1, syncTime1 := walSyncs()
	res.syncs, res.syncTime = sync1-sync0, syncTime1-syncTime0
	close(errs)
	if err := <-errs; err != nil {
		return res, fmt.Errorf("cannot commit: %w", err)
	}
	if !withStore {
		return res, nil
	}
	last, lastID := n.wal.LastSeq(), n.wal.LastID()
	t := time.Now()
	e, err := n.store.Fetch(lastID)
	res.catchUp = time.Since(t)
	if err != nil {
		return res, fmt.Errorf("cannot fetch the last hook: %w", err)
	}
	if e.Seq != last {
		return res, fmt.Errorf("fetched seq %d for the last hook, seq %d", e.Seq, last)
	}
	names, err := filepath.Glob(filepath.Join(dir, "segments", "*.seg"))
	res.segments = len(names)
	return res, err
}

// pace hands out 0..total-1 to the committers, at rate a second from
// start when rate > 0 (late ones go at once: the rate holds on average),
// and closes jobs.
func pace(jobs chan<- int, total int, rate float64, start time.Time) {
	defer close(jobs)
	for i := range total {
		if rate > 0 {
			if d := time.Until(start.Add(time.Duration(float64(i) / rate * 1e9))); d > 0 {
				time.Sleep(d)
			}
		}
		jobs <- i
	}
}

// walSyncs reads the WAL's fdatasync count and total seconds from its
// metrics (the default VictoriaMetrics set, in this process).
func walSyncs() (count, seconds float64) {
	var b bytes.Buffer
	metrics.WritePrometheus(&b, false)
	for _, line := range strings.Split(b.String(), "\n") {
		name, v, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		switch name {
		case "ankusa_wal_fsync_seconds_count":
			count, _ = strconv.ParseFloat(v, 64)
		case "ankusa_wal_fsync_seconds_sum":
			seconds, _ = strconv.ParseFloat(v, 64)
		}
	}
	return count, seconds
}
