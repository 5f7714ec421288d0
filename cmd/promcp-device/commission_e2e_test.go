package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadOnce: read prints every capability once with its value and
// quality (table), or the ones named (JSON); an unknown name is a usage
// error naming the capabilities there are.
func TestReadOnce(t *testing.T) {
	out, stderr, code := runCLI(t, "read", "--manifest", greenhouse, "--sim")
	if code != 0 {
		t.Fatalf("read --sim: exit %d, %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 12 || !strings.HasPrefix(lines[0], "CAPABILITY") {
		t.Fatalf("read --sim: %d lines, want a header and the 11 capabilities:\n%s", len(lines), out)
	}
	for _, l := range lines[1:] {
		if f := strings.Fields(l); len(f) < 3 || !strings.Contains(l, " good ") {
			t.Errorf("read --sim: line %q, want a value with quality good", l)
		}
	}
	out, _, code = runCLI(t, "read", "--manifest", greenhouse, "temperature_zone1", "read_site_power", "--sim", "--json")
	var rs []readingJSON
	if err := json.Unmarshal([]byte(out), &rs); err != nil || code != 0 || len(rs) != 2 {
		t.Fatalf("read --json: exit %d, %v, %s", code, err, out)
	}
	if rs[0].Capability != "temperature_zone1" || rs[0].Quality != "good" || rs[0].Unit != "°C" || rs[0].Bus != "i2c1" || rs[0].Address != "0x44" {
		t.Errorf("read --json temperature_zone1 = %+v", rs[0])
	}
	if v, ok := rs[1].Value.(float64); rs[1].Capability != "site_power" || !ok || v <= 0 || rs[1].Bus != "plant_lan" {
		t.Errorf("read --json site_power = %+v; want a power in W from the meter on plant_lan", rs[1])
	}
	_, stderr, code = runCLI(t, "read", "--manifest", greenhouse, "--sim", "temprature")
	if code != 2 || !strings.Contains(stderr, `no capability "temprature"`) || !strings.Contains(stderr, "temperature_zone1") {
		t.Errorf("read of an unknown capability: exit %d, %q", code, stderr)
	}
}

// TestReadUnreachable: without the hardware, read exits 1 naming the bus.
func TestReadUnreachable(t *testing.T) {
	_, stderr, code := runCLI(t, "read", "--manifest", greenhouse)
	if code != 1 || !strings.Contains(stderr, "promcp-device read:") || !strings.Contains(stderr, "i2c1") {
		t.Fatalf("read without hardware: exit %d, %q; want exit 1 naming bus i2c1", code, stderr)
	}
}

// TestDoDryRun: do --dry-run answers as the policy would now and says what
// would be written to which register, writing nothing.
func TestDoDryRun(t *testing.T) {
	out, stderr, code := runCLI(t, "do", "--dry-run", "--manifest", greenhouse, "--sim", "do_set_fan_speed", "25")
	if code != 0 || !strings.Contains(out, "do_set_fan_speed value=25 as operator: allowed") ||
		!strings.Contains(out, "would write 25 to device fan_vfd on bus rs485, address unit 1, register speed_setpoint (holding 0") ||
		!strings.Contains(out, "nothing was written") {
		t.Fatalf("do --dry-run fan 25: exit %d\n%s%s", code, out, stderr)
	}
	out, _, code = runCLI(t, "do", "--dry-run", "--manifest", greenhouse, "--sim", "--json", "do_set_fan_speed", "80")
	var dr dryRunJSON
	if err := json.Unmarshal([]byte(out), &dr); err != nil || code != 1 || dr.Permission != "out_of_range" || dr.WouldWrite != nil || dr.Register == "" {
		t.Fatalf("do --dry-run --json fan 80: exit %d, %+v (%v); want exit 1, out_of_range, nothing to write", code, dr, err)
	}
	out, _, code = runCLI(t, "do", "--dry-run", "--manifest", greenhouse, "--sim", "--role", "viewer", "do_set_heater", "true")
	if code != 1 || !strings.Contains(out, "permission_insufficient") || !strings.Contains(out, "would write nothing") {
		t.Fatalf("do --dry-run as viewer: exit %d\n%s", code, out)
	}
	if _, stderr, code := runCLI(t, "do", "--manifest", greenhouse, "do_set_heater", "true"); code != 2 || !strings.Contains(stderr, "--dry-run only") {
		t.Fatalf("do without --dry-run: exit %d, %q; want 2", code, stderr)
	}
}

// TestLintCommissioningWarnings: a Modicon-style address and an action
// the policy has no rules for are warned of (lint still passes).
func TestLintCommissioningWarnings(t *testing.T) {
	dir := t.TempDir()
	data, _ := os.ReadFile(greenhouse)
	m := strings.Replace(string(data), "{name: speed_setpoint, table: holding, address: 0,", "{name: speed_setpoint, table: holding, address: 40001,", 1)
	os.WriteFile(filepath.Join(dir, "greenhouse.yml"), []byte(m), 0o644)
	pol, _ := os.ReadFile("../../manifests/examples/greenhouse.policy.yml")
	p := string(pol)
	i, j := strings.Index(p, "  do_set_vent:"), strings.Index(p, "  do_set_fan_speed:")
	os.WriteFile(filepath.Join(dir, "greenhouse.policy.yml"), []byte(p[:i]+p[j:]), 0o644)
	out, _, code := runCLI(t, "lint", filepath.Join(dir, "greenhouse.yml"))
	if code != 0 || !strings.Contains(out, "warning: device fan_vfd register speed_setpoint: holding address 40001 looks like a Modicon reference") ||
		!strings.Contains(out, "did you mean address: 0?") || !strings.Contains(out, "warning: do_set_vent has no rules in the policy") {
		t.Fatalf("lint: exit %d\n%s", code, out)
	}
}

// TestScanValues: scan --values prints the values of the ranges it finds.
func TestScanValues(t *testing.T) {
	addr := startSim(t)
	out, stderr, code := runCLI(t, "scan", "--tcp", addr, "--units", "2", "--count", "4", "--pause", "1ms", "--values")
	if code != 0 || !strings.Contains(out, "unit 2: input 0-3\n") || !strings.Contains(out, "  input 0-3: 0=") || !strings.Contains(out, " 3=") {
		t.Fatalf("scan --values: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
}
