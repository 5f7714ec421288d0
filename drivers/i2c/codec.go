package i2c

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/promcp/promcp-device/drivers/i2c/i2cconf"
)

// Decode decodes a raw register value of type t sent in byte order o (""
// means big endian). len(b) must be t.Size(). The result is the raw value,
// before scale and offset.
func Decode(t i2cconf.RegType, o i2cconf.ByteOrder, b []byte) (float64, error) {
	ord, err := byteOrder(o)
	if err != nil {
		return 0, err
	}
	size := t.Size()
	if size == 0 {
		return 0, fmt.Errorf("decode: unknown register type %q", t)
	}
	if len(b) != size {
		return 0, fmt.Errorf("decode %s: got %d bytes, want %d", t, len(b), size)
	}
	switch t {
	case i2cconf.RegUint8:
		return float64(b[0]), nil
	case i2cconf.RegInt8:
		return float64(int8(b[0])), nil
	case i2cconf.RegUint16:
		return float64(ord.Uint16(b)), nil
	case i2cconf.RegInt16:
		return float64(int16(ord.Uint16(b))), nil
	case i2cconf.RegUint32:
		return float64(ord.Uint32(b)), nil
	case i2cconf.RegInt32:
		return float64(int32(ord.Uint32(b))), nil
	case i2cconf.RegFloat32:
		return float64(math.Float32frombits(ord.Uint32(b))), nil
	}
	return 0, fmt.Errorf("decode: unknown register type %q", t)
}

// Encode encodes the raw value v (after scale and offset have been undone) as
// a register of type t in byte order o ("" means big endian), returning
// t.Size() bytes.
//
// Integer types take only whole numbers within the type's range; float32
// takes any finite value within ±math.MaxFloat32, rounded to the nearest
// float32. Anything else, NaN and infinities included, is refused with an
// error wrapping [ErrOutOfRange].
func Encode(t i2cconf.RegType, o i2cconf.ByteOrder, v float64) ([]byte, error) {
	ord, err := byteOrder(o)
	if err != nil {
		return nil, err
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil, fmt.Errorf("encode %s: %w: %v", t, ErrOutOfRange, v)
	}
	if t == i2cconf.RegFloat32 {
		if math.Abs(v) > math.MaxFloat32 {
			return nil, fmt.Errorf("encode %s: %w: %v exceeds ±%v", t, ErrOutOfRange, v, math.MaxFloat32)
		}
		return ord.AppendUint32(nil, math.Float32bits(float32(v))), nil
	}
	lo, hi, ok := t.IntRange()
	if !ok {
		return nil, fmt.Errorf("encode: unknown register type %q", t)
	}
	if v != math.Trunc(v) {
		return nil, fmt.Errorf("encode %s: %w: %v is not a whole number", t, ErrOutOfRange, v)
	}
	if v < lo || v > hi {
		return nil, fmt.Errorf("encode %s: %w: %v is outside %v..%v", t, ErrOutOfRange, v, lo, hi)
	}
	switch t.Size() {
	case 1:
		return []byte{byte(int64(v))}, nil
	case 2:
		return ord.AppendUint16(nil, uint16(int64(v))), nil
	default:
		return ord.AppendUint32(nil, uint32(int64(v))), nil
	}
}

// DecodeRegister decodes b, read from register reg, into its engineering
// value raw*Scale + Offset (a zero Scale counts as 1).
func DecodeRegister(reg i2cconf.Register, b []byte) (float64, error) {
	raw, err := Decode(reg.Type, reg.ByteOrder, b)
	if err != nil {
		return 0, err
	}
	return ToEngineering(reg, raw), nil
}

// EncodeRegister encodes the engineering value v for register reg: raw =
// (v-Offset)/Scale, rounded to the nearest whole number for integer types,
// then [Encode]. A value that does not fit yields an error wrapping
// [ErrOutOfRange] that states the register's range in engineering units.
func EncodeRegister(reg i2cconf.Register, v float64) ([]byte, error) {
	raw := ToRaw(reg, v)
	if reg.Type != i2cconf.RegFloat32 {
		raw = math.Round(raw)
	}
	b, err := Encode(reg.Type, reg.ByteOrder, raw)
	if err != nil {
		if lo, hi, ok := reg.Type.IntRange(); ok {
			lo, hi = ToEngineering(reg, lo), ToEngineering(reg, hi)
			if lo > hi {
				lo, hi = hi, lo
			}
			return nil, fmt.Errorf("%v does not fit (range %v..%v): %w", v, lo, hi, err)
		}
		return nil, fmt.Errorf("%v does not fit: %w", v, err)
	}
	return b, nil
}

// ToEngineering returns raw*Scale + Offset for reg (a zero Scale counts as
// 1). A decimal scale such as 0.01 is applied as a division by 100, so that
// raw 3151 gives 31.51 rather than 31.509999999999998.
func ToEngineering(reg i2cconf.Register, raw float64) float64 {
	if inv, ok := inverseScale(reg.Scale); ok {
		return raw/inv + reg.Offset
	}
	return raw*scaleOf(reg) + reg.Offset
}

// ToRaw returns (v - Offset)/Scale for reg (a zero Scale counts as 1),
// unrounded.
func ToRaw(reg i2cconf.Register, v float64) float64 {
	if inv, ok := inverseScale(reg.Scale); ok {
		return (v - reg.Offset) * inv
	}
	return (v - reg.Offset) / scaleOf(reg)
}

func scaleOf(reg i2cconf.Register) float64 {
	if reg.Scale == 0 {
		return 1
	}
	return reg.Scale
}

// inverseScale reports whether 1/scale is a whole number (scale 0.5, 0.1,
// 0.01...) and returns it.
func inverseScale(scale float64) (float64, bool) {
	if scale == 0 || math.Abs(scale) >= 1 {
		return 0, false
	}
	inv := 1 / scale
	r := math.Round(inv)
	if math.Abs(inv-r) > 1e-9*math.Abs(inv) {
		return 0, false
	}
	return r, true
}

// order is what encoding/binary's BigEndian and LittleEndian both provide.
type order interface {
	binary.ByteOrder
	binary.AppendByteOrder
}

// byteOrder resolves a manifest byte order; "" means big endian.
func byteOrder(o i2cconf.ByteOrder) (order, error) {
	switch o {
	case i2cconf.BigEndian, "":
		return binary.BigEndian, nil
	case i2cconf.LittleEndian:
		return binary.LittleEndian, nil
	}
	return nil, fmt.Errorf("unknown byte order %q (want big or little)", o)
}
