package main

import (
	"fmt"
	"sync"
	"time"
)

// timeline is what happened during the soak, in time order: the faults
// (start, kind, duration, note), other events (a node restart, a failed
// boot) and findings (an unexpected exit), and the load's answers per
// interval. Safe for concurrent use.
type timeline struct {
	start    time.Time
	interval time.Duration

	mu       sync.Mutex
	faults   []Fault
	events   []Event
	findings []string
	buckets  []Answers
}

// Fault is one injected fault.
type Fault struct {
	AtS       float64 `json:"at_s"` // since the load started
	Kind      string  `json:"kind"`
	DurationS float64 `json:"duration_s"` // until the fault was undone (restarts included)
	Note      string  `json:"note,omitempty"`
}

// Event is something the soak saw, not caused on purpose.
type Event struct {
	AtS     float64 `json:"at_s"`
	Text    string  `json:"text"`
	Finding bool    `json:"finding,omitempty"`
}

// Answers counts the load's outcomes in one interval.
type Answers struct {
	Sent      int64 `json:"sent"`
	Created   int64 `json:"201"`
	Limited   int64 `json:"429"`
	Overload  int64 `json:"503"`
	Other     int64 `json:"other"`
	Transport int64 `json:"errors"`
	Unsent    int64 `json:"unsent"`
}

func newTimeline(start time.Time, interval time.Duration) *timeline {
	return &timeline{start: start, interval: interval}
}

func (t *timeline) since(at time.Time) float64 { return at.Sub(t.start).Seconds() }

// fault records a fault that began at began and ended now.
func (t *timeline) fault(kind string, began time.Time, note string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.faults = append(t.faults, Fault{AtS: t.since(began), Kind: kind, DurationS: time.Since(began).Seconds(), Note: note})
}

func (t *timeline) event(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.events = append(t.events, Event{AtS: t.since(time.Now()), Text: fmt.Sprintf(format, args...)})
}

// finding is an event that fails the run.
func (t *timeline) finding(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	text := fmt.Sprintf(format, args...)
	t.events = append(t.events, Event{AtS: t.since(time.Now()), Text: text, Finding: true})
	t.findings = append(t.findings, fmt.Sprintf("at %.1fs: %s", t.since(time.Now()), text))
}

// answer counts one outcome of a request sent at sent; status 0 is a
// transport error, -1 a request never sent.
func (t *timeline) answer(sent time.Time, status int) {
	i := max(0, int(sent.Sub(t.start)/t.interval))
	t.mu.Lock()
	defer t.mu.Unlock()
	for len(t.buckets) <= i {
		t.buckets = append(t.buckets, Answers{})
	}
	b := &t.buckets[i]
	if status != -1 {
		b.Sent++
	}
	switch status {
	case -1:
		b.Unsent++
	case 0:
		b.Transport++
	case 201:
		b.Created++
	case 429:
		b.Limited++
	case 503:
		b.Overload++
	default:
		b.Other++
	}
}

// snapshot copies the timeline's records.
func (t *timeline) snapshot() (faults []Fault, events []Event, findings []string, buckets []Answers) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Fault(nil), t.faults...), append([]Event(nil), t.events...),
		append([]string(nil), t.findings...), append([]Answers(nil), t.buckets...)
}
