package modbus

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/promcp/promcp-device/drivers/modbus/modbusconf"
)

// ErrOutOfRange is returned by the encoders for a value that the register
// type cannot hold: a fraction or an out-of-range number for an integer
// type, NaN or an infinity, a string too long.
var ErrOutOfRange = errors.New("value does not fit the register")

// Codec converts between a Modbus value's registers on the wire and its
// raw Go value. It is a plain value built from the manifest; its methods
// are pure functions, safe for concurrent use.
//
// The raw value is int64 for int16/int32/int64, uint64 for
// uint16/uint32/uint64, float64 for float32/float64 (a float32 widened),
// bool for bool and string for string.
type Codec struct {
	Type  modbusconf.DataType
	Order modbusconf.WordOrder // "" means ABCD
	// Bit selects one bit of a register for a bool; -1 (or a coil or
	// discrete input) means the value is the whole register or bit.
	Bit int
	// Length is a string's size in registers.
	Length int
}

// CodecOf returns the codec of a manifest register.
func CodecOf(r modbusconf.Register) Codec {
	bit := r.Bit
	if r.Table.IsBits() {
		bit = -1
	}
	return Codec{Type: r.Type, Order: r.ByteOrder, Bit: bit, Length: r.Length}
}

// Words returns how many registers the value occupies.
func (c Codec) Words() int { return c.Type.Words(c.Length) }

// normalize reorders wire bytes into big-endian order, or back: every word
// order is its own inverse. b is changed in place.
func normalize(b []byte, o modbusconf.WordOrder) {
	switch o {
	case modbusconf.OrderDCBA:
		for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
			b[i], b[j] = b[j], b[i]
		}
	case modbusconf.OrderBADC:
		for i := 0; i+1 < len(b); i += 2 {
			b[i], b[i+1] = b[i+1], b[i]
		}
	case modbusconf.OrderCDAB:
		for i, j := 0, len(b)-2; i < j; i, j = i+2, j-2 {
			b[i], b[j] = b[j], b[i]
			b[i+1], b[j+1] = b[j+1], b[i+1]
		}
	}
}

// Number decodes a number's registers as Decode does and returns its
// engineering value as Engineering does (raw × scale + offset, scale 0
// meaning 1), without copying wire to the heap or boxing the value: a
// number's read path allocates nothing here. ok is false, and nothing is
// decoded, for a type that is not a number (a bool, a string), which
// Decode and Engineering handle.
func (c Codec) Number(wire []byte, scale, offset float64) (f float64, ok bool, err error) {
	switch c.Type {
	case modbusconf.DataInt16, modbusconf.DataUint16, modbusconf.DataInt32, modbusconf.DataUint32,
		modbusconf.DataInt64, modbusconf.DataUint64, modbusconf.DataFloat32, modbusconf.DataFloat64:
	default:
		return 0, false, nil
	}
	n := 2 * c.Words()
	if len(wire) != n || n > 8 {
		return 0, true, fmt.Errorf("decode %s: got %d bytes, want %d", c.Type, len(wire), n)
	}
	var buf [8]byte
	b := buf[:n]
	copy(b, wire)
	normalize(b, c.Order)
	var raw float64
	switch c.Type {
	case modbusconf.DataInt16:
		raw = float64(int64(int16(binary.BigEndian.Uint16(b))))
	case modbusconf.DataUint16:
		raw = float64(uint64(binary.BigEndian.Uint16(b)))
	case modbusconf.DataInt32:
		raw = float64(int64(int32(binary.BigEndian.Uint32(b))))
	case modbusconf.DataUint32:
		raw = float64(uint64(binary.BigEndian.Uint32(b)))
	case modbusconf.DataInt64:
		raw = float64(int64(binary.BigEndian.Uint64(b)))
	case modbusconf.DataUint64:
		raw = float64(binary.BigEndian.Uint64(b))
	case modbusconf.DataFloat32:
		raw = float64(math.Float32frombits(binary.BigEndian.Uint32(b)))
	case modbusconf.DataFloat64:
		raw = math.Float64frombits(binary.BigEndian.Uint64(b))
	}
	if scale == 0 {
		scale = 1
	}
	return raw*scale + offset, true, nil
}

// Decode decodes the registers of one value, 2*Words() bytes as they came
// off the wire (each register big endian, as Modbus sends it).
func (c Codec) Decode(wire []byte) (any, error) {
	n := 2 * c.Words()
	if n == 0 {
		return nil, fmt.Errorf("decode: unknown type %q", c.Type)
	}
	if len(wire) != n {
		return nil, fmt.Errorf("decode %s: got %d bytes, want %d", c.Type, len(wire), n)
	}
	b := append([]byte(nil), wire...)
	if c.Type != modbusconf.DataString {
		normalize(b, c.Order)
	} else if c.Order == modbusconf.OrderBADC || c.Order == modbusconf.OrderDCBA {
		normalize(b, modbusconf.OrderBADC) // strings swap bytes within registers at most
	}
	switch c.Type {
	case modbusconf.DataBool:
		v := binary.BigEndian.Uint16(b)
		if c.Bit >= 0 {
			return v&(1<<c.Bit) != 0, nil
		}
		return v != 0, nil
	case modbusconf.DataInt16:
		return int64(int16(binary.BigEndian.Uint16(b))), nil
	case modbusconf.DataUint16:
		return uint64(binary.BigEndian.Uint16(b)), nil
	case modbusconf.DataInt32:
		return int64(int32(binary.BigEndian.Uint32(b))), nil
	case modbusconf.DataUint32:
		return uint64(binary.BigEndian.Uint32(b)), nil
	case modbusconf.DataInt64:
		return int64(binary.BigEndian.Uint64(b)), nil
	case modbusconf.DataUint64:
		return binary.BigEndian.Uint64(b), nil
	case modbusconf.DataFloat32:
		return float64(math.Float32frombits(binary.BigEndian.Uint32(b))), nil
	case modbusconf.DataFloat64:
		return math.Float64frombits(binary.BigEndian.Uint64(b)), nil
	case modbusconf.DataString:
		return strings.TrimRight(string(b), "\x00 "), nil
	}
	return nil, fmt.Errorf("decode: unknown type %q", c.Type)
}

// Encode encodes a raw value (of the Go type Decode returns for c.Type)
// into 2*Words() wire bytes. A bool with a Bit sets only that bit; the
// other bits are 0. It fails with an error wrapping ErrOutOfRange for a
// value the type cannot hold.
func (c Codec) Encode(v any) ([]byte, error) {
	b := make([]byte, 2*c.Words())
	if len(b) == 0 {
		return nil, fmt.Errorf("encode: unknown type %q", c.Type)
	}
	bad := func() ([]byte, error) {
		return nil, fmt.Errorf("encode %s: %w: %v (%T)", c.Type, ErrOutOfRange, v, v)
	}
	switch c.Type {
	case modbusconf.DataBool:
		on, ok := v.(bool)
		if !ok {
			return bad()
		}
		var w uint16
		if on && c.Bit >= 0 {
			w = 1 << c.Bit
		} else if on {
			w = 1
		}
		binary.BigEndian.PutUint16(b, w)
	case modbusconf.DataInt16, modbusconf.DataInt32, modbusconf.DataInt64:
		i, ok := v.(int64)
		bits := 16 * c.Words()
		if !ok || bits < 64 && (i < -1<<(bits-1) || i >= 1<<(bits-1)) {
			return bad()
		}
		putUint(b, uint64(i))
	case modbusconf.DataUint16, modbusconf.DataUint32, modbusconf.DataUint64:
		u, ok := v.(uint64)
		bits := 16 * c.Words()
		if !ok || bits < 64 && u >= 1<<bits {
			return bad()
		}
		putUint(b, u)
	case modbusconf.DataFloat32:
		f, ok := v.(float64)
		if !ok || math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > math.MaxFloat32 {
			return bad()
		}
		binary.BigEndian.PutUint32(b, math.Float32bits(float32(f)))
	case modbusconf.DataFloat64:
		f, ok := v.(float64)
		if !ok || math.IsNaN(f) || math.IsInf(f, 0) {
			return bad()
		}
		binary.BigEndian.PutUint64(b, math.Float64bits(f))
	case modbusconf.DataString:
		s, ok := v.(string)
		if !ok || len(s) > len(b) || strings.ContainsRune(s, 0) {
			return bad()
		}
		copy(b, s)
		if c.Order == modbusconf.OrderBADC || c.Order == modbusconf.OrderDCBA {
			normalize(b, modbusconf.OrderBADC)
		}
		return b, nil
	default:
		return nil, fmt.Errorf("encode: unknown type %q", c.Type)
	}
	normalize(b, c.Order)
	return b, nil
}

// putUint writes the low len(b) bytes of u big endian.
func putUint(b []byte, u uint64) {
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = byte(u)
		u >>= 8
	}
}

// Engineering converts a raw numeric value to raw*scale + offset; a bool or
// string is returned unchanged.
func Engineering(raw any, scale, offset float64) any {
	if scale == 0 {
		scale = 1
	}
	switch r := raw.(type) {
	case int64:
		return float64(r)*scale + offset
	case uint64:
		return float64(r)*scale + offset
	case float64:
		return r*scale + offset
	}
	return raw
}

// Raw undoes scale and offset: it returns the raw value (of the Go type
// Decode gives for c.Type) whose engineering value is v, rounding to the
// nearest integer for integer types. It fails with ErrOutOfRange when the
// result does not fit the type.
func (c Codec) Raw(v any, scale, offset float64) (any, error) {
	if scale == 0 {
		scale = 1
	}
	if c.Type == modbusconf.DataBool || c.Type == modbusconf.DataString {
		return v, nil
	}
	f, ok := v.(float64)
	if !ok {
		return nil, fmt.Errorf("encode %s: %w: %v (%T), want a number", c.Type, ErrOutOfRange, v, v)
	}
	raw := (f - offset) / scale
	switch c.Type {
	case modbusconf.DataFloat32, modbusconf.DataFloat64:
		return raw, nil
	case modbusconf.DataInt16, modbusconf.DataInt32, modbusconf.DataInt64:
		r := math.Round(raw)
		if r < -9.223372036854775e18 || r >= 9.223372036854775e18 || math.IsNaN(r) {
			return nil, fmt.Errorf("encode %s: %w: %v", c.Type, ErrOutOfRange, v)
		}
		return int64(r), nil
	default:
		r := math.Round(raw)
		if r < 0 || r >= 1.8446744073709552e19 || math.IsNaN(r) {
			return nil, fmt.Errorf("encode %s: %w: %v", c.Type, ErrOutOfRange, v)
		}
		return uint64(r), nil
	}
}
