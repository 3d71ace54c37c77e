package crash

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
	w := walHooks{byID: map[envelope.ID]*stored{
		id(1): {hash: h("one"), count: 1},
		id(2): {hash: h("two"), count: 1},
		id(3): {hash: h("three"), count: 2},
	}}
	for _, tc := range []struct {
		name                  string
		acks                  []acked
		lost, mismatched, dup int
	}{
		{"all stored", []acked{{id: id(1), hash: h("one")}, {id: id(2), hash: h("two")}}, 0, 0, 0},
		{"none acknowledged", nil, 0, 0, 0},
		{"lost", []acked{{id: id(1), hash: h("one")}, {id: id(9), hash: h("nine")}}, 1, 0, 0},
		{"other body", []acked{{id: id(2), hash: h("TWO")}}, 0, 1, 0},
		{"stored twice", []acked{{id: id(3), hash: h("three")}}, 0, 0, 1},
		{"acknowledged twice", []acked{{id: id(1), hash: h("one")}, {id: id(1), hash: h("one")}}, 0, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := compare(tc.acks, w)
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
