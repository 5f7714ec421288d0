package gateway_test

import (
	"fmt"
	"testing"

	"github.com/promcp/promcp-device/gateway"
	"github.com/promcp/promcp-device/gateway/gatewaytest"
	"github.com/promcp/promcp-device/manifests/manifesttest"
)

// TestUnits: actuators are reserved together when an interlock of either
// reads the other (directly, or through another capability of its device)
// or when they share a device; ties are transitive; the rest stand alone.
func TestUnits(t *testing.T) {
	m := manifesttest.Load(t, "testdata/race/race.yml")
	pol := manifesttest.ParsePolicy(t, "units.policy.yml", `version: 1
actions:
  do_set_heater:
    interlocks: [{read: read_vent, equals: true}]
  do_set_pump:
    interlocks: [{read: read_heater, equals: true}]
  do_set_dimmer:
    interlocks: [{read: read_blind_motor_temperature, above: 60}]
`, m)
	_, set := gatewaytest.Open(t, m, gatewaytest.Options{})
	got := gateway.Units(set, pol)
	want := map[string]string{
		// vent ⟂ heater by interlock, pump → heater: one unit.
		"do_set_heater": "[do_set_heater do_set_pump do_set_vent]",
		"do_set_vent":   "[do_set_heater do_set_pump do_set_vent]",
		"do_set_pump":   "[do_set_heater do_set_pump do_set_vent]",
		// blind and tilt share a device; the dimmer reads that device.
		"do_set_blind":  "[do_set_blind do_set_dimmer do_set_tilt]",
		"do_set_tilt":   "[do_set_blind do_set_dimmer do_set_tilt]",
		"do_set_dimmer": "[do_set_blind do_set_dimmer do_set_tilt]",
	}
	for tool, u := range want {
		if fmt.Sprint(got[tool]) != u {
			t.Errorf("unit of %s = %v, want %s", tool, got[tool], u)
		}
	}
	if alone := gateway.Units(set, nil); fmt.Sprint(alone["do_set_heater"]) != "[do_set_heater]" || fmt.Sprint(alone["do_set_tilt"]) != "[do_set_blind do_set_tilt]" {
		t.Errorf("without a policy: heater %v, tilt %v; want the heater alone and blind+tilt (one device)", alone["do_set_heater"], alone["do_set_tilt"])
	}
}
