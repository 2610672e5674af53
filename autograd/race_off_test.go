//go:build !race

package autograd

const raceEnabled = false
