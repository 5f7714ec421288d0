package gateway_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/gateway"
	"github.com/promcp/promcp-device/gateway/gatewaytest"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/manifests/manifesttest"
	"github.com/promcp/promcp-device/promcp"
)

// outdoorBench serves manifests/examples/pi-outdoor.yml (DS18B20s on 1-Wire, a
// fan on hardware PWM, an MCP3008 on SPI) over the simulated kernel files
// in dir, on a manual clock.
type outdoorBench struct {
	*bench
	dir string
}

func newOutdoorBench(t *testing.T, edit ...func(*manifests.Manifest)) *outdoorBench {
	t.Helper()
	m := manifesttest.Load(t, "../manifests/examples/pi-outdoor.yml")
	for _, e := range edit {
		e(m)
	}
	p := manifesttest.LoadPolicy(t, "../manifests/examples/pi-outdoor.policy.yml", m)
	dir := t.TempDir()
	b := serveAt(t, m, epoch, gatewaytest.Options{Hardware: kernelFiles(dir), Gateway: gateway.GatewayOptions{Policy: p}})
	return &outdoorBench{bench: b, dir: dir}
}

func (b *outdoorBench) read(tool string) promcp.ReadResult {
	b.t.Helper()
	return b.bench.read(tool, nil)
}

// The thermometers read their zones through the w1_slave files, and the
// fan's duty cycle is written to and read back from the pwm files.
func TestPiOutdoorServesKernelFiles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newOutdoorBench(t)
		for tool, zone := range map[string]string{"read_enclosure_temperature": "enclosure", "read_soil_temperature": "soil"} {
			r := b.read(tool)
			z, _ := b.w.Zone(zone)
			v, _ := r.Value.(float64)
			// 1/16 °C resolution; the enclosure has 0.05 °C of noise.
			if r.Quality != promcp.QualityGood || math.Abs(v-z.Temperature) > 0.2 {
				t.Errorf("%s = %+v, zone %s at %.3f °C", tool, r, zone, z.Temperature)
			}
			if v*16 != math.Round(v*16) {
				t.Errorf("%s = %v, not a multiple of 1/16 °C", tool, v)
			}
		}
		if r := b.read("read_fan_speed"); r.Quality != promcp.QualityGood || r.Value != 0.0 {
			t.Fatalf("fan before any do = %+v, want 0 %%", r)
		}
		var res promcp.DoResult
		b.call("do_set_fan_speed", map[string]any{"value": 40.0, "idempotency_key": "fan-40"}, &res)
		if res.Status != promcp.StatusSuccess || res.AppliedValue != 40.0 || res.PreviousValue != 0.0 {
			t.Fatalf("do_set_fan_speed(40) = %+v, want success, applied 40 (read back), previous 0", res)
		}
		// 25 kHz is a 40000 ns period; 40 % of it is 16000 ns.
		for file, want := range map[string]string{"period": "40000\n", "duty_cycle": "16000\n", "enable": "1\n"} {
			got, err := os.ReadFile(filepath.Join(b.dir, "pwm0", "pwm0", file))
			if err != nil || string(got) != want {
				t.Errorf("pwm0/%s = %q, %v; want %q", file, got, err, want)
			}
		}
		if duty, hz, _ := b.w.PWM("enclosure_fan"); duty != 0.4 || hz != 25000 {
			t.Errorf("simulated output %g at %g Hz, want 0.4 at 25000", duty, hz)
		}
		if r := b.read("read_fan_pwm_frequency"); r.Value != 25000.0 {
			t.Errorf("frequency = %+v, want 25000", r)
		}
		// 1.42 V at 3.3 V reference: code floor(1024 × 1.42 / 3.3) = 440,
		// 440 × 3.3 / 1024 = 1.418 V.
		if r := b.read("read_soil_moisture_probe"); r.Quality != promcp.QualityGood || r.Value != 1.418 {
			t.Errorf("soil probe = %+v, want good 1.418 V", r)
		}
		if r := b.read("read_soil_moisture_raw"); r.Value != 440.0 {
			t.Errorf("soil raw = %+v, want 440", r)
		}
		// Percent from the calibration: (1.41797 − 2.8) / (1.2 − 2.8) × 100.
		if r := b.read("read_soil_moisture"); r.Value != 86.38 {
			t.Errorf("soil moisture = %+v, want 86.38 %%", r)
		}
		// 0.8 V on CH1: code 248, 0.79922 V over 150 Ω.
		if r := b.read("read_tank_level_current"); r.Quality != promcp.QualityGood || r.Value != 5.328 {
			t.Errorf("tank loop = %+v, want good 5.328 mA", r)
		}
		// The same loop as percent: (5.32812 mA − 4) / (20 − 4) × 100.
		if r := b.read("read_tank_level"); r.Quality != promcp.QualityGood || r.Value != 8.3 {
			t.Errorf("tank level = %+v, want good 8.3 %%", r)
		}
		// The transmitter's loop breaks: 0 V reads 0 mA, below NAMUR's 3.6.
		if err := b.w.SetInput("soil_adc", 1, 0); err != nil {
			t.Fatal(err)
		}
		b.clk.Advance(5 * time.Second)
		if r := b.read("read_tank_level_current"); r.Quality != promcp.QualityDegraded || !strings.HasPrefix(r.QualityReason, "implausible: 0 mA") {
			t.Errorf("tank loop broken = %+v, want degraded implausible", r)
		}
	})
}

// The DS18B20's and the MCP3008's faults through the server: a sensor gone
// from the bus, a
// CRC the kernel rejects (stale with the last good value), the power-on
// 85 °C (degraded with the last good value: the ds18b20's default, whether
// the manifest says on_device_error: degraded or leaves it out), an
// implausible reading.
func TestKernelBusFaultsThroughServer(t *testing.T) {
	v := 150.0
	const ttl = 5 * time.Second
	cases := []faultCase{
		{"read_enclosure_temperature", "enclosure_probe", manifests.Fault{Kind: manifests.FaultNACK}, 1, promcp.QualityStale, "read failed (unavailable); last good value from 5 s ago"},
		{"read_enclosure_temperature", "enclosure_probe", manifests.Fault{Kind: manifests.FaultCRC}, 1, promcp.QualityStale, "read failed (crc); last good value from 5 s ago"},
		{"read_enclosure_temperature", "enclosure_probe", manifests.Fault{Kind: manifests.FaultImplausible}, 1, promcp.QualityDegraded, "device error (device error); last good value from 5 s ago"},
		{"read_enclosure_temperature", "enclosure_probe", manifests.Fault{Kind: manifests.FaultImplausible, Value: &v}, 1, promcp.QualityDegraded, "implausible: 150 °C outside -40..80 °C"},
		{"read_soil_temperature", "soil_probe", manifests.Fault{Kind: manifests.FaultImplausible}, 1, promcp.QualityDegraded, "device error (device error); last good value from 5 s ago"},
		{"read_enclosure_temperature", "enclosure_probe", manifests.Fault{Kind: manifests.FaultSlow}, 1, promcp.QualityGood, ""},
		// MCP3008 on SPI: a chip gone leaves MISO high.
		{"read_soil_moisture_probe", "soil_adc", manifests.Fault{Kind: manifests.FaultNACK}, 1, promcp.QualityError, "read failed (nack)"},
		{"read_soil_moisture_probe", "soil_adc", manifests.Fault{Kind: manifests.FaultImplausible}, 1, promcp.QualityDegraded, "implausible: 3.297 V outside 0.5..3 V"}, // railed: 1023 × 3.3 / 1024
	}
	runFaultCases(t, cases, ttl, true, func(t *testing.T) *bench { return newOutdoorBench(t).bench })
	// Past max_stale (and with no good value at all), the power-on value
	// and a CRC failure are errors: degraded and stale only ever serve a
	// recent good value.
	for _, f := range []manifests.FaultKind{manifests.FaultImplausible, manifests.FaultCRC} {
		t.Run("past max_stale/"+string(f), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newOutdoorBench(t)
				b.read("read_soil_temperature")
				if err := b.w.Inject("soil_probe", manifests.Fault{Kind: f}); err != nil {
					t.Fatal(err)
				}
				b.clk.Advance(time.Hour)
				r := b.read("read_soil_temperature")
				if r.Quality != promcp.QualityError || r.Value != nil || !strings.HasPrefix(r.QualityReason, "read failed (") {
					t.Errorf("%s for an hour: %+v, want error", f, r)
				}
			})
		})
		t.Run("no good value yet/"+string(f), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newOutdoorBench(t)
				if err := b.w.Inject("soil_probe", manifests.Fault{Kind: f}); err != nil {
					t.Fatal(err)
				}
				r := b.read("read_soil_temperature")
				if r.Quality != promcp.QualityError || r.Value != nil {
					t.Errorf("%s before any good read: %+v, want error", f, r)
				}
			})
		})
	}
	// on_device_error: error in the manifest overrides the ds18b20's
	// default: the power-on value is an error at once.
	synctest.Test(t, func(t *testing.T) {
		b := newOutdoorBench(t, func(m *manifests.Manifest) {
			for i := range m.Capabilities {
				if m.Capabilities[i].Name == "soil_temperature" {
					m.Capabilities[i].Health.OnDeviceError = manifests.DeviceErrorIsError
				}
			}
		})
		runFaultCase(t, faultCase{"read_soil_temperature", "soil_probe", manifests.Fault{Kind: manifests.FaultImplausible}, 1, promcp.QualityError, "read failed (device error)"}, b.bench, ttl)
	})
	// Past max_stale, a sensor gone from the bus is an error.
	synctest.Test(t, func(t *testing.T) {
		b := newOutdoorBench(t)
		b.read("read_soil_temperature")
		if err := b.w.Inject("soil_probe", manifests.Fault{Kind: manifests.FaultNACK}); err != nil {
			t.Fatal(err)
		}
		b.clk.Advance(time.Hour)
		r := b.read("read_soil_temperature")
		if r.Quality != promcp.QualityError || r.Value != nil || !strings.HasPrefix(r.QualityReason, "read failed (unavailable)") {
			t.Errorf("sensor gone for an hour: %+v, want error", r)
		}
	})
}

// Concurrent readers and writers of the kernel-file devices: every read is
// good and every duty cycle written is one of those asked for (the race
// detector watches the simulated files and the drivers' state).
func TestKernelFilesUnderOverlap(t *testing.T) {
	_, set := gatewaytest.Open(t, manifesttest.Load(t, "../manifests/examples/pi-outdoor.yml"), gatewaytest.Options{
		Clock: clock.NewManual(epoch), Hardware: kernelFiles(t.TempDir())})
	fan, _ := set.Get("fan_speed")
	w, err := set.TakeWriter() // no gateway serves this set: the test holds its writer
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 16)
	for g := range 8 {
		go func() {
			for i := range 10 {
				for _, name := range []string{"enclosure_temperature", "soil_moisture", "fan_speed", "fan_pwm_frequency"} {
					c, _ := set.Get(name)
					if r := c.ReadWithin(t.Context(), 0); r.Quality != promcp.QualityGood {
						done <- fmt.Errorf("%s = %+v", name, r)
						return
					}
				}
				if g%2 == 0 {
					if err := w.Write(t.Context(), fan, float64(10*(i%10))); err != nil {
						done <- err
						return
					}
				}
			}
			done <- nil
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	r := fan.ReadWithin(t.Context(), 0)
	if v, _ := r.Value.(float64); v < 0 || v > 90 || v != math.Round(v/10)*10 {
		t.Fatalf("fan after the overlap = %v, want one of the duty cycles written", r.Value)
	}
}
