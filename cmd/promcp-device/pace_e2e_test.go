package main

// Scenarios play on the binary's simulated clock, which runs at a fixed
// scale of real time from the moment the binary starts: a phase of the
// scenario lasts phase/scale of real time however slowly the test polls,
// so a test that must see every phase loses the race on a loaded machine
// if it picks the scale blind. It picks it from what it measures: how long
// this machine, now, takes to start the binary and to answer one round of
// the calls the test polls with.

import (
	"strconv"
	"testing"
	"time"
)

// scenarioPace is the simulated time scale a scenario test plays its
// scenario at, and by when the scenario has surely played.
type scenarioPace struct {
	scale    float64   // simulated seconds per real second
	deadline time.Time // a generous bound: 4× the scenario's real length, plus a minute
}

// scenarioPhases are the simulated times a scenario test's polling must
// fit in.
type scenarioPhases struct {
	// first: by when the first phase the test must see has ended; the
	// binary starts, the client connects and six rounds of polls run
	// before it, twice over.
	first time.Duration
	// shortest: the shortest phase the test must see; six rounds of polls
	// fit in it.
	shortest time.Duration
	// length: when the scenario is over and everything is good again.
	length time.Duration
}

// paceScenario measures, on a probe of the binary serving args (without
// the scenario), how long starting and connecting take and how long one
// round of poll takes (the slowest of three), and returns the largest
// scale up to fastest at which the polling fits in ph as its fields say.
func paceScenario(t *testing.T, protocol string, args []string, fastest float64, ph scenarioPhases, poll func(*session)) scenarioPace {
	t.Helper()
	start := time.Now()
	probe := stdioSession(t, protocol, args...)
	connect := time.Since(start)
	var round time.Duration
	for range 3 {
		start := time.Now()
		poll(probe)
		round = max(round, time.Since(start))
	}
	probe.c.Close()
	scale := min(fastest,
		ph.first.Seconds()/(2*(connect+6*round)).Seconds(),
		ph.shortest.Seconds()/(6*round).Seconds())
	played := time.Duration(float64(ph.length) / scale)
	t.Logf("start and connect %s, a round of polls %s: simulated time at %.1fx (at most %gx), the scenario plays for %s",
		connect.Round(time.Millisecond), round.Round(time.Millisecond), scale, fastest, played.Round(time.Second))
	return scenarioPace{scale: scale, deadline: time.Now().Add(4*played + time.Minute)}
}

// timeScale is the scale as --time-scale takes it.
func (p scenarioPace) timeScale() string { return strconv.FormatFloat(p.scale, 'g', 4, 64) }
