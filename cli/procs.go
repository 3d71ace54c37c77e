package cli

import (
	"os"
	"runtime"
	"strconv"

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

// procsEnv is the variable that, set to a positive number, leaves
// GOMAXPROCS to the operator.
const procsEnv = "GOMAXPROCS"

// procsFor is the GOMAXPROCS the node runs with, given GOMAXPROCS from the
// environment ("" when unset) and the runtime's default. keep: the
// environment's value stands. ignored: the environment holds something
// the Go runtime does not take (anything but a positive number), so it
// ran with its default, and the node adds its one.
func procsFor(env string, def int) (n int, keep, ignored bool) {
	if env == "" {
		return def + 1, false, false
	}
	if v, err := strconv.Atoi(env); err == nil && v > 0 {
		return v, true, false
	}
	return def + 1, false, true
}

// setProcs applies procsFor to the running process and logs the result.
func setProcs(log *zap.Logger) {
	env := os.Getenv(procsEnv)
	def := runtime.GOMAXPROCS(0)
	n, keep, ignored := procsFor(env, def)
	if keep {
		log.Info("GOMAXPROCS set in the environment: left as it is", zap.String("GOMAXPROCS", env), zap.Int("procs", def))
		return
	}
	if ignored {
		log.Warn("GOMAXPROCS in the environment is not a positive number: the Go runtime ignored it", zap.String("GOMAXPROCS", env))
	}
	runtime.GOMAXPROCS(n)
	log.Info("GOMAXPROCS: one more than the cores the node may use", zap.Int("cores", def), zap.Int("procs", n))
}
