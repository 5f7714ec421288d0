package gateway_test

import "testing"

// modelCases are the shortest step sequences TestModel found (shrunk with
// -model.shrink) for each bug of issue 23 it catches, run as they stand on
// every test run: fast, deterministic regressions of each invariant.
var modelCases = []struct {
	bug     string // the invariant (knownBug key) the sequence violated when found
	variant string // safe or nosafe (see runVariant)
	steps   string
}{
	{"unrecorded-actuation", "safe", "start_heat_boost, do_cancel_heat_boost(job #0)"},
	{"write-storm", "safe", "do_set_fan(true), advance(2m0s), disk_full, advance(4m0s)"},
	{"renewal-disarms", "safe", "do_set_fan(true), renew_fan_in_revert, advance(11m0s)"},
	{"two-jobs", "safe", "start_heat_boost, advance(2m0s), start_heat_boost, do_cancel_heat_boost(job #0), advance(1m0s), do_cancel_heat_boost(job #0)"},
	{"job-hold-do", "safe", "start_heat_boost, advance(2m0s), do_set_heater(true)"},
	{"deadman-blocked", "safe", "do_set_heater(true), advance(2m0s), do_set_heater(true), advance(2m0s), start_heat_boost, advance(4m0s), crash_restart, advance(11m0s)"},
	// Found by the model on path's code: after a restart the dead-man's
	// generations started again, a new arming's revert reused an earlier
	// revert's idempotency key, was answered "replayed" and wrote nothing.
	{"deadman-bound", "safe", "start_heat_boost, do_set_fan(true), renew_heater_in_revert, crash_restart, start_heat_boost, do_set_fan(true), advance(6m0s)"},
	// Found by the model on path's code: a compensation that failed (the
	// process dying, a bus fault) kept its failed outcome under its key
	// (JOB/undo-N); the compensation at restart, with the same key, was
	// answered from it and never wrote: the heater stayed on.
	{"compensation", "safe", "start_heat_boost, crash_restart"},
	// A safe move made while the disk was full is forgotten by a crash
	// (documented); the rate limit after the restart does not count it.
	{"history-fail-open", "safe", "disk_full, do_set_heater(false), disk_ok, do_set_heater(false), do_set_heater(false), do_set_heater(false), do_set_fan(true), crash_restart, renew_fan_in_revert, start_heat_boost"},
	{"history-fail-open", "safe", "start_heat_boost, disk_full, advance(11m0s), crash_restart, advance(1m0s), do_set_heater(false)"},
}

// TestModelCases runs modelCases. A violation that is not a known bug
// fails, as in TestModel. A case whose bug is still listed in knownBug but
// no longer occurs fails too: its fix is merged, and the entry must go so
// that TestModel fails if the bug comes back.
func TestModelCases(t *testing.T) {
	for _, tc := range modelCases {
		t.Run(tc.bug, func(t *testing.T) {
			steps, err := parseSteps(tc.steps)
			if err != nil {
				t.Fatal(err)
			}
			m, pol := modelGateway(t, tc.variant)
			vs, _ := runModel(t, m, pol, tc.variant == "safe", steps)
			seen := false
			for _, v := range vs {
				if why, known := knownBug[v.Class]; known {
					seen = seen || v.Class == tc.bug
					t.Logf("known bug (%s): %s at step %d: %s", why, v.Class, v.Step, v.Msg)
					continue
				}
				t.Errorf("%s at step %d: %s\n  steps: %s", v.Class, v.Step, v.Msg, tc.steps)
			}
			if _, known := knownBug[tc.bug]; known && !seen {
				t.Errorf("knownBug[%q] is set but its case no longer violates it: the fix is in, remove the entry so that TestModel fails if it comes back\n  steps: %s", tc.bug, tc.steps)
			}
		})
	}
}
