// Package crash is the appliance's crash harness under open-loop load
// (issue 3, acceptance point 5, and the segment stage's crash acceptance):
// it kills `ankusa serve` with SIGKILL repeatedly while tools/loadgen sends
// hooks on a fixed schedule and the node seals small segments all the time,
// restarts it on the same data directory each time, and at the end proves
// that every hook answered 201 is stored exactly once with the exact body
// that was sent, and can be fetched back.
//
// The proof rests on loadgen's -acked file: loadgen appends
//
//	<event id> <sha256 hex of the exact body sent>\n
//
// for every 201. After the last kill the harness proves it three ways:
//
//   - Through the running binary, as an operator would: the last boot
//     recovers from the last kill, seals what it holds by segment.max_age
//     once idle, and answers GET /v1/tenants/{tenant}/hooks/{id} on the
//     admin listener (a bearer token with scope tenant:*) for every
//     acknowledged id; the body, decoded per body_encoding, must hash to
//     what loadgen recorded. fetched must equal acknowledged; lost (404),
//     mismatched and errors must be zero. The -acked file does not name the
//     tenant a hook was sent to (loadgen draws it per request); the harness
//     takes it from the WAL, read while the node is down.
//   - From the WAL after a clean stop: every hook record is read back with
//     wal.ReadDir and envelope.Decode; lost (acknowledged, not in the WAL),
//     mismatched (another body) and duplicated (in the WAL more than once,
//     or one id acknowledged twice) must be zero, seqs dense from 1.
//   - From the segment directory after the clean stop: no partial segment
//     and nothing set aside; every segment opens and passes Verify; the
//     segments tile seqs 1..n with no gap or overlap, n is the WAL's last
//     seq, and each record is the WAL's hook of its seq with its body. The
//     WAL's files are numbered 1..m without a gap: with no dispatch stage,
//     no WAL file may be deleted.
//
// Around each kill the harness samples the segment directory: whether a
// partial segment (the open one, being filled or being sealed) existed
// right before the SIGKILL, and how many partial segments the dead node
// left. The next boot must log the removal of exactly those ("removed a
// partial segment"); a kill between a segment's rename and its catalogue
// entry shows as "adopted a whole segment" at the next boot.
//
// The package holds only the test; `go test ./...` (make test) runs 20
// kills in under a minute. Run it longer by hand with its flags:
//
//	go test ./bench/crash -run TestKill9UnderOpenLoad -v -timeout 1h \
//	    -args -kills 500 -rate 6000 -conns 256
package crash
