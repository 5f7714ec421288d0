package manifests

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestScenarioGolden parses every testdata/scenarios/<case>/scenario.yml
// against testdata/scenarios/bench.yml and compares the errors with
// want.err (empty for a valid scenario).
func TestScenarioGolden(t *testing.T) {
	m := mustLoad(t, "scenarios", "bench.yml")
	files, err := filepath.Glob(filepath.Join("testdata", "scenarios", "*", "scenario.yml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenario cases: %v", err)
	}
	for _, f := range files {
		compareGolden(t, f, func(data []byte) (bool, error) {
			if !IsScenario(data) {
				t.Errorf("IsScenario(%s) = false, want true", f)
			}
			sc, err := ParseScenario("scenario.yml", data, m)
			return sc != nil, err
		})
	}
}

func TestIsScenario(t *testing.T) {
	for _, tc := range []struct {
		data string
		want bool
	}{
		{"scenario: x\nfaults: []\n", true},
		{"version: 1\ngateway: g\n", false},
		{"- scenario\n", false},
		{"", false},
		{"{{{", false},
	} {
		if got := IsScenario([]byte(tc.data)); got != tc.want {
			t.Errorf("IsScenario(%q) = %t, want %t", tc.data, got, tc.want)
		}
	}
}

// A fault's channel on a pin, which has none, says the device has no
// channels (not an empty list): the pins are declared with one channel
// named "".
func TestScenarioPinChannel(t *testing.T) {
	m := mustLoad(t, "scenarios", "bench.yml")
	_, err := ParseScenario("s.yml", []byte("version: 1\nscenario: x\nfaults:\n  - {at: 1s, device: door, fault: noise, channel: level}\n"), m)
	want := `faults[0].channel: undefined channel "level" of device "door" (the manifest declares no channels)`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v\nwant %s", err, want)
	}
}

// A value fault on a modbus device may narrow to one of its registers (the
// twin honours it): the channel is checked against the registers, from
// the declaration, where it was once refused as "no channels".
func TestScenarioModbusFaultChannel(t *testing.T) {
	m, err := Load(filepath.Join("examples", "greenhouse.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseScenario("s.yml", []byte("version: 1\nscenario: x\nfaults:\n  - {at: 1s, device: energy_meter, fault: noise, channel: power}\n"), m); err != nil {
		t.Errorf("a register as the channel: %v", err)
	}
	_, err = ParseScenario("s.yml", []byte("version: 1\nscenario: x\nfaults:\n  - {at: 1s, device: energy_meter, fault: noise, channel: lux}\n"), m)
	if err == nil || !strings.Contains(err.Error(), `channel "lux" of device "energy_meter"`) || !strings.Contains(err.Error(), "energy") {
		t.Errorf("a channel that is no register: got %v", err)
	}
}
