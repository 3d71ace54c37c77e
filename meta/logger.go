package meta

import (
	"fmt"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/cockroachdb/pebble/v2"

	"github.com/ankusa/ankusa/internal/throttle"
)

// errorEvery is how often pebble's errors reach the log. pebble retries
// a flush or a compaction that failed (on a full disk: at once, in a
// loop) and reports every failure; without a throttle that was megabytes
// of log a second.
const errorEvery = 10 * time.Second

// backgroundErrors counts pebble's failed flushes and compactions (each
// retried by pebble), logged or not.
var backgroundErrors = metrics.NewCounter("ankusa_meta_background_errors_total")

// apiMisuse counts the single deletes pebble saw meet two writes of
// their key.
var apiMisuse = metrics.NewCounter("ankusa_meta_api_misuse_total")

// APIMisuses is how many misuses of the store pebble has reported in this
// process (ankusa_meta_api_misuse_total): tests of the packages that
// write rows hold it at zero.
func APIMisuses() uint64 { return apiMisuse.Get() }

// logger is the Logger the store gives pebble: Infof as it is, Errorf and
// background errors through one throttle, Fatalf never throttled and
// never returning (DESIGN.md §6 item 8).
type logger struct {
	o        *Options
	throttle *throttle.Throttle
	now      func() time.Time
}

func newLogger(o *Options) logger {
	return logger{o: o, throttle: &throttle.Throttle{Every: errorEvery}, now: time.Now}
}

func (l logger) Infof(format string, args ...any) { l.o.Logf(format, args...) }

func (l logger) Errorf(format string, args ...any) {
	ok, suppressed := l.throttle.Allow(l.now())
	if !ok {
		return
	}
	if suppressed > 0 {
		format += " (%d similar lines suppressed in the last %s)"
		args = append(args, suppressed, errorEvery)
	}
	l.o.Errorf(format, args...)
}

func (l logger) Fatalf(format string, args ...any) {
	l.o.Fatalf(format, args...)
	panic(fmt.Sprintf("BUG: meta: Fatalf returned: "+format, args...))
}

// events is the store's pebble EventListener: a background error (a
// flush or compaction that failed and will be retried) is counted and
// logged through the throttle.
func (l logger) events() *pebble.EventListener {
	return &pebble.EventListener{
		BackgroundError: func(err error) {
			backgroundErrors.Inc()
			l.Errorf("background error: %s", err)
		},
		// A single delete that met two writes of its key: a store bug
		// that could bring back a deleted due entry or row. Pebble's other
		// kinds (a single delete that found no write, which a delete-only
		// compaction under an erase's range delete can also cause) are
		// logged, not counted.
		PossibleAPIMisuse: func(info pebble.PossibleAPIMisuseInfo) {
			if info.Kind != pebble.NondeterministicSingleDelete {
				l.Infof("%s", info)
				return
			}
			apiMisuse.Inc()
			l.Errorf("%s", info)
		},
	}
}
