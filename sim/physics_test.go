package sim_test

import (
	"math"
	"testing"
	"time"
)

// newton is the exact temperature after d at a constant heating rate (°C/s)
// and decay constant k (1/s) toward outside.
func newton(t0, outside, heat, k float64, d time.Duration) float64 {
	eq := outside + heat/k
	return eq + (t0-eq)*math.Exp(-k*d.Seconds())
}

const (
	leak = 1 / 7200.0 // 1/s, the default 2h
	vent = 1 / 600.0  // 1/s, the default 10m
)

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %.6f, want %.6f ± %g", what, got, want, tol)
	}
}

// Zone 1 (16 °C, outside 6 °C, heater 0.6 °C/min): ten minutes of heater add
// about 6 °C minus what leaks out.
func TestHeaterRaisesTemperature(t *testing.T) {
	w, clk := newWorld(t, greenhouse(0))
	switchOn(t, w, "GPIO17", true) // the heater
	clk.Advance(10 * time.Minute)
	z, _ := w.Zone("zone1")
	want := newton(16, 6, 0.6/60, leak, 10*time.Minute)
	near(t, "zone1 temperature", z.Temperature, want, 1e-9)
	if rise := z.Temperature - 16; rise < 4.8 || rise > 6 {
		t.Errorf("zone1 rose %.3f °C in 10 min, want about 0.6×10 minus leak", rise)
	}
	// Warmer air holds the same water: relative humidity falls 4 %/°C.
	near(t, "zone1 humidity", z.Humidity, 70-4*(z.Temperature-16), 1e-9)

	z2, _ := w.Zone("zone2")
	near(t, "zone2 temperature", z2.Temperature, newton(17.5, 6, 0.4/60, leak, 10*time.Minute), 1e-9)
}

// Without heat the zone leaks toward outside.
func TestLeakCools(t *testing.T) {
	w, clk := newWorld(t, greenhouse(0))
	clk.Advance(time.Hour)
	z, _ := w.Zone("zone1")
	near(t, "zone1 temperature", z.Temperature, newton(16, 6, 0, leak, time.Hour), 1e-9)
}

// A pin change is applied only after the zone advanced to it, so on-time is
// exact however rarely the world is observed.
func TestHeaterOnTimeExact(t *testing.T) {
	w, clk := newWorld(t, greenhouse(0))
	heater := openOutput(t, w, "GPIO17", true)
	clk.Advance(2 * time.Minute) // nobody looks
	if err := heater.Set(t.Context(), true); err != nil {
		t.Fatal(err)
	}
	clk.Advance(3*time.Minute + 500*time.Millisecond)
	if err := heater.Set(t.Context(), false); err != nil {
		t.Fatal(err)
	}
	clk.Advance(5 * time.Minute)
	z, _ := w.Zone("zone1")
	want := newton(16, 6, 0, leak, 2*time.Minute)
	want = newton(want, 6, 0.01, leak, 3*time.Minute+500*time.Millisecond)
	want = newton(want, 6, 0, leak, 5*time.Minute)
	near(t, "zone1 temperature", z.Temperature, want, 1e-9)
}

// An open vent pulls the zone toward outside ten times faster than the leak,
// and its humidity toward 50 %.
func TestVentCoolsAndDries(t *testing.T) {
	w, clk := newWorld(t, greenhouse(0))
	switchOn(t, w, "GPIO27", false) // the vent
	clk.Advance(10 * time.Minute)
	z, _ := w.Zone("zone1")
	near(t, "zone1 temperature", z.Temperature, newton(16, 6, 0, leak+vent, 10*time.Minute), 1e-9)
	closed := newton(16, 6, 0, leak, 10*time.Minute)
	if z.Temperature >= closed-1 {
		t.Errorf("vent open: %.3f °C, want well below %.3f °C (vent closed)", z.Temperature, closed)
	}
	// Cooling alone would raise RH by 4 %/°C; the vent pulls it to 50 %.
	if z.Humidity >= 70 || z.Humidity <= 50 {
		t.Errorf("vent open 10 min: humidity %.2f %%, want between 50 and 70", z.Humidity)
	}
	clk.Advance(2 * time.Hour)
	z, _ = w.Zone("zone1")
	near(t, "zone1 humidity after 2h of vent", z.Humidity, 50, 0.01)
}

// Heater and vent together settle where heating balances the losses.
func TestHeaterAndVentEquilibrium(t *testing.T) {
	w, clk := newWorld(t, greenhouse(0))
	switchOn(t, w, "GPIO17", true)
	switchOn(t, w, "GPIO27", false)
	clk.Advance(24 * time.Hour)
	z, _ := w.Zone("zone1")
	near(t, "zone1 temperature", z.Temperature, 6+0.01/(leak+vent), 1e-6)
}

// A long unobserved gap integrates in bounded time and stays exact.
func TestLongGap(t *testing.T) {
	w, clk := newWorld(t, greenhouse(0))
	switchOn(t, w, "GPIO17", true)
	clk.Advance(90 * 24 * time.Hour)
	z, _ := w.Zone("zone1")
	near(t, "zone1 temperature", z.Temperature, 6+0.01/leak, 1e-6)
	near(t, "zone1 humidity", z.Humidity, 5, 0) // clamped
}

func TestZoneUnknown(t *testing.T) {
	w, _ := newWorld(t, greenhouse(0))
	if _, ok := w.Zone("zone9"); ok {
		t.Error("Zone(zone9) exists")
	}
}
