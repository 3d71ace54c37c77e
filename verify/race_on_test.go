//go:build race

package verify_test

// raceEnabled: the race detector is on. It slows Go code (a header's
// parse) many times and assembly (the MAC) not at all, so cost
// comparisons between the two are wider under it.
const raceEnabled = true
