package modbus

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/promcp/promcp-device/drivers/modbus/modbusconf"
)

// TestCodecKnownFrames pins the byte orders to frames as devices send them.
func TestCodecKnownFrames(t *testing.T) {
	for _, tc := range []struct {
		name  string
		c     Codec
		wire  []byte
		value any
	}{
		{"uint16 ABCD", Codec{Type: modbusconf.DataUint16, Order: modbusconf.OrderABCD, Bit: -1}, []byte{0x12, 0x34}, uint64(0x1234)},
		{"uint16 DCBA", Codec{Type: modbusconf.DataUint16, Order: modbusconf.OrderDCBA, Bit: -1}, []byte{0x34, 0x12}, uint64(0x1234)},
		{"int16 negative", Codec{Type: modbusconf.DataInt16, Bit: -1}, []byte{0xFF, 0xFE}, int64(-2)},
		{"uint32 ABCD", Codec{Type: modbusconf.DataUint32, Order: modbusconf.OrderABCD, Bit: -1}, []byte{0x11, 0x22, 0x33, 0x44}, uint64(0x11223344)},
		{"uint32 DCBA", Codec{Type: modbusconf.DataUint32, Order: modbusconf.OrderDCBA, Bit: -1}, []byte{0x44, 0x33, 0x22, 0x11}, uint64(0x11223344)},
		{"uint32 BADC", Codec{Type: modbusconf.DataUint32, Order: modbusconf.OrderBADC, Bit: -1}, []byte{0x22, 0x11, 0x44, 0x33}, uint64(0x11223344)},
		{"uint32 CDAB", Codec{Type: modbusconf.DataUint32, Order: modbusconf.OrderCDAB, Bit: -1}, []byte{0x33, 0x44, 0x11, 0x22}, uint64(0x11223344)},
		// 230.5 W as an energy meter sends it, low word first.
		{"float32 CDAB", Codec{Type: modbusconf.DataFloat32, Order: modbusconf.OrderCDAB, Bit: -1}, []byte{0x80, 0x00, 0x43, 0x66}, 230.5},
		{"int64 CDAB", Codec{Type: modbusconf.DataInt64, Order: modbusconf.OrderCDAB, Bit: -1},
			[]byte{0x77, 0x88, 0x55, 0x66, 0x33, 0x44, 0x11, 0x22}, int64(0x1122334455667788)},
		{"float64 ABCD", Codec{Type: modbusconf.DataFloat64, Bit: -1}, []byte{0x40, 0x09, 0x21, 0xFB, 0x54, 0x44, 0x2D, 0x18}, math.Pi},
		{"bool bit 3", Codec{Type: modbusconf.DataBool, Bit: 3}, []byte{0x00, 0x08}, true},
		{"bool bit 9", Codec{Type: modbusconf.DataBool, Bit: 9}, []byte{0x02, 0x00}, true},
		{"string", Codec{Type: modbusconf.DataString, Length: 3, Bit: -1}, []byte("FAN-1\x00"), "FAN-1"},
		{"string BADC", Codec{Type: modbusconf.DataString, Order: modbusconf.OrderBADC, Length: 2, Bit: -1}, []byte("AF1N"), "FAN1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.c.Decode(tc.wire)
			if err != nil || got != tc.value {
				t.Errorf("Decode(% x) = %v (%T), %v; want %v (%T)", tc.wire, got, got, err, tc.value, tc.value)
			}
			wire, err := tc.c.Encode(tc.value)
			if err != nil || !bytes.Equal(wire, tc.wire) {
				t.Errorf("Encode(%v) = % x, %v; want % x", tc.value, wire, err, tc.wire)
			}
		})
	}
}

func TestCodecRefusesWhatDoesNotFit(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    Codec
		v    any
	}{
		{"int16 too big", Codec{Type: modbusconf.DataInt16, Bit: -1}, int64(40000)},
		{"uint16 negative wrapped", Codec{Type: modbusconf.DataUint16, Bit: -1}, uint64(70000)},
		{"float32 NaN", Codec{Type: modbusconf.DataFloat32, Bit: -1}, math.NaN()},
		{"float32 overflow", Codec{Type: modbusconf.DataFloat32, Bit: -1}, 1e39},
		{"float64 inf", Codec{Type: modbusconf.DataFloat64, Bit: -1}, math.Inf(1)},
		{"string too long", Codec{Type: modbusconf.DataString, Length: 1, Bit: -1}, "abc"},
		{"wrong Go type", Codec{Type: modbusconf.DataInt32, Bit: -1}, 1.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.c.Encode(tc.v); !errors.Is(err, ErrOutOfRange) {
				t.Errorf("Encode(%v) error = %v, want ErrOutOfRange", tc.v, err)
			}
		})
	}
	// A scaled setpoint lands on the right register value.
	c := Codec{Type: modbusconf.DataInt16, Bit: -1}
	raw, err := c.Raw(21.5, 0.1, -40)
	if err != nil || raw != int64(615) {
		t.Fatalf("Raw(21.5, scale 0.1, offset -40) = %v, %v; want 615", raw, err)
	}
	if _, err := c.Raw(1e6, 0.1, 0); err != nil {
		t.Fatalf("Raw leaves range checks to Encode: %v", err)
	}
}

var fuzzTypes = []modbusconf.DataType{modbusconf.DataInt16, modbusconf.DataUint16, modbusconf.DataInt32, modbusconf.DataUint32,
	modbusconf.DataInt64, modbusconf.DataUint64, modbusconf.DataFloat32, modbusconf.DataFloat64, modbusconf.DataBool, modbusconf.DataString}

var fuzzOrders = []modbusconf.WordOrder{modbusconf.OrderABCD, modbusconf.OrderDCBA, modbusconf.OrderBADC, modbusconf.OrderCDAB}

// FuzzCodecRoundTrip: for every type and order, decode(encode(v)) == v for
// any value the type holds, and decoding any bytes never panics and
// re-encodes to a value that decodes the same.
func FuzzCodecRoundTrip(f *testing.F) {
	f.Add(uint8(0), uint8(0), uint64(0), "", uint8(0))
	f.Add(uint8(6), uint8(3), math.Float64bits(230.5), "", uint8(0))
	f.Add(uint8(9), uint8(2), uint64(0), "FAN-01", uint8(3))
	f.Add(uint8(8), uint8(1), uint64(1), "", uint8(15))
	f.Fuzz(func(t *testing.T, ti, oi uint8, bits uint64, s string, bit uint8) {
		c := Codec{Type: fuzzTypes[int(ti)%len(fuzzTypes)], Order: fuzzOrders[int(oi)%len(fuzzOrders)], Bit: -1, Length: 4}
		var v any
		switch c.Type {
		case modbusconf.DataInt16:
			v = int64(int16(bits))
		case modbusconf.DataInt32:
			v = int64(int32(bits))
		case modbusconf.DataInt64:
			v = int64(bits)
		case modbusconf.DataUint16:
			v = uint64(uint16(bits))
		case modbusconf.DataUint32:
			v = uint64(uint32(bits))
		case modbusconf.DataUint64:
			v = bits
		case modbusconf.DataFloat32:
			f := float64(math.Float32frombits(uint32(bits)))
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return
			}
			v = f
		case modbusconf.DataFloat64:
			f := math.Float64frombits(bits)
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return
			}
			v = f
		case modbusconf.DataBool:
			c.Bit = int(bit%17) - 1
			v = bits&1 == 1
		case modbusconf.DataString:
			v = s
		}
		wire, err := c.Encode(v)
		if c.Type == modbusconf.DataString && (len(s) > 8 || bytes.ContainsRune([]byte(s), 0)) {
			if !errors.Is(err, ErrOutOfRange) {
				t.Fatalf("Encode(%q) into 4 registers: %v, want ErrOutOfRange", s, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("Encode(%v) as %s %s: %v", v, c.Type, c.Order, err)
		}
		got, err := c.Decode(wire)
		want := v
		if c.Type == modbusconf.DataString {
			want = string(bytes.TrimRight([]byte(s), " "))
		}
		if err != nil || got != want {
			t.Fatalf("%s %s: Decode(Encode(%v)) = %v, %v (wire % x)", c.Type, c.Order, v, got, err, wire)
		}
		// Any wire bytes decode without panicking.
		raw := make([]byte, 2*c.Words())
		for i := range raw {
			raw[i] = byte(bits >> (8 * (i % 8)))
		}
		if _, err := c.Decode(raw); err != nil {
			t.Fatalf("Decode(% x): %v", raw, err)
		}
	})
}

// FuzzNumberAgreesWithDecode: Number, the read path's allocation-free
// decoder, gives bit for bit what Engineering(Decode(wire)) gives, for
// every type, word order, scale and offset; a bool or a string is not a
// number; a wire of the wrong length fails as Decode does.
func FuzzNumberAgreesWithDecode(f *testing.F) {
	f.Add(uint8(0), uint8(0), uint64(0x1234_5678_9abc_def0), 0.1, -3.0, uint8(0))
	f.Add(uint8(7), uint8(2), uint64(0x7ff8_0000_0000_0001), 0.0, 0.0, uint8(1))
	f.Add(uint8(6), uint8(3), uint64(0xffff_ffff_0000_0000), 1e6, 0.5, uint8(0))
	f.Fuzz(func(t *testing.T, ti, oi uint8, bits uint64, scale, offset float64, short uint8) {
		c := Codec{Type: fuzzTypes[int(ti)%len(fuzzTypes)], Order: fuzzOrders[int(oi)%len(fuzzOrders)], Bit: -1, Length: 4}
		wire := make([]byte, 2*c.Words())
		for i := range wire {
			wire[i] = byte(bits >> (8 * (i % 8)))
		}
		if short%2 == 1 && len(wire) > 0 {
			wire = wire[:len(wire)-1]
		}
		got, ok, err := c.Number(wire, scale, offset)
		raw, derr := c.Decode(wire)
		if c.Type == modbusconf.DataBool || c.Type == modbusconf.DataString {
			if ok || err != nil {
				t.Fatalf("%s: Number = %v, %t, %v; want not a number", c.Type, got, ok, err)
			}
			return
		}
		if !ok || (err != nil) != (derr != nil) {
			t.Fatalf("%s %s % x: Number = %v, %t, %v; Decode's error %v", c.Type, c.Order, wire, got, ok, err, derr)
		}
		if err != nil {
			return
		}
		want, isFloat := Engineering(raw, scale, offset).(float64)
		if !isFloat || math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("%s %s % x × %v + %v: Number = %v, Engineering(Decode) = %v", c.Type, c.Order, wire, scale, offset, got, want)
		}
	})
}
