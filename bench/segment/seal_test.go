package main

import (
	"testing"
)

// The ratio experiments outside the writer (blocks per source) cut blocks
// as the writer does, and the corpus wraps into envelopes it accepts.
func TestCutBlocksAsTheWriter(t *testing.T) {
	evs, err := loadCorpus("testdata/corpus.jsonl.zst")
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) < 10000 {
		t.Fatalf("%d events in the corpus", len(evs))
	}
	h := wrapCorpus(evs[:1500])
	const blockSize = 64 << 10
	enc, err := codecs[0].encoder()
	if err != nil {
		t.Fatal(err)
	}
	s, err := seal(t.TempDir(), h.payloads, enc, blockSize)
	if err != nil {
		t.Fatal(err)
	}
	blocks := cutBlocks(h.payloads, blockSize)
	if len(blocks) != s.blocks {
		t.Fatalf("cutBlocks made %d blocks, the writer %d", len(blocks), s.blocks)
	}
	var raw int64
	for _, b := range blocks {
		raw += int64(len(b))
	}
	if raw != s.raw || raw != h.raw {
		t.Fatalf("raw bytes: cutBlocks %d, writer %d, hooks %d", raw, s.raw, h.raw)
	}
}
