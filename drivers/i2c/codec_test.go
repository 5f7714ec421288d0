package i2c

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/promcp/promcp-device/drivers/i2c/i2cconf"
)

var (
	allTypes = []i2cconf.RegType{
		i2cconf.RegUint8, i2cconf.RegInt8, i2cconf.RegUint16, i2cconf.RegInt16,
		i2cconf.RegUint32, i2cconf.RegInt32, i2cconf.RegFloat32,
	}
	allOrders = []i2cconf.ByteOrder{i2cconf.BigEndian, i2cconf.LittleEndian, ""}
)

func TestCodec(t *testing.T) {
	tests := []struct {
		t i2cconf.RegType
		o i2cconf.ByteOrder
		v float64
		b []byte
	}{
		{i2cconf.RegUint8, "", 200, []byte{0xC8}},
		{i2cconf.RegInt8, "", -2, []byte{0xFE}},
		{i2cconf.RegUint16, i2cconf.BigEndian, 0x1234, []byte{0x12, 0x34}},
		{i2cconf.RegUint16, i2cconf.LittleEndian, 0x1234, []byte{0x34, 0x12}},
		{i2cconf.RegInt16, i2cconf.BigEndian, -2, []byte{0xFF, 0xFE}},
		{i2cconf.RegInt16, i2cconf.LittleEndian, -32768, []byte{0x00, 0x80}},
		{i2cconf.RegUint32, i2cconf.BigEndian, 0xDEADBEEF, []byte{0xDE, 0xAD, 0xBE, 0xEF}},
		{i2cconf.RegUint32, i2cconf.LittleEndian, 0xDEADBEEF, []byte{0xEF, 0xBE, 0xAD, 0xDE}},
		{i2cconf.RegInt32, i2cconf.BigEndian, -1, []byte{0xFF, 0xFF, 0xFF, 0xFF}},
		{i2cconf.RegFloat32, i2cconf.BigEndian, 21.5, []byte{0x41, 0xAC, 0x00, 0x00}},
		{i2cconf.RegFloat32, "", -0.25, []byte{0xBE, 0x80, 0x00, 0x00}},
	}
	for _, tc := range tests {
		got, err := Encode(tc.t, tc.o, tc.v)
		if err != nil || !bytes.Equal(got, tc.b) {
			t.Errorf("Encode(%s, %q, %v) = % x, %v, want % x", tc.t, tc.o, tc.v, got, err, tc.b)
		}
		v, err := Decode(tc.t, tc.o, tc.b)
		if err != nil || v != tc.v {
			t.Errorf("Decode(%s, %q, % x) = %v, %v, want %v", tc.t, tc.o, tc.b, v, err, tc.v)
		}
	}
}

func TestCodecErrors(t *testing.T) {
	encode := []struct {
		name string
		t    i2cconf.RegType
		o    i2cconf.ByteOrder
		v    float64
		want error // nil: any error
	}{
		{"uint8 overflow", i2cconf.RegUint8, "", 256, ErrOutOfRange},
		{"int8 underflow", i2cconf.RegInt8, "", -129, ErrOutOfRange},
		{"fraction", i2cconf.RegInt16, "", 1.5, ErrOutOfRange},
		{"uint32 overflow", i2cconf.RegUint32, "", 1 << 32, ErrOutOfRange},
		{"NaN", i2cconf.RegFloat32, "", math.NaN(), ErrOutOfRange},
		{"unknown type", "uint64", "", 1, nil},
		{"unknown order", i2cconf.RegUint16, "middle", 1, nil},
	}
	for _, tc := range encode {
		t.Run("encode "+tc.name, func(t *testing.T) {
			_, err := Encode(tc.t, tc.o, tc.v)
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Errorf("Encode(%s, %q, %v) = %v, want error %v", tc.t, tc.o, tc.v, err, tc.want)
			}
		})
	}
	decode := []struct {
		name string
		t    i2cconf.RegType
		o    i2cconf.ByteOrder
		b    []byte
	}{
		{"short", i2cconf.RegUint16, "", []byte{1}},
		{"long", i2cconf.RegUint8, "", []byte{1, 2}},
		{"unknown type", "uint64", "", make([]byte, 8)},
		{"unknown order", i2cconf.RegUint16, "middle", []byte{1, 2}},
	}
	for _, tc := range decode {
		t.Run("decode "+tc.name, func(t *testing.T) {
			if v, err := Decode(tc.t, tc.o, tc.b); err == nil {
				t.Errorf("Decode(%s, %q, % x) = %v, want an error", tc.t, tc.o, tc.b, v)
			}
		})
	}
}

// FuzzCodecRoundTrip checks, for every type and byte order, that
// decode(encode(v)) == v for every value that fits, that encode(decode(b)) ==
// b for every byte string (NaNs and infinities aside), and that values that do not fit are
// refused with ErrOutOfRange.
func FuzzCodecRoundTrip(f *testing.F) {
	f.Add(int64(0), 0.0, []byte{0, 0, 0, 0})
	f.Add(int64(-1), 21.5, []byte{0x41, 0xAC, 0x00, 0x00})
	f.Add(int64(math.MaxInt64), math.MaxFloat64, []byte{0xFF, 0xFF, 0xFF, 0xFF})
	f.Add(int64(math.MinInt64), math.SmallestNonzeroFloat64, []byte{0x7F, 0x80, 0x00, 0x01})
	f.Fuzz(func(t *testing.T, n int64, x float64, b []byte) {
		for _, typ := range allTypes {
			for _, o := range allOrders {
				size := typ.Size()
				// A value that fits.
				v := float32(x)
				fits := float64(v)
				if lo, hi, ok := typ.IntRange(); ok {
					fits = lo + float64(uint64(n)%uint64(hi-lo+1))
				}
				if !math.IsNaN(fits) && !math.IsInf(fits, 0) {
					enc, err := Encode(typ, o, fits)
					if err != nil {
						t.Fatalf("Encode(%s, %q, %v) = %v", typ, o, fits, err)
					}
					if len(enc) != size {
						t.Fatalf("Encode(%s, %q, %v) gave %d bytes, want %d", typ, o, fits, len(enc), size)
					}
					got, err := Decode(typ, o, enc)
					if err != nil || got != fits || math.Signbit(got) != math.Signbit(fits) {
						t.Fatalf("Decode(Encode(%s, %q, %v)) = %v, %v", typ, o, fits, got, err)
					}
				}
				// Any bytes.
				if len(b) >= size {
					raw := b[:size]
					d, err := Decode(typ, o, raw)
					if err != nil {
						t.Fatalf("Decode(%s, %q, % x) = %v", typ, o, raw, err)
					}
					if !math.IsNaN(d) && !math.IsInf(d, 0) { // a device may send them; we never do
						enc, err := Encode(typ, o, d)
						if err != nil || !bytes.Equal(enc, raw) {
							t.Fatalf("Encode(Decode(%s, %q, % x) = %v) = % x, %v", typ, o, raw, d, enc, err)
						}
					}
				}
				// Any value: it fits, or it is refused as out of range.
				if enc, err := Encode(typ, o, x); err != nil {
					if !errors.Is(err, ErrOutOfRange) {
						t.Fatalf("Encode(%s, %q, %v) = %v, want ErrOutOfRange", typ, o, x, err)
					}
				} else if got, _ := Decode(typ, o, enc); typ != i2cconf.RegFloat32 && got != x {
					t.Fatalf("Decode(Encode(%s, %q, %v)) = %v", typ, o, x, got)
				}
			}
		}
	})
}

func TestScaleDecimal(t *testing.T) {
	reg := i2cconf.Register{Name: "t", Type: i2cconf.RegInt16, Scale: 0.01}
	for raw := -32768; raw <= 32767; raw++ {
		v := ToEngineering(reg, float64(raw))
		if back := math.Round(ToRaw(reg, v)); back != float64(raw) {
			t.Fatalf("ToRaw(ToEngineering(%d) = %v) = %v", raw, v, back)
		}
	}
	if got := ToEngineering(reg, 3151); got != 31.51 {
		t.Errorf("ToEngineering(3151, scale 0.01) = %v, want 31.51", got)
	}
	if got := ToEngineering(i2cconf.Register{Type: i2cconf.RegUint8}, 7); got != 7 {
		t.Errorf("ToEngineering(7, scale 0) = %v, want 7", got)
	}
}
