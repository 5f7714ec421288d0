package i2c

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"periph.io/x/conn/v3/i2c/i2ctest"

	"github.com/promcp/promcp-device/drivers"
)

// near fails t unless got is within tol of want.
func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s: %v, want %v", what, got, want)
	}
}

// The Sensirion checksum's worked example (SHT4x and SCD4x datasheets):
// CRC-8 0x31, init 0xFF, of 0xBEEF is 0x92.
func TestSensirionCRCExample(t *testing.T) {
	if got := CRC8([]byte{0xBE, 0xEF}); got != 0x92 {
		t.Fatalf("crc 0x%02x, want 0x92", got)
	}
	if got := SensirionWord(0xBEEF); string(got) != "\xbe\xef\x92" {
		t.Fatalf("word % x", got)
	}
}

func TestSHT4xConversions(t *testing.T) {
	near(t, "T(0)", SHT4xCelsius(0), -45, 0)
	near(t, "T(65535)", SHT4xCelsius(65535), 130, 1e-12)
	near(t, "T(0x6666)", SHT4xCelsius(0x6666), 25, 0.01)
	near(t, "RH(0) clamped", SHT4xHumidity(0), 0, 0)
	near(t, "RH(65535) clamped", SHT4xHumidity(65535), 100, 0)
	near(t, "RH(0x8000)", SHT4xHumidity(0x8000), -6+125*32768.0/65535, 1e-12)
	near(t, "RH(3146) = -6+6.0 = 0", SHT4xHumidity(3146), 0.0006, 0.001)
	for _, p := range []float64{0, 12.5, 50, 99.9} {
		near(t, "RH round trip", SHT4xHumidity(SHT4xRawHumidity(p)), p, 0.001)
	}
}

// An SHT4x measurement on the wire: 0xFD, then six bytes read after the
// measurement time.
func TestSHT4xKnownFrame(t *testing.T) {
	frame := append(SensirionWord(0x6666), SensirionWord(0x8000)...) // 25 °C, 56.5 %RH
	if string(frame) != "\x66\x66\x93\x80\x00\xa2" {
		t.Fatalf("frame % x", frame)
	}
	var waited time.Duration
	sleep := func(_ context.Context, d time.Duration) error { waited += d; return nil }
	pb := playback(t, i2ctest.IO{Addr: 0x44, W: []byte{0xFD}}, i2ctest.IO{Addr: 0x44, R: frame})
	s, err := NewSHT4x(NewBus("1", pb, 0, nil), 0x44, sleep).Sense(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	near(t, "T", s.Celsius, 25, 1e-12)
	near(t, "RH", s.Humidity, 56.501, 0.001)
	if waited != SHT4xMeasureTime || string(s.Raw[:]) != string(frame) {
		t.Fatalf("waited %s, raw % x", waited, s.Raw)
	}
}

func TestSHT4xBadCRC(t *testing.T) {
	frame := append(SensirionWord(0x6666), SensirionWord(0x8000)...)
	frame[5] ^= 0x01
	pb := playback(t, i2ctest.IO{Addr: 0x44, W: []byte{0xFD}}, i2ctest.IO{Addr: 0x44, R: frame})
	_, err := NewSHT4x(NewBus("1", pb, 0, nil), 0x44, noWait).Sense(context.Background())
	if !errors.Is(err, drivers.ErrCRC) {
		t.Fatalf("err %v, want a crc error", err)
	}
	if want := "sht4x measure: i2c 1 addr 0x44: humidity: checksum mismatch: crc 0xa3, want 0xa2"; err.Error() != want {
		t.Fatalf("err %q\nwant %q", err, want)
	}
}

// The BH1750 datasheet's worked example: high byte 1000_0011, low byte
// 1001_0000 is (2^15+2^9+2^8+2^7+2^4)/1.2 ≈ 28067 lx.
func TestBH1750DatasheetExample(t *testing.T) {
	var waited time.Duration
	sleep := func(_ context.Context, d time.Duration) error { waited += d; return nil }
	pb := playback(t,
		i2ctest.IO{Addr: 0x23, W: []byte{0x01}},
		i2ctest.IO{Addr: 0x23, W: []byte{0x10}},
		i2ctest.IO{Addr: 0x23, R: []byte{0x83, 0x90}},
		// Continuous mode: the second read is a read alone.
		i2ctest.IO{Addr: 0x23, R: []byte{0x00, 0x0C}},
	)
	d := NewBH1750(NewBus("1", pb, 0, nil), 0x23, sleep)
	r, err := d.Sense(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	near(t, "lux", r.Lux, 28066.67, 0.01)
	if math.Round(r.Lux) != 28067 || waited != BH1750MeasureTime {
		t.Fatalf("lux %v, waited %s", r.Lux, waited)
	}
	r, err = d.Sense(context.Background())
	if err != nil || r.Lux != 10 {
		t.Fatalf("second read %v lux, %v; want 10 lux", r.Lux, err)
	}
}

// A failed read starts the sensor again on the next: it may have lost
// power.
func TestBH1750RestartsAfterFailure(t *testing.T) {
	b := &errBus{err: errors.New("remote I/O error")}
	d := NewBH1750(NewBus("1", b, 0, nil), 0x23, noWait)
	if _, err := d.Sense(context.Background()); err == nil {
		t.Fatal("no error")
	}
	if d.started {
		t.Fatal("started after a failed start")
	}
}

// The SCD4x datasheet's read_measurement example: 0x01F4 0x33, 0x6667
// 0xA2, 0x5EB9 0x3C is 500 ppm, 25 °C, 37 %RH.
func TestSCD4xDatasheetExample(t *testing.T) {
	frame := []byte{0x01, 0xF4, 0x33, 0x66, 0x67, 0xA2, 0x5E, 0xB9, 0x3C}
	var waits []time.Duration
	sleep := func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }
	pb := playback(t,
		i2ctest.IO{Addr: 0x62, W: []byte{0x21, 0xB1}},
		i2ctest.IO{Addr: 0x62, W: []byte{0xE4, 0xB8}},
		i2ctest.IO{Addr: 0x62, R: SensirionWord(0x8006)},
		i2ctest.IO{Addr: 0x62, W: []byte{0xEC, 0x05}},
		i2ctest.IO{Addr: 0x62, R: frame},
		// Within the 5 s period, not ready: the last measurement again.
		i2ctest.IO{Addr: 0x62, W: []byte{0xE4, 0xB8}},
		i2ctest.IO{Addr: 0x62, R: SensirionWord(0x8000)},
	)
	d := NewSCD4x(NewBus("1", pb, 0, nil), 0x62, sleep)
	for range 2 {
		r, err := d.Sense(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		near(t, "co2", r.PPM, 500, 0)
		near(t, "T", r.Celsius, 25, 0.003)
		near(t, "RH", r.Humidity, 37, 0.002)
		if string(r.Raw[:]) != string(frame) {
			t.Fatalf("raw % x", r.Raw)
		}
	}
	if len(waits) != 3 || waits[0] != SCD4xCommandTime {
		t.Fatalf("waits %v", waits)
	}
}

// Not ready before any measurement is an error, never a reading.
func TestSCD4xNotReady(t *testing.T) {
	pb := playback(t,
		i2ctest.IO{Addr: 0x62, W: []byte{0x21, 0xB1}},
		i2ctest.IO{Addr: 0x62, W: []byte{0xE4, 0xB8}},
		i2ctest.IO{Addr: 0x62, R: SensirionWord(0x8000)},
	)
	_, err := NewSCD4x(NewBus("1", pb, 0, nil), 0x62, noWait).Sense(context.Background())
	if !errors.Is(err, ErrSCD4xNotReady) {
		t.Fatalf("err %v", err)
	}
}

func TestSCD4xBadCRC(t *testing.T) {
	frame := []byte{0x01, 0xF4, 0x33, 0x66, 0x67, 0xA3, 0x5E, 0xB9, 0x3C}
	pb := playback(t,
		i2ctest.IO{Addr: 0x62, W: []byte{0x21, 0xB1}},
		i2ctest.IO{Addr: 0x62, W: []byte{0xE4, 0xB8}},
		i2ctest.IO{Addr: 0x62, R: SensirionWord(0x0001)},
		i2ctest.IO{Addr: 0x62, W: []byte{0xEC, 0x05}},
		i2ctest.IO{Addr: 0x62, R: frame},
	)
	_, err := NewSCD4x(NewBus("1", pb, 0, nil), 0x62, noWait).Sense(context.Background())
	if !errors.Is(err, drivers.ErrCRC) {
		t.Fatalf("err %v", err)
	}
}
