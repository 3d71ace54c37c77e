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
// for every 201. The node's log is its sealed segments ("*.seg" in the
// segment directory) and the WAL files still on disk: a WAL file is deleted
// once every hook in it is sealed into a catalogued segment and at or below
// the dispatch checkpoint (DESIGN.md §6 item 3), so a hook is in a segment,
// in a WAL file, or in both while its WAL file is not deleted yet. After
// the last kill the harness proves it three ways:
//
//   - Through the running binary, as an operator would: the last boot
//     recovers from the last kill, seals what it holds by segment.max_age
//     once idle, and answers GET /v1/tenants/{tenant}/hooks/{id} on the
//     admin listener (a bearer token with scope tenant:*) for every
//     acknowledged id; the body, decoded per body_encoding, must hash to
//     what loadgen recorded. fetched must equal acknowledged; lost (404),
//     mismatched and errors must be zero. The -acked file does not name the
//     tenant a hook was sent to (loadgen draws it per request); the harness
//     takes it from the log, read while the node is down.
//   - From the log after a clean stop: every hook of every segment
//     (segment.OpenFile, ReadBlock, segment.Records, envelope.Decode) and
//     every WAL record (wal.ReadDir). Lost (acknowledged, in no segment and
//     no WAL file), mismatched (another body) and duplicated (one id at two
//     seqs, one seq twice in the segments or twice in the WAL, a seq whose
//     segment and WAL copies are not byte-identical, or one id acknowledged
//     twice) must be zero. Seqs are dense from 1 across segments and WAL
//     together, ids strictly increasing with seq; the WAL's hooks run
//     without a gap.
//   - From the segment and WAL directories after the clean stop: no
//     partial segment and nothing set aside; every segment opens, matches
//     its name, passes Verify and holds exactly the seqs it names; the
//     segments tile seqs 1..n with no gap or overlap, n being the log's
//     last seq (the idle last boot sealed everything). The WAL files on
//     disk are numbered consecutively (only a prefix may be gone), at
//     least one is left (the active file), and the first hook in them is
//     at most one past the last sealed seq: every hook of a deleted WAL
//     file is sealed. At least one WAL file must have been deleted over
//     the run, or these checks proved nothing; the report says how many.
//
// After the clean stop the idle last boot has sealed everything and its
// WAL holds no hook, so every log check above also runs on the log the
// last kill left, read before the last boot (the open segment aside, the
// WAL up to a torn tail): there the WAL files left still hold hooks, most
// of them sealed too. And the log after the clean stop must hold each hook
// of that one unchanged: the last boot's recovery, sealing and deletions
// lost nothing.
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
