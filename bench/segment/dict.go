package main

import (
	"encoding/binary"
	"fmt"
	"path/filepath"

	"github.com/klauspost/compress/zstd"
)

// Dictionaries: trained with `zstd --train` on the first trainShare of the
// hooks (their envelope records) and measured on the rest, against no
// dictionary on the same rest.

const (
	trainShare = 0.10
	dictBytes  = 112640 // the CLI's default --maxdict
)

// dictRows measures, on the held-out hooks at each block size: SpeedFastest
// without and with a dictionary trained on the mix of sources (rows with
// seal speed and fetch latency), and, as a format experiment, blocks of one
// source each compressed without and with that source's dictionary (ratio
// only: the writer cannot group by source).
func dictRows(o *options, h *hooks, sizes []int) ([]row, error) {
	split := int(float64(len(h.payloads)) * trainShare)
	held := &hooks{envs: h.envs[split:], payloads: h.payloads[split:], sources: h.sources[split:]}
	dict, err := trainDict(o.zstd, filepath.Join(o.tmp, "train"), h.payloads[:split], dictBytes)
	if err != nil {
		return nil, err
	}
	fmt.Printf("dictionary: %d bytes, trained on hooks 1..%d, measured on %d..%d\n", len(dict), split, split+1, len(h.payloads))
	heldName := fmt.Sprintf("held-out %d", len(held.payloads))
	ids := sampleIDs(h, split, o.fetches, 2)
	var rows []row
	for _, bs := range sizes {
		for _, c := range []codec{
			{name: "klauspost SpeedFastest", level: zstd.SpeedFastest},
			{name: "klauspost SpeedFastest + dictionary", level: zstd.SpeedFastest, dict: dict},
		} {
			r, files, err := measureLayout(o, filepath.Join(o.tmp, "dict"), held, bs, c, nil)
			if err != nil {
				return nil, err
			}
			dec, err := c.decoder()
			if err != nil {
				return nil, err
			}
			waitQuiet()
			r.fetch = fetched{}
			if r.fileCold, err = fileFetch(files, ids, dec); err != nil {
				return nil, err
			}
			r.hooks = heldName
			rows = append(rows, r)
			removeAll(filepath.Join(o.tmp, "dict"))
		}
	}
	perSource, err := perSourceRows(o, h, split, 256<<10)
	if err != nil {
		return nil, err
	}
	return append(rows, perSource...), nil
}

// perSourceRows cuts the held-out hooks into blocks of one source each and
// compresses them with SpeedFastest, without and with a dictionary per
// source trained on that source's share of the training hooks.
func perSourceRows(o *options, h *hooks, split, blockSize int) ([]row, error) {
	plain := row{blocks: blockSize, codec: "klauspost SpeedFastest, blocks per source", hooks: fmt.Sprintf("held-out %d", len(h.payloads)-split)}
	withDict := plain
	withDict.codec += " + dictionary per source"
	for _, src := range []string{"stripe", "github"} {
		var train, test [][]byte
		for i, p := range h.payloads {
			if h.sources[i] != src {
				continue
			}
			if i < split {
				train = append(train, p)
			} else {
				test = append(test, p)
			}
		}
		dict, err := trainDict(o.zstd, filepath.Join(o.tmp, "train-"+src), train, dictBytes)
		if err != nil {
			return nil, err
		}
		var ratios [2]float64
		for i, r := range []*row{&plain, &withDict} {
			c := codec{level: zstd.SpeedFastest}
			if r == &withDict {
				c.dict = dict
			}
			enc, err := c.encoder()
			if err != nil {
				return nil, err
			}
			var raw, comp int64
			for _, b := range cutBlocks(test, blockSize) {
				raw += int64(len(b))
				comp += int64(len(enc.EncodeAll(b, nil)))
			}
			r.raw, r.comp = r.raw+raw, r.comp+comp
			ratios[i] = float64(raw) / float64(comp)
		}
		o.notes = append(o.notes, fmt.Sprintf("%s blocks of %s hooks alone (held-out, SpeedFastest): ratio %.2f, %.2f with a %s dictionary.",
			size(blockSize), src, ratios[0], ratios[1], src))
	}
	return []row{plain, withDict}, nil
}

// cutBlocks frames payloads as the segment writer does (4-byte length,
// payload) into blocks cut at blockSize.
func cutBlocks(payloads [][]byte, blockSize int) [][]byte {
	var blocks [][]byte
	var cur []byte
	for _, p := range payloads {
		cur = binary.BigEndian.AppendUint32(cur, uint32(len(p)))
		cur = append(cur, p...)
		if len(cur) >= blockSize {
			blocks = append(blocks, cur)
			cur = nil
		}
	}
	if len(cur) > 0 {
		blocks = append(blocks, cur)
	}
	return blocks
}
