package gateway_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/gateway"
	"github.com/promcp/promcp-device/gateway/gatewaytest"
	"github.com/promcp/promcp-device/manifests/manifesttest"
)

const jobsManifest = `version: 1
gateway: bench
buses:
  - {name: gpio, kind: gpio}
devices:
  - {name: valve_relay, bus: gpio, model: gpio_out, pin: GPIO24}
  - {name: pump_relay, bus: gpio, model: gpio_out, pin: GPIO25}
  - {name: heater_relay, bus: gpio, model: gpio_out, pin: GPIO26}
capabilities:
  - {name: valve, type: boolean, ttl: 1s, read: {device: valve_relay}, do: {tool: do_set_valve, side_effects: [water flows], compensable: true, safe_value: false}}
  - {name: pump, type: boolean, ttl: 1s, read: {device: pump_relay}, do: {tool: do_set_pump, side_effects: [pumps], compensable: true, safe_value: false}}
  - {name: heater, type: boolean, ttl: 1s, read: {device: heater_relay}, do: {tool: do_set_heater, side_effects: [heats], compensable: true, safe_value: false}}
jobs:
  - name: dry_pump
    steps:
      - {capability: pump, value: true, hold: 1m, compensate: false}
  - name: water
    steps:
      - {capability: valve, value: true, hold: 10s, compensate: restore}
      - {capability: pump, value: true, hold: 1m, compensate: false}
      - {capability: pump, value: false}
      - {capability: valve, value: false}
`

const jobsPolicy = `version: 1
actions:
  do_set_pump:
    interlocks:
      - {read: read_valve, equals: false, when: {equals: true}, reason: no pump against a closed valve}
  do_set_heater:
    max_on: 10m
`

func newJobsBench(t *testing.T) *bench {
	t.Helper()
	m := manifesttest.Parse(t, "jobs.yml", jobsManifest)
	pol := manifesttest.ParsePolicy(t, "jobs.policy.yml", jobsPolicy, m)
	return serveAt(t, m, time.Date(2026, 7, 1, 6, 0, 0, 0, time.UTC), gatewaytest.Options{Gateway: gateway.GatewayOptions{Policy: pol, Jobs: m.Jobs}})
}

// waitOn lets the bubble's goroutines run until they all wait, and checks
// that n of them wait on clk.
func waitOn(t *testing.T, clk *clock.Manual, n int) {
	t.Helper()
	synctest.Wait()
	if got := clk.Waiting(); got < n {
		t.Fatalf("%d waiting on the clock, want %d", got, n)
	}
}

// A job's steps go through the action's policy: a first step the
// interlock refuses refuses start_* with the interlock's permission and
// reason, and nothing moves; the same step after the valve opened runs.
func TestJobStepsGoThroughPolicy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newJobsBench(t)
		// can_do answers for start_* on its first step, as start_* decides.
		cd := b.body("can_do", map[string]any{"intent": map[string]any{"action": "start_dry_pump"}})
		bl, _ := cd["blocked"].([]any)
		if len(bl) != 1 || bl[0].(map[string]any)["capability"] != "start_dry_pump" || bl[0].(map[string]any)["permission"] != "policy_denied" {
			t.Fatalf("can_do start_dry_pump = %v, want it blocked by the interlock", cd)
		}
		cd = b.body("can_do", map[string]any{"intent": map[string]any{"action": "start_water"}})
		cands, _ := cd["candidates"].([]any)
		if len(cands) != 1 || cands[0].(map[string]any)["capability"] != "start_water" || cands[0].(map[string]any)["valid_until"] == nil {
			t.Fatalf("can_do start_water = %v, want start_water a candidate", cd)
		}
		r := b.body("start_dry_pump", map[string]any{})
		if r["status"] != "failed" || r["permission"] != "policy_denied" || r["applied_value"] != nil || r["compensable"] != false {
			t.Fatalf("start_dry_pump with the valve closed = %v, want refused by the interlock", r)
		}
		if p := b.body("read_pump", map[string]any{"max_age_ms": 0}); p["value"] != false {
			t.Fatalf("read_pump after a refused start = %v", p)
		}
		r = b.body("start_water", map[string]any{})
		if r["status"] != "success" {
			t.Fatalf("start_water = %v", r)
		}
		waitOn(t, b.clk, 1)
		b.clk.Advance(10 * time.Second) // the valve has held 10 s: the pump starts
		waitOn(t, b.clk, 1)
		if p := b.body("read_pump", map[string]any{"max_age_ms": 0}); p["value"] != true {
			t.Fatalf("read_pump in the job's second step = %v", p)
		}
		st := b.body("read_status_water", map[string]any{})
		v := st["value"].(map[string]any)
		if v["step"] != 2.0 || v["state"] != "running" {
			t.Fatalf("read_status_water = %v", st)
		}
		c := b.body("do_cancel_water", map[string]any{"value": v["job_id"]})
		if c["status"] != "success" {
			t.Fatalf("do_cancel_water = %v", c)
		}
		// Newest first: the pump stops before the valve closes.
		applied := c["job"].(map[string]any)["applied"].([]any)
		var order []string
		for _, a := range applied {
			am := a.(map[string]any)
			if am["compensation"] == true {
				order = append(order, am["capability"].(string))
			}
		}
		if len(order) != 2 || order[0] != "pump" || order[1] != "valve" {
			t.Fatalf("compensations %v, want pump then valve", order)
		}
		for _, tool := range []string{"read_pump", "read_valve"} {
			if p := b.body(tool, map[string]any{"max_age_ms": 0}); p["value"] != false {
				t.Fatalf("%s after the cancel = %v", tool, p)
			}
		}
	})
}

// The dead-man limit reverts the heater on the gateway's clock, with no
// call: 10 minutes after the last do_* that renewed it.
func TestDeadManOnDrivenClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newJobsBench(t)
		r := b.body("do_set_heater", map[string]any{"value": true, "idempotency_key": "h1"})
		start := b.clk.Now()
		if r["revert_at"] != start.Add(10*time.Minute).UTC().Format(time.RFC3339Nano) {
			t.Fatalf("do_set_heater(true) = %v, want revert_at %v", r, start.Add(10*time.Minute))
		}
		waitOn(t, b.clk, 1)
		b.clk.Advance(6 * time.Minute)
		r = b.body("do_set_heater", map[string]any{"value": true, "idempotency_key": "h2"}) // renewed
		if r["revert_at"] != start.Add(16*time.Minute).UTC().Format(time.RFC3339Nano) {
			t.Fatalf("renewal = %v", r)
		}
		waitOn(t, b.clk, 2)
		b.clk.Advance(9 * time.Minute)
		if h := b.body("read_heater", map[string]any{"max_age_ms": 0}); h["value"] != true {
			t.Fatalf("heater 9 min after the renewal = %v, want still on", h)
		}
		b.clk.Advance(time.Minute)
		synctest.Wait()
		if h := b.body("read_heater", map[string]any{"max_age_ms": 0}); h["value"] != false {
			t.Fatalf("heater 10 min after the renewal = %v, want reverted", h)
		}
		cd := b.body("can_do", map[string]any{"intent": map[string]any{"action": "do_set_heater", "value": true}})
		cand := cd["candidates"].([]any)[0].(map[string]any)
		if cand["revert_at"] != b.clk.Now().Add(10*time.Minute).UTC().Format(time.RFC3339Nano) {
			t.Fatalf("can_do candidate = %v, want revert_at now + 10 min", cand)
		}
	})
}
