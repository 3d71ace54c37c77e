package crash

// Reading what loadgen was promised and what the WAL holds, and comparing.

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/wal"
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

// stored is what the WAL holds under one event id (the first time, if more).
type stored struct {
	hash   [sha256.Size]byte
	seq    uint64
	tenant string
	count  int
}

// walHooks is the digest of a stopped node's WAL.
type walHooks struct {
	byID  map[envelope.ID]*stored
	hooks int // seqs 1..hooks
	bytes int64
}

// readWAL reads every record of the WAL in dir, hashes every hook's body,
// and checks the numbering DESIGN.md §6.1 promises across restarts: seqs
// dense from 1 and ids strictly increasing in commit order.
func readWAL(dir string) (walHooks, error) {
	w := walHooks{byID: map[envelope.ID]*stored{}}
	var env envelope.Envelope
	var prev envelope.ID
	err := wal.ReadDir(vfs.Default, dir, func(r *wal.Record) error {
		if r.Kind == envelope.KindTenant {
			return nil
		}
		if _, err := envelope.Decode(r.Payload, &env); err != nil {
			return fmt.Errorf("%s offset %d: %w", r.File, r.Offset, err)
		}
		if env.ID != r.ID || env.Seq != r.Seq {
			return fmt.Errorf("%s offset %d: frame says seq %d id %s, envelope says %d %s", r.File, r.Offset, r.Seq, r.ID, env.Seq, env.ID)
		}
		if env.Seq != uint64(w.hooks+1) {
			return fmt.Errorf("%s offset %d: hook %d has seq %d: seqs must be dense from 1", r.File, r.Offset, w.hooks+1, env.Seq)
		}
		if w.hooks > 0 && bytes.Compare(env.ID[:], prev[:]) <= 0 {
			return fmt.Errorf("%s offset %d: seq %d has id %s, not above the previous %s", r.File, r.Offset, env.Seq, env.ID, prev)
		}
		prev = env.ID
		w.hooks++
		w.bytes += int64(len(env.Body))
		s := w.byID[env.ID]
		if s == nil {
			// Body aliases the reader's buffer: hash it now.
			s = &stored{hash: sha256.Sum256(env.Body), seq: env.Seq, tenant: env.TenantID}
			w.byID[env.ID] = s
		}
		s.count++
		return nil
	})
	if err != nil {
		return w, fmt.Errorf("cannot read the WAL in %s: %w", dir, err)
	}
	return w, nil
}

// verdict compares the acknowledged hooks with the WAL.
type verdict struct {
	acked, lost, mismatched, duplicated int
	problems                            []string // the first few, for the failure message
}

func (v *verdict) problem(format string, args ...any) {
	if len(v.problems) < 10 {
		v.problems = append(v.problems, fmt.Sprintf(format, args...))
	}
}

// compare requires every acknowledged id in the WAL exactly once with the
// body hash loadgen recorded, and no id acknowledged twice.
func compare(acks []acked, w walHooks) verdict {
	v := verdict{acked: len(acks)}
	seen := make(map[envelope.ID]*acked, len(acks))
	for i := range acks {
		a := &acks[i]
		if first, dup := seen[a.id]; dup {
			v.duplicated++
			v.problem("%s was acknowledged twice (%s:%d and %s:%d)", a.id, first.file, first.line, a.file, a.line)
			continue
		}
		seen[a.id] = a
		s := w.byID[a.id]
		switch {
		case s == nil:
			v.lost++
			v.problem("%s (%s:%d) was acknowledged and is not in the WAL", a.id, a.file, a.line)
		case s.count > 1:
			v.duplicated++
			v.problem("%s is in the WAL %d times", a.id, s.count)
		case s.hash != a.hash:
			v.mismatched++
			v.problem("%s: the stored body hashes to %x, loadgen sent %x", a.id, s.hash, a.hash)
		}
	}
	return v
}
