package main

import (
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

const energyMeters = "../../manifests/examples/energy-meters.yml"

// TestEnergyMetersServedOnSim: `serve --sim` on the energy-meters example
// serves the profiles through the real drivers: the SDM630 and SDM120
// read over the simulated RS-485 line (a pseudo-terminal) from their
// profiles' registers, a relay of the board switched and read back, and
// the Shelly EM's meter and relay over the embedded broker, its relay
// commanded on relay/0/command; and the example lints clean with every
// read_* and can_do called on the served binary.
func TestEnergyMetersServedOnSim(t *testing.T) {
	t.Parallel()
	s := stdioSession(t, mcp.ProtocolVersion20251125, "--manifest", energyMeters, "--role", "admin")
	for tool, want := range map[string]float64{"read_mains_voltage_l1": 230, "read_mains_power": 150, "read_heat_pump_power": 150} {
		if body, _ := s.call(tool, map[string]any{}); body["quality"] != "good" || body["value"] != want {
			t.Errorf("%s = %v, want good %v from the Eastron twin", tool, body, want)
		}
	}
	res, _ := s.call("do_set_garden_pump", map[string]any{"value": true, "idempotency_key": "profiles-pump-1"})
	if res["status"] != "success" || res["applied_value"] != true || res["previous_value"] != false {
		t.Errorf("do_set_garden_pump(true) = %v, want success, false → true read back from coil 1", res)
	}
	// The Shelly's first messages travel through the broker on their own
	// (two minutes bound a broker that never delivers, never asserted).
	deadline := time.Now().Add(2 * time.Minute)
	good := func(tool string) map[string]any { return s.untilGood(tool, deadline) }
	if body := good("read_garage_power"); body["quality"] != "good" || body["value"] != 150.0 {
		t.Fatalf("read_garage_power = %v, want good 150 from shellies/shellyem-B9F3C1/emeter/0/power", body)
	}
	if body := good("read_ev_charger"); body["value"] != false {
		t.Fatalf("read_ev_charger = %v, want good false from shellies/shellyem-B9F3C1/relay/0", body)
	}
	res, _ = s.call("do_set_ev_charger", map[string]any{"value": true, "idempotency_key": "profiles-ev-1"})
	if res["status"] != "success" || res["applied_value"] != true {
		t.Errorf("do_set_ev_charger(true) = %v, want success, the Shelly's relay/0 read back on", res)
	}
	if found, rep := s.canDoOffers(map[string]any{"action": "charge the car", "location": "garage"},
		"do_set_ev_charger", "energy-1/mqtt:shelly/garage_em"); !found {
		t.Errorf("can_do = %v, want do_set_ev_charger from energy-1/mqtt:shelly/garage_em", rep)
	}

	code, codes := lintJSON(t, "--call-reads", "--manifest", energyMeters, "--", binary, "serve", "--sim", "--manifest", energyMeters, "--log-level", "error")
	if code != 0 {
		t.Errorf("lint --call-reads -- serve --sim energy-meters: exit %d, %s", code, strings.Join(codes, " "))
	}
}
