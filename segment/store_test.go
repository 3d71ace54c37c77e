package segment_test

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/segment"
)

func TestSealFetchScan(t *testing.T) {
	fs := vfs.NewMem()
	n := openNode(t, fs, nodeOptions{maxBytes: 64 << 10, maxAge: time.Hour, blockSize: 8 << 10})
	var want []envelope.Envelope
	for i := range 2000 {
		e, err := n.commit(testHook(i, 3000))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, e)
	}
	check := func(n *node) {
		t.Helper()
		for _, w := range want {
			got, err := n.store.Fetch(w.ID)
			if err != nil {
				t.Fatalf("fetch seq %d: %v", w.Seq, err)
			}
			if !reflect.DeepEqual(*got, w) {
				if !bytes.Equal(got.Body, w.Body) || len(got.Body) != 0 {
					t.Fatalf("fetch seq %d: got %+v\nwant %+v", w.Seq, *got, w)
				}
			}
		}
		next := uint64(1)
		err := n.store.Scan(1, 1<<62, func(e *envelope.Envelope) error {
			if e.Seq != next {
				t.Fatalf("scan: seq %d, want %d", e.Seq, next)
			}
			next++
			return nil
		})
		if err != nil || next != uint64(len(want))+1 {
			t.Fatalf("scan: %v, ended at %d", err, next)
		}
		var missing envelope.ID
		missing[0] = 0xff
		if _, err := n.store.Fetch(missing); !errors.Is(err, segment.ErrNotFound) {
			t.Fatalf("fetch of an unknown id: %v", err)
		}
	}
	check(n)
	n.close()
	n = openNode(t, fs, nodeOptions{maxBytes: 64 << 10, maxAge: time.Hour, blockSize: 8 << 10})
	check(n)
	n.close()
}

// TestOpenNeedsKeeper: without a Keeper the store could apply neither
// deletion rule (DESIGN.md §6 item 3), so Open refuses it, naming the
// field, before it touches the disk.
func TestOpenNeedsKeeper(t *testing.T) {
	_, err := segment.Open(segment.Options{FS: vfs.NewMem(), Dir: "data/segments"})
	if err == nil || !strings.Contains(err.Error(), "Options.Keeper") {
		t.Fatalf("Open without a Keeper: %v, want an error naming Options.Keeper", err)
	}
}
