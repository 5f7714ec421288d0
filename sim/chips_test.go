package sim_test

import (
	"bytes"
	"fmt"
	"math"
	"sync"
	"testing"

	pi2c "periph.io/x/conn/v3/i2c"

	"github.com/promcp/promcp-device/drivers/i2c"
	"github.com/promcp/promcp-device/manifests/manifesttest"
)

const chipsManifest = `version: 1
gateway: chips
buses: [{name: i2c1, kind: i2c}]
devices:
  - {name: env, bus: i2c1, model: bme280, address: 0x76, sim: {values: {temperature: -12.34, pressure: 950, humidity: 80}}}
  - {name: baro, bus: i2c1, model: bmp280, address: 0x77}
  - name: adc
    bus: i2c1
    model: ads1115
    address: 0x48
    inputs:
      - {name: v0, input: a0}
      - {name: v1, input: a1}
      - {name: d23, input: a2_a3, full_scale: 0.256}
    sim: {values: {v0: 1.5, v1: -0.25, d23: 0.1}}
  - name: adc12
    bus: i2c1
    model: ads1015
    address: 0x49
    inputs: [{name: v0, input: a0}]
    sim: {values: {v0: 1.5}}
  - {name: mon, bus: i2c1, model: ina219, address: 0x40, sim: {values: {bus_voltage: 12, current: 0.2}}}
  - name: mcp
    bus: i2c1
    model: mcp23017
    address: 0x20
    pins:
      - {name: relay, pin: 0, mode: output}
      - {name: button, pin: 9, active_low: true}
      - {name: float, pin: 10}
    sim: {values: {button: 1, float: 1}}
  - name: pcf
    bus: i2c1
    model: pcf8574
    address: 0x38
    pins: [{name: relay, pin: 0, mode: output}, {name: sw, pin: 5, active_low: true}]
    sim: {values: {sw: 1}}
`

func chipBus(t *testing.T) pi2c.BusCloser {
	t.Helper()
	w, _ := newWorld(t, manifesttest.Parse(t, "chips.yml", chipsManifest))
	return openBus(t, w, "i2c1")
}

func tx(t *testing.T, b pi2c.Bus, addr uint16, w []byte, n int) []byte {
	t.Helper()
	r := make([]byte, n)
	if err := b.Tx(addr, w, r); err != nil {
		t.Fatalf("Tx(0x%02x, % x): %v", addr, w, err)
	}
	return r
}

// The simulated BME280 answers as the datasheet's memory map says: chip id,
// trimming in NVM, reset values in the data registers until a forced
// measurement, forced mode falling back to sleep, skipped channels.
func TestSimBME280Registers(t *testing.T) {
	b := chipBus(t)
	if id := tx(t, b, 0x76, []byte{0xD0}, 1); id[0] != 0x60 {
		t.Fatalf("bme280 id 0x%02x", id[0])
	}
	if id := tx(t, b, 0x77, []byte{0xD0}, 1); id[0] != 0x58 {
		t.Fatalf("bmp280 id 0x%02x", id[0])
	}
	if d := tx(t, b, 0x76, []byte{0xF7}, 8); !bytes.Equal(d, []byte{0x80, 0, 0, 0x80, 0, 0, 0x80, 0}) {
		t.Fatalf("data before any measurement: % x, want the reset values", d)
	}
	tp, h := tx(t, b, 0x76, []byte{0x88}, 26), tx(t, b, 0x76, []byte{0xE1}, 7)
	cal, err := i2c.ParseBMECalibration(tp, h)
	if err != nil {
		t.Fatal(err)
	}
	tx(t, b, 0x76, []byte{0xF2, 0x01, 0xF4, 0x25}, 0)
	if m := tx(t, b, 0x76, []byte{0xF4}, 1); m[0] != 0x24 {
		t.Errorf("ctrl_meas after a forced measurement 0x%02x, want 0x24 (back to sleep)", m[0])
	}
	s, err := cal.Sample(tx(t, b, 0x76, []byte{0xF7}, 8))
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(s.Temperature+12.34) > 0.005 || math.Abs(s.Pressure-950) > 0.005 || math.Abs(s.Humidity-80) > 0.001 {
		t.Errorf("decoded %+v, want -12.34 °C, 950 hPa, 80 %%RH", s)
	}
	// osrs_h = 0 skips humidity: its register keeps the reset value.
	tx(t, b, 0x76, []byte{0xF2, 0x00, 0xF4, 0x25}, 0)
	if d := tx(t, b, 0x76, []byte{0xFD}, 2); !bytes.Equal(d, []byte{0x80, 0x00}) {
		t.Errorf("humidity skipped: % x, want 80 00", d)
	}
	tx(t, b, 0x76, []byte{0xE0, 0xB6}, 0) // soft reset
	if d := tx(t, b, 0x76, []byte{0xF7}, 3); !bytes.Equal(d, []byte{0x80, 0, 0}) {
		t.Errorf("after reset: % x", d)
	}
}

// The simulated ADS1x15: reset config, single-shot conversions per mux and
// gain, saturation at full scale, 12-bit results left-justified.
func TestSimADS1x15Registers(t *testing.T) {
	b := chipBus(t)
	if c := tx(t, b, 0x48, []byte{0x01}, 2); !bytes.Equal(c, []byte{0x85, 0x83}) {
		t.Fatalf("config after reset % x, want 85 83", c)
	}
	conv := func(addr uint16, in i2c.ADSInput, pga uint8) uint16 {
		cfg := i2c.ADSConfig(in, pga)
		tx(t, b, addr, []byte{0x01, byte(cfg >> 8), byte(cfg)}, 0)
		if c := tx(t, b, addr, []byte{0x01}, 2); c[0]&0x80 == 0 {
			t.Errorf("OS bit 0 after the conversion")
		}
		r := tx(t, b, addr, []byte{0x00}, 2)
		return uint16(r[0])<<8 | uint16(r[1])
	}
	for _, tc := range []struct {
		addr uint16
		in   i2c.ADSInput
		pga  uint8
		want uint16
	}{
		{0x48, i2c.ADSAIN0, 1, 12000},   // 1.5 V at ±4.096: 1.5/4.096 × 32768
		{0x48, i2c.ADSAIN1, 1, 0xF830},  // -0.25 V: -2000
		{0x48, i2c.ADSAIN0, 5, 0x7FFF},  // 1.5 V at ±0.256 saturates
		{0x48, i2c.ADSDiff23, 5, 12800}, // 0.1 V at ±0.256
		{0x48, i2c.ADSDiff01, 2, 28000}, // 1.75 V at ±2.048
		{0x49, i2c.ADSAIN0, 1, 750 << 4},
	} {
		if got := conv(tc.addr, tc.in, tc.pga); got != tc.want {
			t.Errorf("0x%02x mux %d pga %d: 0x%04x, want 0x%04x", tc.addr, tc.in, tc.pga, got, tc.want)
		}
	}
}

// The simulated INA219: no current before calibration, then the
// datasheet's arithmetic; reset by the config RST bit; read-only registers
// refuse writes.
func TestSimINA219Registers(t *testing.T) {
	b := chipBus(t)
	word := func(reg byte) uint16 { r := tx(t, b, 0x40, []byte{reg}, 2); return uint16(r[0])<<8 | uint16(r[1]) }
	if c := word(0x00); c != 0x399F {
		t.Fatalf("config 0x%04x", c)
	}
	if s, v, i := word(0x01), word(0x02), word(0x04); s != 2000 || v != 3000<<3|2 || i != 0 {
		t.Fatalf("uncalibrated: shunt %d bus 0x%04x current %d", s, v, i)
	}
	tx(t, b, 0x40, []byte{0x05, 0x10, 0x00}, 0)
	if i, p := word(0x04), word(0x03); i != 2000 || p != 1200 {
		t.Fatalf("Cal 4096: current %d power %d, want 2000 and 1200", i, p)
	}
	tx(t, b, 0x40, []byte{0x00, 0x80, 0x00}, 0)
	if c, cal := word(0x00), word(0x05); c != 0x399F || cal != 0 {
		t.Fatalf("after RST: config 0x%04x cal %d", c, cal)
	}
	if err := b.Tx(0x40, []byte{0x02, 0, 0}, nil); err == nil {
		t.Fatal("write to the bus voltage register accepted")
	}
}

// The simulated expanders: MCP23017 directions, latch, polarity; PCF8574
// reads the latch ANDed with what pulls the pins low.
func TestSimExpanderRegisters(t *testing.T) {
	b := chipBus(t)
	if d := tx(t, b, 0x20, []byte{0x00}, 2); !bytes.Equal(d, []byte{0xFF, 0xFF}) {
		t.Fatalf("IODIR after reset % x", d)
	}
	// button (B1, active low, pressed) reads low; float (B2) high.
	if g := tx(t, b, 0x20, []byte{0x12}, 2); g[1]&0x06 != 0x04 {
		t.Fatalf("GPIOB 0x%02x, want B1 low, B2 high", g[1])
	}
	tx(t, b, 0x20, []byte{0x12, 0x00}, 0) // a GPIO write lands in OLAT
	if o := tx(t, b, 0x20, []byte{0x14}, 1); o[0] != 0x00 {
		t.Fatalf("OLATA 0x%02x", o[0])
	}
	if g := tx(t, b, 0x20, []byte{0x12}, 1); g[0]&1 != 1 {
		t.Fatalf("A0 is still an input: it reads the outside (high), not the latch (low): 0x%02x", g[0])
	}
	tx(t, b, 0x20, []byte{0x00, 0xFE}, 0) // A0 output: drives the latch
	if g := tx(t, b, 0x20, []byte{0x12}, 1); g[0]&1 != 0 {
		t.Fatalf("A0 output, latch low, reads 0x%02x", g[0])
	}
	tx(t, b, 0x20, []byte{0x14, 0x01}, 0)
	if g := tx(t, b, 0x20, []byte{0x12}, 1); g[0]&1 != 1 {
		t.Fatalf("A0 output, latch high, reads 0x%02x", g[0])
	}
	tx(t, b, 0x20, []byte{0x03, 0x04}, 0) // IPOLB: invert B2
	if g := tx(t, b, 0x20, []byte{0x13}, 1); g[0]&0x04 != 0 {
		t.Fatalf("B2 inverted reads 0x%02x", g[0])
	}

	if p := tx(t, b, 0x38, nil, 1); p[0] != 0xDF {
		t.Fatalf("pcf8574 at power-on 0x%02x, want DF (latch FF, P5 pulled low by the switch)", p[0])
	}
	tx(t, b, 0x38, []byte{0xFE}, 0)
	if p := tx(t, b, 0x38, nil, 1); p[0] != 0xDE {
		t.Fatalf("pcf8574 after writing FE: 0x%02x, want DE", p[0])
	}
}

// The real drivers against the simulated chips, many callers at once on
// one bus: each chip's operations run one at a time (a conversion is never
// interleaved with another's config write), and every caller reads the
// value the chip was given.
func TestSimChipsAgainstDriversConcurrently(t *testing.T) {
	w, clk := newWorld(t, manifesttest.Parse(t, "chips.yml", chipsManifest))
	bus := i2c.NewBus("i2c1", openBus(t, w, "i2c1"), 0, nil)
	sleep := sleepOn(clk)
	env := i2c.NewBME280(bus, 0x76, true, sleep)
	baro := i2c.NewBME280(bus, 0x77, false, sleep)
	adc := i2c.NewADS1x15(bus, 0x48, false, sleep)
	cal, err := i2c.NewINACalibration(0.1, 3.2768)
	if err != nil {
		t.Fatal(err)
	}
	mon := i2c.NewINA219(bus, 0x40, cal)
	mcp := i2c.NewMCP23017(bus, 0x20, 0x0001, 0, 0)
	pcf := i2c.NewPCF8574(bus, 0x38, 0x01)

	var wg sync.WaitGroup
	errs := make(chan error, 1000)
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs <- fmt.Errorf(format, args...)
		}
	}
	for i := range 20 {
		wg.Go(func() {
			s, err := env.Sense(t.Context())
			check(err == nil && math.Abs(s.Temperature+12.34) < 0.005 && math.Abs(s.Humidity-80) < 0.001, "bme280: %+v %v", s, err)
			s, err = baro.Sense(t.Context())
			check(err == nil && s.Temperature == 20 && math.Abs(s.Pressure-1013.25) < 0.005, "bmp280: %+v %v", s, err)
			in, pga, want := []i2c.ADSInput{i2c.ADSAIN0, i2c.ADSAIN1, i2c.ADSDiff23}[i%3], []uint8{1, 1, 5}[i%3], []float64{1.5, -0.25, 0.1}[i%3]
			v, _, err := adc.Read(t.Context(), in, pga)
			check(err == nil && math.Abs(v-want) < 0.0001, "ads1115 mux %d: %g %v, want %g", in, v, err, want)
			r, err := mon.Sense(t.Context())
			check(err == nil && r.BusVolts == 12 && math.Abs(r.Amps-0.2) < 1e-9 && math.Abs(r.Watts-2.4) < 1e-9, "ina219: %+v %v", r, err)
			lv, err := mcp.Set(t.Context(), 0, i%2 == 0)
			check(err == nil && lv&0x0600 == 0x0400, "mcp23017: 0x%04x %v", lv, err)
			lv, err = pcf.Set(t.Context(), 0, i%2 == 0)
			check(err == nil && lv&0x20 == 0, "pcf8574: 0x%02x %v (sw pressed pulls P5 low)", lv, err)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// Set returns the levels read back after its own write.
	if lv, err := mcp.Set(t.Context(), 0, true); err != nil || lv&1 != 1 {
		t.Errorf("mcp23017 readback after setting A0: 0x%04x %v", lv, err)
	}
	if lv, err := pcf.Set(t.Context(), 0, false); err != nil || lv&1 != 0 {
		t.Errorf("pcf8574 readback after clearing P0: 0x%02x %v", lv, err)
	}
}
