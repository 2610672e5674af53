//go:build race

package autograd

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// allocation-count assertions are skipped.
const raceEnabled = true
