package admin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/ankusa/ankusa/dispatch"
)

// stampLayout is RFC 3339 in UTC with a fixed nine-digit fraction, as the
// envelope's received_at.
const stampLayout = "2006-01-02T15:04:05.000000000Z07:00"

// stamp formats t in stampLayout; the zero time is "" (omitted).
func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(stampLayout)
}

// deliveryList is the body of GET .../deliveries.
type deliveryList struct {
	Deliveries []deliveryJSON `json:"deliveries"`
	NextCursor string         `json:"next_cursor,omitempty"`
}

type deliveryJSON struct {
	EventID       string `json:"event_id"`
	Seq           uint64 `json:"seq"`
	Source        string `json:"source"`
	Sink          string `json:"sink"`
	State         string `json:"state"`
	Attempts      int    `json:"attempts"`
	ReceivedAt    string `json:"received_at"`
	DueAt         string `json:"due_at,omitempty"`
	LastAttemptAt string `json:"last_attempt_at,omitempty"`
	LastStatus    int    `json:"last_status"`
	LastError     string `json:"last_error"`
}

func newDeliveryList(rows []dispatch.Row, next string) deliveryList {
	l := deliveryList{Deliveries: make([]deliveryJSON, len(rows)), NextCursor: next}
	for i := range rows {
		r := &rows[i]
		l.Deliveries[i] = deliveryJSON{
			EventID:       r.EventID.String(),
			Seq:           r.Seq,
			Source:        r.Source,
			Sink:          r.Sink,
			State:         r.State.String(),
			Attempts:      r.Attempts,
			ReceivedAt:    stamp(r.ReceivedAt),
			DueAt:         stamp(r.Due),
			LastAttemptAt: stamp(r.LastAttemptAt),
			LastStatus:    r.LastStatus,
			LastError:     r.LastError,
		}
	}
	return l
}

// checkRowsTenant makes sure a listing shows the asking tenant's rows only.
func checkRowsTenant(rows []dispatch.Row, tenant string) error {
	for i := range rows {
		if rows[i].Tenant != tenant {
			return fmt.Errorf("BUG: Dead(%q) returned a row of tenant %q (event %s, sink %s)",
				tenant, rows[i].Tenant, rows[i].EventID, rows[i].Sink)
		}
	}
	return nil
}

// attemptList is the body of GET .../hooks/{id}/attempts.
type attemptList struct {
	Attempts []attemptJSON `json:"attempts"`
}

type attemptJSON struct {
	Sink      string  `json:"sink"`
	Attempt   int     `json:"attempt"`
	At        string  `json:"at"`
	Status    int     `json:"status"`
	LatencyMs float64 `json:"latency_ms"`
	Outcome   string  `json:"outcome"`
	Error     string  `json:"error,omitempty"`
}

func newAttemptList(as []dispatch.Attempt) attemptList {
	l := attemptList{Attempts: make([]attemptJSON, len(as))}
	for i := range as {
		a := &as[i]
		l.Attempts[i] = attemptJSON{
			Sink:      a.Sink,
			Attempt:   a.N,
			At:        stamp(a.At),
			Status:    a.Status,
			LatencyMs: float64(a.Latency) / float64(time.Millisecond),
			Outcome:   a.Outcome,
			Error:     a.Error,
		}
	}
	return l
}

// writeValue answers status with v in JSON (HTML escaping off) and a
// newline.
func writeValue(w http.ResponseWriter, status int, v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic("BUG: cannot encode an admin answer: " + err.Error())
	}
	writeJSON(w, status, b.Bytes())
}
