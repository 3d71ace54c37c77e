//go:build race

package filter

// raceEnabled: the race detector is on; it makes CEL's evaluation several
// times slower, so time bounds are wider under it.
const raceEnabled = true
