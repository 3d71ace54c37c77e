package meta

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ankusa/ankusa/internal/throttle"
)

// TestLoggerThrottlesErrors: a background error repeated in a loop (a
// flush on a full disk) gives one line per errorEvery, naming how many it
// held back, and is counted every time; Fatalf still does not return.
func TestLoggerThrottlesErrors(t *testing.T) {
	var lines []string
	var fatal []string
	o := Options{
		Errorf: func(f string, a ...any) { lines = append(lines, fmt.Sprintf(f, a...)) },
		Fatalf: func(f string, a ...any) { fatal = append(fatal, fmt.Sprintf(f, a...)) },
	}
	now := time.Unix(1000, 0)
	l := logger{o: &o, throttle: &throttle.Throttle{Every: errorEvery}, now: func() time.Time { return now }}
	ev := l.events()
	count0 := backgroundErrors.Get()
	for i := range 10000 {
		ev.BackgroundError(errors.New("pebble: flush: no space left on device"))
		if i%1000 == 999 {
			now = now.Add(time.Second)
		}
	}
	if got := backgroundErrors.Get() - count0; got != 10000 {
		t.Fatalf("ankusa_meta_background_errors_total rose by %d, want 10000", got)
	}
	if len(lines) != 1 {
		t.Fatalf("%d lines for 10000 errors in 10s, want 1: %q", len(lines), lines)
	}
	now = now.Add(errorEvery)
	ev.BackgroundError(errors.New("again"))
	if len(lines) != 2 || !strings.Contains(lines[1], "9999 similar lines suppressed") {
		t.Fatalf("second line %q, want the count of suppressed lines", lines)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatalf("Fatalf returned")
			}
		}()
		l.Fatalf("pebble: fatal commit error: %v", errors.New("disk"))
	}()
	if len(fatal) != 1 {
		t.Fatalf("Fatalf did not reach Options.Fatalf: %q", fatal)
	}
}
