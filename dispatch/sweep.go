package dispatch

import (
	"time"

	"go.uber.org/zap"

	"github.com/ankusa/ankusa/meta"
)

// sweepEvery is how often the attempt log is swept.
const sweepEvery = 10 * time.Minute

func (d *Dispatcher) sweepLoop() {
	defer d.wg.Done()
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	var sweptDay uint32
	for {
		select {
		case <-d.stop:
			return
		case <-t.C:
			if day := meta.DedupeDay(d.o.Now().UnixNano()); d.in.o.DedupeNode && day != sweptDay {
				// Keys are filed by day: one range delete a day is enough.
				if err := d.meta.SweepDedupe(d.o.Now().UnixNano()); err != nil {
					d.o.Logger.Error("cannot sweep expired dedupe keys", zap.Error(err))
				} else {
					sweptDay = day
				}
			}
			if n, err := d.sweepAttempts(); err != nil {
				d.o.Logger.Error("cannot sweep the attempt log", zap.Error(err))
			} else if n > 0 {
				d.o.Logger.Info("swept the attempt log", zap.Int("entries", n), zap.Duration("older_than", d.o.AttemptLogTTL))
			}
		}
	}
}

// sweepAttempts deletes attempt log entries older than AttemptLogTTL.
func (d *Dispatcher) sweepAttempts() (int, error) {
	n, err := d.meta.SweepAttempts(d.o.Now().Add(-d.o.AttemptLogTTL).UnixNano())
	if err == nil {
		sweptAttempts.Add(n)
	}
	return n, err
}
