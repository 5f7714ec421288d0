package sim_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/promcp/promcp-device/drivers"
	"github.com/promcp/promcp-device/drivers/i2c"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/manifests/manifesttest"
	"github.com/promcp/promcp-device/sim"
	"periph.io/x/conn/v3/physic"
)

const climateManifest = `version: 1
gateway: climate
buses: [{name: i2c1, kind: i2c}]
devices:
  - {name: air, bus: i2c1, model: sht4x, address: 0x44}
  - {name: light, bus: i2c1, model: bh1750, address: 0x23, sim: {values: {illuminance: 28066.67}}}
  - {name: co2, bus: i2c1, model: scd4x, address: 0x62, sim: {values: {co2: 500}}}
  - {name: heater, bus: i2c1, model: registers, address: 0x20, registers: [{name: r, address: 0, type: uint8}]}
sim:
  zones:
    - {name: room, temperature: 21.5, humidity: 45, sensors: [air, co2]}
`

func noWait(context.Context, time.Duration) error { return nil }

// The declared models' twins answer the real drivers: the SHT4x and the
// SCD4x read their zone's air, the BH1750 its sim.values.
func TestSimDeclaredTwinsAgainstDrivers(t *testing.T) {
	w, clk := newWorld(t, manifesttest.Parse(t, "climate.yml", climateManifest))
	bus := i2c.NewBus("i2c1", openBus(t, w, "i2c1"), 0, nil)
	ctx := t.Context()

	s, err := i2c.NewSHT4x(bus, 0x44, noWait).Sense(ctx)
	if err != nil || math.Abs(s.Celsius-21.5) > 0.01 || math.Abs(s.Humidity-45) > 0.01 {
		t.Fatalf("sht4x %+v, %v; want 21.5 °C, 45 %%", s, err)
	}
	l, err := i2c.NewBH1750(bus, 0x23, noWait).Sense(ctx)
	if err != nil || math.Round(l.Lux) != 28067 || l.Raw != [2]byte{0x83, 0x90} {
		t.Fatalf("bh1750 %+v, %v; want 0x8390, 28067 lx", l, err)
	}

	// Stopped, the twin is a sensor just powered up.
	if err := openBus(t, w, "i2c1").Tx(0x62, []byte{0x3F, 0x86}, nil); err != nil {
		t.Fatal(err)
	}
	co2 := i2c.NewSCD4x(bus, 0x62, noWait)
	if _, err := co2.Sense(ctx); !errors.Is(err, i2c.ErrSCD4xNotReady) {
		t.Fatalf("scd4x before its first measurement: %v, want not ready", err)
	}
	clk.Advance(i2c.SCD4xPeriod)
	r, err := co2.Sense(ctx)
	if err != nil || r.PPM != 500 || math.Abs(r.Celsius-21.5) > 0.2 || math.Abs(r.Humidity-45) > 1 {
		t.Fatalf("scd4x %+v, %v; want 500 ppm, 21.5 °C, 45 %%", r, err)
	}
	// The zone's air changes; the sensor reports it at its next period.
	if err := w.SetZoneTemperature("room", 25); err != nil {
		t.Fatal(err)
	}
	if r2, err := co2.Sense(ctx); err != nil || r2 != r {
		t.Fatalf("scd4x within the period: %+v, %v; want the last measurement", r2, err)
	}
	clk.Advance(i2c.SCD4xPeriod)
	if r3, err := co2.Sense(ctx); err != nil || math.Abs(r3.Celsius-25) > 0.2 {
		t.Fatalf("scd4x next period: %+v, %v; want 25 °C", r3, err)
	}
}

// The twins' faults reach the drivers as the real chips' would: a corrupted
// checksum is a CRC error, implausible rails a channel, stuck freezes it.
func TestSimDeclaredTwinFaults(t *testing.T) {
	w, _ := newWorld(t, manifesttest.Parse(t, "climate.yml", climateManifest))
	bus := i2c.NewBus("i2c1", openBus(t, w, "i2c1"), 0, nil)
	ctx := t.Context()
	sht := i2c.NewSHT4x(bus, 0x44, noWait)

	if err := w.Inject("air", manifests.Fault{Kind: manifests.FaultCRC}); err != nil {
		t.Fatal(err)
	}
	if _, err := sht.Sense(ctx); !errors.Is(err, drivers.ErrCRC) {
		t.Fatalf("crc fault: %v", err)
	}
	v := 99.0
	if err := w.Inject("air", manifests.Fault{Kind: manifests.FaultImplausible, Channel: "temperature", Value: &v}); err != nil {
		t.Fatal(err)
	}
	if s, err := sht.Sense(ctx); err != nil || math.Abs(s.Celsius-99) > 0.01 || math.Abs(s.Humidity-45) > 0.01 {
		t.Fatalf("implausible temperature: %+v, %v", s, err)
	}
	if err := w.Inject("light", manifests.Fault{Kind: manifests.FaultStuck}); err != nil {
		t.Fatal(err)
	}
	bh := i2c.NewBH1750(bus, 0x23, noWait)
	first, err := bh.Sense(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Inject("light", manifests.Fault{Kind: manifests.FaultCRC}); err == nil {
		t.Fatal("crc fault accepted on a bh1750 (it has no checksum)")
	}
	if again, err := bh.Sense(ctx); err != nil || again != first {
		t.Fatalf("stuck: %+v then %+v, %v", first, again, err)
	}
}

// The SCD4x twin begins measuring (a gateway restarted while the sensor
// measures): it refuses a second start as the chip does, and the driver
// reads on at once.
func TestSimSCD4xAlreadyMeasuring(t *testing.T) {
	w, _ := newWorld(t, manifesttest.Parse(t, "climate.yml", climateManifest))
	b := openBus(t, w, "i2c1")
	if err := b.Tx(0x62, []byte{0x21, 0xB1}, nil); err == nil {
		t.Fatal("start_periodic_measurement accepted while measuring")
	}
	r, err := i2c.NewSCD4x(i2c.NewBus("i2c1", b, 0, nil), 0x62, noWait).Sense(t.Context())
	if err != nil || r.PPM != 500 {
		t.Fatalf("%+v, %v", r, err)
	}
}

// Noise on one channel of a twin adds spikes of the fault's amplitude, in
// the channel's unit, to that channel alone.
func TestSimDeclaredNoise(t *testing.T) {
	w, _ := newWorld(t, manifesttest.Parse(t, "climate.yml", climateManifest))
	bus := i2c.NewBus("i2c1", openBus(t, w, "i2c1"), 0, nil)
	if err := w.Inject("light", manifests.Fault{Kind: manifests.FaultNoise, Channel: "illuminance", Amplitude: 100}); err != nil {
		t.Fatal(err)
	}
	bh := i2c.NewBH1750(bus, 0x23, noWait)
	for range 4 {
		r, err := bh.Sense(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if d := math.Abs(r.Lux - 28066.67); d < 49 || d > 101 {
			t.Fatalf("%v lx: a spike of %.1f, want 50..100", r.Lux, d)
		}
	}
}

// An sht3x without a zone reads its sim.values, as the other declared
// sensors do; without them, the simulator's default air.
func TestSimSHT3xValues(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w, clk := newWorld(t, manifesttest.Parse(t, "sht3x.yml", `version: 1
gateway: g
buses: [{name: i2c1, kind: i2c}]
devices:
  - {name: set, bus: i2c1, model: sht3x, address: 0x44, sim: {values: {temperature: 31.5, humidity: 62}}}
  - {name: plain, bus: i2c1, model: sht3x, address: 0x45}
`))
		bus := i2c.NewBus("i2c1", openBus(t, w, "i2c1"), 0, nil)
		for _, c := range []struct {
			addr  uint16
			t, rh float64
		}{{0x44, 31.5, 62}, {0x45, sim.DefaultTemperature, sim.DefaultHumidity}} {
			s, err := i2c.NewSHT3x(bus, c.addr, i2c.WithSleep(sleepOn(clk))).Sense(t.Context())
			if err != nil || math.Abs(s.Temperature.Celsius()-c.t) > 0.01 || math.Abs(float64(s.Humidity)/float64(physic.PercentRH)-c.rh) > 0.02 {
				t.Errorf("sht3x at 0x%02x: %+v, %v; want %g °C, %g %%", c.addr, s, err, c.t, c.rh)
			}
		}
	})
}
