package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
)

// The servers, in the order each round runs them.
const (
	ceiling = "ceiling"
	gcref   = "gcref"
	ankusa  = "ankusa"
)

var serverNames = []string{ceiling, gcref, ankusa}

// loadPath is the catch URL's path: the appliance's demo source; the other
// two answer any path.
const loadPath = "/webhooks/demo"

// server is one started server process. Its data directory is removed by
// stop.
type server struct {
	*benchkit.Server
	url     string                   // what loadgen posts to: http://127.0.0.1:PORT + loadPath
	statsFn func() (counters, error) // nil for the ceiling
}

// appConfig is the appliance's config: the path resolver, the demo source
// without verification, the WAL on disk, and everything else at its
// default (the durable settings). %[1]s is the data directory, %[2]s the
// listener, %[3]s the admin listener.
const appConfig = `node: {name: bench, data_dir: %[1]s}
listen: %[2]s
admin: {listen: %[3]s}
log: {level: warn}
route_resolver: {type: path, prefix: [webhooks]}
wal: {type: disk}
source_store: {type: static}
sources:
  demo: {verify: {type: none}}
`

// startServer starts the named server on free loopback ports with a fresh
// data directory under tmp and waits until it answers.
func startServer(ctx context.Context, o *options, name string) (*server, error) {
	if name == ankusa {
		n, err := benchkit.StartNode(ctx, o.bin, o.tmp, func(n *benchkit.Node) string { return appConfigText(n.Data(), n.Listen, n.Admin) })
		if err != nil {
			return nil, err
		}
		return &server{Server: n.Server, url: "http://" + n.Listen + loadPath,
			statsFn: func() (counters, error) { return walCounters("http://" + n.Admin + "/metrics") }}, nil
	}
	ref, err := benchkit.StartRef(ctx, o.bin, o.tmp, name)
	if err != nil {
		return nil, err
	}
	s := &server{Server: ref, url: "http://" + ref.Addrs[0] + loadPath}
	if name == gcref {
		s.statsFn = func() (counters, error) {
			m, err := getJSON("http://" + ref.Addrs[0] + "/stats")
			return counters{records: m["records"], fsyncs: m["fsyncs"], fsyncSeconds: float64(m["fsync_ns"]) / 1e9}, err
		}
	}
	return s, nil
}

// appConfigText is appConfig for a data directory and two listeners.
func appConfigText(dataDir, listen, admin string) string {
	return fmt.Sprintf(appConfig, dataDir, listen, admin)
}

// stop sends SIGTERM, waits for the drain (SIGKILL after 20s), removes the
// data directory, and returns an error if the server did not exit 0.
func (s *server) stop() error { return s.Shut(20 * time.Second) }

var client = &http.Client{Timeout: 5 * time.Second}

// getJSON reads the flat JSON object of counters that ceiling and gcref
// serve on /stats.
func getJSON(url string) (map[string]uint64, error) {
	resp, err := client.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	var m map[string]uint64
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	return m, nil
}

// counters are a durable server's commit counters so far.
type counters struct {
	records      uint64
	fsyncs       uint64
	fsyncSeconds float64 // time spent in fdatasync
}

// walCounters reads ankusa_wal_records_total, ankusa_wal_batches_total
// (one fdatasync per batch) and ankusa_wal_fsync_seconds_sum from the
// appliance's /metrics.
func walCounters(url string) (counters, error) {
	var c counters
	found := 0
	err := benchkit.Metrics(client, url, func(name string, v float64) {
		switch name {
		case "ankusa_wal_records_total":
			c.records = uint64(v)
		case "ankusa_wal_batches_total":
			c.fsyncs = uint64(v)
		case "ankusa_wal_fsync_seconds_sum":
			c.fsyncSeconds = v
		default:
			return
		}
		found++
	})
	if err != nil {
		return c, err
	}
	if found != 3 {
		return c, errors.New("GET " + url + ": want ankusa_wal_records_total, ankusa_wal_batches_total and ankusa_wal_fsync_seconds_sum")
	}
	return c, nil
}
