package edge

import (
	"sync/atomic"
	"time"
)

// throttle lets one log line through per second, so a failure on the hot
// path cannot flood the log.
type throttle struct{ next atomic.Int64 }

func (t *throttle) allow() bool {
	now := time.Now().UnixNano()
	n := t.next.Load()
	return now >= n && t.next.CompareAndSwap(n, now+int64(time.Second))
}
