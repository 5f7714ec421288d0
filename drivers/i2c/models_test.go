package i2c

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"periph.io/x/conn/v3/i2c/i2ctest"
)

func noWait(context.Context, time.Duration) error { return nil }

// A BME280's frames as recorded from a real chip at 0x76 (periph.io's
// bmxx80 test recording): the calibration, then one forced measurement.
var (
	bmeCalib1 = []byte{0x10, 0x6e, 0x6c, 0x66, 0x32, 0x0, 0x5d, 0x95, 0xb8, 0xd5, 0xd0, 0xb, 0x77, 0x1e, 0x9d, 0xff, 0xf9, 0xff, 0xac, 0x26, 0xa, 0xd8, 0xbd, 0x10, 0x0, 0x4b}
	bmeCalib2 = []byte{0x6e, 0x1, 0x0, 0x13, 0x5, 0x0, 0x1e}
	bmeData   = []byte{0x4a, 0x52, 0xc0, 0x80, 0x96, 0xc0, 0x7a, 0x76}
	// bmeForced sets ctrl_hum ×1, config (filter off), ctrl_meas osrs_t
	// ×1, osrs_p ×1 and starts a forced measurement.
	bmeForced = i2ctest.IO{Addr: 0x76, W: []byte{0xF2, 0x01, 0xF5, 0x00, 0xF4, 0x25}}
)

// bmeMeasurements returns a BME280's frames at 0x76: its chip id and
// calibration once, then a forced measurement reading each of data.
func bmeMeasurements(data ...[]byte) []i2ctest.IO {
	ops := []i2ctest.IO{
		{Addr: 0x76, W: []byte{0xD0}, R: []byte{0x60}},
		{Addr: 0x76, W: []byte{0x88}, R: bmeCalib1},
		{Addr: 0x76, W: []byte{0xE1}, R: bmeCalib2},
	}
	for _, d := range data {
		ops = append(ops, bmeForced, i2ctest.IO{Addr: 0x76, W: []byte{0xF7}, R: d})
	}
	return ops
}

func TestBME280KnownFrame(t *testing.T) {
	// The calibration is kept: the second measurement reads no NVM.
	pb := playback(t, bmeMeasurements(bmeData, bmeData)...)
	d := NewBME280(NewBus("1", pb, 0, nil), 0x76, true, noWait)
	for range 2 {
		s, err := d.Sense(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		// periph.io's driver reads 23.72 °C, 100942.6953125 Pa, 65.3056 %RH
		// (6530560 tenth-µRH) from the same frames.
		if s.Temperature != 23.72 || s.Pressure != 1009.426953125 || math.Abs(s.Humidity-65.3056640625) > 1e-12 {
			t.Fatalf("got %+v", s)
		}
		if string(s.Raw) != string(bmeData) {
			t.Fatalf("raw % x", s.Raw)
		}
	}
	if err := pb.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestBMP280DatasheetExample checks the compensation against the worked
// example of the BMP280 datasheet (BST-BMP280-DS001, section 3.12).
func TestBMP280DatasheetExample(t *testing.T) {
	c := BMECalibration{T1: 27504, T2: 26435, T3: -1000, P1: 36477, P2: -10685, P3: 3024, P4: 2855, P5: 140, P6: -7, P7: 15500, P8: -14600, P9: 6000}
	if tf := c.tFine(519888); tf != 128422 {
		t.Fatalf("t_fine %d, want 128422", tf)
	}
	temp, p, _ := c.Compensate(519888, 415148, BMEHumSkipped)
	if temp != 2508 {
		t.Fatalf("T %d, want 2508 (25.08 °C)", temp)
	}
	// The 64-bit integer result is Q24.8 Pa; the datasheet's 100653.27 Pa
	// is its floating-point result, which the integer one follows to a few
	// 1/256 Pa.
	if got := float64(p) / 256; math.Abs(got-100653.27) > 0.05 {
		t.Fatalf("P %d (%.3f Pa), want 100653.27 Pa", p, got)
	}
}

// TestBMECalibrationLayout decodes the humidity parameters' packed nibbles
// (dig_H4 = 0xE4<<4 | 0xE5[3:0], dig_H5 = 0xE6<<4 | 0xE5[7:4]).
func TestBMECalibrationLayout(t *testing.T) {
	c, err := ParseBMECalibration(bmeCalib1, []byte{0x6e, 0x01, 0x00, 0x13, 0x25, 0xF0, 0x1e})
	if err != nil {
		t.Fatal(err)
	}
	if c.T1 != 0x6e10 || c.P9 != 0x10bd || c.H1 != 0x4b || c.H2 != 0x016e || c.H3 != 0 || c.H4 != 0x135 || c.H5 != -254 || c.H6 != 0x1e {
		t.Fatalf("%+v", c)
	}
	if _, err := ParseBMECalibration(bmeCalib1[:20], nil); err == nil {
		t.Fatal("short calibration accepted")
	}
}

func TestBME280SkippedAndWrongChip(t *testing.T) {
	pb := playback(t, bmeMeasurements([]byte{0x80, 0, 0, 0x80, 0, 0, 0x80, 0})...)
	_, err := NewBME280(NewBus("1", pb, 0, nil), 0x76, true, noWait).Sense(context.Background())
	if !errors.Is(err, ErrBMESkipped) {
		t.Fatalf("reset values: %v, want ErrBMESkipped", err)
	}
	pb = playback(t, i2ctest.IO{Addr: 0x76, W: []byte{0xD0}, R: []byte{0x60}})
	_, err = NewBME280(NewBus("1", pb, 0, nil), 0x76, false, noWait).Sense(context.Background())
	if err == nil || !contains(err.Error(), "chip id 0x60, want 0x58") {
		t.Fatalf("a BME280 opened as a BMP280: %v", err)
	}
}

// TestADSConfigBits checks the config register against the datasheet's
// bit fields (SBAS444 table 8): reset value, and a single-shot AIN0 read.
func TestADSConfigBits(t *testing.T) {
	// OS=1, MUX=100 (AIN0/GND), PGA=001 (±4.096 V), MODE=1, DR=100, COMP_QUE=11.
	if got := ADSConfig(ADSAIN0, 1); got != 0xC383 {
		t.Fatalf("AIN0 ±4.096: 0x%04x, want 0xC383", got)
	}
	// The reset value is AIN0-AIN1 at ±2.048 V with OS=1.
	if got := ADSConfig(ADSDiff01, 2); got != ADSConfigDefault {
		t.Fatalf("reset-like config 0x%04x, want 0x%04x", got, ADSConfigDefault)
	}
	if got := ADSConfig(ADSDiff23, 5); got != 0xBB83 {
		t.Fatalf("AIN2-AIN3 ±0.256: 0x%04x, want 0xBB83", got)
	}
	for fs, pga := range map[float64]uint8{6.144: 0, 4.096: 1, 2.048: 2, 1.024: 3, 0.512: 4, 0.256: 5} {
		if p, ok := ADSPGA(fs); !ok || p != pga {
			t.Errorf("ADSPGA(%g) = %d %v", fs, p, ok)
		}
	}
	if _, ok := ADSPGA(5); ok {
		t.Error("ADSPGA(5) accepted")
	}
}

// TestADSCodes checks the output codes of the datasheets' ideal-output
// tables (ADS1115 SBAS444 table 3, ADS1015 SBAS473 table 3).
func TestADSCodes(t *testing.T) {
	fs := 2.048
	for _, tc := range []struct {
		code   uint16
		twelve bool
		want   float64
	}{
		{0x7FFF, false, fs * 32767 / 32768},
		{0x0001, false, fs / 32768},
		{0x0000, false, 0},
		{0xFFFF, false, -fs / 32768},
		{0x8000, false, -fs},
		{0x7FF0, true, fs * 2047 / 2048},
		{0x0010, true, fs / 2048},
		{0xFFF0, true, -fs / 2048},
		{0x8000, true, -fs},
	} {
		if got := ADSVolts(tc.code, 2, tc.twelve); got != tc.want {
			t.Errorf("0x%04x (12-bit %v): %g V, want %g", tc.code, tc.twelve, got, tc.want)
		}
		if got := ADSCode(tc.want, 2, tc.twelve); got != tc.code {
			t.Errorf("ADSCode(%g, 12-bit %v) = 0x%04x, want 0x%04x", tc.want, tc.twelve, got, tc.code)
		}
	}
	// Beyond full scale the chip saturates.
	if got := ADSCode(3, 2, false); got != 0x7FFF {
		t.Errorf("3 V at ±2.048: 0x%04x", got)
	}
}

func TestADS1115Read(t *testing.T) {
	pb := playback(t,
		i2ctest.IO{Addr: 0x48, W: []byte{0x01, 0xC3, 0x83}},
		i2ctest.IO{Addr: 0x48, W: []byte{0x01}, R: []byte{0xC3, 0x83}},
		i2ctest.IO{Addr: 0x48, W: []byte{0x00}, R: []byte{0x30, 0x00}},
		// A conversion still running (OS=0) is an error, not a stale value.
		i2ctest.IO{Addr: 0x48, W: []byte{0x01, 0xC3, 0x83}},
		i2ctest.IO{Addr: 0x48, W: []byte{0x01}, R: []byte{0x43, 0x83}},
	)
	d := NewADS1x15(NewBus("1", pb, 0, nil), 0x48, false, noWait)
	v, raw, err := d.Read(context.Background(), ADSAIN0, 1)
	if err != nil || v != 1.536 || raw != [2]byte{0x30, 0x00} {
		t.Fatalf("%g % x %v, want 1.536 V (0x3000 × 4.096/32768)", v, raw, err)
	}
	if _, _, err := d.Read(context.Background(), ADSAIN0, 1); !errors.Is(err, ErrADSBusy) {
		t.Fatalf("busy: %v", err)
	}
}

// TestINACalibrationDatasheet checks the calibration against the
// datasheet's example (SBOS448 8.5.2: 0.1 Ω, Current_LSB 100 µA, Cal 4096)
// and the register arithmetic of 8.5.1.
func TestINACalibrationDatasheet(t *testing.T) {
	c, err := NewINACalibration(0.1, 3.2768)
	if err != nil {
		t.Fatal(err)
	}
	if c.Cal != 4096 || math.Abs(c.CurrentLSB-100e-6) > 1e-15 {
		t.Fatalf("%+v, want Cal 4096 and 100 µA", c)
	}
	// 20 mV on the shunt (0x07D0), 12 V on the bus (3000 << 3, CNVR set):
	// current = 2000 × 4096/4096 = 2000 (0.2 A), power = 2000 × 3000/5000.
	r := c.Convert(0x07D0, 0x5DC2, 1200, 2000)
	if math.Abs(r.ShuntMilli-20) > 1e-9 || r.BusVolts != 12 || math.Abs(r.Amps-0.2) > 1e-12 || math.Abs(r.Watts-2.4) > 1e-12 {
		t.Fatalf("%+v", r)
	}
	// A negative shunt voltage (current flowing back) is two's complement.
	if r := c.Convert(0xF830, 0, 0, 0xF830); math.Abs(r.ShuntMilli+20) > 1e-9 || math.Abs(r.Amps+0.2) > 1e-12 {
		t.Fatalf("negative: %+v", r)
	}
	for _, bad := range [][2]float64{{0, 1}, {0.1, 0}, {-1, 1}, {100, 0.0001}} {
		if _, err := NewINACalibration(bad[0], bad[1]); err == nil {
			t.Errorf("calibration %v accepted", bad)
		}
	}
}

func TestINA219Sense(t *testing.T) {
	c, _ := NewINACalibration(0.1, 3.2768)
	pb := playback(t,
		i2ctest.IO{Addr: 0x40, W: []byte{0x05, 0x10, 0x00}},
		i2ctest.IO{Addr: 0x40, W: []byte{0x01}, R: []byte{0x07, 0xD0}},
		i2ctest.IO{Addr: 0x40, W: []byte{0x02}, R: []byte{0x5D, 0xC2}},
		i2ctest.IO{Addr: 0x40, W: []byte{0x03}, R: []byte{0x04, 0xB0}},
		i2ctest.IO{Addr: 0x40, W: []byte{0x04}, R: []byte{0x07, 0xD0}},
		i2ctest.IO{Addr: 0x40, W: []byte{0x05, 0x10, 0x00}},
		i2ctest.IO{Addr: 0x40, W: []byte{0x01}, R: []byte{0x7F, 0xFF}},
		i2ctest.IO{Addr: 0x40, W: []byte{0x02}, R: []byte{0x5D, 0xC3}}, // OVF
		i2ctest.IO{Addr: 0x40, W: []byte{0x03}, R: []byte{0, 0}},
		i2ctest.IO{Addr: 0x40, W: []byte{0x04}, R: []byte{0, 0}},
	)
	d := NewINA219(NewBus("1", pb, 0, nil), 0x40, c)
	r, err := d.Sense(context.Background())
	if err != nil || r.BusVolts != 12 || math.Abs(r.Watts-2.4) > 1e-12 {
		t.Fatalf("%+v %v", r, err)
	}
	if _, err := d.Sense(context.Background()); !errors.Is(err, ErrINAOverflow) {
		t.Fatalf("overflow: %v", err)
	}
}

func TestMCP23017SetupKeepsOutputsAndReadsBack(t *testing.T) {
	// One operation of an MCP23017 at 0x20 with outputs A0 and A1 and a
	// pull-up on B7: IODIR and OLAT read, the latch written (before the
	// directions, so that a new output starts at its level), IODIR and
	// GPPU written, GPIO read back.
	op := func(iodir, olat []byte, latch byte, gpio []byte) []i2ctest.IO {
		return []i2ctest.IO{
			{Addr: 0x20, W: []byte{0x00}, R: iodir},
			{Addr: 0x20, W: []byte{0x14}, R: olat},
			{Addr: 0x20, W: []byte{0x14, latch, 0x00}},
			{Addr: 0x20, W: []byte{0x00, 0xFC, 0xFF}},
			{Addr: 0x20, W: []byte{0x0C, 0x00, 0x80}},
			{Addr: 0x20, W: []byte{0x12}, R: gpio},
		}
	}
	pb := playback(t, slices.Concat(
		// First read: all inputs after reset, latch 0; the new outputs
		// start at their off level (high: active-low relays).
		op([]byte{0xFF, 0xFF}, []byte{0x00, 0x00}, 0x03, []byte{0x03, 0x80}),
		// Set A0 low (relay on): A1 keeps its level, already an output.
		op([]byte{0xFC, 0xFF}, []byte{0x03, 0x00}, 0x02, []byte{0x02, 0x80}),
	)...)
	e := NewMCP23017(NewBus("1", pb, 0, nil), 0x20, 0x0003, 0x8000, 0x0003)
	lv, raw, err := e.Levels(context.Background())
	if err != nil || lv != 0x8003 || len(raw) != 2 {
		t.Fatalf("levels 0x%04x %v", lv, err)
	}
	lv, err = e.Set(context.Background(), 0, false)
	if err != nil || lv != 0x8002 {
		t.Fatalf("readback 0x%04x %v", lv, err)
	}
	if _, err := e.Set(context.Background(), 15, true); err == nil {
		t.Fatal("an input pin was written")
	}
	if err := pb.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestPCF8574LatchFromLevels(t *testing.T) {
	pb := playback(t,
		// P0 is driven low by a previous run, P4..P7 are inputs: the latch
		// is learnt from the levels, inputs kept high.
		i2ctest.IO{Addr: 0x27, R: []byte{0x3E}},
		i2ctest.IO{Addr: 0x27, W: []byte{0xFC}},
		i2ctest.IO{Addr: 0x27, R: []byte{0x3C}},
		i2ctest.IO{Addr: 0x27, W: []byte{0xFD}},
		i2ctest.IO{Addr: 0x27, R: []byte{0x3D}},
	)
	e := NewPCF8574(NewBus("1", pb, 0, nil), 0x27, 0x0F)
	lv, err := e.Set(context.Background(), 1, false)
	if err != nil || lv != 0x3C {
		t.Fatalf("0x%02x %v", lv, err)
	}
	lv, err = e.Set(context.Background(), 0, true)
	if err != nil || lv != 0x3D {
		t.Fatalf("0x%02x %v", lv, err)
	}
	if err := pb.Close(); err != nil {
		t.Fatal(err)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
