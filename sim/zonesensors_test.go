package sim_test

import (
	"math"
	"testing"
	"time"

	"github.com/promcp/promcp-device/drivers/i2c"
	"github.com/promcp/promcp-device/manifests/manifesttest"
)

// A zone's heater warms every temperature sensor listed in it, a BME280
// as well as an SHT3x or a DS18B20.
func TestZoneWarmsBME280(t *testing.T) {
	m := manifesttest.Parse(t, "zone.yml", `version: 1
gateway: g
buses: [{name: i2c1, kind: i2c}, {name: gpio, kind: gpio}]
devices:
  - {name: env, bus: i2c1, model: bme280, address: 0x76}
  - {name: heater, bus: gpio, model: gpio_out, pin: GPIO17}
capabilities:
  - {name: temperature, type: number, unit: "°C", read: {device: env, channel: temperature}}
  - {name: heater, type: boolean, read: {device: heater}, do: {tool: do_set_heater, side_effects: [warms the room]}}
sim:
  zones: [{name: room, temperature: 16, humidity: 60, outside: 6, heater_rate: 0.6, sensors: [env], heaters: [heater]}]
`)
	w, clk := newWorld(t, m)
	b := openBus(t, w, "i2c1")
	tp, h := tx(t, b, 0x76, []byte{0x88}, 26), tx(t, b, 0x76, []byte{0xE1}, 7)
	cal, err := i2c.ParseBMECalibration(tp, h)
	if err != nil {
		t.Fatal(err)
	}
	measure := func() i2c.EnvSample {
		t.Helper()
		tx(t, b, 0x76, []byte{0xF2, 0x01, 0xF4, 0x25}, 0)
		s, err := cal.Sample(tx(t, b, 0x76, []byte{0xF7}, 8))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if s := measure(); math.Abs(s.Temperature-16) > 0.01 || math.Abs(s.Humidity-60) > 0.01 {
		t.Fatalf("before heating: %+v, want the zone's 16 °C, 60 %%RH", s)
	}
	switchOn(t, w, "GPIO17", false)
	clk.Advance(10 * time.Minute)
	z, _ := w.Zone("room")
	if s := measure(); math.Abs(s.Temperature-z.Temperature) > 0.01 || z.Temperature < 20 {
		t.Fatalf("after 10 min of heater: bme280 reads %.2f °C, zone %.2f °C; want the zone's, warmed", s.Temperature, z.Temperature)
	}
}
