package i2c

import (
	"errors"
	"math"
	"testing"

	"periph.io/x/conn/v3/i2c/i2ctest"

	"github.com/promcp/promcp-device/drivers/i2c/i2cconf"
)

// growLight is the register map of manifests/examples/lab-bench.yml, plus a
// float32 and an offset register.
var growLight = []i2cconf.Register{
	{Name: "dimmer", Address: 0x01, Type: i2cconf.RegUint8, Scale: 0.5, Writable: true},
	{Name: "lux", Address: 0x02, Type: i2cconf.RegUint16, ByteOrder: i2cconf.BigEndian},
	{Name: "driver_temperature", Address: 0x04, Type: i2cconf.RegInt16, ByteOrder: i2cconf.LittleEndian, Scale: 0.01},
	{Name: "setpoint", Address: 0x10, Type: i2cconf.RegFloat32, ByteOrder: i2cconf.LittleEndian, Writable: true},
	{Name: "offset", Address: 0x20, Type: i2cconf.RegInt32, Scale: 2, Offset: -100, Writable: true},
}

// growLightOn returns the growLight device at 0x20 on bus "1" and its
// playback: the test fails unless its transactions are exactly ops.
func growLightOn(t *testing.T, ops ...i2ctest.IO) (*Registers, *i2ctest.Playback) {
	pb := playback(t, ops...)
	return NewRegisters(NewBus("1", pb, 0, nil), 0x20, growLight), pb
}

func TestRegistersRead(t *testing.T) {
	tests := []struct {
		name string
		reg  string
		io   i2ctest.IO
		want float64
	}{
		{"uint8 scaled", "dimmer", i2ctest.IO{Addr: 0x20, W: []byte{0x01}, R: []byte{80}}, 40},
		{"uint16 big", "lux", i2ctest.IO{Addr: 0x20, W: []byte{0x02}, R: []byte{0x2E, 0xE0}}, 12000},
		{"int16 little decimal scale", "driver_temperature", i2ctest.IO{Addr: 0x20, W: []byte{0x04}, R: []byte{0x4F, 0x0C}}, 31.51},
		{"int16 little negative", "driver_temperature", i2ctest.IO{Addr: 0x20, W: []byte{0x04}, R: []byte{0x38, 0xFF}}, -2},
		{"float32 little", "setpoint", i2ctest.IO{Addr: 0x20, W: []byte{0x10}, R: []byte{0x00, 0x00, 0xAC, 0x41}}, 21.5},
		{"int32 scale and offset", "offset", i2ctest.IO{Addr: 0x20, W: []byte{0x20}, R: []byte{0xFF, 0xFF, 0xFF, 0xFE}}, -104},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := growLightOn(t, tc.io)
			got, err := d.Read(t.Context(), tc.reg)
			if err != nil {
				t.Fatalf("Read(%q) = %v", tc.reg, err)
			}
			if got != tc.want {
				t.Errorf("Read(%q) = %v, want %v", tc.reg, got, tc.want)
			}
		})
	}
}

func TestRegistersWrite(t *testing.T) {
	tests := []struct {
		name string
		reg  string
		v    float64
		w    []byte
	}{
		{"uint8 scaled", "dimmer", 40, []byte{0x01, 80}},
		{"rounded to the register's step", "dimmer", 40.3, []byte{0x01, 81}},
		{"maximum", "dimmer", 127.5, []byte{0x01, 255}},
		{"float32 little", "setpoint", 21.5, []byte{0x10, 0x00, 0x00, 0xAC, 0x41}},
		{"int32 scale and offset", "offset", -104, []byte{0x20, 0xFF, 0xFF, 0xFF, 0xFE}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := growLightOn(t, i2ctest.IO{Addr: 0x20, W: tc.w})
			if err := d.Write(t.Context(), tc.reg, tc.v); err != nil {
				t.Fatalf("Write(%q, %v) = %v", tc.reg, tc.v, err)
			}
		})
	}
}

// Refused writes never reach the bus.
func TestRegistersWriteRefused(t *testing.T) {
	tests := []struct {
		name string
		reg  string
		v    float64
		want error
	}{
		{"too large", "dimmer", 128, ErrOutOfRange},
		{"negative unsigned", "dimmer", -1, ErrOutOfRange},
		{"NaN", "dimmer", math.NaN(), ErrOutOfRange},
		{"infinite", "setpoint", math.Inf(1), ErrOutOfRange},
		{"beyond float32", "setpoint", 1e39, ErrOutOfRange},
		{"read-only", "lux", 5, ErrReadOnly},
		{"unknown", "nope", 1, ErrUnknownRegister},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, pb := growLightOn(t)
			err := d.Write(t.Context(), tc.reg, tc.v)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Write(%q, %v) = %v, want %v", tc.reg, tc.v, err, tc.want)
			}
			if pb.Count != 0 {
				t.Errorf("Write(%q, %v) did %d transactions, want 0", tc.reg, tc.v, pb.Count)
			}
		})
	}
}

func TestRegistersWriteRangeMessage(t *testing.T) {
	d, _ := growLightOn(t)
	err := d.Write(t.Context(), "dimmer", 200)
	const want = "register dimmer write: i2c 1 addr 0x20: 200 does not fit (range 0..127.5): encode uint8: value out of range: 400 is outside 0..255"
	if err == nil || err.Error() != want {
		t.Errorf("Write(dimmer, 200) = %q, want %q", err, want)
	}
}

func TestRegistersReadUnknown(t *testing.T) {
	d, pb := growLightOn(t)
	if _, err := d.Read(t.Context(), "nope"); !errors.Is(err, ErrUnknownRegister) {
		t.Fatalf("Read(nope) = %v, want ErrUnknownRegister", err)
	}
	if pb.Count != 0 {
		t.Errorf("Read(nope) did %d transactions, want 0", pb.Count)
	}
}
