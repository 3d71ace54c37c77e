// Command loadgen drives an HTTP webhook receiver (the appliance, bench/ceiling,
// bench/gcref) with realistic, optionally signed provider payloads, and reports
// throughput, answers and an HDR latency histogram.
//
//	loadgen -url 'http://127.0.0.1:8080/webhooks/{tenant}/{source}' -tenants 1000 -tenant-dist zipf \
//	        -rate 20000 -c 64 -d 10s -size 70%1KiB,25%8KiB,5%64KiB -kind mixed -sign stripe -secret whsec_x
//
// # Modes
//
// Closed loop (-rate 0, the default): -c workers each keep one request in
// flight on their own connection and send the next as soon as the answer
// arrives. Throughput is whatever the server and the client's CPU allow;
// latency counts from the send. A server that stalls holds every worker, so
// a stall shows in only -c samples (coordinated omission).
//
// Open loop (-rate R): request i is due at start + i/R, whatever happened
// before. With the default engine (see Engines), a pool of -c workers (one
// connection each) claims requests in schedule order; a free worker waits
// for its request's due time and sends it. When every worker is busy a
// due request waits for one, and its latency still counts from its due
// time, so a stall of S seconds shows as about R*S late answers, not -c.
// Workers wait on a timerfd (Linux), not the Go runtime's
// millisecond-grained timers, and learn how late that timer wakes them: a
// request may go out up to that lateness early (tens of µs) rather than
// late, and then counts from its actual send. The human table also shows
// the send lag (actual send minus due time: when it grows, the client, not
// the server, fell behind) and the latency from the actual send (what a
// closed-loop client such as wrk reports).
//
// # Connections
//
// Each worker owns one keep-alive connection to the host:port of the URL's
// first expansion (a {tenant} in the host name varies the Host header
// only). It writes each request with one writev and reads the answer with
// fasthttp's response parser; there is no shared pool and nothing is ever
// resent. A transport error or a "Connection: close" answer closes the
// connection, and the next request dials a new one; an answer that arrives
// although the request could not be written whole (a 413 sent before the
// body was read) still counts as the answer. A connection idle for more
// than 10 ms is checked (a non-blocking peek) before it carries the next
// request, so a server's keep-alive timeout does not cost a request. At
// start loadgen connects once, and for https completes a TLS handshake,
// so that a target that is down or a certificate it does not trust stops
// the run with the reason (SSL_CERT_FILE adds trusted certificates).
//
// With -spin D a worker polls its socket for the answer for up to D before
// parking: at low rates the Go runtime's wake-up of a parked reader costs
// tens of µs that the figures would charge to the server; spinning removes
// it at the cost of a busy core (see bench/RESULTS.md).
//
// # Engines
//
// What the sections above describe is the default engine, -engine go: a
// goroutine per connection, parked in the Go runtime's network poller
// while it waits. Between the kernel and the figures that puts the
// runtime's wake-ups (the poller, a thread woken for the goroutine), which
// at low rates cost tens of µs to milliseconds that a client such as wrk
// does not pay.
//
// -engine epoll (Linux; open loop only, so it needs -rate; plain http)
// works the way wrk does: one event loop, one epoll set over -c
// non-blocking TCP sockets (TCP_NODELAY), opened before the schedule
// starts. Its goroutine sleeps in epoll_wait itself, woken by the
// sockets, by a timerfd armed at an absolute CLOCK_MONOTONIC deadline a
// little before the next due send (it learns how late the timer wakes it,
// and polls the rest of the way, at most 50 µs), or by the run's
// cancellation. The schedule, the request bytes (payload, URL, headers,
// signature), the latency from the due time, the send lag, the latency
// from the actual send, the answers, -acked, the errors and the output
// are the go engine's. At its due time a request goes out, in one write,
// on the free connection that has waited longest; if none is free it
// waits for one, its latency still counting from its due time. Answers
// are read with read(2) and parsed by a minimal HTTP/1.1 parser (status
// line, Content-Length or chunked bodies, Connection: close, HTTP/1.0;
// interim 1xx answers skipped); an answer that ends its connection, an
// idle connection the server closed, and a transport error close the
// connection, and the next request on it dials again. -timeout applies
// per request, from its send. The loop allocates nothing per request, so
// the garbage collector stays out of it, and it passes through the Go
// scheduler of its own accord every 4 ms at a quiet moment: otherwise the
// runtime preempts it every 10 ms and then keeps waking (see
// epoll_linux.go and bench/RESULTS.md for the measurements behind this).
//
// # Window
//
// The first -warmup of the run is sent but excluded from every figure and
// from -acked. The measured window is then -d long (closed loop: requests
// started in it; open loop: requests scheduled in it), or -n requests.
// duration_s runs from the window's start to the last measured answer. In
// open loop, requests scheduled in the window that no worker could send
// within a second after it ended count as errors of kind "unsent".
//
// # Payloads
//
// At start loadgen generates (package payload) a pool of provider-like
// JSON bodies per size class (Stripe-like events, GitHub-like events, or
// both alternately), each exactly the class's size: varied event types,
// ids, timestamps, nested objects, and a list that grows with the size.
// Each request copies one and writes a 16-character token unique to the
// request into a fixed slot of it (the Stripe event id, the GitHub
// node_id), so no two requests send the same body. -sign adds the
// provider's signature headers (payload.Signer), computed at send time.
//
// # Acked log
//
// -acked FILE appends, for every 201 answer to a measured request, one line:
//
//	<event id from the answer's {"id": ...}> SP <sha256 of the body sent, 64 lowercase hex> LF
//
// e.g. "evt_01HZX 9f86d0...0a08\n". The file is opened O_APPEND (created if
// missing) before the first request; lines reach the OS every 100 ms and
// are flushed and fsynced at exit, so a harness that kills the server
// mid-run reads what was acknowledged so far.
//
// # Sent log
//
// -sent FILE (open loop, the go engine) writes, for every measured
// request, answered or not, one line:
//
//	<sha256 of the body sent, 64 lowercase hex> SP <due time> SP <end time> SP <status> LF
//
// the due time being the request's scheduled send time and the end time
// when its answer was read (or its transport error met), both in unix
// nanoseconds of the wall clock, and status the answer's code, 0 when
// there was none. The file is created or truncated before the first
// request and written whole at exit. A receiver behind the server that
// hashes the bodies it gets can join them to these lines: the scheduled
// send time of every hook it received, and which 201s it never received
// (bench/dispatch measures delivery latency this way).
//
// # Output and exit codes
//
// A human table on stdout, or with -json one JSON object (result.Summary):
//
//	{"mode":"open","connections":64,"rate":20000,"duration_s":10.001,
//	 "requests":200000,"throughput_rps":19998.1,
//	 "latency_us":{"p50":210,"p90":380,"p99":1020,"p999":2400,"max":5100,"mean":251.3},
//	 "status":{"201":200000},"errors":0,
//	 "error_kinds":{"closed":0,"other":0,"refused":0,"reset":0,"timeout":0,"unsent":0}}
//
// In open loop the object also holds send_lag_us (actual send minus due
// time) and from_send_us (latency from the actual send), in the form of
// latency_us.
//
// requests counts every measured request (answered or not); throughput_rps
// is answered requests (any status) per second of duration_s; latency covers
// answered requests, in microseconds (HDR histogram, 1 µs to 60 s, 3
// significant digits; max is exact); errors counts transport errors (no
// HTTP answer), by kind in error_kinds. Exit code 0 when the run completed
// whatever the statuses, 2 for bad flags, 1 for a fatal problem (nothing
// accepts connections at start, -acked or -sent cannot be written, -max-errors
// reached: it counts warm-up errors too), 130/143 when interrupted by
// SIGINT/SIGTERM (the summary is still printed and -acked flushed).
//
// loadgen is a client of the appliance, not part of it: it imports only
// its own packages (tools/loadgen/payload, tools/loadgen/result), and no
// package of the product imports it.
package main
