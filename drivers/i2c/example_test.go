package i2c_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/drivers/i2c"
	"github.com/promcp/promcp-device/drivers/i2c/i2cconf"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/sim"
)

// An SHT31 at 0x44 on the simulator, in a zone at 16 °C and 70 %RH. On a
// Raspberry Pi the bus would come from host.Host.I2C(ctx, "1") instead.
func ExampleSHT3x_Sense() {
	ctx := context.Background()
	m := &manifests.Manifest{
		Buses:   []manifests.Bus{{Name: "i2c1", Kind: manifests.BusI2C, Device: "1"}},
		Devices: []manifests.Device{{Name: "zone1_climate", Bus: "i2c1", Model: manifests.ModelSHT3x, Address: 0x44}},
		Sim: &manifests.Sim{Zones: []manifests.Zone{
			{Name: "zone1", Temperature: 16, Humidity: 70, Outside: 6, Sensors: []string{"zone1_climate"}},
		}},
	}
	clk := clock.NewManual(time.Date(2026, 3, 1, 6, 0, 0, 0, time.UTC))
	world, err := sim.New(m, clk)
	if err != nil {
		log.Fatal(err)
	}
	raw, err := world.I2C(ctx, "i2c1")
	if err != nil {
		log.Fatal(err)
	}
	defer raw.Close() // the opener closes the bus, not the driver

	bus := i2c.NewBus("i2c1", raw, 100*time.Millisecond, nil)
	sensor := i2c.NewSHT3x(bus, 0x44, i2c.WithSleep(func(ctx context.Context, d time.Duration) error {
		clk.Advance(d) // simulated time passes instead of real time
		return ctx.Err()
	}))
	s, err := sensor.Sense(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%.1f °C, %.1f %%RH\n", s.Temperature.Celsius(), float64(s.Humidity)/1e5)
	// Output: 16.0 °C, 70.0 %RH
}

// A register-map device: the grow light of manifests/examples/lab-bench.yml.
func ExampleRegisters() {
	ctx := context.Background()
	dimmer := manifests.Register{Name: "dimmer", Address: 0x01, Type: i2cconf.RegUint8, Scale: 0.5, Writable: true}
	m := &manifests.Manifest{
		Buses: []manifests.Bus{{Name: "i2c1", Kind: manifests.BusI2C}},
		Devices: []manifests.Device{{
			Name: "grow_light", Bus: "i2c1", Model: manifests.ModelRegisters, Address: 0x20, Registers: []manifests.Register{dimmer},
			Sim: &manifests.DeviceSim{Values: map[string]float64{"dimmer": 40}},
		}},
	}
	world, err := sim.New(m, clock.NewManual(time.Time{}))
	if err != nil {
		log.Fatal(err)
	}
	raw, err := world.I2C(ctx, "i2c1")
	if err != nil {
		log.Fatal(err)
	}
	defer raw.Close()

	light := i2c.NewRegisters(i2c.NewBus("i2c1", raw, 0, nil), 0x20, []i2cconf.Register{
		{Name: "dimmer", Address: 0x01, Type: i2cconf.RegUint8, Scale: 0.5, Writable: true},
	})
	before, _ := light.Read(ctx, "dimmer")
	if err := light.Write(ctx, "dimmer", 72.5); err != nil {
		log.Fatal(err)
	}
	after, _ := light.Read(ctx, "dimmer")
	fmt.Println(before, after)
	fmt.Println(light.Write(ctx, "dimmer", 150))
	// Output:
	// 40 72.5
	// register dimmer write: i2c i2c1 addr 0x20: 150 does not fit (range 0..127.5): encode uint8: value out of range: 300 is outside 0..255
}
