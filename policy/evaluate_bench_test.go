package policy_test

import (
	"testing"
	"time"

	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/policy"
)

// BenchmarkEvaluate: one decision with every check that reads state
// (constraints, inputs, windows, interlocks, cooldown, rate limit over a
// history of 50 actuations), as do_* and can_do run it.
//
//	go test ./policy -run '^$' -bench Evaluate -benchmem
func BenchmarkEvaluate(b *testing.B) {
	amsterdam := zone(b, "Europe/Amsterdam")
	hist := make([]time.Time, 50)
	for i := range hist {
		hist[i] = now.Add(-time.Duration(i+1) * 10 * time.Minute)
	}
	req := policy.Request{Action: "do_set_fan_speed", Type: manifests.TypeNumber, Value: 40.0, HasValue: true,
		Constraints: manifests.Constraints{Min: f(0), Max: f(50), Step: f(0.1)}, Unit: "Hz",
		Current: good(30.0), CurrentRead: "read_fan_speed", Role: "operator", Now: now, Peers: 1,
		Inputs:   []policy.Input{{Name: "read_temperature", Reading: *good(21.5)}},
		Readings: map[string]policy.Reading{"read_vent": *good(false)},
		History:  hist,
		Rules: &manifests.ActionPolicy{Tool: "do_set_fan_speed", Roles: []string{"operator"},
			Cooldown: time.Minute, RateLimit: &manifests.RateLimit{Max: 100, Per: 24 * time.Hour},
			Windows: &manifests.Windows{Location: amsterdam, Deny: []manifests.Window{{
				Days: []time.Weekday{0, 1, 2, 3, 4, 5, 6}, From: 22 * time.Hour, To: 6 * time.Hour}}},
			Interlocks: []manifests.Interlock{{Read: "read_vent", Equals: true, Reason: "vent open"}}},
	}
	if d := (policy.Evaluator{}).Evaluate(req); !d.Allowed() {
		b.Fatalf("decision %+v, want allowed", d)
	}
	for b.Loop() {
		(policy.Evaluator{}).Evaluate(req)
	}
}
