package capabilities_test

import (
	"math"
	"testing"
	"testing/synctest"

	"github.com/promcp/promcp-device/capabilities"
	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/drivers/i2c"
	"github.com/promcp/promcp-device/manifests/manifesttest"
	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/simtest"
)

// pi-climate.yml serves its SHT4x, SCD4x and BH1750 on the simulator: each
// read is good, ground on the chip's bytes, and the SCD4x is not ready
// (an error, never a reading) before its first 5 s period.
func TestPiClimateOnTheSimulator(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := manifesttest.Load(t, "../manifests/examples/pi-climate.yml")
		clk := clock.NewManual(epoch)
		w := simtest.World(t, m, clk)
		set := simtest.Open(t, m, simtest.Hardware(w), capabilities.Options{Clock: clk})

		co2 := get(t, set, "room_co2").Read(t.Context())
		if co2.Quality == promcp.QualityGood || co2.Value != nil || co2.Err == nil {
			t.Fatalf("co2 before the first period: %+v, want an error without a value", co2)
		}
		clk.Advance(i2c.SCD4xPeriod)
		for name, want := range map[string]float64{"room_temperature": 22, "room_humidity": 48, "room_co2": 780, "room_light": 320} {
			r := get(t, set, name).Read(t.Context())
			v, ok := r.Value.(float64)
			if r.Quality != promcp.QualityGood || !ok || math.Abs(v-want) > 0.5 {
				t.Errorf("%s: %+v, want good %v", name, r, want)
			}
			if len(r.Grounds.Raw) == 0 {
				t.Errorf("%s: no grounds", name)
			}
		}
	})
}
