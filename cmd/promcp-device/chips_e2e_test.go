package main

import (
	"strings"
	"testing"
)

const piSensors = "../../manifests/examples/pi-sensors.yml"

// pi-sensors.yml (every I2C chip model) lints clean and serves on --sim
// from the real binary over stdio: every read_* is good with a value, and
// a relay on each expander switches with its readback.
func TestPiSensorsExample(t *testing.T) {
	out, _, code := runCLI(t, "lint", piSensors)
	if code != 0 || !strings.Contains(out, "pi-sensors.yml: ok: gateway pi-sensors, 1 buses, 5 devices, 19 tools") ||
		!strings.Contains(out, "pi-sensors.policy.yml: ok: policy") || strings.Contains(out, "warning") {
		t.Fatalf("lint pi-sensors: exit %d, %q", code, out)
	}
	s := stdioSession(t, protocols[0], "--manifest", piSensors)
	reads := 0
	for _, tool := range s.tools {
		if !strings.HasPrefix(tool.Name, "read_") {
			continue
		}
		reads++
		r, isErr := s.call(tool.Name, map[string]any{})
		if isErr || r["quality"] != "good" || r["value"] == nil {
			t.Errorf("%s = %v, want a good value", tool.Name, r)
		}
	}
	if reads != 15 {
		t.Errorf("%d read_* tools, want 15", reads)
	}
	for _, do := range []string{"do_set_valve_2", "do_set_lamp"} {
		r, _ := s.call(do, map[string]any{"value": true})
		if r["status"] != "success" || r["applied_value"] != true || r["previous_value"] != false {
			t.Errorf("%s(true) = %v, want success false -> true", do, r)
		}
	}
}
