//go:build race

package main

// raceEnabled: the test binary runs under the race detector, so the binary
// under test is built with it too (and pays its ~1 s exit cost).
const raceEnabled = true
