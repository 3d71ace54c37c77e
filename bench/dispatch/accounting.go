package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ankusa/ankusa/tools/loadgen/result"
)

// bodyKey names a hook by its body: the first half of the body's sha256.
// loadgen's -sent lines carry the sha256 of each body it sent, and the
// receiver hashes each body it gets (the HTTP sink delivers the body as
// received, the relay forwards it), so the two meet without an id that
// both the relay and the appliance would have to carry.
type bodyKey [16]byte

// stamps is the receiver's record of when each body first arrived (t3).
// Safe for concurrent use.
type stamps struct {
	mu    sync.Mutex
	first map[bodyKey]int64 // unix ns of the first arrival
	total int64             // every arrival, repeats included
}

func newStamps() *stamps { return &stamps{first: map[bodyKey]int64{}} }

// record notes that body arrived at at.
func (s *stamps) record(body []byte, at time.Time) {
	sum := sha256.Sum256(body)
	k := bodyKey(sum[:16])
	s.mu.Lock()
	s.total++
	if _, ok := s.first[k]; !ok {
		s.first[k] = at.UnixNano()
	}
	s.mu.Unlock()
}

// arrived is when the body named k first arrived.
func (s *stamps) arrived(k bodyKey) (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.first[k]
	return t, ok
}

// sentLine is one line of loadgen's -sent file.
type sentLine struct {
	key       bodyKey
	due, done int64 // t0 (scheduled send) and t2 (answer), unix ns
	status    int
}

// readSent parses a -sent file: "<sha256 hex> <due ns> <end ns> <status>".
func readSent(path string) ([]sentLine, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read loadgen's -sent file: %w", err)
	}
	defer f.Close()
	var out []sentLine
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		fs := strings.Fields(sc.Text())
		var l sentLine
		var errs [4]error
		if len(fs) == 4 && len(fs[0]) == 64 {
			_, errs[0] = hex.Decode(l.key[:], []byte(fs[0][:32]))
			l.due, errs[1] = strconv.ParseInt(fs[1], 10, 64)
			l.done, errs[2] = strconv.ParseInt(fs[2], 10, 64)
			l.status, errs[3] = strconv.Atoi(fs[3])
		}
		if len(fs) != 4 || len(fs[0]) != 64 || errs != [4]error{} {
			return nil, fmt.Errorf("%s:%d: %q is not a -sent line", path, n, sc.Text())
		}
		out = append(out, l)
	}
	return out, sc.Err()
}

// accounting is the Outpost load test's ledger of one open-loop run: every
// hook answered 201 (published) is delivered (received by the end of the
// window, the last 201), cut off (received after it, within the drain) or
// missing (not received when the drain ended). A run is void unless
// published = delivered + cut off + missing, counted from different
// records (loadgen's summary; its -sent lines joined to the receiver's
// arrivals), and nothing is missing.
type accounting struct {
	Published  int64          `json:"published"`
	Delivered  int64          `json:"delivered"`
	CutOff     int64          `json:"cut_off"`
	Missing    int64          `json:"missing"`
	PublishUS  result.Latency `json:"publish_latency_us"`  // t2 − t0, every 201
	DeliveryUS result.Latency `json:"delivery_latency_us"` // t3 − t0, every 201 received
	Void       bool           `json:"void"`
	Why        string         `json:"why,omitempty"`
}

// account draws up the ledger of published (the 201s of loadgen's
// summary) from lines and the receiver's first arrivals.
func account(published int64, lines []sentLine, arrived func(bodyKey) (int64, bool)) accounting {
	a := accounting{Published: published}
	var end int64
	for _, l := range lines {
		if l.status == 201 {
			end = max(end, l.done)
		}
	}
	pub, del := newHist(), newHist()
	var pubMax, delMax int64
	seen := make(map[bodyKey]bool, len(lines))
	for _, l := range lines {
		if l.status != 201 || seen[l.key] {
			continue // a repeated body is one hook: the ledger then falls short
		}
		seen[l.key] = true
		p := max(1, (l.done-l.due)/1000)
		_ = pub.RecordValue(p)
		pubMax = max(pubMax, p)
		t3, ok := arrived(l.key)
		switch {
		case !ok:
			a.Missing++
			continue
		case t3 <= end:
			a.Delivered++
		default:
			a.CutOff++
		}
		d := max(1, (t3-l.due)/1000)
		_ = del.RecordValue(d)
		delMax = max(delMax, d)
	}
	a.PublishUS, a.DeliveryUS = result.LatencyOf(pub, pubMax), result.LatencyOf(del, delMax)
	var why []string
	if sum := a.Delivered + a.CutOff + a.Missing; sum != published {
		why = append(why, fmt.Sprintf("published %d ≠ delivered %d + cut off %d + missing %d", published, a.Delivered, a.CutOff, a.Missing))
	}
	if a.Missing > 0 {
		why = append(why, fmt.Sprintf("%d published hooks never reached the receiver", a.Missing))
	}
	a.Void, a.Why = len(why) > 0, strings.Join(why, "; ")
	return a
}
