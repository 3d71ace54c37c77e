// Command segment is `make bench-segment`: it measures the segment format
// on a corpus of realistic webhook payloads (testdata/corpus.jsonl.zst,
// made by gencorpus), each wrapped in the envelope the edge would have
// committed for it, and prints one table:
//
//   - the compression ratio (raw record bytes / compressed block bytes) at
//     block sizes 64 KiB, 256 KiB (the format's) and 1 MiB, with the
//     klauspost/compress levels SpeedFastest (the format's), SpeedDefault
//     and SpeedBetterCompression, and beside them the zstd command at
//     levels 1 and 3 on the same raw blocks, each block on its own;
//   - a dictionary trained on 10% of the hooks (`zstd --train`) and the
//     ratio on the other 90% with and without it, and with blocks of one
//     source each and a dictionary per source;
//   - the sealing rate: MB/s of raw hooks through segment.Create, Append
//     and Finish into a real file, fsync and rename included, with its CPU
//     cost, against the spine's 70 MB/s;
//   - Store.Fetch latency for random ids: with no block cache (every fetch
//     decompresses a block), with the file's pages dropped too, and warm;
//   - the full path: the corpus committed through the WAL by 64
//     committers, as fast as they go and paced at 70 MB/s, alone and with
//     the segment store sealing behind it, with the WAL's fdatasyncs.
//
// It writes the table as markdown to -out. Before each measurement it
// waits while a bench-harness process runs and while the CPUs are busy
// (quiet.go): two heavy processes at once on a small machine measure each
// other.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
)

type options struct {
	corpus      string
	tmp         string
	out         string
	zstd        string
	rounds      int
	fetches     int
	diskFetches int
	conns       int
	repeat      int
	notes       []string // said under the table
}

func main() {
	var o options
	flag.StringVar(&o.corpus, "corpus", "bench/segment/testdata/corpus.jsonl.zst", "the corpus")
	flag.StringVar(&o.tmp, "tmp", "", "directory for segment files (default: a new one in $TMPDIR; it must be on a real disk)")
	flag.StringVar(&o.out, "out", "bin/bench-segment.md", "markdown report")
	flag.StringVar(&o.zstd, "zstd", "zstd", "the zstd command (Debian package zstd)")
	flag.IntVar(&o.rounds, "rounds", 5, "sealing rounds per layout (median)")
	flag.IntVar(&o.fetches, "fetches", 3000, "random ids fetched per layout, cold and warm")
	flag.IntVar(&o.diskFetches, "disk-fetches", 300, "of which fetched with the file's pages dropped first")
	flag.IntVar(&o.conns, "conns", 64, "committers in the full-path run")
	flag.IntVar(&o.repeat, "repeat", 8, "times the corpus is committed in the full-path run")
	flag.Parse()
	if err := run(&o); err != nil {
		fmt.Fprintln(os.Stderr, "bench-segment:", err)
		os.Exit(1)
	}
}

func run(o *options) error {
	if _, err := exec.LookPath(o.zstd); err != nil {
		return fmt.Errorf("the zstd command is missing (apt-get install zstd, or -zstd PATH): %w", err)
	}
	if o.tmp == "" {
		dir, err := os.MkdirTemp("", "bench-segment-")
		if err != nil {
			return err
		}
		o.tmp = dir
		defer os.RemoveAll(dir)
	}
	evs, err := loadCorpus(o.corpus)
	if err != nil {
		return err
	}
	h := wrapCorpus(evs)
	rep := newReport(h, evs, o.corpus)
	fmt.Println(rep.corpus)
	if rep.rows, err = layoutRows(o, h); err != nil {
		return err
	}
	dictRows, err := dictRows(o, h, []int{64 << 10, 256 << 10})
	if err != nil {
		return err
	}
	rep.rows = append(rep.rows, dictRows...)
	if rep.ingest, err = ingestRows(o, h); err != nil {
		return err
	}
	rep.busy, rep.notes = busyStarts, o.notes
	md := rep.markdown()
	fmt.Print("\n", md)
	if err := os.MkdirAll(filepath.Dir(o.out), 0o755); err != nil {
		return err
	}
	return os.WriteFile(o.out, []byte(md), 0o644)
}

// layoutRows measures every block size and codec on all hooks, and the
// zstd command on the same raw blocks.
func layoutRows(o *options, h *hooks) ([]row, error) {
	ids := sampleIDs(h, 0, o.fetches, 1)
	var rows []row
	for _, bs := range blockSizes {
		var cli []row
		for i, c := range codecs {
			dir := filepath.Join(o.tmp, "layout")
			r, files, err := measureLayout(o, dir, h, bs, c, ids)
			if err == nil && i == 0 {
				cli, err = cliRows(o, files, bs)
			}
			removeAll(dir)
			if err != nil {
				return nil, err
			}
			fmt.Printf("%s blocks, %s: ratio %.2f, seal %.0f MB/s, fetch cold %s\n", size(bs), c.name, r.ratio(), r.sealMBs, lat(r.fetch.cold))
			rows = append(rows, r)
		}
		rows = append(rows, cli...)
	}
	return rows, nil
}

// cliRows compresses the raw blocks of files with the zstd command.
func cliRows(o *options, files []string, blockSize int) ([]row, error) {
	c, _ := codecs[0].decoder()
	blocks, err := rawBlocks(files, c)
	if err != nil {
		return nil, err
	}
	var rows []row
	for _, level := range []int{1, 3} {
		raw, comp, err := cliRatio(o.zstd, filepath.Join(o.tmp, "cli"), blocks, level)
		if err != nil {
			return nil, err
		}
		rows = append(rows, row{blocks: blockSize, codec: fmt.Sprintf("zstd -%d (CLI, each block a file)", level), hooks: "all", raw: raw, comp: comp})
	}
	return rows, nil
}

// ingestRows runs the full path rounds times, as fast as it goes and
// paced at the spine's rate, each alone and with the store, and keeps the
// median run of each by commit time (at most 3 rounds: a paced run takes
// several seconds).
func ingestRows(o *options, h *hooks) ([]ingestRow, error) {
	spineRate := spineMBs * 1e6 / (float64(h.raw) / float64(len(h.envs)))
	type config struct {
		name      string
		rate      float64
		withStore bool
	}
	var configs []config
	for _, rate := range []float64{0, spineRate} {
		offered := "as fast as it goes"
		if rate > 0 {
			offered = fmt.Sprintf("paced at %.0f MB/s (%.0f hooks/s)", spineMBs, rate)
		}
		configs = append(configs,
			config{fmt.Sprintf("WAL commit alone, %d committers, %s", o.conns, offered), rate, false},
			config{fmt.Sprintf("WAL commit + store sealing behind it, %d committers, %s", o.conns, offered), rate, true})
	}
	runs := make([][]ingested, len(configs))
	for round := range min(o.rounds, 3) {
		for i, c := range configs {
			waitQuiet()
			dir := filepath.Join(o.tmp, fmt.Sprintf("ingest%d-%d", round, i))
			res, err := ingest(dir, h, o.conns, o.repeat, c.rate, c.withStore)
			removeAll(dir)
			if err != nil {
				return nil, err
			}
			runs[i] = append(runs[i], res)
		}
	}
	var rows []ingestRow
	for i, c := range configs {
		rs := runs[i]
		slices.SortFunc(rs, func(a, b ingested) int { return int(a.commit - b.commit) })
		rows = append(rows, ingestRow{name: c.name, res: rs[len(rs)/2]})
	}
	return rows, nil
}

func removeAll(dir string) {
	if err := os.RemoveAll(dir); err != nil {
		fmt.Fprintln(os.Stderr, "bench-segment:", err)
	}
}
