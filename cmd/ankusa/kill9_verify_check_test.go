package main

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ankusa/ankusa/envelope"
)

// TestCompare: the checker itself finds each kind of broken promise, so a
// zero from the crash run means something.
func TestCompare(t *testing.T) {
	id := func(b byte) envelope.ID { return envelope.ID{15: b} }
	h := func(s string) [sha256.Size]byte { return sha256.Sum256([]byte(s)) }
	l := newNodeLog()
	for _, r := range []struct {
		seq     uint64
		id      byte
		body    string
		fromWAL bool
	}{
		{1, 1, "one", false},
		{2, 2, "two", false},
		{3, 3, "three", false},
		{4, 3, "three", false}, // id 3 again, at another seq
		{5, 5, "five", false},
		{5, 5, "five", true}, // sealed and still in the WAL: one hook
		{6, 6, "six", false},
		{6, 6, "SIX", true}, // a copy that differs
		{7, 7, "seven", true},
		{7, 7, "seven", true}, // twice in the WAL
	} {
		e, p := testEnv(r.seq, id(r.id), r.body)
		if r.fromWAL {
			l.add(e, p, "wal", true)
		} else {
			l.addSegment(e, p, "seg")
		}
	}
	for _, tc := range []struct {
		name                  string
		acks                  []acked
		lost, mismatched, dup int
	}{
		{"all stored", []acked{{id: id(1), hash: h("one")}, {id: id(2), hash: h("two")}}, 0, 0, 0},
		{"sealed and in the WAL", []acked{{id: id(5), hash: h("five")}}, 0, 0, 0},
		{"none acknowledged", nil, 0, 0, 0},
		{"lost", []acked{{id: id(1), hash: h("one")}, {id: id(9), hash: h("nine")}}, 1, 0, 0},
		{"other body", []acked{{id: id(2), hash: h("TWO")}}, 0, 1, 0},
		{"stored at two seqs", []acked{{id: id(3), hash: h("three")}}, 0, 0, 1},
		{"two differing copies", []acked{{id: id(6), hash: h("six")}}, 0, 0, 1},
		{"twice in the WAL", []acked{{id: id(7), hash: h("seven")}}, 0, 0, 1},
		{"acknowledged twice", []acked{{id: id(1), hash: h("one")}, {id: id(1), hash: h("one")}}, 0, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := compare(tc.acks, l)
			if v.acked != len(tc.acks) || v.lost != tc.lost || v.mismatched != tc.mismatched || v.duplicated != tc.dup {
				t.Fatalf("acked %d lost %d mismatched %d duplicated %d, want %d %d %d %d (%s)",
					v.acked, v.lost, v.mismatched, v.duplicated, len(tc.acks), tc.lost, tc.mismatched, tc.dup, strings.Join(v.problems, "; "))
			}
		})
	}
}

// TestReadAcked: whole lines parse; anything else is an error, never a
// silently shorter list.
func TestReadAcked(t *testing.T) {
	id := envelope.ID{0: 1, 15: 2}.String()
	sum := fmt.Sprintf("%x", sha256.Sum256([]byte("body")))
	for _, tc := range []struct {
		name, text string
		want       int // -1: an error
	}{
		{"empty", "", 0},
		{"two lines", id + " " + sum + "\n" + id + " " + sum + "\n", 2},
		{"unterminated", id + " " + sum, -1},
		{"no hash", id + "\n", -1},
		{"short hash", id + " " + sum[:63] + "\n", -1},
		{"not hex", id + " " + strings.Repeat("z", 64) + "\n", -1},
		{"not an id", "evt_x " + sum + "\n", -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "acked")
			if err := os.WriteFile(path, []byte(tc.text), 0o644); err != nil {
				t.Fatal(err)
			}
			acks, err := readAcked(path)
			switch {
			case tc.want < 0 && err == nil:
				t.Fatalf("read %d lines, want an error", len(acks))
			case tc.want >= 0 && err != nil:
				t.Fatal(err)
			case tc.want >= 0 && len(acks) != tc.want:
				t.Fatalf("read %d lines, want %d", len(acks), tc.want)
			}
			if tc.want > 0 && (acks[0].id.String() != id || fmt.Sprintf("%x", acks[0].hash) != sum) {
				t.Fatalf("line 1 read as %s %x", acks[0].id, acks[0].hash)
			}
		})
	}
}
