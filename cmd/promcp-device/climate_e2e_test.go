package main

import "testing"

const piClimate = "../../manifests/examples/pi-climate.yml"

// pi-climate.yml (SHT4x, SCD4x, BH1750, DHT22) lints clean and serves on
// --sim from the real binary over stdio: every read_* is good with a
// value (the simulated SCD4x is measuring when the world begins).
func TestPiClimateExample(t *testing.T) {
	servesGood(t, piClimate, "pi-climate.yml: ok: gateway pi-climate, 2 buses, 5 devices, 9 tools", 7)
}
