package capabilities_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/promcp/promcp-device/capabilities"
	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/drivers"
	"github.com/promcp/promcp-device/drivers/i2c"
	"github.com/promcp/promcp-device/drivers/iio"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/manifests/manifesttest"
	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/simtest"
)

// pi-climate.yml serves its SHT4x, SCD4x, BH1750 and DHT22 on the
// simulator: each read is good, grounded on the chip's bytes. The SCD4x,
// stopped and so started again by the driver, is not ready (an error,
// never a reading) before its first 5 s period.
func TestPiClimateOnTheSimulator(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := manifesttest.Load(t, "../manifests/examples/pi-climate.yml")
		clk := clock.NewManual(epoch)
		w := simtest.World(t, m, clk)
		set := simtest.Open(t, m, simtest.Sysfs(w, simtest.Hardware(w), t.TempDir()), capabilities.Options{Clock: clk})

		b, err := w.I2C(t.Context(), "i2c1")
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		if err := b.Tx(0x62, []byte{0x3F, 0x86}, nil); err != nil { // stop_periodic_measurement
			t.Fatal(err)
		}
		co2 := get(t, set, "room_co2").Read(t.Context())
		if co2.Quality == promcp.QualityGood || co2.Value != nil || co2.Err == nil {
			t.Fatalf("co2 before the first period: %+v, want an error without a value", co2)
		}
		clk.Advance(i2c.SCD4xPeriod)
		for name, want := range map[string]float64{"room_temperature": 22, "room_humidity": 48, "room_co2": 780, "room_light": 320,
			"porch_temperature": 9, "porch_humidity": 80} {
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

// The kernel's errors from a DHT22 are never a reading: a bad frame (EIO)
// and no answer (ETIMEDOUT) leave the last good value stale, with the
// kernel's reason, and a fresh value once the sensor answers again.
func TestDHT22KernelErrorsOnTheSimulator(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := manifesttest.Load(t, "../manifests/examples/pi-climate.yml")
		clk := clock.NewManual(epoch)
		w := simtest.World(t, m, clk)
		set := simtest.Open(t, m, simtest.Sysfs(w, simtest.Hardware(w), t.TempDir()), capabilities.Options{Clock: clk})
		porch := get(t, set, "porch_temperature")
		good := porch.Read(t.Context())
		if good.Quality != promcp.QualityGood || string(good.Grounds.Raw) != "9000\n80000\n" {
			t.Fatalf("first read %+v, grounds %q", good, good.Grounds.Raw)
		}
		for _, tc := range []struct {
			kind  manifests.FaultKind
			class error
			text  string
		}{
			{manifests.FaultCRC, iio.ErrBadFrame, "EIO: checksum mismatch"},
			{manifests.FaultNACK, drivers.ErrCRC, "missed edges"},
			{manifests.FaultTimeout, drivers.ErrTimeout, "connection timed out"},
		} {
			if err := w.Inject("porch_sensor", manifests.Fault{Kind: tc.kind}); err != nil {
				t.Fatal(err)
			}
			clk.Advance(3 * time.Second)
			r := porch.Read(t.Context())
			if r.Quality == promcp.QualityGood || !errors.Is(r.Err, tc.class) || !strings.Contains(r.Err.Error(), tc.text) {
				t.Errorf("%s: %+v, want not good with a %v error saying %q", tc.kind, r, tc.class, tc.text)
			}
			if r.Value != nil && !r.Time.Equal(good.Time) {
				t.Errorf("%s: a value %v of %v, want none or the last good one of %v", tc.kind, r.Value, r.Time, good.Time)
			}
			w.Clear("porch_sensor")
		}
		clk.Advance(3 * time.Second)
		if r := porch.Read(t.Context()); r.Quality != promcp.QualityGood {
			t.Fatalf("after the faults: %+v", r)
		}
	})
}

// A declared channel's range is its health rule when the capability gives
// none: a DHT22 frame with a good checksum but 110 %RH (a failing sensor)
// is degraded, not good.
func TestDeclaredRangeIsTheDefaultHealthRule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := manifesttest.Load(t, "../manifests/examples/pi-climate.yml")
		clk := clock.NewManual(epoch)
		w := simtest.World(t, m, clk)
		set := simtest.Open(t, m, simtest.Sysfs(w, simtest.Hardware(w), t.TempDir()), capabilities.Options{Clock: clk})
		hum := get(t, set, "porch_humidity")
		if hum.Capability.Health.Plausible != nil {
			t.Fatal("the example gives porch_humidity a plausible range; this test wants none")
		}
		if err := w.Inject("porch_sensor", manifests.Fault{Kind: manifests.FaultImplausible, Channel: "humidity"}); err != nil {
			t.Fatal(err)
		}
		r := hum.Read(t.Context())
		if v, _ := r.Value.(float64); r.Quality != promcp.QualityDegraded || v != 110 {
			t.Fatalf("%+v, want 110 %% degraded against the dht22's 0..100", r)
		}
	})
}
