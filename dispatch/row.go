package dispatch

import (
	"time"

	"github.com/ankusa/ankusa/envelope"
)

// State is a delivery row's state (DESIGN.md §2.7).
type State uint8

const (
	// Pending: waiting for its due time (a first attempt, or a retry
	// after backoff).
	Pending State = 1
	// InFlight: an attempt is running. The lease is held in memory by
	// the process running the attempt; a crash ends every lease at once,
	// so the stored state of such a row is Pending and it is due again at
	// the next boot.
	InFlight State = 2
	// Dead: retries are over (max_attempts, max_age, or a permanent
	// refusal); the row waits for an operator to retry or drop it.
	Dead State = 3
)

func (s State) String() string {
	switch s {
	case Pending:
		return "pending"
	case InFlight:
		return "in_flight"
	case Dead:
		return "dead"
	}
	return "unknown"
}

// Row is one delivery row, (hook, sink), as the admin API shows it.
type Row struct {
	Tenant   string
	Ordinal  uint32
	Seq      uint64
	EventID  envelope.ID
	Source   string
	Sink     string
	State    State
	Attempts int
	// ReceivedAt is when the node received the hook.
	ReceivedAt time.Time
	// Due is when a pending row is next tried.
	Due time.Time
	// LastAttemptAt, LastStatus and LastError describe the last attempt
	// (zero before the first).
	LastAttemptAt time.Time
	LastStatus    int
	LastError     string
}

// Attempt is one entry of a hook's attempt log.
type Attempt struct {
	Sink    string
	N       int // 1 for the first attempt
	At      time.Time
	Status  int // the target's answer; 0 when there was none
	Latency time.Duration
	// Outcome is delivered, retry, dead or circuit_open.
	Outcome string
	Error   string
}

// Filter selects rows by source and by when the hook was received; zero
// fields select everything.
type Filter struct {
	Source       string
	Since, Until time.Time
}

// Match reports whether the row passes the filter.
func (f *Filter) Match(r *Row) bool {
	if f.Source != "" && r.Source != f.Source {
		return false
	}
	if !f.Since.IsZero() && r.ReceivedAt.Before(f.Since) {
		return false
	}
	if !f.Until.IsZero() && !r.ReceivedAt.Before(f.Until) {
		return false
	}
	return true
}
