package main

import (
	"strings"
	"testing"
)

const piClimate = "../../manifests/examples/pi-climate.yml"

// pi-climate.yml (SHT4x, SCD4x, BH1750, DHT22) lints clean and serves on
// --sim from the real binary over stdio: every read_* is good with a
// value (the simulated SCD4x is measuring when the world begins).
func TestPiClimateExample(t *testing.T) {
	out, _, code := runCLI(t, "lint", piClimate)
	if code != 0 || !strings.Contains(out, "pi-climate.yml: ok: gateway pi-climate, 2 buses, 5 devices, 9 tools") ||
		!strings.Contains(out, "pi-climate.policy.yml: ok: policy") || strings.Contains(out, "warning") {
		t.Fatalf("lint pi-climate: exit %d, %q", code, out)
	}
	s := stdioSession(t, protocols[0], "--manifest", piClimate)
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
	if reads != 7 {
		t.Errorf("%d read_* tools, want 7", reads)
	}
}
