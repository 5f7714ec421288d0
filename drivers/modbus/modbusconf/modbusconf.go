// Package modbusconf is the configuration of the modbus driver: the Modbus
// data tables, value types, word orders, register maps and serial port
// settings. It imports no hardware module (no goburrow, no serial port
// library), so that the manifest schema can compile into it without
// pulling in the driver; package modbus takes and returns these types.
package modbusconf

import "time"

// Defaults of a serial port whose configuration leaves them zero.
const (
	DefaultBaud     = 9600
	DefaultDataBits = 8
)

// Table is one of the four Modbus data tables.
type Table string

// Tables.
const (
	TableCoil     Table = "coil"     // read/write bits, FC 1, 5, 15
	TableDiscrete Table = "discrete" // read-only bits, FC 2
	TableHolding  Table = "holding"  // read/write 16-bit registers, FC 3, 6, 16
	TableInput    Table = "input"    // read-only 16-bit registers, FC 4
)

// IsBits reports whether the table holds single bits.
func (t Table) IsBits() bool { return t == TableCoil || t == TableDiscrete }

// DataType is the encoding of a Modbus value.
type DataType string

// Modbus data types.
const (
	DataBool    DataType = "bool"
	DataInt16   DataType = "int16"
	DataUint16  DataType = "uint16"
	DataInt32   DataType = "int32"
	DataUint32  DataType = "uint32"
	DataInt64   DataType = "int64"
	DataUint64  DataType = "uint64"
	DataFloat32 DataType = "float32"
	DataFloat64 DataType = "float64"
	DataString  DataType = "string"
)

// Words returns how many 16-bit registers a value of type t occupies
// (length is the register count of a string); 1 for bool, 0 for an unknown
// type.
func (t DataType) Words(length int) int {
	switch t {
	case DataBool, DataInt16, DataUint16:
		return 1
	case DataInt32, DataUint32, DataFloat32:
		return 2
	case DataInt64, DataUint64, DataFloat64:
		return 4
	case DataString:
		return length
	}
	return 0
}

// WordOrder is the order of a multi-byte value's bytes on the wire, named by
// where the most significant byte A lands: ABCD is big endian, DCBA little
// endian, BADC big endian with the bytes of each register swapped, CDAB
// little-endian register order with big-endian registers. "" means ABCD.
type WordOrder string

// Word orders.
const (
	OrderABCD WordOrder = "ABCD"
	OrderDCBA WordOrder = "DCBA"
	OrderBADC WordOrder = "BADC"
	OrderCDAB WordOrder = "CDAB"
)

// Register is one named value of a device's register map. Its engineering
// value is raw*Scale + Offset (a zero Scale counts as 1).
type Register struct {
	Name  string
	Table Table
	// Address is the 0-based PDU address (register 40001 is holding 0).
	Address uint16
	Type    DataType
	// ByteOrder is the word order; "" means ABCD.
	ByteOrder WordOrder
	// Bit selects one bit (0 = least significant) of a holding or input
	// register for a bool; -1 when the value is the whole register or a
	// coil/discrete input.
	Bit int
	// Length is a string's size in registers (two characters each).
	Length   int
	Scale    float64
	Offset   float64
	Writable bool
}

// Words returns how many registers (or bits, for coil and discrete) the
// value occupies.
func (r Register) Words() int { return r.Type.Words(r.Length) }

// Parity is a serial port's parity.
type Parity string

// Parity values; the empty Parity is none.
const (
	ParityNone Parity = "none"
	ParityEven Parity = "even"
	ParityOdd  Parity = "odd"
)

// RS485 is how an RS-485 transceiver is switched between sending and
// receiving.
type RS485 string

// RS485 modes; the empty RS485 is none.
const (
	// RS485None leaves direction control to the adapter (most USB
	// adapters switch by themselves).
	RS485None RS485 = "none"
	// RS485Kernel enables the kernel's RS-485 mode (TIOCSRS485), which
	// raises RTS while the UART sends.
	RS485Kernel RS485 = "kernel"
	// RS485RTS has the driver raise RTS before sending and lower it once the
	// frame has left the UART.
	RS485RTS RS485 = "rts"
)

// SerialConfig are the settings of a serial port (Modbus RTU or a text
// line). The zero value of Baud and DataBits means its default.
type SerialConfig struct {
	// Port is the host's device, "/dev/ttyUSB0" or "COM3".
	Port     string
	Baud     int    // bits per second; default 9600
	DataBits int    // 7 or 8; default 8
	Parity   Parity // default none
	StopBits int    // 1 or 2; default 1
	RS485    RS485  // default none
	// FrameGap is the silence kept between frames. Zero means the Modbus
	// rule: 3.5 character times, fixed at 1.75 ms above 19200 baud.
	FrameGap time.Duration
}
