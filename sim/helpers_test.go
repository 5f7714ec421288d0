package sim_test

import (
	"context"
	"testing"
	"time"

	pgpio "periph.io/x/conn/v3/gpio"
	pi2c "periph.io/x/conn/v3/i2c"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/drivers/gpio"
	"github.com/promcp/promcp-device/drivers/i2c"
	"github.com/promcp/promcp-device/drivers/i2c/i2cconf"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/sim"
)

var epoch = time.Date(2026, 3, 1, 6, 0, 0, 0, time.UTC)

// greenhouse mirrors manifests/examples/greenhouse.yml (the part the
// simulator reads), with the given noise.
func greenhouse(noise float64) *manifests.Manifest {
	return &manifests.Manifest{
		Gateway: "greenhouse-1",
		Buses: []manifests.Bus{
			{Name: "i2c1", Kind: manifests.BusI2C, Device: "1", Timeout: 100 * time.Millisecond},
			{Name: "gpio", Kind: manifests.BusGPIO},
		},
		Devices: []manifests.Device{
			{Name: "zone1_climate", Bus: "i2c1", Model: manifests.ModelSHT3x, Address: 0x44},
			{Name: "zone2_climate", Bus: "i2c1", Model: manifests.ModelSHT3x, Address: 0x45},
			{Name: "heater_relay", Bus: "gpio", Model: manifests.ModelGPIOOut, Pin: "GPIO17", ActiveLow: true},
			{Name: "vent_motor", Bus: "gpio", Model: manifests.ModelGPIOOut, Pin: "GPIO27"},
		},
		Sim: &manifests.Sim{
			Seed: 7,
			Zones: []manifests.Zone{
				{
					Name: "zone1", Temperature: 16, Humidity: 70, Outside: 6, HeaterRate: 0.6, Noise: noise,
					Sensors: []string{"zone1_climate"}, Heaters: []string{"heater_relay"}, Vents: []string{"vent_motor"},
				},
				{
					Name: "zone2", Temperature: 17.5, Humidity: 65, Outside: 6, HeaterRate: 0.4, Noise: noise,
					Sensors: []string{"zone2_climate"}, Heaters: []string{"heater_relay"}, Vents: []string{"vent_motor"},
				},
			},
		},
	}
}

// labBench mirrors manifests/examples/lab-bench.yml.
func labBench() *manifests.Manifest {
	return &manifests.Manifest{
		Gateway: "bench-1",
		Buses: []manifests.Bus{
			{Name: "i2c1", Kind: manifests.BusI2C, Device: "1"},
			{Name: "gpio", Kind: manifests.BusGPIO},
		},
		Devices: []manifests.Device{
			{
				Name: "grow_light", Bus: "i2c1", Model: manifests.ModelRegisters, Address: 0x20,
				Registers: []manifests.Register{
					{Name: "dimmer", Address: 0x01, Type: i2cconf.RegUint8, Scale: 0.5, Writable: true},
					{Name: "lux", Address: 0x02, Type: i2cconf.RegUint16, ByteOrder: i2cconf.BigEndian},
					{Name: "driver_temperature", Address: 0x04, Type: i2cconf.RegInt16, ByteOrder: i2cconf.LittleEndian, Scale: 0.01},
				},
				Sim: &manifests.DeviceSim{Values: map[string]float64{"dimmer": 40, "lux": 12000, "driver_temperature": 31.5}},
			},
			{Name: "door_switch", Bus: "gpio", Model: manifests.ModelGPIOIn, Pin: "GPIO22", Pull: manifests.PullUp},
			{Name: "pump_relay", Bus: "gpio", Model: manifests.ModelGPIOOut, Pin: "GPIO23"},
		},
	}
}

// newWorld builds m on a manual clock.
func newWorld(t *testing.T, m *manifests.Manifest) (*sim.World, *clock.Manual) {
	t.Helper()
	clk := clock.NewManual(epoch)
	w, err := sim.New(m, clk)
	if err != nil {
		t.Fatalf("New() = %v", err)
	}
	return w, clk
}

// openBus opens a manifest bus on w and closes it at the end of the test.
func openBus(t *testing.T, w *sim.World, name string) pi2c.BusCloser {
	t.Helper()
	b, err := w.I2C(t.Context(), name)
	if err != nil {
		t.Fatalf("I2C(%q) = %v", name, err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// openOutput opens a gpio_out on w with the real driver.
func openOutput(t *testing.T, w *sim.World, pin string, activeLow bool) *gpio.Output {
	t.Helper()
	p, err := w.Pin(t.Context(), pin)
	if err != nil {
		t.Fatalf("Pin(%q) = %v", pin, err)
	}
	o := gpio.NewOutput(pin, p, activeLow, nil)
	if err := o.Open(t.Context()); err != nil {
		t.Fatalf("Open(%s) = %v", pin, err)
	}
	return o
}

// switchOn opens a gpio_out on w with the real driver and turns it on.
func switchOn(t *testing.T, w *sim.World, pin string, activeLow bool) {
	t.Helper()
	if err := openOutput(t, w, pin, activeLow).Set(t.Context(), true); err != nil {
		t.Fatalf("Set(%s, true) = %v", pin, err)
	}
}

// sleepOn is an SHT3x sleep that advances the manual clock instead of
// waiting.
func sleepOn(clk *clock.Manual) i2c.SleepFunc {
	return func(ctx context.Context, d time.Duration) error {
		clk.Advance(d)
		return ctx.Err()
	}
}

var (
	_ pi2c.BusCloser = (*sim.I2CBus)(nil)
	_ pgpio.PinIO    = (*sim.Pin)(nil)
	_ clock.Clock    = (*clock.Manual)(nil)
	_ clock.Clock    = (*clock.Scaled)(nil)
)
