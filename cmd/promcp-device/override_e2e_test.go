package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const physmcp6 = "../../manifests/testdata/physmcp/spec6/physmcp.manifest.yml"

// The spec's §6 policy, as written (identity and emergency blocks
// included), served by the binary: a person with the override role
// obtains an override with `promcp-device override`; it lifts the
// action's roles and pacing, never quorum; only the emergency's role may
// use it; every action under it is audited.
func TestServePhysMCPEmergencyOverride(t *testing.T) {
	dir := t.TempDir()
	key, state := filepath.Join(dir, "approval.key"), filepath.Join(dir, "state")
	s := stdioSession(t, protocols[0], "--manifest", physmcp6, "--role", "admin", "--state", state, "--approval-key", key)
	if r, _ := s.call("do_fan_mode_0", map[string]any{"value": "medium", "idempotency_key": "k1"}); r["permission"] != "permission_insufficient" {
		t.Fatalf("admin without override on do_fan_mode_0 (require: [operator]) = %v", r)
	}
	tok, stderr, code := runCLI(t, "override", "--approval-key", key, "--manifest", physmcp6, "--tool", "do_fan_mode_0", "--by", "ana")
	tok = strings.TrimSpace(tok)
	if code != 0 || tok == "" || !strings.Contains(stderr, "emergency override by ana of do_fan_mode_0") {
		t.Fatalf("override: exit %d, %s", code, stderr)
	}
	for i, k := range []string{"k2", "k3"} { // used again until it lapses
		if r, _ := s.call("do_fan_mode_0", map[string]any{"value": []string{"low", "high"}[i], "idempotency_key": k, "approval": tok}); r["status"] != "success" ||
			!strings.Contains(r["reason"].(string)+"", "emergency override") {
			t.Fatalf("admin with override, call %d = %v", i, r)
		}
	}
	// Quorum (min_peers 3) is never lifted.
	ovr, _, _ := runCLI(t, "override", "--approval-key", key, "--manifest", physmcp6, "--tool", "do_setpoint_0")
	if r, _ := s.call("do_setpoint_0", map[string]any{"value": 22.5, "idempotency_key": "k4", "approval": strings.TrimSpace(ovr)}); r["permission"] != "partition_no_quorum" {
		t.Fatalf("do_setpoint_0 under override on a lone gateway = %v", r)
	}
	// An override of another tool does not serve this one.
	if r, _ := s.call("do_setpoint_0", map[string]any{"value": 22, "idempotency_key": "k5", "approval": tok}); r["status"] != "failed" ||
		!strings.Contains(errorMessage(r), "overrides do_fan_mode_0") {
		t.Fatalf("do_setpoint_0 with do_fan_mode_0's override = %v", r)
	}
	logged, err := os.ReadFile(filepath.Join(state, auditFile))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(logged), `"method":"override"`); n < 4 {
		t.Errorf("audit log: %d records carry the override, want the attempt and result of both calls:\n%s", n, logged)
	}

	// Only the emergency's role (admin) may use one.
	op := stdioSession(t, protocols[0], "--manifest", physmcp6, "--role", "operator", "--state", filepath.Join(dir, "op"), "--approval-key", key)
	if r, _ := op.call("do_fan_mode_0", map[string]any{"value": "low", "idempotency_key": "k6", "approval": tok}); !strings.Contains(errorMessage(r), "role operator may not use an emergency override") {
		t.Fatalf("operator with override = %v", r)
	}
	// Without an audit log, no override.
	na := stdioSession(t, protocols[0], "--manifest", physmcp6, "--role", "admin", "--approval-key", key)
	if r, _ := na.call("do_fan_mode_0", map[string]any{"value": "low", "idempotency_key": "k7", "approval": tok}); !strings.Contains(errorMessage(r), "keeps no audit log") {
		t.Fatalf("override without --state = %v", r)
	}
}

// errorMessage is the message of a failed do_* result, "" for none.
func errorMessage(r map[string]any) string {
	e, _ := r["error"].(map[string]any)
	m, _ := e["message"].(string)
	return m
}

// lint warns, where the rule is written, of a quorum a lone gateway can
// never meet (the spec's §6 do_setpoint_0, min_peers 3).
func TestLintQuorumOnLoneGateway(t *testing.T) {
	out, _, code := runCLI(t, "lint", physmcp6)
	want := "physmcp.policy.yml:21:20: warning: actions.do_setpoint_0.quorum.min_peers: 3 gateways must be reachable, and a lone gateway has 1: do_setpoint_0 is never allowed"
	if code != 0 || !strings.Contains(out, want) {
		t.Fatalf("lint: exit %d\n%s\nwant a line with %q", code, out, want)
	}
}

// The simulator's probes read plausibly before sim.values sets them: an
// ADS1115 percent input 50 %, a 4–20 mA loop 12 mA, a voltage half the
// full scale, an MCP3008 input half its reference (never 0 V shown as
// 186.666667 %).
func TestSimProbesReadMidRange(t *testing.T) {
	out, stderr, code := runCLI(t, "read", "--sim", "--json", "--manifest", "testdata/probes.yml")
	if code != 0 {
		t.Fatalf("read: exit %d, %s", code, stderr)
	}
	var got []struct {
		Capability string  `json:"capability"`
		Value      float64 `json:"value"`
		Quality    string  `json:"quality"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := map[string]float64{"soil": 50, "loop": 12, "v2": 2.048, "ch0": 1.65}
	for _, r := range got {
		if w, ok := want[r.Capability]; !ok || math.Abs(r.Value-w) > 0.01 || r.Quality != "good" {
			t.Errorf("%s = %v (%s), want %v good", r.Capability, r.Value, r.Quality, w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d readings, want %d: %s", len(got), len(want), out)
	}
}

// The spec's setpoint (data_type float) takes 22.5 °C and reads it back:
// its register is a float32, not an int16 with scale 1. Served under a
// PhysMCP policy without the §6 quorum, which a lone gateway never meets.
func TestServePhysMCPFloatSetpoint(t *testing.T) {
	pol := filepath.Join(t.TempDir(), "physmcp.policy.yml")
	if err := os.WriteFile(pol, []byte("physmcp_policy_version: \"0.1\"\ncapabilities:\n  do_setpoint_0:\n    rules: [{type: permission, require: [operator]}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := stdioSession(t, protocols[0], "--manifest", physmcp6, "--policy", pol)
	if r, _ := s.call("do_setpoint_0", map[string]any{"value": 22.5, "idempotency_key": "sp-1"}); r["status"] != "success" || r["applied_value"] != 22.5 {
		t.Fatalf("do_setpoint_0 22.5 = %v", r)
	}
	if r, _ := s.call("read_setpoint_0", map[string]any{}); r["value"] != 22.5 {
		t.Fatalf("read_setpoint_0 after 22.5 = %v", r)
	}
}
