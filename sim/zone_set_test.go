package sim_test

import (
	"testing"
	"time"

	"github.com/promcp/promcp-device/manifests/manifesttest"
)

// TestSetZone: a zone set to a temperature reads it, then drifts toward
// the outside temperature set, on the clock.
func TestSetZone(t *testing.T) {
	w, clk := newWorld(t, manifesttest.Load(t, "../manifests/examples/greenhouse.yml"))
	if err := w.SetZoneTemperature("zone1", 30); err != nil {
		t.Fatal(err)
	}
	if z, _ := w.Zone("zone1"); z.Temperature != 30 {
		t.Fatalf("zone1 = %v °C, want 30", z.Temperature)
	}
	if err := w.SetZoneOutside("zone1", -10); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour)
	if z, _ := w.Zone("zone1"); z.Temperature >= 30 || z.Temperature < -10 {
		t.Fatalf("zone1 after an hour at -10 °C outside = %v °C, want between -10 and 30", z.Temperature)
	}
	if w.SetZoneTemperature("zone9", 1) == nil || w.SetZoneOutside("zone9", 1) == nil {
		t.Error("an unknown zone is accepted")
	}
}
