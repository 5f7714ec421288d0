package i2c

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"periph.io/x/conn/v3/i2c/i2ctest"
	"periph.io/x/conn/v3/physic"

	"github.com/promcp/promcp-device/drivers"
)

// sleeps records the waits an SHT3x asks for, without waiting.
type sleeps []time.Duration

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	*s = append(*s, d)
	return ctx.Err()
}

var (
	measure = i2ctest.IO{Addr: 0x44, W: []byte{0x24, 0x00}}
	celsius = func(c int64) physic.Temperature { return physic.ZeroCelsius + physic.Temperature(c)*physic.Kelvin }
)

// senseOnce has an SHT3x at 0x44 on bus "1" measure once, the sensor
// answering r; it returns what Sense returns and the waits it asked for.
func senseOnce(t *testing.T, r []byte) (Sample, sleeps, error) {
	var s sleeps
	d := NewSHT3x(NewBus("1", playback(t, measure, i2ctest.IO{Addr: 0x44, R: r}), 0, nil), 0x44, WithSleep(s.sleep))
	got, err := d.Sense(t.Context())
	return got, s, err
}

func TestSHT3xSense(t *testing.T) {
	tests := []struct {
		name string
		r    []byte // the 6 bytes read
		want Sample
	}{
		{"25 °C 60 %", []byte{0x66, 0x66, 0x93, 0x99, 0x99, 0xBE}, Sample{Temperature: celsius(25), Humidity: 60 * physic.PercentRH}},
		{"minimum", []byte{0x00, 0x00, 0x81, 0x00, 0x00, 0x81}, Sample{Temperature: celsius(-45)}},
		{"maximum", []byte{0xFF, 0xFF, 0xAC, 0xFF, 0xFF, 0xAC}, Sample{Temperature: celsius(130), Humidity: 100 * physic.PercentRH}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, s, err := senseOnce(t, tc.r)
			if err != nil {
				t.Fatalf("Sense() = %v", err)
			}
			tc.want.Raw = [6]byte(tc.r) // the measurement as sent, CRCs included
			if got != tc.want {
				t.Errorf("Sense() = %v %v % x, want %v %v % x", got.Temperature, got.Humidity, got.Raw, tc.want.Temperature, tc.want.Humidity, tc.want.Raw)
			}
			if len(s) != 1 || s[0] != 15*time.Millisecond {
				t.Errorf("Sense() waited %v, want [15ms]", s)
			}
		})
	}
}

func TestSHT3xSenseCRC(t *testing.T) {
	tests := []struct {
		name string
		r    []byte
		what string
	}{
		{"temperature", []byte{0x66, 0x66, 0x94, 0x99, 0x99, 0xBE}, "temperature"},
		{"humidity", []byte{0x66, 0x66, 0x93, 0x99, 0x99, 0xBF}, "humidity"},
		{"data bit flip", []byte{0x66, 0x67, 0x93, 0x99, 0x99, 0xBE}, "temperature"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := senseOnce(t, tc.r)
			if !errors.Is(err, drivers.ErrCRC) {
				t.Fatalf("Sense() = %v, want ErrCRC", err)
			}
			if !strings.Contains(err.Error(), "i2c 1 addr 0x44") || !strings.Contains(err.Error(), tc.what) {
				t.Errorf("Sense() = %q, want bus, address and %q named", err, tc.what)
			}
		})
	}
}

func TestSHT3xSenseNACK(t *testing.T) {
	eb := &errBus{err: drivers.ErrnoRemoteIO}
	var s sleeps
	d := NewSHT3x(NewBus("1", eb, 0, nil), 0x45, WithSleep(s.sleep))
	_, err := d.Sense(t.Context())
	if !errors.Is(err, drivers.ErrNACK) {
		t.Fatalf("Sense() = %v, want ErrNACK", err)
	}
	const want = "sht3x measure: i2c 1 addr 0x45: device did not acknowledge: remote I/O error"
	if err.Error() != want {
		t.Errorf("Sense() = %q, want %q", err, want)
	}
	if n := eb.calls.Load(); n != 1 || len(s) != 0 {
		t.Errorf("Sense() did %d transactions and %d waits after a NACK, want 1 and 0", n, len(s))
	}
}

// A context cancelled during the measurement wait stops before the read.
func TestSHT3xSenseCancelledWhileWaiting(t *testing.T) {
	pb := playback(t, measure)
	ctx, cancel := context.WithCancel(t.Context())
	d := NewSHT3x(NewBus("1", pb, 0, nil), 0x44, WithSleep(func(context.Context, time.Duration) error {
		cancel()
		return context.Canceled
	}))
	if _, err := d.Sense(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sense() = %v, want context.Canceled", err)
	}
}

func TestSHT3xSenseCancelledBeforeTurn(t *testing.T) {
	pb := playback(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	d := NewSHT3x(NewBus("1", pb, 0, nil), 0x44)
	if _, err := d.Sense(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sense() = %v, want context.Canceled", err)
	}
	if pb.Count != 0 {
		t.Errorf("Sense(cancelled) did %d transactions, want 0", pb.Count)
	}
}

func TestSHT3xReadStatus(t *testing.T) {
	pb := playback(t,
		i2ctest.IO{Addr: 0x44, W: []byte{0xF3, 0x2D}},
		i2ctest.IO{Addr: 0x44, R: []byte{0x80, 0x10, 0xE1}},
	)
	d := NewSHT3x(NewBus("1", pb, 0, nil), 0x44)
	got, err := d.ReadStatus(t.Context())
	if err != nil {
		t.Fatalf("ReadStatus() = %v", err)
	}
	if want := StatusAlertPending | StatusReset; got != want {
		t.Errorf("ReadStatus() = %#04x, want %#04x", got, want)
	}
}

func TestSHT3xSoftReset(t *testing.T) {
	pb := playback(t, i2ctest.IO{Addr: 0x44, W: []byte{0x30, 0xA2}})
	var s sleeps
	d := NewSHT3x(NewBus("1", pb, 0, nil), 0x44, WithSleep(s.sleep))
	if err := d.SoftReset(t.Context()); err != nil {
		t.Fatalf("SoftReset() = %v", err)
	}
	if len(s) != 1 || s[0] != 1500*time.Microsecond {
		t.Errorf("SoftReset() waited %v, want [1.5ms]", s)
	}
}

func TestCRC8(t *testing.T) {
	tests := []struct {
		in   []byte
		want byte
	}{
		{[]byte{0xBE, 0xEF}, 0x92}, // datasheet check value
		{[]byte{0x00, 0x00}, 0x81},
		{[]byte{0x66, 0x66}, 0x93},
		{nil, 0xFF},
	}
	for _, tc := range tests {
		if got := CRC8(tc.in); got != tc.want {
			t.Errorf("CRC8(% x) = %#02x, want %#02x", tc.in, got, tc.want)
		}
	}
}

func TestSHT3xConversions(t *testing.T) {
	tests := []struct {
		raw     uint16
		celsius float64
		percent float64
	}{
		{0, -45, 0},
		{0x6666, 25, 40},
		{0x9999, 60, 60},
		{0xFFFF, 130, 100},
	}
	for _, tc := range tests {
		if got := Celsius(tc.raw); got != tc.celsius {
			t.Errorf("Celsius(%#04x) = %v, want %v", tc.raw, got, tc.celsius)
		}
		if got := Percent(tc.raw); got != tc.percent {
			t.Errorf("Percent(%#04x) = %v, want %v", tc.raw, got, tc.percent)
		}
		if got := Temperature(tc.raw).Celsius(); got != tc.celsius {
			t.Errorf("Temperature(%#04x) = %v °C, want %v", tc.raw, got, tc.celsius)
		}
		if got := RawTemperature(tc.celsius); got != tc.raw {
			t.Errorf("RawTemperature(%v) = %#04x, want %#04x", tc.celsius, got, tc.raw)
		}
		if got := RawHumidity(tc.percent); got != tc.raw {
			t.Errorf("RawHumidity(%v) = %#04x, want %#04x", tc.percent, got, tc.raw)
		}
	}
	// Out of the sensor's range: clamped.
	if got := RawTemperature(200); got != 0xFFFF {
		t.Errorf("RawTemperature(200) = %#04x, want 0xffff", got)
	}
	if got := RawHumidity(-3); got != 0 {
		t.Errorf("RawHumidity(-3) = %#04x, want 0", got)
	}
}
