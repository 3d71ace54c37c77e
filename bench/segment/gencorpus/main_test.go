package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// The checked-in corpus is what this generator draws: its first lines
// are the first events of a fresh world with the default flags.
func TestCorpusMatchesGenerator(t *testing.T) {
	f, err := os.Open("../testdata/corpus.jsonl.zst")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := zstd.NewReader(f, zstd.WithDecoderMaxWindow(1<<27))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 1<<20)
	w := newWorld(1, 0.6)
	for i := range 500 {
		if !sc.Scan() {
			t.Fatalf("corpus ends at line %d: %v", i+1, sc.Err())
		}
		source, tenant, event, body := w.next()
		want := fmt.Appendf(nil, `{"source":%q,"tenant":%q,"event":%q,"body":%s}`, source, tenant, event, body)
		if !bytes.Equal(sc.Bytes(), want) {
			t.Fatalf("line %d differs from the generator: regenerate the corpus (see the package doc)", i+1)
		}
	}
}

func TestBodySizes(t *testing.T) {
	w := newWorld(2, 0.6)
	for range 2000 {
		_, _, event, body := w.next()
		if len(body) < 400 || len(body) > maxSize {
			t.Fatalf("%s body of %d bytes", event, len(body))
		}
	}
}
