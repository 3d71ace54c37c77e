// Package crash is the appliance's crash harness under open-loop load
// (issue 3, acceptance point 5): it kills `ankusa serve` with SIGKILL
// repeatedly while tools/loadgen sends hooks on a fixed schedule, restarts
// it on the same data directory each time, and at the end proves from the
// WAL that every hook answered 201 is stored exactly once with the exact
// body that was sent.
//
// The proof rests on loadgen's -acked file: loadgen appends
//
//	<event id> <sha256 hex of the exact body sent>\n
//
// for every 201, and the harness reads every hook record back with
// wal.ReadDir and envelope.Decode, hashes its body and compares. Three
// figures must be zero: lost (acknowledged, not in the WAL), mismatched
// (in the WAL with another body) and duplicated (in the WAL more than once,
// or one id acknowledged twice).
//
// The package holds only the test; `go test ./...` (make test) runs 20
// kills in well under a minute. Run it longer by hand with its flags:
//
//	go test ./bench/crash -run TestKill9UnderOpenLoad -v -timeout 1h \
//	    -args -kills 500 -rate 6000 -conns 256
package crash
