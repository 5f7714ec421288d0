package main

import (
	"strings"
	"testing"
)

const piOutdoor = "../../manifests/examples/pi-outdoor.yml"

// The Pi example (DS18B20s on 1-Wire, a fan on hardware PWM, an MCP3008 on
// SPI) lints, and serve --sim serves it over stdio: the thermometers read
// their zones through simulated w1 files, the fan's duty cycle is written
// to simulated pwm files and read back.
func TestPiOutdoorServedOnSim(t *testing.T) {
	out, _, code := runCLI(t, "lint", piOutdoor)
	if code != 0 || !strings.Contains(out, ": ok: gateway pi-outdoor") {
		t.Fatalf("lint %s: exit %d, %q", piOutdoor, code, out)
	}
	s := stdioSession(t, protocols[0], "--manifest", piOutdoor)
	r, isErr := s.call("read_enclosure_temperature", map[string]any{})
	if v, _ := r["value"].(float64); isErr || r["quality"] != "good" || v < 15 || v > 30 {
		t.Fatalf("read_enclosure_temperature = %v, want good, near the zone's 24 °C", r)
	}
	res, _ := s.call("do_set_fan_speed", map[string]any{"value": 30})
	if res["status"] != "success" || res["applied_value"] != 30.0 {
		t.Fatalf("do_set_fan_speed(30) = %v, want success, read back 30", res)
	}
	if r, _ := s.call("read_fan_speed", map[string]any{"max_age_ms": 0}); r["value"] != 30.0 {
		t.Fatalf("read_fan_speed = %v, want 30", r)
	}
	// The MCP3008 at 1.42 V on CH0 with a 3.3 V reference: code 440.
	if r, _ := s.call("read_soil_moisture_probe", map[string]any{}); r["quality"] != "good" || r["value"] != 1.418 {
		t.Fatalf("read_soil_moisture_probe = %v, want good 1.418 V", r)
	}
}
