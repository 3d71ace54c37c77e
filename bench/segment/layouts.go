package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/ankusa/ankusa/envelope"
)

// A layout is a block size and a codec; each is measured on the same
// hooks: sealing (rounds, median), ratio, fetch latency.

var (
	blockSizes = []int{64 << 10, 256 << 10, 1 << 20}
	codecs     = []codec{
		{name: "klauspost SpeedFastest", level: zstd.SpeedFastest},
		{name: "klauspost SpeedDefault", level: zstd.SpeedDefault},
		{name: "klauspost SpeedBetterCompression", level: zstd.SpeedBetterCompression},
	}
)

// row is one line of the report; zero figures print as "–".
type row struct {
	blocks   int
	codec    string
	hooks    string // which hooks: all, or a subset
	raw      int64
	comp     int64
	sealMBs  float64 // MB/s of raw records through Create/Append/Finish, fsync included
	cpuPerMB time.Duration
	fetch    fetched
	fileCold latency // fetch without the store (dictionary layouts)
}

func (r row) ratio() float64 {
	if r.comp == 0 {
		return 0
	}
	return float64(r.raw) / float64(r.comp)
}

// measureLayout seals payloads rounds times with c at blockSize into dir
// and, given ids, measures fetching them through a store on the last
// round's files. It returns the row and the last round's files, which
// stay on disk (the caller removes dir).
func measureLayout(o *options, dir string, h *hooks, blockSize int, c codec, ids []envelope.ID) (row, []string, error) {
	r := row{blocks: blockSize, codec: c.name, hooks: "all"}
	enc, err := c.encoder()
	if err != nil {
		return r, nil, err
	}
	var s sealed
	var speeds []float64
	var cpus []time.Duration
	for round := range o.rounds {
		waitQuiet()
		nodeDir := filepath.Join(dir, fmt.Sprintf("round%d", round))
		if s, err = seal(filepath.Join(nodeDir, "segments"), h.payloads, enc, blockSize); err != nil {
			return r, nil, err
		}
		speeds = append(speeds, float64(s.raw)/1e6/s.wall.Seconds())
		cpus = append(cpus, s.cpu/time.Duration(max(1, s.raw/1e6)))
		if round < o.rounds-1 {
			removeAll(nodeDir)
		}
	}
	slices.Sort(speeds)
	slices.Sort(cpus)
	r.raw, r.comp = s.raw, s.comp
	r.sealMBs, r.cpuPerMB = speeds[len(speeds)/2], cpus[len(cpus)/2]
	if ids != nil {
		waitQuiet()
		if r.fetch, err = storeFetch(filepath.Join(dir, fmt.Sprintf("round%d", o.rounds-1)), s.files, ids, o.diskFetches); err != nil {
			return r, nil, fmt.Errorf("fetch from %s blocks, %s: %w", size(blockSize), c.name, err)
		}
	}
	return r, s.files, nil
}
