//go:build race

package segment_test

// raceEnabled: the race detector is on; big tests scale down.
const raceEnabled = true
