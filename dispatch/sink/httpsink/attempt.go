package httpsink

import (
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ankusa/ankusa/envelope"
)

// Bounds of what an attempt keeps and reads of an answer.
const (
	// headMax is how much of an error answer's body the message quotes.
	headMax = 256
	// drainMax is how much of an answer's body is read so the connection
	// can be used again; past it, the connection is closed instead.
	drainMax = 64 << 10
	// keepBody and keepScratch bound the buffers a pooled attempt keeps.
	keepBody    = 1 << 20
	keepScratch = 16 << 10
	// scratchMin is the scratch buffer's size, which drain reads with.
	scratchMin = 4 << 10
)

// States of an attempt run on its own goroutine (Deliver with a ctx that
// can be done).
const (
	running uint32 = iota
	finished
	abandoned
)

// attempt is one request and its answer. It is owned by Deliver until
// released, or, when Deliver returns early because ctx is done, by the
// goroutine running the exchange, which releases it when fasthttp
// returns. It never refers to the envelope or the Delivery.
type attempt struct {
	req  *fasthttp.Request
	resp *fasthttp.Response

	body    []byte // the request body; req holds it raw
	scratch []byte // url, header values, the signature
	key     []byte // a per-hook secret's key
	sum     []byte
	id      [envelope.IDTextLen]byte
	ts      [20]byte

	deadline time.Time
	state    atomic.Uint32
	done     chan struct{}

	// The answer.
	err        error
	status     int
	retryAfter time.Duration
	head       []byte // the start of an error answer's body
	more       bool   // the body is longer than head
	location   []byte // a redirect's Location, bounded
}

var attemptPool = sync.Pool{New: func() any {
	return &attempt{done: make(chan struct{}, 1), scratch: make([]byte, 0, scratchMin), head: make([]byte, 0, headMax)}
}}

func acquireAttempt() *attempt {
	a := attemptPool.Get().(*attempt)
	a.req = fasthttp.AcquireRequest()
	a.resp = fasthttp.AcquireResponse()
	return a
}

// releaseAttempt returns a and its request and response to their pools.
// A body stream left open is closed, and its connection with it.
func releaseAttempt(a *attempt) {
	fasthttp.ReleaseRequest(a.req)
	fasthttp.ReleaseResponse(a.resp)
	a.req, a.resp = nil, nil
	clear(a.key)
	if cap(a.body) > keepBody {
		a.body = nil
	}
	if cap(a.scratch) > keepScratch {
		a.scratch = make([]byte, 0, scratchMin)
	}
	a.err, a.status, a.retryAfter, a.more = nil, 0, 0, false
	a.head, a.location = a.head[:0], a.location[:0]
	a.state.Store(running)
	attemptPool.Put(a)
}

// exchange sends the request and reads the answer.
func (s *Sink) exchange(a *attempt) {
	a.err = s.client.DoDeadline(a.req, a.resp, a.deadline)
	if a.err != nil {
		return
	}
	a.status = a.resp.StatusCode()
	ok := a.status >= 200 && a.status < 300
	if !ok {
		h := &a.resp.Header
		if retryable(a.status) {
			a.retryAfter = parseRetryAfter(h.Peek("Retry-After"), s.opts.Now())
		}
		if a.status >= 300 && a.status < 400 {
			loc := h.Peek("Location")
			a.location = append(a.location[:0], loc[:min(len(loc), headMax)]...)
		}
	}
	if r := a.resp.BodyStream(); r != nil {
		a.drain(r, !ok)
		// Closing a stream that was not read to its end closes the
		// connection; there is nothing else to report.
		_ = a.resp.CloseBodyStream()
		return
	}
	if !ok {
		body := a.resp.Body()
		a.head = append(a.head[:0], body[:min(len(body), headMax)]...)
		a.more = len(body) > headMax
	}
}

// drain reads up to drainMax bytes of the answer's body, keeping the
// first headMax when keepHead. A body that does not end by then is left
// unread, and closing the stream closes the connection.
func (a *attempt) drain(r io.Reader, keepHead bool) {
	buf := a.scratch[:cap(a.scratch)]
	total := 0
	for total <= drainMax {
		n, err := r.Read(buf)
		if keepHead && len(a.head) < headMax {
			a.head = append(a.head, buf[:min(n, headMax-len(a.head))]...)
		}
		total += n
		if err != nil {
			break
		}
	}
	a.more = total > len(a.head)
}

// run runs the exchange and reports whether it finished: false when ctx
// was done first, and a then belongs to the exchange's goroutine.
func (s *Sink) run(ctxDone <-chan struct{}, a *attempt) bool {
	if ctxDone == nil {
		s.exchange(a)
		return true
	}
	go s.runAsync(a)
	select {
	case <-a.done:
		return true
	case <-ctxDone:
		if a.state.CompareAndSwap(running, abandoned) {
			return false
		}
		<-a.done
		return true
	}
}

func (s *Sink) runAsync(a *attempt) {
	s.exchange(a)
	if a.state.CompareAndSwap(running, finished) {
		a.done <- struct{}{}
		return
	}
	releaseAttempt(a)
}
