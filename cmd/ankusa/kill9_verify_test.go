package main

// Reading what loadgen was promised and comparing it with the node's log.

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"

	"github.com/ankusa/ankusa/envelope"
)

// acked is one line of a loadgen -acked file: the id a 201 answered and
// the sha256 of the exact body sent.
type acked struct {
	id   envelope.ID
	hash [sha256.Size]byte
	file string // for messages
	line int
}

// readAcked parses a loadgen -acked file. A line that does not parse is an
// error: loadgen writes whole lines and flushes them before it exits.
func readAcked(path string) ([]acked, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read the acked file: %w", err)
	}
	var out []acked
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		id, sum, ok := bytes.Cut(sc.Bytes(), []byte{' '})
		a := acked{file: path, line: n}
		var err error
		if a.id, err = envelope.ParseID(id); err != nil || !ok {
			return nil, fmt.Errorf("%s:%d: %q is not `<event id> <sha256 hex>`", path, n, sc.Bytes())
		}
		if len(sum) != hex.EncodedLen(sha256.Size) {
			return nil, fmt.Errorf("%s:%d: %q is not a sha256 hex digest", path, n, sum)
		}
		if _, err := hex.Decode(a.hash[:], sum); err != nil {
			return nil, fmt.Errorf("%s:%d: %q is not a sha256 hex digest: %w", path, n, sum, err)
		}
		out = append(out, a)
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		return nil, fmt.Errorf("%s: the last line is not terminated: loadgen did not flush it whole", path)
	}
	return out, sc.Err()
}

// stored is what the log holds under one event id.
type stored struct {
	hash  [sha256.Size]byte // the body, of the first copy
	count int               // seqs holding it, plus every extra copy of one
}

// byID indexes the log by event id. A hook both sealed and in a WAL file
// not yet deleted, with identical copies, counts once; any other copy
// (another seq, a second copy in one place, a differing copy) counts again.
func (l *nodeLog) byID() map[envelope.ID]*stored {
	m := make(map[envelope.ID]*stored, len(l.bySeq))
	add := func(id envelope.ID, hash [sha256.Size]byte) {
		s := m[id]
		if s == nil {
			s = &stored{hash: hash}
			m[id] = s
		}
		s.count++
	}
	for _, h := range l.bySeq {
		add(h.id, h.body)
	}
	for _, e := range l.extras {
		add(e.id, e.body)
	}
	return m
}

// verdict compares the acknowledged hooks with the log.
type verdict struct {
	acked, lost, mismatched, duplicated int
	problems                            []string // the first few, for the failure message
}

func (v *verdict) problem(format string, args ...any) {
	if len(v.problems) < 10 {
		v.problems = append(v.problems, fmt.Sprintf(format, args...))
	}
}

// compare requires every acknowledged id in the log (a segment or a WAL
// file) exactly once with the body hash loadgen recorded, and no id
// acknowledged twice.
func compare(acks []acked, l *nodeLog) verdict {
	v := verdict{acked: len(acks)}
	byID := l.byID()
	seen := make(map[envelope.ID]*acked, len(acks))
	for i := range acks {
		a := &acks[i]
		if first, dup := seen[a.id]; dup {
			v.duplicated++
			v.problem("%s was acknowledged twice (%s:%d and %s:%d)", a.id, first.file, first.line, a.file, a.line)
			continue
		}
		seen[a.id] = a
		s := byID[a.id]
		switch {
		case s == nil:
			v.lost++
			v.problem("%s (%s:%d) was acknowledged and is in no segment and no WAL file", a.id, a.file, a.line)
		case s.count > 1:
			v.duplicated++
			v.problem("%s is in the log %d times", a.id, s.count)
		case s.hash != a.hash:
			v.mismatched++
			v.problem("%s: the stored body hashes to %x, loadgen sent %x", a.id, s.hash, a.hash)
		}
	}
	return v
}
