package main

import "testing"

const piSensors = "../../manifests/examples/pi-sensors.yml"

// pi-sensors.yml (every I2C chip model) lints clean and serves on --sim
// from the real binary over stdio: every read_* is good with a value, and
// a relay on each expander switches with its readback.
func TestPiSensorsExample(t *testing.T) {
	s := servesGood(t, piSensors, "pi-sensors.yml: ok: gateway pi-sensors, 1 buses, 5 devices, 19 tools", 15)
	for _, do := range []string{"do_set_valve_2", "do_set_lamp"} {
		r, _ := s.call(do, map[string]any{"value": true})
		if r["status"] != "success" || r["applied_value"] != true || r["previous_value"] != false {
			t.Errorf("%s(true) = %v, want success false -> true", do, r)
		}
	}
}
