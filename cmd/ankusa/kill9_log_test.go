package main

// The log of a stopped node is its sealed segments and the WAL files still
// on disk: a WAL file is deleted once every hook in it is sealed into a
// catalogued segment and at or below the dispatch checkpoint (DESIGN.md §6
// item 3). The harness reads both back as one log and checks it.

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/wal"
)

// logHook is one seq of the log, as its first copy read holds it.
type logHook struct {
	id envelope.ID
	// payload is the sha256 of the whole record (the envelope's binary
	// form): the sealer copies the WAL's payload into the segment as is, so
	// a hook both sealed and still in the WAL has two byte-identical copies.
	payload [sha256.Size]byte
	body    [sha256.Size]byte
	tenant  string
	where   string // the file of the first copy, for messages
	// inSeg, inWAL: where a copy of this seq was read.
	inSeg, inWAL bool
}

// extraCopy is a copy of a seq the log must not hold: a second copy in the
// segments or in the WAL, or a copy that differs from the other.
type extraCopy struct {
	seq  uint64
	id   envelope.ID
	body [sha256.Size]byte
}

// nodeLog is the digest of a stopped node's log.
type nodeLog struct {
	bySeq     map[uint64]*logHook
	extras    []extraCopy
	last      uint64 // highest seq in the log
	bodyBytes int64

	seg segCheck

	walFiles          []uint64 // numbers of the WAL files on disk, ascending
	walHooks          int
	walFirst, walLast uint64 // seqs of the WAL's first and last hook (0: none)
	walFirstFile      string
	overlap           int // seqs both in a segment and in a WAL file

	problems []string
}

func newNodeLog() *nodeLog { return &nodeLog{bySeq: map[uint64]*logHook{}} }

func (l *nodeLog) problem(format string, args ...any) {
	if len(l.problems) < 10 {
		l.problems = append(l.problems, fmt.Sprintf(format, args...))
	}
}

// walDeleted is how many WAL files are gone: with the files on disk
// numbered consecutively (walFileCheck), the files before the first.
func (l *nodeLog) walDeleted() int {
	if len(l.walFiles) == 0 {
		return 0
	}
	return int(l.walFiles[0] - 1)
}

// hooks is the number of distinct seqs in the log.
func (l *nodeLog) hooks() int { return len(l.bySeq) }

// readLog reads the log of a stopped node: every sealed segment in segDir
// (verified too if verify), then every record of the WAL in walDir. stopped
// says the node stopped cleanly: a partial segment is then a problem (after
// a SIGKILL it is the open segment, which the next boot removes). A torn
// WAL tail comes back as the *wal.CorruptError of wal.ReadDir, with the
// log read up to it and checked.
func readLog(segDir, walDir string, stopped, verify bool) (*nodeLog, error) {
	l := newNodeLog()
	if err := readSegmentFiles(segDir, l, stopped, verify); err != nil {
		return l, err
	}
	var err error
	if l.walFiles, err = wal.ListFiles(vfs.Default, walDir); err != nil {
		return l, fmt.Errorf("cannot list the WAL in %s: %w", walDir, err)
	}
	var env envelope.Envelope
	walErr := wal.ReadDir(vfs.Default, walDir, func(r *wal.Record) error {
		if r.Kind == envelope.KindTenant {
			return nil
		}
		if _, err := envelope.Decode(r.Payload, &env); err != nil {
			return fmt.Errorf("%s offset %d: %w", r.File, r.Offset, err)
		}
		if env.ID != r.ID || env.Seq != r.Seq {
			return fmt.Errorf("%s offset %d: frame says seq %d id %s, envelope says %d %s", r.File, r.Offset, r.Seq, r.ID, env.Seq, env.ID)
		}
		l.addWAL(&env, sha256.Sum256(r.Payload), fmt.Sprintf("%s offset %d", r.File, r.Offset))
		return nil
	})
	l.finish()
	if walErr != nil {
		return l, fmt.Errorf("cannot read the WAL in %s: %w", walDir, walErr)
	}
	return l, nil
}

// addSegment adds a hook read from a sealed segment.
func (l *nodeLog) addSegment(env *envelope.Envelope, payload [sha256.Size]byte, where string) {
	l.add(env, payload, where, false)
}

// addWAL adds a hook read from a WAL file; the WAL is read in order.
func (l *nodeLog) addWAL(env *envelope.Envelope, payload [sha256.Size]byte, where string) {
	if l.walHooks == 0 {
		l.walFirst, l.walFirstFile = env.Seq, where
	} else if env.Seq != l.walLast+1 {
		l.problem("%s: the WAL's hooks skip from seq %d to %d: they must continue without a gap", where, l.walLast, env.Seq)
	}
	l.walHooks++
	l.walLast = env.Seq
	l.add(env, payload, where, true)
}

// add keeps the first copy of each seq and checks a second one: allowed
// only once in a segment and once in the WAL, and then byte-identical.
func (l *nodeLog) add(env *envelope.Envelope, payload [sha256.Size]byte, where string, fromWAL bool) {
	h := l.bySeq[env.Seq]
	if h == nil {
		h = &logHook{id: env.ID, payload: payload, body: sha256.Sum256(env.Body), tenant: env.TenantID, where: where}
		h.inSeg, h.inWAL = !fromWAL, fromWAL
		l.bySeq[env.Seq] = h
		l.last = max(l.last, env.Seq)
		l.bodyBytes += int64(len(env.Body))
		return
	}
	extra := func() {
		l.extras = append(l.extras, extraCopy{seq: env.Seq, id: env.ID, body: sha256.Sum256(env.Body)})
	}
	place := "the segments"
	if fromWAL {
		place = "the WAL"
	}
	switch {
	case fromWAL && h.inWAL || !fromWAL && h.inSeg:
		l.problem("seq %d is in %s twice: %s and %s", env.Seq, place, h.where, where)
		extra()
	case h.id != env.ID || h.payload != payload:
		l.problem("seq %d differs between its two copies: %s in %s, %s in %s (another record)", env.Seq, h.id, h.where, env.ID, where)
		extra()
	default:
		h.inSeg, h.inWAL = true, true
		l.overlap++
	}
}

// finish checks the log as a whole once everything is read: seqs dense
// from 1 across segments and WAL together with ids strictly increasing;
// the WAL files on disk numbered without a hole; and nothing missing
// between the segments and the WAL, that is, every hook of a deleted WAL
// file is sealed.
func (l *nodeLog) finish() {
	seqs := make([]uint64, 0, len(l.bySeq))
	for s := range l.bySeq {
		seqs = append(seqs, s)
	}
	slices.Sort(seqs)
	var prev *logHook
	next := uint64(1)
	for _, s := range seqs {
		h := l.bySeq[s]
		if s != next {
			l.problem("seqs %d..%d are in no segment and in no WAL file: seqs must be dense from 1", next, s-1)
		}
		if prev != nil && bytes.Compare(h.id[:], prev.id[:]) <= 0 {
			l.problem("seq %d (%s) has id %s, not above the previous seq's %s", s, h.where, h.id, prev.id)
		}
		prev, next = h, s+1
	}
	for _, p := range walFileCheck(l.walFiles) {
		l.problem("%s", p)
	}
	if l.walHooks > 0 && l.walFirst > l.seg.sealed+1 {
		l.problem("seqs %d..%d are in no segment and in no WAL file on disk: the segments end at seq %d, the WAL's first hook is seq %d (%s); %d WAL files were deleted, and a WAL file may go only once every hook in it is sealed",
			l.seg.sealed+1, l.walFirst-1, l.seg.sealed, l.walFirst, l.walFirstFile, l.walDeleted())
	}
}

// walFileCheck checks the numbers of the WAL files on disk: consecutive
// (a WAL file is deleted only once every hook in it, and so in every file
// before it, is sealed and dispatched: only a prefix of the WAL may be
// gone), and at least one (the active file is never deleted).
func walFileCheck(nums []uint64) []string {
	if len(nums) == 0 {
		return []string{"the WAL holds no file: the active file is never deleted"}
	}
	var problems []string
	for i := 1; i < len(nums); i++ {
		if nums[i] != nums[i-1]+1 {
			problems = append(problems, fmt.Sprintf("WAL files %s..%s are gone while %s and %s remain: only a prefix of the WAL may be deleted",
				wal.FileName(nums[i-1]+1), wal.FileName(nums[i]-1), wal.FileName(nums[i-1]), wal.FileName(nums[i])))
		}
	}
	return problems
}

// carried checks that the log after holds every hook of the log before,
// byte-identical: the boot in between (recovery, sealing, WAL deletion)
// lost and changed nothing. It returns how many hooks it compared.
func carried(before, after *nodeLog) (int, []string) {
	var problems []string
	add := func(format string, args ...any) {
		if len(problems) < 10 {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	for s, b := range before.bySeq {
		a := after.bySeq[s]
		switch {
		case a == nil:
			add("seq %d (%s, in %s before the last boot) is gone from the log after it", s, b.id, b.where)
		case a.id != b.id || a.payload != b.payload:
			add("seq %d was %s in %s before the last boot, and is another record after it (%s in %s)", s, b.id, b.where, a.id, a.where)
		}
	}
	return len(before.bySeq), problems
}
