package cli

import (
	"os"
	"runtime"

	"go.uber.org/zap"
)

// Go code runs on one more thread than the cores the process may use
// (runtime.GOMAXPROCS's default, which follows the CPU affinity and a
// cgroup's CPU limit), unless GOMAXPROCS is set in the environment.
//
// Why: every acknowledgement waits on the WAL's commit loop, which wakes
// the batch's handlers and goes straight back into writev and fdatasync
// with the P (the runtime's right to run Go code) it woke them on. With as
// many Ps as cores, those handlers wait for another P to steal them or for
// the runtime to take the P back from the blocked system call; the
// sealer's compression, its segment writes and the eraser's truncations
// hold Ps the same way. One more P than cores gives the woken handlers a
// free one. On two cores at half the maximum rate (bench/RESULTS.md,
// 2026-12-06) the handlers' wake-up p99 went from 5.9–8.4 ms to
// 2.9–4.3 ms and the open-loop p99 fell in 13 of 16 alternating runs,
// while the closed-loop maximum did not fall.

// procsEnv is the variable that, set, leaves GOMAXPROCS to the operator.
const procsEnv = "GOMAXPROCS"

// procsFor is the GOMAXPROCS the node runs with, given whether GOMAXPROCS
// is set in the environment and the runtime's default; ok is false when
// the node leaves it alone.
func procsFor(set bool, def int) (n int, ok bool) {
	if set {
		return 0, false
	}
	return def + 1, true
}

// setProcs applies procsFor to the running process and logs the result.
func setProcs(log *zap.Logger) {
	env, set := os.LookupEnv(procsEnv)
	def := runtime.GOMAXPROCS(0)
	n, ok := procsFor(set, def)
	if !ok {
		log.Info("GOMAXPROCS set in the environment: left as it is", zap.String("GOMAXPROCS", env), zap.Int("procs", def))
		return
	}
	runtime.GOMAXPROCS(n)
	log.Info("GOMAXPROCS: one more than the cores the node may use", zap.Int("cores", def), zap.Int("procs", n))
}
