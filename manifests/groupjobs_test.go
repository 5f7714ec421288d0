package manifests

import (
	"slices"
	"strings"
	"testing"
)

const groupJobsManifest = `version: 1
gateway: bench
buses:
  - {name: gpio, kind: gpio}
devices:
  - {name: valve_relay, bus: gpio, model: gpio_out, pin: GPIO24}
  - {name: pump_relay, bus: gpio, model: gpio_out, pin: GPIO25}
  - {name: fan_relay, bus: gpio, model: gpio_out, pin: GPIO26}
capabilities:
  - {name: valve, type: boolean, read: {device: valve_relay}, do: {tool: do_set_valve, side_effects: [water flows], safe_value: false}}
  - {name: pump, type: boolean, read: {device: pump_relay}, do: {tool: do_set_pump, side_effects: [pumps], safe_value: false}}
  - {name: fan, type: boolean, read: {device: fan_relay}, do: {tool: do_set_fan, side_effects: [blows], safe_value: false}}
groups:
  - {name: water, capabilities: [valve, pump]}
  - {name: pump_only, capabilities: [pump]}
  - {name: fan_only, capabilities: [fan]}
  - {name: all, capabilities: [valve, pump, fan]}
jobs:
  - name: water
    steps:
      - {capability: valve, value: true, hold: 10s}
      - {capability: pump, value: true, hold: 1m}
  - name: prime
    hold: {capability: fan, value: true, for: 10s}
`

// TestGroupJobs: a group lists the jobs whose capabilities it holds every
// one of, and their three tools count toward its density limits, in an
// error that names them.
func TestGroupJobs(t *testing.T) {
	m, err := Parse("g.yml", []byte(groupJobsManifest))
	if err == nil || !strings.Contains(err.Error(), `group "all" serves 13 tools (5 read_*, 7 do_*, can_do, with the tools of the jobs water, prime whose capabilities it holds); want at most 8`) {
		t.Fatalf("err = %v; want group all over the limits, naming its jobs", err)
	}
	m, err = Parse("g.yml", []byte(strings.Replace(groupJobsManifest, "  - {name: all, capabilities: [valve, pump, fan]}\n", "", 1)))
	if err != nil {
		t.Fatal(err)
	}
	water, _ := m.Group("water")
	pump, _ := m.Group("pump_only")
	fan, _ := m.Group("fan_only")
	if !slices.Equal(water.Jobs, []string{"water"}) || pump.Jobs != nil || !slices.Equal(fan.Jobs, []string{"prime"}) {
		t.Errorf("jobs: water %v, pump_only %v, fan_only %v; want [water], none (water needs the valve too), [prime]", water.Jobs, pump.Jobs, fan.Jobs)
	}
	if tools, do := m.GroupSurface(water); tools != 8 || do != 4 {
		t.Errorf("GroupSurface(water) = %d tools, %d do_*; want 8 and 4", tools, do)
	}
}
