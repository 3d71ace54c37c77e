package main

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/valyala/fasthttp"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/tools/loadgen/result"
)

// tally counts deliveries by event id (its seq: a bitset) and measures the
// time from the hook's commit to its delivery, from the id's millisecond
// timestamp (the commit loop's clock, the moment before the 201): the
// latency has millisecond resolution and reads about 0.5 ms high.
type tally struct {
	mu     sync.Mutex
	seen   []uint64     // bit seq: delivered at least once
	unique atomic.Int64 // hooks delivered at least once, read without the lock
	total  int64
	bad    int64 // deliveries without a parsable event id
	hist   *hdrhistogram.Histogram
	last   time.Time // last first delivery
}

func newTally() *tally {
	return &tally{hist: newHist()}
}

// newHist covers 1 µs to 10 min in µs, 3 significant digits.
func newHist() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, int64(10*time.Minute/time.Microsecond), 3)
}

// record counts one delivery of the hook with the text id.
func (t *tally) record(id []byte, now time.Time) {
	eid, err := envelope.ParseID(id)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total++
	if err != nil {
		t.bad++
		return
	}
	seq := eid.Seq()
	w := int(seq / 64)
	if w >= len(t.seen) {
		t.seen = append(t.seen, make([]uint64, max(w+1-len(t.seen), len(t.seen)))...)
	}
	bit := uint64(1) << (seq % 64)
	if t.seen[w]&bit != 0 {
		return
	}
	t.seen[w] |= bit
	t.unique.Add(1)
	t.last = now
	lat := now.UnixMicro() - int64(eid.Millis())*1000
	_ = t.hist.RecordValue(max(1, lat))
}

// counts returns unique, every delivery, and deliveries without an id.
func (t *tally) counts() (unique, total, bad int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.unique.Load(), t.total, t.bad
}

// latency is the distribution of the latencies recorded since the last
// call, and starts a new one.
func (t *tally) latency() result.Latency {
	t.mu.Lock()
	defer t.mu.Unlock()
	h := t.hist
	t.hist = newHist()
	return result.LatencyOf(h, h.Max())
}

func (t *tally) lastDelivery() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last
}

// receiver is a customer's webhook service: it answers 204 to every
// delivery and counts them in its tally.
type receiver struct {
	addr  string
	ln    net.Listener
	srv   *fasthttp.Server
	tally *tally
}

func startReceiver() (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &receiver{addr: ln.Addr().String(), ln: ln, tally: newTally()}
	r.srv = &fasthttp.Server{Handler: r.handle, Name: "bench-receiver", ReadTimeout: time.Minute, IdleTimeout: time.Minute}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

var eventIDHeader = []byte("x-ankusa-event-id")

func (r *receiver) handle(ctx *fasthttp.RequestCtx) {
	r.tally.record(ctx.Request.Header.PeekBytes(eventIDHeader), time.Now())
	ctx.SetStatusCode(fasthttp.StatusNoContent)
}

func (r *receiver) sink() string {
	return fmt.Sprintf(`{id: recv, type: http, url: "http://%s/in/{tenant_id}", secret: "%s", allow_private: true}`, r.addr, sinkSecret)
}

func (r *receiver) tallied() *tally { return r.tally }

func (r *receiver) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = r.srv.ShutdownWithContext(ctx)
	return nil
}
