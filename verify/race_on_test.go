//go:build race

package verify_test

// raceEnabled: the race detector makes sync.Pool drop items at random and
// instruments memory, so allocation counts mean nothing under -race.
const raceEnabled = true
