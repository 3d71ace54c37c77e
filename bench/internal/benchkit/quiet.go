package benchkit

import (
	"context"
	"time"
)

// Quiet is what a machine quiet enough to measure on is: other work on a
// shared machine would be measured as the servers' slowness.
type Quiet struct {
	// CPU is how busy the machine may be, in percent of one core over
	// half a second.
	CPU float64
	// Others lists other work that must not run meanwhile (nil: none);
	// while it lists any, the next look is 5 s later.
	Others func() []string
	// Waiting is told once, when the machine is first found busy (nil:
	// nobody).
	Waiting func(cpu float64, others []string)
}

// Settle waits up to limit for a quiet machine. It reports whether the
// machine was quiet and how long it waited.
func (q Quiet) Settle(ctx context.Context, limit time.Duration) (bool, time.Duration, error) {
	began := time.Now()
	said := false
	for {
		var busy []string
		if q.Others != nil {
			busy = q.Others()
		}
		before, err := MachineBusy()
		if err != nil {
			return false, 0, err
		}
		t0 := time.Now()
		select {
		case <-ctx.Done():
			return false, time.Since(began), ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
		after, err := MachineBusy()
		if err != nil {
			return false, 0, err
		}
		cpu := 100 * (after - before) / time.Since(t0).Seconds()
		if len(busy) == 0 && cpu < q.CPU {
			return true, time.Since(began), nil
		}
		if time.Since(began) > limit {
			return false, time.Since(began), nil
		}
		if !said && q.Waiting != nil {
			q.Waiting(cpu, busy)
			said = true
		}
		if len(busy) > 0 {
			select {
			case <-ctx.Done():
				return false, time.Since(began), ctx.Err()
			case <-time.After(5 * time.Second):
			}
		}
	}
}
