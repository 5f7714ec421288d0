package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

const (
	irrigation       = "../../manifests/examples/irrigation.yml"
	irrigationFaults = "../../manifests/examples/irrigation-faults.yml"
)

// irrigationAt starts irrigation.yml on the simulator over stdio, its
// clock starting at hh:mm on a summer day in the policy's zone
// (Europe/Amsterdam, UTC+2 in July), as a gardener.
func irrigationAt(t *testing.T, hhmm string, args ...string) *session {
	t.Helper()
	return stdioSession(t, protocols[1], append([]string{"--manifest", irrigation, "--role", "gardener",
		"--sim-start", "2026-07-01T" + hhmm + ":00+02:00"}, args...)...)
}

// readUntil polls a read_* tool (max_age_ms 0: a fresh bus read) until ok
// accepts its body, or fails after 30 s of real time.
func readUntil(t *testing.T, s *session, tool, what string, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	return readBy(t, s, time.Now().Add(30*time.Second), tool, what, ok)
}

// readBy is readUntil failing at deadline.
func readBy(t *testing.T, s *session, deadline time.Time, tool, what string, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	for {
		body, _ := s.call(tool, map[string]any{"max_age_ms": 0})
		if ok(body) {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never %s: last %v", tool, what, body)
		}
		time.Sleep(50 * time.Millisecond) // the simulator's clock and the broker move on
	}
}

func quality(q string) func(map[string]any) bool {
	return func(b map[string]any) bool { return b["quality"] == q }
}

func near(v any, want, tol float64) bool {
	f, ok := v.(float64)
	return ok && math.Abs(f-want) <= tol
}

// TestIrrigationLint: the example and its policy and scenario lint clean,
// with groups within the spec's limits (the live --strict lint of every
// group is TestGroupsLintStrictLive).
func TestIrrigationLint(t *testing.T) {
	out, stderr, code := runCLI(t, "lint", irrigation, "../../manifests/examples/irrigation.policy.yml", irrigationFaults)
	for _, want := range []string{
		"irrigation.yml: ok: gateway irrigation, 5 buses, 8 devices, 21 tools (16 read_*, 4 do_*, can_do)",
		"ok: group valves: 6 tools (3 read_*, 2 do_*, can_do)",
		"ok: group bed1: 7 tools (3 read_*, 3 do_*, can_do) with the jobs irrigate_bed1 at /mcp/bed1",
		"note: job water_bed2 is served at /mcp only: no group holds all of valve_main, valve_bed2, pump",
		"ok: group pump: 8 tools (5 read_*, 2 do_*, can_do)",
		"irrigation.policy.yml: ok: policy for 4 actions",
		"irrigation-faults.yml: ok: scenario irrigation_faults, 5 faults",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("lint: missing %q", want)
		}
	}
	if code != 0 || strings.Contains(out, "warning") {
		t.Fatalf("lint irrigation: exit %d\n%s\n%s", code, out, stderr)
	}
}

// TestIrrigationServedOnSim: serve --sim serves every read_* of the site
// good with the values the manifest simulates; a valve and the pump
// actuate and read back; the interlock refuses the pump while the main
// valve is closed but always lets it stop; the valves' cooldown holds a
// second opening but not a closing; above 80 % a human approves.
func TestIrrigationServedOnSim(t *testing.T) {
	s := irrigationAt(t, "07:00")
	want := map[string]func(any) bool{
		"read_bed1_moisture":     func(v any) bool { return near(v, 34, 0.1) },
		"read_bed2_moisture":     func(v any) bool { return near(v, 41, 0.1) },
		"read_soil_temperature":  func(v any) bool { return near(v, 17, 1) },
		"read_air_temperature":   func(v any) bool { return near(v, 24, 1) },
		"read_valve_main":        func(v any) bool { return v == false },
		"read_valve_bed1":        func(v any) bool { return v == false },
		"read_valve_bed2":        func(v any) bool { return v == false },
		"read_tank_full":         func(v any) bool { return v == true },
		"read_pump":              func(v any) bool { return near(v, 0, 0) },
		"read_flow_rate":         func(v any) bool { f, ok := v.(float64); return ok && f >= 0 && f <= 4.1 }, // 4 L/min, less in the first minute,
		"read_water_used":        func(v any) bool { f, ok := v.(float64); return ok && f >= 0 },
		"read_pump_voltage":      func(v any) bool { return near(v, 12.2, 0.01) },
		"read_pump_current":      func(v any) bool { return near(v, 1.6, 0.01) },
		"read_pump_power":        func(v any) bool { return near(v, 12.2*1.6, 0.1) },
		"read_shed_door_closed":  func(v any) bool { return v == true },
		"read_shed_door_battery": func(v any) bool { return near(v, 92, 0) },
	}
	var reads int
	for _, tool := range s.tools {
		if strings.HasPrefix(tool.Name, "read_") && !strings.HasPrefix(tool.Name, "read_status_") { // a job's status: TestJob*
			reads++
			ok, known := want[tool.Name]
			if !known {
				t.Errorf("%s served, not expected", tool.Name)
				continue
			}
			// The door's first message travels through the broker.
			body := readUntil(t, s, tool.Name, "good", quality("good"))
			if !ok(body["value"]) {
				t.Errorf("%s = %v, value not the simulated one", tool.Name, body)
			}
		}
	}
	if reads != len(want) {
		t.Errorf("%d read_* served, want %d", reads, len(want))
	}
	// The pump against the closed main valve: refused; stopping it is not.
	r, isErr := s.call("do_set_pump", map[string]any{"value": 40})
	if !isErr || r["status"] != "failed" || !strings.Contains(fmt.Sprint(r["reason"]), "no pump without the main valve open") {
		t.Fatalf("do_set_pump(40) with the main valve closed = %v, want refused by the interlock", r)
	}
	if r, _ := s.call("do_set_pump", map[string]any{"value": 0}); r["status"] != "success" {
		t.Fatalf("do_set_pump(0) with the main valve closed = %v, want success (stopping is always allowed)", r)
	}
	for _, valve := range []string{"do_set_valve_main", "do_set_valve_bed1"} {
		if r, _ := s.call(valve, map[string]any{"value": true}); r["status"] != "success" || r["applied_value"] != true {
			t.Fatalf("%s(true) = %v, want success, read back true", valve, r)
		}
	}
	if r, _ := s.call("read_valve_main", map[string]any{"max_age_ms": 0}); r["value"] != true || r["quality"] != "good" {
		t.Fatalf("read_valve_main after opening = %v, want good true", r)
	}
	r, _ = s.call("do_set_pump", map[string]any{"value": 60})
	if r["status"] != "success" || r["applied_value"] != 60.0 {
		t.Fatalf("do_set_pump(60) with the main valve open = %v, want success, read back 60", r)
	}
	if r, _ := s.call("read_pump", map[string]any{"max_age_ms": 0}); r["value"] != 60.0 {
		t.Fatalf("read_pump = %v, want 60", r)
	}
	// Above 80 %: a human approves.
	if r, _ := s.call("do_set_pump", map[string]any{"value": 90}); r["status"] != "failed" || r["permission"] != "requires_human_approval" {
		t.Fatalf("do_set_pump(90) = %v, want requires_human_approval", r)
	}
	// The valve just opened: a second change within a minute is held back,
	// closing it (its safe value) is not.
	if r, _ := s.call("do_set_valve_bed1", map[string]any{"value": false}); r["status"] != "success" {
		t.Fatalf("do_set_valve_bed1(false) within the cooldown = %v, want success (closing is the safe value)", r)
	}
	if r, _ := s.call("do_set_valve_bed1", map[string]any{"value": true}); r["status"] != "failed" || r["permission"] != "cooldown_active" {
		t.Fatalf("do_set_valve_bed1(true) again within a minute = %v, want cooldown_active", r)
	}
	if r, _ := s.call("do_set_pump", map[string]any{"value": 0}); r["status"] != "success" {
		t.Fatalf("do_set_pump(0) = %v, want success", r)
	}
	// A viewer reads but does not water.
	v := stdioSession(t, protocols[1], "--manifest", irrigation, "--role", "viewer")
	if r, _ := v.call("do_set_valve_main", map[string]any{"value": true}); r["status"] != "failed" || r["permission"] != "permission_insufficient" {
		t.Fatalf("do_set_valve_main as viewer = %v, want permission_insufficient", r)
	}
}

// TestIrrigationWindow: from 11:00 to 16:00 the pump may not start, even
// with the main valve open; stopping it stays allowed.
func TestIrrigationWindow(t *testing.T) {
	s := irrigationAt(t, "13:00")
	if r, _ := s.call("do_set_valve_main", map[string]any{"value": true}); r["status"] != "success" {
		t.Fatalf("do_set_valve_main(true) at 13:00 = %v, want success (the window is on the pump)", r)
	}
	r, isErr := s.call("do_set_pump", map[string]any{"value": 40})
	if !isErr || r["status"] != "failed" || r["permission"] != "policy_denied" ||
		!strings.Contains(fmt.Sprint(r["reason"]), "not allowed daily 11:00–16:00 (Europe/Amsterdam) (allowed again from Wed 1 Jul 16:00 CEST)") {
		t.Fatalf("do_set_pump(40) at 13:00 = %v, want policy_denied by the 11:00–16:00 window", r)
	}
	if r, _ := s.call("do_set_pump", map[string]any{"value": 0}); r["status"] != "success" {
		t.Fatalf("do_set_pump(0) at 13:00 = %v, want success", r)
	}
}

// TestIrrigationScenario plays irrigation-faults.yml at up to 20× (as
// fast as this machine polls every phase) on the binary and checks each fault shows as the scenario file documents: the soil
// probe's CRC errors make its reading stale, then error; the air probe's
// power-on 85 °C is degraded (its on_device_error), serving the last good
// value; bed 1's railed ADC input is degraded as implausible while bed 2
// on the same chip stays good; the door's Last Will makes its reads
// error; the stuck flow meter's rate falls to 0 and its total stops. All
// are good again after the faults.
func TestIrrigationScenario(t *testing.T) {
	t.Parallel()
	type sign struct {
		tool, what string
		ok         func(map[string]any) bool
	}
	reason := func(q, text string) func(map[string]any) bool {
		return func(b map[string]any) bool {
			msg := fmt.Sprint(b["quality_reason"])
			if e, ok := b["error"].(map[string]any); ok {
				msg += " " + fmt.Sprint(e["message"])
			}
			return b["quality"] == q && strings.Contains(msg, text)
		}
	}
	var seen []bool
	signs := []sign{
		{"read_soil_temperature", "stale on the CRC errors", reason("stale", "read failed (crc); last good value from")},
		{"read_soil_temperature", "error once the last good value is past max_stale", reason("error", "checksum mismatch")},
		{"read_air_temperature", "degraded on the power-on 85 °C", func(b map[string]any) bool {
			return reason("degraded", "")(b) && near(b["value"], 24, 1)
		}},
		{"read_bed1_moisture", "degraded on the railed input", reason("degraded", "implausible: -89.725 % outside -5..105 %")},
		{"read_shed_door_closed", "error on its Last Will", reason("error", "offline since")},
		{"read_flow_rate", "flowing before the fault", func(b map[string]any) bool {
			f, _ := b["value"].(float64)
			return b["quality"] == "good" && f > 0
		}},
	}
	// The meter reads 0 L/min before its first pulse too: only a 0 after
	// it flowed is the stuck line.
	signs = append(signs, sign{"read_flow_rate", "0 L/min, good, while the meter is stuck", func(b map[string]any) bool {
		return seen[5] && b["quality"] == "good" && near(b["value"], 0, 0)
	}})
	seen = make([]bool, len(signs))
	poll := func(s *session, tool string) map[string]any {
		body, _ := s.call(tool, map[string]any{"max_age_ms": 0})
		return body
	}
	// The faults start at 1m (the meter flows before), the soil probe is
	// stale for about 25 s, every fault ends at 3m.
	pace := paceScenario(t, protocols[1], []string{"--manifest", irrigation}, 20,
		scenarioPhases{shortest: 25 * time.Second, length: 180 * time.Second},
		func(s *session) {
			for _, sg := range signs {
				poll(s, sg.tool)
			}
			poll(s, "read_bed2_moisture")
			time.Sleep(50 * time.Millisecond) // as the loop below does
		})
	s := stdioSession(t, protocols[1], "--manifest", irrigation, "--scenario", pace.scenario(t, irrigationFaults), "--time-scale", pace.timeScale())
	var stuckTotal any
	deadline := pace.deadline
	for slices.Contains(seen, false) {
		for i, sg := range signs {
			body, _ := s.call(sg.tool, map[string]any{"max_age_ms": 0})
			if !seen[i] && sg.ok(body) {
				seen[i] = true
				t.Logf("%s %s: %v %v", sg.tool, sg.what, body["value"], body["quality_reason"])
			}
		}
		if b, _ := s.call("read_bed2_moisture", map[string]any{"max_age_ms": 0}); b["quality"] != "good" {
			t.Errorf("read_bed2_moisture = %v, want good: the fault is on bed 1's input only", b)
		}
		if seen[6] && stuckTotal == nil {
			b, _ := s.call("read_water_used", map[string]any{"max_age_ms": 0})
			stuckTotal = b["value"]
		}
		if time.Now().After(deadline) {
			for i, sg := range signs {
				if !seen[i] {
					b, _ := s.call(sg.tool, map[string]any{"max_age_ms": 0})
					t.Errorf("%s never %s: last %v", sg.tool, sg.what, b)
				}
			}
			t.FailNow()
		}
		time.Sleep(50 * time.Millisecond) // the scenario plays on the simulator's clock
	}
	if b, _ := s.call("read_water_used", map[string]any{"max_age_ms": 0}); b["value"] != stuckTotal {
		t.Errorf("read_water_used while the meter is stuck = %v, was %v: want it unchanged", b["value"], stuckTotal)
	}
	for _, tool := range []string{"read_soil_temperature", "read_air_temperature", "read_bed1_moisture", "read_shed_door_closed"} {
		readBy(t, s, deadline, tool, "good again after the faults", quality("good"))
	}
	readBy(t, s, deadline, "read_flow_rate", "flowing again after the fault", func(b map[string]any) bool {
		f, _ := b["value"].(float64)
		return b["quality"] == "good" && f > 0
	})
}
