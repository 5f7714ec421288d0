package main

// Scenarios play on the binary's simulated clock, which runs at a fixed
// scale of real time from the moment the binary starts: a phase of the
// scenario lasts phase/scale of real time however slowly the test polls,
// and the first fault comes a fixed time after the start however long
// connecting takes. So a test that must see every phase loses the race on
// a loaded machine if it picks the scale blind. It picks it from what it
// measures: how long this machine, now, takes to start the binary and
// connect, and to answer one round of the calls the test polls with; and
// it plays the scenario with every fault moved later by a lead that
// covers a connect several times slower than the one it measured.

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// scenarioPace is how a scenario test plays its scenario.
type scenarioPace struct {
	scale    float64       // simulated seconds per real second
	lead     time.Duration // simulated: how much later than the file says every fault comes
	deadline time.Time     // a generous bound: 4× the scenario's real length, plus a minute
}

// scenarioPhases are the simulated times a scenario test's polling must
// fit in.
type scenarioPhases struct {
	// shortest: the shortest phase the test must see; six rounds of polls
	// fit in it.
	shortest time.Duration
	// length: when the scenario is over and everything is good again.
	length time.Duration
}

// paceScenario measures, on a probe of the binary serving args (without
// the scenario), how long starting and connecting take and how long one
// round of poll takes (the slowest of three). It returns the largest
// scale up to fastest at which six rounds fit in ph.shortest, and a lead
// of five such connects (at least 5 s of real time) before the first
// fault.
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
	scale := min(fastest, ph.shortest.Seconds()/(6*round).Seconds())
	lead := time.Duration(float64(max(5*connect, 5*time.Second)) * scale).Round(time.Second)
	played := time.Duration(float64(ph.length+lead) / scale)
	t.Logf("start and connect %s, a round of polls %s: simulated time at %.1fx (at most %gx), faults %s later, the scenario plays for %s",
		connect.Round(time.Millisecond), round.Round(time.Millisecond), scale, fastest, lead, played.Round(time.Second))
	return scenarioPace{scale: scale, lead: lead, deadline: time.Now().Add(4*played + time.Minute)}
}

// timeScale is the scale as --time-scale takes it.
func (p scenarioPace) timeScale() string { return strconv.FormatFloat(p.scale, 'g', 4, 64) }

// faultAt is a fault's start in a scenario file: {at: 1m10s, ...}.
var faultAt = regexp.MustCompile(`\{at: ([0-9a-z.]+),`)

// scenario writes the scenario file at path with every fault p.lead later
// (nothing else changed) to a temporary directory, and returns its path.
func (p scenarioPace) scenario(t *testing.T, path string) string {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	moved := faultAt.ReplaceAllStringFunc(string(src), func(m string) string {
		at, err := time.ParseDuration(faultAt.FindStringSubmatch(m)[1])
		if err != nil {
			t.Fatalf("%s: %s: %v", path, m, err)
		}
		n++
		return fmt.Sprintf("{at: %s,", at+p.lead)
	})
	if n == 0 {
		t.Fatalf("%s: no fault written {at: …, …}", path)
	}
	out := filepath.Join(t.TempDir(), filepath.Base(path))
	if err := os.WriteFile(out, []byte(moved), 0o600); err != nil {
		t.Fatal(err)
	}
	return out
}
