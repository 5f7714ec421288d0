package gateway_test

import (
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/manifests/manifesttest"
	"github.com/promcp/promcp-device/promcp"
)

// piSensors is every I²C chip model.
const piSensors = "../manifests/examples/pi-sensors.yml"

// Every chip reads back its sim values through the drivers and the server,
// to the chip's resolution: the simulated chips encode with the datasheet
// conversion, the drivers decode with it.
func TestChipsReadThroughServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBench(t, manifesttest.Load(t, piSensors))
		for _, tc := range []struct {
			tool      string
			want, tol float64
		}{
			{"read_air_temperature", 21.5, 0.01},
			{"read_air_pressure", 1008.2, 0.01},
			{"read_air_humidity", 55, 0.001},
			{"read_soil_moisture", 40, 0.01},      // 2.15 V, 1/8000 V per count over a 1.5 V span
			{"read_tank_level", 62.5, 0.01},       // 14 mA: 2.1 V across 150 Ω
			{"read_tank_loop_current", 14, 0.001}, // the same input, in mA
			{"read_probe_supply", 3.3, 0.000125},
			{"read_supply_voltage", 12.1, 0.002},
			{"read_supply_current", 0.42, 0.0002},
			{"read_supply_power", 12.1 * 0.42, 0.01},
		} {
			r := b.read(tc.tool, nil)
			v, ok := r.Value.(float64)
			if r.Quality != promcp.QualityGood || !ok || math.Abs(v-tc.want) > tc.tol {
				t.Errorf("%s = %v %s %q, want %g ± %g, good", tc.tool, r.Value, r.Quality, r.QualityReason, tc.want, tc.tol)
			}
		}
		for tool, want := range map[string]bool{"read_valve_1": false, "read_valve_2": false, "read_tank_full": true, "read_lamp": false, "read_lid_open": false} {
			if r := b.read(tool, nil); r.Value != want || r.Quality != promcp.QualityGood {
				t.Errorf("%s = %v %s, want %v", tool, r.Value, r.Quality, want)
			}
		}
	})
}

// A relay on each expander: do_* writes the latch and reads the pin back;
// the other relay on the same chip keeps its state.
func TestExpanderRelaysThroughServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBench(t, manifesttest.Load(t, piSensors))
		for _, tool := range []string{"do_set_valve_1", "do_set_lamp"} {
			var do promcp.DoResult
			b.call(tool, map[string]any{"value": true}, &do)
			if do.Status != promcp.StatusSuccess || do.AppliedValue != true || do.PreviousValue != false {
				t.Fatalf("%s(true) = %+v, want success false -> true", tool, do)
			}
		}
		b.clk.Advance(ttl)
		if r := b.read("read_valve_1", nil); r.Value != true {
			t.Errorf("valve_1 after do: %v, want true", r.Value)
		}
		if r := b.read("read_valve_2", nil); r.Value != false {
			t.Errorf("valve_2 after valve_1's do: %v, want false (untouched)", r.Value)
		}
		if r := b.read("read_tank_full", nil); r.Value != true {
			t.Errorf("the input beside the relays: %v, want true", r.Value)
		}
		var do promcp.DoResult
		b.call("do_set_valve_1", map[string]any{"value": false}, &do)
		if do.Status != promcp.StatusSuccess || do.AppliedValue != false {
			t.Fatalf("do_set_valve_1(false) = %+v", do)
		}
	})
}

// Fault classes on the chips, through the server. None of these chips
// sends a checksum, so crc does not apply to them.
func TestChipFaultsThroughServer(t *testing.T) {
	cases := []faultCase{
		{"read_air_temperature", "weather", manifests.Fault{Kind: manifests.FaultNACK}, 1, promcp.QualityError, "read failed (nack)"},
		{"read_air_temperature", "weather", manifests.Fault{Kind: manifests.FaultDropout}, 1, promcp.QualityError, "read failed (nack)"},
		{"read_air_temperature", "weather", manifests.Fault{Kind: manifests.FaultImplausible, Value: ptr(120.0)}, 1, promcp.QualityDegraded, "implausible: 120 °C outside -40..85 °C"},
		{"read_air_pressure", "weather", manifests.Fault{Kind: manifests.FaultImplausible, Channel: "pressure", Value: ptr(1500.0)}, 1, promcp.QualityDegraded, "implausible: 1500 hPa outside 300..1100 hPa"},
		{"read_air_temperature", "weather", manifests.Fault{Kind: manifests.FaultTimeout}, 1, promcp.QualityStale, "read failed (timeout); last good value from 5 s ago"},
		{"read_tank_level", "adc", manifests.Fault{Kind: manifests.FaultNACK}, 1, promcp.QualityError, "read failed (nack)"},
		// A broken loop rails the input: the chip saturates at full scale.
		{"read_tank_level", "adc", manifests.Fault{Kind: manifests.FaultImplausible, Channel: "tank_level"}, 1, promcp.QualityDegraded, "implausible: "},
		{"read_supply_voltage", "supply", manifests.Fault{Kind: manifests.FaultNACK}, 1, promcp.QualityError, "read failed (nack)"},
		{"read_supply_voltage", "supply", manifests.Fault{Kind: manifests.FaultImplausible, Channel: "bus_voltage"}, 1, promcp.QualityDegraded, "implausible: 32.76 V outside 0..26 V"},
		{"read_valve_1", "relays_a", manifests.Fault{Kind: manifests.FaultNACK}, 1, promcp.QualityError, "read failed (nack)"},
		{"read_lid_open", "relays_b", manifests.Fault{Kind: manifests.FaultDropout}, 1, promcp.QualityError, "read failed (nack)"},
		{"read_lid_open", "relays_b", manifests.Fault{Kind: manifests.FaultSlow, Delay: 50 * time.Millisecond}, 1, promcp.QualityGood, ""},
	}
	runFaultCases(t, cases, manifests.DefaultTTL, true, func(t *testing.T) *bench { return newBench(t, manifesttest.Load(t, piSensors)) })
}

// A stuck chip answers the same bytes while the world changes: the stuck
// rule sees it once it has its samples, and the faults a chip cannot have
// are refused.
func TestChipStuckAndRefusedFaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBench(t, manifesttest.Load(t, piSensors))
		for _, dev := range []string{"weather", "adc", "supply", "relays_a", "relays_b"} {
			if err := b.w.Inject(dev, manifests.Fault{Kind: manifests.FaultCRC}); err == nil {
				t.Errorf("crc on %s accepted; the chip has no checksum", dev)
			}
			if err := b.w.Inject(dev, manifests.Fault{Kind: manifests.FaultStuck}); err != nil {
				t.Errorf("stuck on %s: %v", dev, err)
			}
		}
		for _, dev := range []string{"relays_a", "relays_b"} {
			if err := b.w.Inject(dev, manifests.Fault{Kind: manifests.FaultImplausible}); err == nil {
				t.Errorf("implausible on expander %s accepted", dev)
			}
		}
		// A stuck expander keeps answering the level it froze: the relay
		// written does not read back.
		b.w.Inject("relays_b", manifests.Fault{Kind: manifests.FaultStuck})
		b.read("read_lamp", nil)
		var do promcp.DoResult
		b.call("do_set_lamp", map[string]any{"value": true}, &do)
		if do.Status != promcp.StatusPartial || do.AppliedValue != false {
			t.Errorf("do_set_lamp on a stuck expander = %+v, want partial with the value read back (false)", do)
		}
	})
}

func ptr(v float64) *float64 { return &v }
