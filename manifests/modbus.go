package manifests

import "time"

// Modbus and serial-line parts of the manifest: bus settings for RS-485 and
// TCP lines, the modbus and serial_line device models, and their register
// maps. The words (holding, input, coil, discrete; ABCD … DCBA) are the ones
// field engineers know from Telegraf and EdgeX.

// Bus kinds of Modbus and serial lines.
const (
	// BusModbusTCP is Modbus TCP (MBAP framing) to Address.
	BusModbusTCP BusKind = "modbus_tcp"
	// BusModbusRTU is Modbus RTU on a serial port (RS-485 or RS-232).
	BusModbusRTU BusKind = "modbus_rtu"
	// BusModbusRTUTCP is Modbus RTU frames carried on a TCP socket to
	// Address, as serial device servers do.
	BusModbusRTUTCP BusKind = "modbus_rtu_tcp"
	// BusSerial is a serial port shared by line instruments that speak text
	// or bytes (not Modbus).
	BusSerial BusKind = "serial"
)

// IsModbus reports whether k carries Modbus.
func (k BusKind) IsModbus() bool {
	return k == BusModbusTCP || k == BusModbusRTU || k == BusModbusRTUTCP
}

// IsSerialPort reports whether k is opened as a local serial port.
func (k BusKind) IsSerialPort() bool { return k == BusModbusRTU || k == BusSerial }

// IsNetwork reports whether k is reached through a TCP address.
func (k BusKind) IsNetwork() bool { return k == BusModbusTCP || k == BusModbusRTUTCP }

// Parity is a serial line's parity bit.
type Parity string

// Parity values.
const (
	ParityNone Parity = "none"
	ParityEven Parity = "even"
	ParityOdd  Parity = "odd"
)

// RS485 is how the driver switches an RS-485 transceiver between sending and
// receiving.
type RS485 string

// RS485 modes.
const (
	// RS485None leaves direction control to the adapter (most USB adapters
	// switch by themselves).
	RS485None RS485 = "none"
	// RS485Kernel enables the kernel's RS-485 mode (TIOCSRS485), which
	// raises RTS while the UART sends.
	RS485Kernel RS485 = "kernel"
	// RS485RTS has the driver raise RTS before sending and lower it once the
	// frame has left the UART.
	RS485RTS RS485 = "rts"
)

// Serial line defaults.
const (
	DefaultBaud     = 9600
	DefaultDataBits = 8
	DefaultStopBits = 1
	// DefaultRetries is how often a failed Modbus or serial transaction is
	// retried when the bus declares no retries.
	DefaultRetries = 2
)

// SerialSettings are the settings of a serial port (modbus_rtu and serial
// buses). Load fills the defaults, so the fields are never zero there.
type SerialSettings struct {
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
// (length is the register count of a string); 1 for bool.
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

// WordOrder is the order of a multi-byte Modbus value's bytes on the wire,
// named by where the most significant byte A lands: ABCD is big endian,
// DCBA little endian, BADC big endian with the bytes of each register
// swapped, CDAB little-endian register order with big-endian registers.
type WordOrder string

// Word orders.
const (
	OrderABCD WordOrder = "ABCD"
	OrderDCBA WordOrder = "DCBA"
	OrderBADC WordOrder = "BADC"
	OrderCDAB WordOrder = "CDAB"
)

// ModbusRegister is one named value of a modbus device. Its engineering
// value is raw*Scale + Offset.
type ModbusRegister struct {
	Name  string
	Table Table
	// Address is the 0-based PDU address (register 40001 is holding 0).
	Address uint16
	Type    DataType
	// ByteOrder is the word order; Load fills ABCD when absent.
	ByteOrder WordOrder
	// Bit selects one bit (0 = least significant) of a holding or input
	// register for a bool; -1 when the value is the whole register or a
	// coil/discrete input. Load fills -1 when absent.
	Bit int
	// Length is a string's size in registers (two characters each).
	Length   int
	Scale    float64 // default 1; never 0 after Load
	Offset   float64
	Writable bool
}

// Words returns how many registers (or bits, for coil and discrete) the
// value occupies.
func (r ModbusRegister) Words() int { return r.Type.Words(r.Length) }

// MaxReadRegisters and MaxReadBits are the most one Modbus read may carry.
const (
	MaxReadRegisters = 125
	MaxReadBits      = 2000
)

// LineInstrument is a serial_line device: the request it sends and how a
// value is found in its answer.
type LineInstrument struct {
	// Request is the text sent, terminator excluded (escape sequences such
	// as "\x02" come from YAML's double-quoted strings).
	Request string
	// Terminator ends the request and the response; default "\r\n".
	Terminator string
	// Response is a regular expression matched against the response line
	// (terminator removed); its named groups are the device's channels.
	Response string
}
