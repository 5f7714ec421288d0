// Package i2cconf is the configuration of the i2c driver's generic
// register-map device: register types, byte orders and register maps. It
// imports no hardware module (not even periph's interfaces), so that the
// manifest schema can compile into it without pulling in the driver;
// package i2c takes and returns these types.
package i2cconf

import "math"

// RegType is the encoding of a register's value.
type RegType string

// Register types of the generic register-map device.
const (
	RegUint8   RegType = "uint8"
	RegInt8    RegType = "int8"
	RegUint16  RegType = "uint16"
	RegInt16   RegType = "int16"
	RegUint32  RegType = "uint32"
	RegInt32   RegType = "int32"
	RegFloat32 RegType = "float32"
)

// Size returns the register's width in bytes, 0 for an unknown type.
func (t RegType) Size() int {
	switch t {
	case RegUint8, RegInt8:
		return 1
	case RegUint16, RegInt16:
		return 2
	case RegUint32, RegInt32, RegFloat32:
		return 4
	}
	return 0
}

// IntRange returns the range of an integer register type's raw value; ok
// is false for float32 and an unknown type.
func (t RegType) IntRange() (lo, hi float64, ok bool) {
	switch t {
	case RegUint8:
		return 0, math.MaxUint8, true
	case RegInt8:
		return math.MinInt8, math.MaxInt8, true
	case RegUint16:
		return 0, math.MaxUint16, true
	case RegInt16:
		return math.MinInt16, math.MaxInt16, true
	case RegUint32:
		return 0, math.MaxUint32, true
	case RegInt32:
		return math.MinInt32, math.MaxInt32, true
	}
	return 0, 0, false
}

// ByteOrder is the order of a multi-byte register's bytes on the wire.
type ByteOrder string

// Byte orders; the empty ByteOrder is big endian.
const (
	BigEndian    ByteOrder = "big"
	LittleEndian ByteOrder = "little"
)

// Register is one named value of a register-map device. Its engineering
// value is raw*Scale + Offset (a zero Scale counts as 1).
type Register struct {
	Name string
	// Address is the register pointer written before reading or writing.
	Address   uint8
	Type      RegType
	ByteOrder ByteOrder // "" means big endian
	Scale     float64
	Offset    float64
	Writable  bool
}
