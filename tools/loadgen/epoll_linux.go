//go:build linux

package main

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"runtime"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// epollSupported: -engine epoll is available on this platform.
const epollSupported = true

// The epoll engine (-engine epoll) runs the open loop the way wrk runs its
// connections: one event loop, one epoll set over -c non-blocking TCP
// sockets, no goroutine parked per connection and so no runtime wake-up
// between the kernel and the client: the loop's goroutine sleeps in
// epoll_wait itself. See doc.go. Request i is due at the schedule's
// start + i/rate (the go engine's schedule); at its due time it goes out
// on the free connection that has waited longest; when none is free it
// waits for one and its latency still counts from its due time.
//
// A timerfd in the set, armed at an absolute CLOCK_MONOTONIC deadline,
// wakes the loop shortly before the next due send (timerfd expiries get
// no timer slack, unlike epoll_wait's own millisecond timeout); the engine
// learns how late that wake-up comes, arms the timer that much plus
// epollSpinMargin early (at most epollMaxLead), and polls (epoll_wait with
// a zero timeout, serving answers meanwhile) for the rest, so requests
// leave at their due time, not before. An eventfd in the set wakes the
// loop when the run is cancelled.
//
// Each request is built (payload, URL, headers, signature) and serialised
// into one buffer in the lead before its due time: the send is one
// write(2), and after it the loop goes straight back to epoll_wait. Answers
// are read with read(2) into the connection's buffer and parsed by
// respParser. Nothing is allocated per request once the buffers have
// grown to the largest request and answer (TestEpollSteadyStateAllocs).
//
// The goroutine is not locked to its thread (runtime.LockOSThread). A
// goroutine that only makes system calls never passes through the
// scheduler, and after 10 ms of that the runtime's sysmon preempts it (a
// signal; its P taken) and from then on wakes every 20 µs, thousands of
// wake-ups a second on the cores the server uses; so the loop yields now
// and then (epollYieldEvery). On a locked thread each pass through the
// scheduler is a hand-off between two threads (37 µs here, both cores
// woken), on an unlocked one 0.2 µs. Against wrk -t1 -c1 on bench/ceiling
// (two cores of a VM, 6 alternating pairs per batch), the p50 from the
// send was 0.75-0.89 of wrk's locked, 0.96-1.02 unlocked, 1.5 without the
// yields (see bench/RESULTS.md).
const (
	// epollSpinMargin is how much earlier than the learned wake-up
	// lateness the timer is armed: the mean time spent polling per request.
	epollSpinMargin = 10 * time.Microsecond
	// epollMaxLead bounds how early the timer is armed, and so the polling
	// per request when the timer wakes on time.
	epollMaxLead = 50 * time.Microsecond
	// epollYieldEvery is how often the loop passes through the Go
	// scheduler of its own accord (runtime.Gosched), at a moment when no
	// answer is awaited and no send is near (epollYieldRoom); at twice
	// that it yields whatever is in flight. A goroutine that only makes
	// system calls never does otherwise, and after 10 ms without it the
	// runtime's sysmon preempts it with a signal, at a random moment, and
	// then keeps waking every 20 µs.
	epollYieldEvery = 4 * time.Millisecond
	epollYieldRoom  = 200 * time.Microsecond
	// epollPreallocMax bounds the request buffers allocated up front; a
	// larger request grows its buffer once.
	epollPreallocMax = 256 << 10
	// epollEvents is the epoll_wait batch.
	epollEvents = 256
)

// Tokens of the epoll set's members other than connections (whose token
// is their slot, from 0).
const (
	tokTimer  = -1
	tokCancel = -2
)

type econnState uint8

const (
	ecClosed     econnState = iota
	ecConnecting            // non-blocking connect in progress
	ecIdle                  // connected, no request on it
	ecWriting               // request partly written, waiting for EPOLLOUT
	ecReading               // request written, answer awaited
)

// econn is one connection slot. Its fd changes on every reconnection; gen
// tells events for an earlier fd apart.
type econn struct {
	slot  int32
	gen   int32
	fd    int
	state econnState
	mask  uint32 // events registered for fd

	out     []byte // the request: header block, then body
	hdrLen  int
	written int
	in      []byte // the answer as read so far
	p       respParser

	busy     bool // a request is assigned to the slot
	measured bool
	due      time.Time
	sent     time.Time
	deadline time.Time
	writeErr error // the write failed; an answer already sent may still be read
}

// epollEngine is one run of the engine. It belongs to one goroutine.
type epollEngine struct {
	rn  *runner
	cfg *Config
	w   *worker // builds requests: payload, URL, headers, signature
	rec *recorder
	s   *schedule

	sa     unix.Sockaddr
	family int

	epfd, tfd, efd int
	events         []unix.EpollEvent
	conns          []econn
	free           []int32 // FIFO ring of slots without a request
	freeHead       int
	freeLen        int

	next         int64 // next request of the schedule
	measuredSent int64
	inflight     int
	stopped      bool // nothing more will be sent
	cancelled    bool
	fatal        error

	stage    []byte // the next request, built ahead of its due time
	stageHdr int
	staged   int64 // its index; -1 when none

	timeBase  time.Time // time.Now() and CLOCK_MONOTONIC read together
	monoBase  int64
	armed     time.Time // the timer's deadline; zero when it fired or is unset
	armedSend bool      // armed for a send (its lateness is learned)
	blocking  bool      // the last epoll_wait could sleep
	late      time.Duration
	nextCheck time.Time // no request times out before this
	lastYield time.Time
	timeout   error
}

// runEpoll is the open loop on the epoll engine. It returns an error when
// the engine cannot start; a failure mid-run cancels the run with its
// cause.
func (rn *runner) runEpoll(ctx context.Context) error {
	e, err := newEpollEngine(rn)
	if err != nil {
		return err
	}
	defer e.close()
	stopWatch := e.watch(ctx)
	defer stopWatch()

	s, measured := newSchedule(rn.cfg)
	e.s = s
	e.connectAll(time.Now().Add(rn.cfg.Timeout))
	rn.startSchedule(s, time.Now())
	e.loop()
	if e.fatal != nil {
		rn.cancel(e.fatal)
	}
	if ctx.Err() == nil {
		rn.unsent = measured - e.measuredSent
	}
	return nil
}

func newEpollEngine(rn *runner) (*epollEngine, error) {
	cfg := rn.cfg
	addr, err := net.ResolveTCPAddr("tcp", cfg.tmpl.probeAddr)
	if err != nil {
		return nil, fmt.Errorf("cannot resolve %s: %w", cfg.tmpl.probeAddr, err)
	}
	e := &epollEngine{
		rn: rn, cfg: cfg, w: rn.newWorker(0), rec: rn.shards[0],
		epfd: -1, tfd: -1, efd: -1, staged: -1,
		events: make([]unix.EpollEvent, epollEvents),
		conns:  make([]econn, cfg.Conns),
		free:   make([]int32, cfg.Conns),
	}
	e.timeout = fmt.Errorf("no answer within -timeout %v: %w", cfg.Timeout, os.ErrDeadlineExceeded)
	if ip4 := addr.IP.To4(); ip4 != nil {
		sa := &unix.SockaddrInet4{Port: addr.Port}
		copy(sa.Addr[:], ip4)
		e.sa, e.family = sa, unix.AF_INET
	} else {
		sa := &unix.SockaddrInet6{Port: addr.Port}
		copy(sa.Addr[:], addr.IP.To16())
		if addr.Zone != "" {
			if ifc, err := net.InterfaceByName(addr.Zone); err == nil {
				sa.ZoneId = uint32(ifc.Index)
			}
		}
		e.sa, e.family = sa, unix.AF_INET6
	}
	fail := func(what string, err error) (*epollEngine, error) {
		e.close()
		return nil, fmt.Errorf("-engine epoll: %s: %w", what, err)
	}
	if e.epfd, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
		return fail("epoll_create1", err)
	}
	if e.tfd, err = unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC); err != nil {
		return fail("timerfd_create", err)
	}
	if e.efd, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
		return fail("eventfd", err)
	}
	// The timer is edge-triggered: each expiry is one event, and it is
	// re-armed rather than read.
	if err := unix.EpollCtl(e.epfd, unix.EPOLL_CTL_ADD, e.tfd, &unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLET, Fd: tokTimer}); err != nil {
		return fail("epoll_ctl timerfd", err)
	}
	if err := unix.EpollCtl(e.epfd, unix.EPOLL_CTL_ADD, e.efd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: tokCancel}); err != nil {
		return fail("epoll_ctl eventfd", err)
	}
	maxBody := 0
	for _, c := range cfg.Sizes {
		maxBody = max(maxBody, c.Size)
	}
	outCap := min(maxBody+4<<10, epollPreallocMax)
	for i := range e.conns {
		c := &e.conns[i]
		c.slot, c.fd = int32(i), -1
		c.out = make([]byte, 0, outCap)
		c.in = make([]byte, 0, connBufSize)
		e.pushFree(int32(i))
	}
	e.stage = make([]byte, 0, outCap)
	var ts unix.Timespec
	e.timeBase = time.Now()
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return fail("clock_gettime", err)
	}
	e.monoBase = ts.Nano()
	return e, nil
}

// watch makes a cancellation of ctx wake the loop (through the eventfd).
// The returned stop waits for the watcher to be gone.
func (e *epollEngine) watch(ctx context.Context) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-ctx.Done():
			var one [8]byte
			binary.NativeEndian.PutUint64(one[:], 1)
			_, _ = unix.Write(e.efd, one[:])
		case <-done:
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

func (e *epollEngine) close() {
	for i := range e.conns {
		e.closeConn(&e.conns[i])
	}
	for _, fd := range []int{e.epfd, e.tfd, e.efd} {
		if fd >= 0 {
			_ = unix.Close(fd)
		}
	}
}

// connectAll opens every connection before the schedule starts, as wrk
// does, waiting until deadline at most. A connection that fails stays
// closed and is dialled again when a request needs it.
func (e *epollEngine) connectAll(deadline time.Time) {
	for i := range e.conns {
		_ = e.dial(&e.conns[i])
	}
	for !e.cancelled && e.fatal == nil && time.Now().Before(deadline) {
		pending := false
		for i := range e.conns {
			pending = pending || e.conns[i].state == ecConnecting
		}
		if !pending {
			return
		}
		e.poll(10)
	}
}

// loop sends and reads until the schedule is done and every answer is in
// (or timed out), or the run is cancelled.
func (e *epollEngine) loop() {
	for {
		now := e.dispatch(time.Now())
		if e.cancelled || e.fatal != nil || (e.stopped && e.inflight == 0) {
			return
		}
		msec := e.arm(now)
		if msec != 0 {
			e.maybeYield(now)
		}
		e.poll(msec)
		if e.inflight > 0 {
			if now := time.Now(); !now.Before(e.nextCheck) {
				e.checkTimeouts(now)
			}
		}
	}
}

// maybeYield passes through the scheduler if it is time to (see
// epollYieldEvery).
func (e *epollEngine) maybeYield(now time.Time) {
	since := now.Sub(e.lastYield)
	if since < epollYieldEvery {
		return
	}
	sendNear := !e.stopped && e.freeLen > 0 && e.s.due(e.next).Sub(now) < epollYieldRoom
	if since < 2*epollYieldEvery && (e.inflight > 0 || sendNear) {
		return
	}
	runtime.Gosched()
	e.lastYield = time.Now()
}

// poll waits up to msec (-1: until an event) and handles what is ready.
func (e *epollEngine) poll(msec int) {
	e.blocking = msec != 0
	n, err := unix.EpollWait(e.epfd, e.events, msec)
	if err != nil {
		if err != unix.EINTR {
			e.fatal = fmt.Errorf("-engine epoll: epoll_wait: %w", err)
		}
		return
	}
	for _, ev := range e.events[:n] {
		e.handle(ev)
	}
}

// dispatch sends every request that is due while a connection is free;
// it returns a fresh clock reading.
func (e *epollEngine) dispatch(now time.Time) time.Time {
	for !e.stopped && !e.cancelled {
		if e.next >= e.s.total {
			e.stopped = true
			break
		}
		due := e.s.due(e.next)
		if now.Before(due) || e.freeLen == 0 {
			break
		}
		if now.After(e.s.sendBy) {
			e.stopped = true // the rest count as unsent
			break
		}
		e.send(e.popFree(), e.next, due)
		e.next++
		now = time.Now()
	}
	return now
}

// arm sets the timer for the next thing the loop must do on its own: the
// next send (early by the learned lateness), or the next timeout check.
// It returns epoll_wait's timeout: 0 to poll (the send is closer than the
// timer could wake), -1 to sleep until an event.
func (e *epollEngine) arm(now time.Time) int {
	var target time.Time
	send := false
	if !e.stopped && e.freeLen > 0 {
		due := e.s.due(e.next)
		lead := min(e.late+epollSpinMargin, epollMaxLead)
		if due.Sub(now) <= lead {
			// Build the request now, in the lead before its due time: right
			// after a write the loop goes back to epoll_wait at once, as
			// wrk does (work there would change when this thread sleeps
			// and so how the kernel places the server's wake-up).
			if e.staged != e.next {
				e.build(e.next, due)
			}
			return 0
		}
		target, send = due.Add(-lead), true
	}
	if e.inflight > 0 && (target.IsZero() || e.nextCheck.Before(target)) {
		target, send = e.nextCheck, false
	}
	if target.IsZero() {
		return -1
	}
	if !target.Equal(e.armed) {
		mono := e.monoBase + int64(target.Sub(e.timeBase))
		spec := unix.ItimerSpec{Value: unix.NsecToTimespec(max(mono, 1))}
		if err := unix.TimerfdSettime(e.tfd, unix.TFD_TIMER_ABSTIME, &spec, nil); err != nil {
			e.fatal = fmt.Errorf("-engine epoll: timerfd_settime: %w", err)
			return 0
		}
		e.armed = target
	}
	e.armedSend = send
	return -1
}

// handle serves one epoll event.
func (e *epollEngine) handle(ev unix.EpollEvent) {
	switch ev.Fd {
	case tokTimer:
		if e.armed.IsZero() {
			return
		}
		if e.armedSend && e.blocking {
			late := min(max(time.Since(e.armed), 0), maxEarly)
			e.late += (late - e.late) / 16
		}
		e.armed = time.Time{}
		return
	case tokCancel:
		e.cancelled = true
		return
	}
	c := &e.conns[ev.Fd]
	if c.gen != ev.Pad || c.fd < 0 {
		return // for a connection since closed
	}
	switch c.state {
	case ecConnecting:
		e.connected(c, ev.Events)
	case ecIdle:
		// Nothing is due on an idle connection: the server closed it (its
		// keep-alive timeout) or sent something unasked (a 408 before
		// closing). Either way it cannot carry a request.
		e.closeConn(c)
	case ecWriting:
		if ev.Events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
			e.readable(c) // an answer before the request is whole, or an error
		}
		if c.busy && c.state == ecWriting && ev.Events&unix.EPOLLOUT != 0 {
			e.write(c)
		}
	case ecReading:
		e.readable(c)
	}
}

// build prepares request i (due at due) into the stage buffer: the go
// engine's prepare, then its signer, at the due time or now if that is
// later (the go engine signs at the send), then the header block and the
// body in one buffer.
func (e *epollEngine) build(i int64, due time.Time) {
	w := e.w
	pb := w.prepare()
	at := time.Now()
	if at.Before(due) {
		at = due
	}
	w.signer.Sign(w.hdr, w.body, at, w.token[:], pb)
	e.stage = w.hdr.AppendBytes(e.stage[:0])
	e.stageHdr = len(e.stage)
	e.stage = append(e.stage, w.body...)
	e.staged = i
}

// send assigns request i to the free slot and starts it.
func (e *epollEngine) send(slot int32, i int64, due time.Time) {
	if e.staged != i {
		e.build(i, due)
	}
	c := &e.conns[slot]
	c.out, e.stage = e.stage, c.out[:0]
	c.hdrLen, e.staged = e.stageHdr, -1
	c.busy, c.measured = true, i >= e.s.warm
	if c.measured {
		e.measuredSent++
	}
	e.inflight++
	c.written, c.in, c.writeErr = 0, c.in[:0], nil
	c.p.reset()
	c.due = due
	c.sent = time.Now() // just before the request goes out, as wrk takes it
	c.deadline = c.sent.Add(e.cfg.Timeout)
	if c.deadline.Before(e.nextCheck) || e.inflight == 1 {
		e.nextCheck = c.deadline
	}
	if c.state == ecClosed {
		if err := e.dial(c); err != nil {
			e.fail(c, err)
			return
		}
	}
	if c.state == ecIdle {
		e.write(c)
	}
	// ecConnecting: connected writes it.
}

// dial opens a non-blocking connection in the slot.
func (e *epollEngine) dial(c *econn) error {
	fd, err := unix.Socket(e.family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	state, mask := ecIdle, uint32(unix.EPOLLIN|unix.EPOLLRDHUP)
	switch err := unix.Connect(fd, e.sa); err {
	case nil:
	case unix.EINPROGRESS:
		state, mask = ecConnecting, mask|unix.EPOLLOUT
	default:
		_ = unix.Close(fd)
		return err
	}
	c.gen++
	if err := unix.EpollCtl(e.epfd, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: mask, Fd: c.slot, Pad: c.gen}); err != nil {
		_ = unix.Close(fd)
		return err
	}
	c.fd, c.state, c.mask = fd, state, mask
	return nil
}

// connected completes a non-blocking connect.
func (e *epollEngine) connected(c *econn, events uint32) {
	soErr, err := unix.GetsockoptInt(c.fd, unix.SOL_SOCKET, unix.SO_ERROR)
	if err == nil && soErr != 0 {
		err = unix.Errno(soErr)
	}
	if err == nil && events&unix.EPOLLOUT == 0 {
		return // not yet
	}
	if err != nil {
		if c.busy {
			e.fail(c, err)
		} else {
			e.closeConn(c)
		}
		return
	}
	c.state = ecIdle
	if c.busy {
		e.write(c)
		return
	}
	e.want(c, unix.EPOLLIN|unix.EPOLLRDHUP)
}

// write writes what remains of the request; if the socket is full it
// waits for EPOLLOUT.
func (e *epollEngine) write(c *econn) {
	for c.written < len(c.out) {
		n, err := unix.Write(c.fd, c.out[c.written:])
		switch err {
		case nil:
			c.written += n
			continue
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			c.state = ecWriting
			e.want(c, unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLOUT)
			return
		}
		// A server may answer before reading the whole body (a 413 by
		// Content-Length) and close: the write fails, the answer is there.
		c.writeErr = err
		c.state = ecReading
		e.readable(c)
		return
	}
	c.state = ecReading
	e.want(c, unix.EPOLLIN|unix.EPOLLRDHUP)
}

// readable reads what the socket holds and ends the request when its
// answer is whole, or when the connection failed.
func (e *epollEngine) readable(c *econn) {
	for {
		if len(c.in) == cap(c.in) {
			c.in = slices.Grow(c.in, cap(c.in)) // an answer larger than any before
		}
		n, err := unix.Read(c.fd, c.in[len(c.in):cap(c.in)])
		switch err {
		case nil:
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			if c.writeErr != nil {
				e.fail(c, c.writeErr) // no answer came before the failed write
			}
			return
		default:
			if c.writeErr != nil {
				err = c.writeErr
			}
			e.fail(c, err)
			return
		}
		full := len(c.in)+n == cap(c.in)
		c.in = c.in[:len(c.in)+n]
		end, done, perr := c.p.parse(c.in, n == 0)
		switch {
		case perr != nil:
			if c.writeErr != nil {
				perr = c.writeErr
			}
			e.fail(c, perr)
			return
		case done:
			e.answered(c, end, n == 0)
			return
		case !full && c.writeErr == nil:
			return // the rest comes with a later event
		}
	}
}

// answered records the answer of the slot's request and frees the slot.
func (e *epollEngine) answered(c *econn, end int, eof bool) {
	done := time.Now()
	if c.measured {
		lag, origin := max(c.sent.Sub(c.due), 0), c.sent
		if lag > 0 {
			origin = c.due
		}
		status := c.p.status
		e.rec.answer(status, done.Sub(origin), lag, done.Sub(c.sent), done)
		if status == 201 && e.rn.acked != nil {
			if id, ok := answerID(c.p.body); ok {
				sum := sha256.Sum256(c.out[c.hdrLen:])
				e.rn.acked.add(id, &sum)
			} else {
				e.rec.missingID()
			}
		}
	}
	// The connection ends with the answer when the server says so, when it
	// closed, when the request could not be written whole, or when bytes
	// nobody asked for follow the answer.
	keep := !c.p.close && !eof && c.writeErr == nil && c.state == ecReading && end == len(c.in)
	e.release(c)
	if !keep {
		e.closeConn(c)
		return
	}
	c.state, c.in = ecIdle, c.in[:0]
	e.want(c, unix.EPOLLIN|unix.EPOLLRDHUP)
}

// fail ends the slot's request with a transport error and closes the
// connection; the next request on the slot dials again.
func (e *epollEngine) fail(c *econn, err error) {
	done := time.Now()
	e.rn.countError(err)
	if c.measured {
		e.rec.failure(classify(err), done)
	}
	e.release(c)
	e.closeConn(c)
}

// checkTimeouts fails the requests whose time is up and notes when the
// next one could be.
func (e *epollEngine) checkTimeouts(now time.Time) {
	next := now.Add(e.cfg.Timeout)
	for i := range e.conns {
		c := &e.conns[i]
		switch {
		case !c.busy:
		case !now.Before(c.deadline):
			e.fail(c, e.timeout)
		case c.deadline.Before(next):
			next = c.deadline
		}
	}
	e.nextCheck = next
}

// want sets the events registered for the connection.
func (e *epollEngine) want(c *econn, mask uint32) {
	if c.mask == mask {
		return
	}
	if err := unix.EpollCtl(e.epfd, unix.EPOLL_CTL_MOD, c.fd, &unix.EpollEvent{Events: mask, Fd: c.slot, Pad: c.gen}); err != nil {
		e.fatal = fmt.Errorf("-engine epoll: epoll_ctl: %w", err)
		return
	}
	c.mask = mask
}

func (e *epollEngine) closeConn(c *econn) {
	if c.fd >= 0 {
		_ = unix.Close(c.fd) // also leaves the epoll set
	}
	c.fd, c.state, c.mask = -1, ecClosed, 0
}

// release marks the slot's request done and the slot free.
func (e *epollEngine) release(c *econn) {
	c.busy = false
	e.inflight--
	e.pushFree(c.slot)
}

func (e *epollEngine) pushFree(slot int32) {
	e.free[(e.freeHead+e.freeLen)%len(e.free)] = slot
	e.freeLen++
}

func (e *epollEngine) popFree() int32 {
	slot := e.free[e.freeHead]
	e.freeHead = (e.freeHead + 1) % len(e.free)
	e.freeLen--
	return slot
}
