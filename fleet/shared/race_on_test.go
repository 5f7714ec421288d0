//go:build race

package shared_test

// raceEnabled: the race detector slows the hub servers several times over.
const raceEnabled = true
