package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	physmcp52    = "../../manifests/testdata/physmcp/spec52/physmcp.manifest.yml"
	physmcp53    = "../../manifests/testdata/physmcp/spec53/physmcp.manifest.yml"
	physmcpBuses = "../../manifests/testdata/physmcp/buses/physmcp.manifest.yml"
)

// The PhysMCP spec's own examples (§5.2, §5.3 with the §6 policy) are
// served as they are by the real binary on --sim, to a real MCP client,
// with PhysMCP's can_do query and response fields.
func TestServePhysMCPManifest(t *testing.T) {
	s := stdioSession(t, protocols[0], "--manifest", physmcp52)
	if r, isErr := s.call("read_temperature_0", map[string]any{}); isErr || r["quality"] != "good" || r["unit"] != "°C" {
		t.Fatalf("§5.2 read_temperature_0 = %v", r)
	}

	s = stdioSession(t, protocols[0], "--manifest", physmcp53)
	rep, isErr := s.call("can_do", map[string]any{"query": map[string]any{"semantic_tags": []string{"ventilation"},
		"location": "zone_3", "direction": "set", "target": "fan_mode_0", "value": "medium"}, "ttl": 3})
	if isErr {
		t.Fatalf("can_do with a PhysMCP query: %v", rep)
	}
	cands := rep["candidates"].([]any)
	if len(cands) != 1 {
		t.Fatalf("can_do: candidates %v, blocked %v", cands, rep["blocked"])
	}
	c := cands[0].(map[string]any)
	rl, _ := c["rate_limit"].(map[string]any)
	if c["capability"] != "do_fan_mode_0" || c["permission"] != "allowed" || c["device_id"] != "node_hvac_zone3_007" ||
		rl["max"] != "12/hour" || rl["current_window_remaining"] != 12.0 {
		t.Fatalf("candidate %v", c)
	}
	ctx := rep["context"].(map[string]any)
	if ctx["location"] != "zone_3" || ctx["implied_target"] != "set fan_mode_0 to medium" {
		t.Fatalf("context %v", ctx)
	}
	// The enum keeps its names on the wire (the register holds 2).
	if r, _ := s.call("do_fan_mode_0", map[string]any{"value": "medium", "idempotency_key": "e2e-1"}); r["status"] != "success" || r["success"] != true {
		t.Fatalf("do_fan_mode_0 = %v", r)
	}
	if r, _ := s.call("read_fan_mode_0", map[string]any{}); r["value"] != "medium" {
		t.Fatalf("read_fan_mode_0 after writing medium = %v", r)
	}
	if r, _ := s.call("do_fan_mode_0", map[string]any{"value": 2, "idempotency_key": "e2e-2"}); r["status"] != "failed" {
		t.Fatalf("do_fan_mode_0 with the index 2 = %v, want refused", r)
	}
	// The setpoint is a float on the wire and in the register.
	if r, _ := s.call("do_setpoint_0", map[string]any{"value": 22.5, "idempotency_key": "e2e-3"}); r["permission"] != "partition_no_quorum" {
		t.Fatalf("do_setpoint_0 22.5 = %v, want refused only for its quorum", r)
	}
	// The §6 quorum rule (min_peers 3) holds the setpoint on a lone gateway.
	rep, _ = s.call("can_do", map[string]any{"intent": map[string]any{"action": "do_setpoint_0", "value": 21}})
	blocked := rep["blocked"].([]any)
	if len(blocked) != 1 || blocked[0].(map[string]any)["permission"] != "partition_no_quorum" {
		t.Fatalf("do_setpoint_0 under quorum 3: %v", rep)
	}
}

// PhysMCP's pwm, adc, spi and mqtt bindings served by the binary on --sim:
// every read comes good from its simulated bus (PWM and the ADS1x15 and
// MCP3008 through their kernel files and buses, the generic MQTT devices
// through the embedded broker), the PWM duty and the MQTT relay actuate
// and read back, and the policy's range guard refuses 90 %.
func TestServePhysMCPBusBindings(t *testing.T) {
	t.Parallel()
	s := stdioSession(t, protocols[0], "--manifest", physmcpBuses)
	for _, tool := range []string{"read_fan_duty", "read_bed1_probe", "read_bed2_probe", "read_tank_probe", "read_pump_speed", "read_valve"} {
		if r, isErr := s.call(tool, map[string]any{}); isErr || r["quality"] != "good" {
			t.Errorf("%s = %v, want good", tool, r)
		}
	}
	if r, _ := s.call("read_door_open", map[string]any{}); r["quality"] != "good" || r["value"] != false {
		t.Errorf("read_door_open = %v, want good false (the simulated contact's retained state)", r)
	}
	if r, _ := s.call("do_pump_speed", map[string]any{"value": 50, "idempotency_key": "buses-1"}); r["status"] != "success" || r["applied_value"] != 50.0 {
		t.Fatalf("do_pump_speed 50 = %v", r)
	}
	if r, _ := s.call("read_pump_speed", map[string]any{"max_age_ms": 0}); r["value"] != 50.0 {
		t.Errorf("read_pump_speed after 50 = %v", r)
	}
	if r, _ := s.call("do_pump_speed", map[string]any{"value": 90, "idempotency_key": "buses-2"}); r["permission"] != "out_of_range" {
		t.Errorf("do_pump_speed 90 = %v, want out_of_range (range_guard max 80)", r)
	}
	if r, _ := s.call("do_valve", map[string]any{"value": true, "idempotency_key": "buses-3"}); r["status"] != "success" || r["applied_value"] != true {
		t.Fatalf("do_valve true = %v, want success read back from stat/valve/POWER", r)
	}
}

// lint and tools take PhysMCP files; an unsupported key is refused at its
// place; convert writes our format, which lints and lists the same tools.
func TestPhysMCPLintToolsConvert(t *testing.T) {
	out, _, code := runCLI(t, "lint", physmcp52, physmcp53, filepath.Join(filepath.Dir(physmcp53), "physmcp.policy.yml"))
	if code != 0 || strings.Count(out, ": ok: gateway") != 2 || strings.Count(out, "physmcp.policy.yml: ok: policy") != 2 {
		t.Fatalf("lint PhysMCP examples: exit %d, %q", code, out)
	}
	bad := filepath.Join(t.TempDir(), "physmcp.manifest.yml")
	os.WriteFile(bad, []byte("physmcp_version: \"0.1\"\ndevice: {id: d, type: t, location: {zone: z}}\ncapabilities:\n"+
		"  - {name: c, kind: read, description: d, data_type: float, unit: celsius, semantic_tags: [x], binding: {type: opcua, address: \"ns=2\"}}\n"), 0o644)
	out, _, code = runCLI(t, "lint", bad)
	if code != 1 || !strings.Contains(out, "physmcp.manifest.yml:4:") || !strings.Contains(out, "capabilities[0].binding.type: not supported: opcua") {
		t.Fatalf("lint an opcua binding: exit %d, %q", code, out)
	}

	tools, _, code := runCLI(t, "tools", "--manifest", physmcp53)
	if code != 0 {
		t.Fatalf("tools: exit %d", code)
	}
	dir := t.TempDir()
	out, stderr, code := runCLI(t, "convert", "--out", dir, physmcp53)
	if code != 0 || !strings.Contains(out, "node_hvac_zone3_007.policy.yml") {
		t.Fatalf("convert: exit %d, %q %q", code, out, stderr)
	}
	ours := filepath.Join(dir, "node_hvac_zone3_007.yml")
	if out, _, code := runCLI(t, "lint", ours); code != 0 || !strings.Contains(out, "ok: policy") {
		t.Fatalf("lint the converted files: exit %d, %q", code, out)
	}
	if got, _, _ := runCLI(t, "tools", "--manifest", ours); got != tools {
		t.Fatalf("tools of the converted manifest:\n%s\nof the PhysMCP one:\n%s", got, tools)
	}
}
