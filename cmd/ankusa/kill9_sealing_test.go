package main

// What the kills did to sealing: whether a segment was being written when
// the SIGKILL came, what it left in the segment directory, and what the
// next boot's recovery did with it.

import (
	"fmt"
	"strings"
)

// Messages of the segment store's boot recovery (segment/store.go).
const (
	msgRemovedPartial = "removed a partial segment"
	msgAdoptedWhole   = "adopted a whole segment"
	msgSetAside       = "a segment missing from the catalogue is damaged"
)

// recovery is what one boot's segment recovery logged.
type recovery struct {
	removed, adopted, setAside int
}

// parseRecovery counts the recovery messages in a boot's JSON log.
func parseRecovery(log string) recovery {
	return recovery{
		removed:  strings.Count(log, msgRemovedPartial),
		adopted:  strings.Count(log, msgAdoptedWhole),
		setAside: strings.Count(log, msgSetAside),
	}
}

// boot is one boot of the kill loop.
type boot struct {
	acks []acked
	// recovered is what this boot's recovery did with what the previous
	// SIGKILL left.
	recovered recovery
	// sealing: a partial segment existed right before the SIGKILL (the open
	// segment, being filled or being sealed).
	sealing bool
	// After the SIGKILL, with the node dead: the partial segments and the
	// whole ones in the directory.
	partialsLeft, segsLeft int
}

// sealingTally sums the boots.
type sealingTally struct {
	boots, sealing, partialsLeft, removed, adopted, setAside int
	problems                                                 []string
}

// add counts b and checks its recovery against what the previous kill left:
// every partial segment is removed at the next boot, none other is.
func (s *sealingTally) add(b boot, prevPartials int) {
	s.boots++
	if b.sealing {
		s.sealing++
	}
	s.partialsLeft += b.partialsLeft
	s.removed += b.recovered.removed
	s.adopted += b.recovered.adopted
	s.setAside += b.recovered.setAside
	if b.recovered.removed != prevPartials && len(s.problems) < 10 {
		s.problems = append(s.problems, fmt.Sprintf("boot %d removed %d partial segments; the SIGKILL before it left %d", s.boots, b.recovered.removed, prevPartials))
	}
	if b.recovered.setAside > 0 && len(s.problems) < 10 {
		s.problems = append(s.problems, fmt.Sprintf("boot %d set %d damaged segments aside: a segment is renamed whole only after its fsync, a SIGKILL cannot damage it", s.boots, b.recovered.setAside))
	}
}

// String is the per-kill summary of sealing.
func (b boot) String() string {
	at := "no"
	if b.sealing {
		at = "yes"
	}
	return fmt.Sprintf("%d segments, .partial at the kill: %s; boot recovery removed %d partial, adopted %d whole",
		b.segsLeft, at, b.recovered.removed, b.recovered.adopted)
}
